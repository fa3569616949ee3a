//! MCP over stdio: tabgate's tool catalogue as MCP tools (rmcp, hand-written
//! `ServerHandler`: the catalogue is dynamic, so no `#[tool]` macros).

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tabgate_server::mcp::{server_config, to_call_result, to_mcp_tool};
use tabgate_tools::Session;

use crate::signals::shutdown_signal;

/// The MCP server: one tabgate [`Session`] behind the MCP tool calls.
#[derive(Clone)]
pub struct TabgateMcp {
    session: Arc<Session>,
}

impl TabgateMcp {
    /// A server for `session`.
    pub fn new(session: Arc<Session>) -> Self {
        TabgateMcp { session }
    }
}

impl ServerHandler for TabgateMcp {
    fn get_info(&self) -> ServerConfig {
        server_config()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = self.session.catalogue().iter().map(to_mcp_tool).collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.as_ref();
        let catalogue = self.session.catalogue();
        if !catalogue.iter().any(|t| t.name == name) {
            let known: Vec<&str> = catalogue.iter().map(|t| t.name).collect();
            let known = if known.is_empty() {
                "(none)".to_string()
            } else {
                known.join(", ")
            };
            let msg = format!("Error [unknown_tool]: no tool named {name:?}; known tools: {known}");
            let mut res = CallToolResult::error(vec![ContentBlock::text(msg.clone())]);
            res.structured_content = Some(serde_json::json!({
                "error": {"code": "unknown_tool", "message": msg, "tool": name}
            }));
            return Ok(res.into());
        }
        let args = request
            .arguments
            .map(Value::Object)
            .unwrap_or_else(|| Value::Object(JsonObject::new()));
        tracing::debug!(tool = name, "tools/call");
        let out = self.session.call(name, args).await;
        if let Some(e) = &out.error {
            tracing::info!(tool = name, code = %e.code, "tool failed: {}", e.message);
        }
        Ok(to_call_result(name, out).into())
    }
}

/// How the MCP service ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// stdin closed or the client ended the session.
    ClientGone,
    /// SIGINT, SIGTERM or SIGHUP.
    Signal(&'static str),
    /// The transport or service failed.
    Failed,
}

/// Serves MCP on stdin/stdout until the client goes away or a signal arrives.
/// The caller closes the session and the browser afterwards.
pub async fn serve_stdio(session: Arc<Session>) -> Ending {
    let signal = shutdown_signal();
    tokio::pin!(signal);
    let server = TabgateMcp::new(session);
    // `serve` returns after the client's `initialize`; a signal or EOF before that
    // must end tabgate too.
    let running = tokio::select! {
        r = server.serve(rmcp::transport::stdio_pipes()) => match r {
            Ok(r) => r,
            Err(e) => {
                // EOF before initialize is the client going away, not a failure.
                tracing::info!("MCP session did not start: {e}");
                return Ending::ClientGone;
            }
        },
        sig = &mut signal => return Ending::Signal(sig),
    };
    let cancel = running.cancellation_token();
    tokio::select! {
        r = running.waiting() => match r {
            Ok(reason) => {
                tracing::info!(?reason, "MCP session ended");
                Ending::ClientGone
            }
            Err(e) => {
                tracing::error!("MCP service failed: {e}");
                Ending::Failed
            }
        },
        sig = &mut signal => {
            cancel.cancel();
            Ending::Signal(sig)
        }
    }
}
