//! MCP over stdio: tabgate's tool catalogue as MCP tools (rmcp, hand-written
//! `ServerHandler`: the catalogue is dynamic, so no `#[tool]` macros).

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tabgate_tools::{Session, ToolOutput, ToolSpec};

/// Structured content is attached only when the text is smaller than this (bytes), so a
/// large snapshot is not sent twice; `browser_tabs` always gets it.
pub const STRUCTURED_TEXT_LIMIT: usize = 8 * 1024;

const INSTRUCTIONS: &str = "tabgate drives a real Chromium tab over the DevTools Protocol. \
Start with browser_navigate, then browser_snapshot to read the page as an accessibility \
tree with refs; act with browser_click/browser_type/browser_press using those refs. A ref \
goes stale after the page changes: take a new snapshot. Tool failures come back as results \
with isError and a code naming the cause and the fix; a pending JavaScript dialog is \
answered with browser_dialog.";

/// The MCP server: one tabgate [`Session`] behind the MCP tool calls.
#[derive(Clone)]
pub struct TabgateMcp {
    session: Arc<Session>,
}

impl TabgateMcp {
    pub fn new(session: Arc<Session>) -> Self {
        TabgateMcp { session }
    }
}

/// One rmcp [`Tool`] for a tabgate [`ToolSpec`].
pub fn to_mcp_tool(spec: &ToolSpec) -> Tool {
    let schema: JsonObject = match &spec.input_schema {
        Value::Object(o) => o.clone(),
        _ => {
            let mut o = JsonObject::new();
            o.insert("type".into(), Value::String("object".into()));
            o
        }
    };
    Tool::new(spec.name, spec.description, Arc::new(schema))
}

/// The MCP result for a tool's output: text content, image content for a screenshot,
/// `structuredContent` for a JSON object result (small, or `browser_tabs`), and
/// `isError` for a failure (a tool failure is a result, never a JSON-RPC error).
pub fn to_call_result(tool: &str, out: ToolOutput) -> CallToolResult {
    let mut content = vec![ContentBlock::text(out.text.clone())];
    if let Some(png) = out.image_png {
        content.push(ContentBlock::image(png, "image/png"));
    }
    let mut res = if out.error.is_some() {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    if let Some(v @ Value::Object(_)) = out.structured {
        if tool == "browser_tabs" || out.text.len() < STRUCTURED_TEXT_LIMIT {
            res.structured_content = Some(v);
        }
    }
    res
}

impl ServerHandler for TabgateMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("tabgate", env!("CARGO_PKG_VERSION")).with_title("tabgate browser gateway"),
            )
            .with_instructions(INSTRUCTIONS)
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

/// Waits for the first of SIGINT, SIGTERM, SIGHUP; returns its name.
async fn shutdown_signal() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).ok();
    let mut int = signal(SignalKind::interrupt()).ok();
    let mut hup = signal(SignalKind::hangup()).ok();
    async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
        match s {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
    }
    tokio::select! {
        _ = recv(&mut term) => "SIGTERM",
        _ = recv(&mut int) => "SIGINT",
        _ = recv(&mut hup) => "SIGHUP",
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tabgate_tools::ToolError;

    #[test]
    fn result_shapes() {
        let ok = ToolOutput {
            text: "hi".into(),
            structured: Some(json!({"a": 1})),
            ..Default::default()
        };
        let r = serde_json::to_value(to_call_result("browser_x", ok)).unwrap();
        assert_eq!(r["content"][0]["text"], "hi");
        assert_eq!(r["structuredContent"]["a"], 1);
        assert_eq!(r["isError"], false);

        let big = ToolOutput {
            text: "x".repeat(9000),
            structured: Some(json!({"a": 1})),
            ..Default::default()
        };
        let r = serde_json::to_value(to_call_result("browser_snapshot", big.clone())).unwrap();
        assert!(r.get("structuredContent").is_none());
        let r = serde_json::to_value(to_call_result("browser_tabs", big)).unwrap();
        assert_eq!(r["structuredContent"]["a"], 1);

        let arr = ToolOutput {
            text: "t".into(),
            structured: Some(json!([1])),
            ..Default::default()
        };
        let r = serde_json::to_value(to_call_result("browser_x", arr)).unwrap();
        assert!(r.get("structuredContent").is_none());

        let shot = ToolOutput {
            text: "shot".into(),
            image_png: Some("iVBOR".into()),
            ..Default::default()
        };
        let r = serde_json::to_value(to_call_result("browser_screenshot", shot)).unwrap();
        assert_eq!(r["content"][1]["type"], "image");
        assert_eq!(r["content"][1]["mimeType"], "image/png");
        assert_eq!(r["content"][1]["data"], "iVBOR");

        let err = ToolOutput::failure(ToolError::new("stale_ref", "ref e3 is stale"));
        let r = serde_json::to_value(to_call_result("browser_click", err)).unwrap();
        assert_eq!(r["isError"], true);
        assert_eq!(r["structuredContent"]["error"]["code"], "stale_ref");
    }

    #[test]
    fn tool_schema_passthrough() {
        let spec = ToolSpec {
            name: "browser_navigate",
            description: "Go to a URL",
            input_schema: json!({"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}),
            needs_cdp: false,
        };
        let t = serde_json::to_value(to_mcp_tool(&spec)).unwrap();
        assert_eq!(t["name"], "browser_navigate");
        assert_eq!(t["description"], "Go to a URL");
        assert_eq!(t["inputSchema"]["required"][0], "url");
    }
}
