//! MCP surfaces: the tool catalogue as MCP tools and tool outputs as MCP results (shared
//! with `tabgate mcp` over stdio), and the `/mcp` streamable-HTTP handler, where each MCP
//! session maps to a tabgate session.

use std::sync::{Arc, Mutex, Weak};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, InitializeRequestParams,
    InitializeResult, JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{json, Value};
use tabgate_tools::{ToolOutput, ToolSpec};

use crate::error::ApiError;
use crate::gateway::Gateway;
use crate::settings::NewSession;

/// Structured content is attached only when the text is smaller than this (bytes), so a
/// large snapshot is not sent twice; `browser_tabs` always gets it.
pub const STRUCTURED_TEXT_LIMIT: usize = 8 * 1024;

/// Header naming an existing tabgate session for an MCP session (on `initialize`, or on
/// every request of a stateless client).
pub const SESSION_HEADER: &str = "x-tabgate-session";

/// The instructions every tabgate MCP server sends on `initialize`.
pub const INSTRUCTIONS: &str = "tabgate drives a real Chromium tab over the DevTools Protocol. \
Start with browser_navigate, then browser_snapshot to read the page as an accessibility \
tree with refs; act with browser_click/browser_type/browser_press using those refs. A ref \
goes stale after the page changes: take a new snapshot. Tool failures come back as results \
with isError and a code naming the cause and the fix; a pending JavaScript dialog is \
answered with browser_dialog.";

/// The server info and capabilities of every tabgate MCP server.
pub fn server_config() -> ServerConfig {
    ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        .with_server_info(
            Implementation::new("tabgate", env!("CARGO_PKG_VERSION")).with_title("tabgate browser gateway"),
        )
        .with_instructions(INSTRUCTIONS)
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

/// A gateway failure (unknown session, busy, deadline) as an MCP tool result with
/// `isError`, the same `Error [code]: message` text as a tool failure.
pub fn gateway_failure(e: &ApiError) -> CallToolResult {
    let text = format!("Error [{}]: {}", e.code, e.message);
    let mut res = CallToolResult::error(vec![ContentBlock::text(text)]);
    res.structured_content = Some(json!({"error": e.error_object()}));
    res
}

/// Which tabgate session an MCP session uses. A session created for the MCP session
/// (none named by [`SESSION_HEADER`]) is deleted when the MCP session ends.
struct Binding {
    gw: Weak<Gateway>,
    bound: Mutex<Option<(String, bool)>>,
}

impl Binding {
    fn get(&self) -> Option<String> {
        self.bound
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|(id, _)| id.clone())
    }
}

impl Drop for Binding {
    fn drop(&mut self) {
        let bound = self.bound.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let (Some((id, true)), Some(gw)) = (bound, self.gw.upgrade()) {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    if let Err(e) = gw.delete_session(&id).await {
                        tracing::debug!(session = %id, "MCP session cleanup: {e}");
                    }
                });
            }
        }
    }
}

/// The `/mcp` handler: one per MCP session (rmcp calls the factory on `initialize`).
#[derive(Clone)]
pub struct GatewayMcp {
    gw: Arc<Gateway>,
    binding: Arc<Binding>,
}

impl GatewayMcp {
    /// A handler with no session bound yet.
    pub fn new(gw: Arc<Gateway>) -> GatewayMcp {
        GatewayMcp {
            binding: Arc::new(Binding {
                gw: Arc::downgrade(&gw),
                bound: Mutex::new(None),
            }),
            gw,
        }
    }

    /// The tabgate session this MCP session is bound to, if any.
    pub fn session_id(&self) -> Option<String> {
        self.binding.get()
    }
}

fn header(ctx: &RequestContext<RoleServer>, name: &str) -> Option<String> {
    ctx.extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.headers.get(name))
        .and_then(|v| v.to_str().ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

impl ServerHandler for GatewayMcp {
    fn get_info(&self) -> ServerConfig {
        server_config()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        let mut res = self.negotiate_initialize(&request)?;
        let id = match header(&context, SESSION_HEADER) {
            Some(id) => {
                self.gw
                    .record(&id)
                    .map_err(|e| McpError::invalid_params(e.message, None))?;
                *self.binding.bound.lock().unwrap_or_else(|p| p.into_inner()) = Some((id.clone(), false));
                id
            }
            None => {
                let rec = self
                    .gw
                    .create_session_waiting("mcp", NewSession::default())
                    .await
                    .map_err(|e| McpError::internal_error(format!("Error [{}]: {}", e.code, e.message), None))?;
                *self.binding.bound.lock().unwrap_or_else(|p| p.into_inner()) = Some((rec.session_id.clone(), true));
                rec.session_id
            }
        };
        tracing::info!(session = %id, "MCP session bound");
        res.instructions = Some(format!(
            "{INSTRUCTIONS} This MCP session uses tabgate session {id} (GET /v1/sessions/{id})."
        ));
        Ok(res)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = tabgate_tools::catalogue().iter().map(to_mcp_tool).collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(id) = self.binding.get().or_else(|| header(&context, SESSION_HEADER)) else {
            return Ok(gateway_failure(&ApiError::bad_request(
                "no_session",
                format!("this MCP request has no session: initialize first, or send the {SESSION_HEADER} header naming a session from POST /v1/sessions"),
            ))
            .into());
        };
        let name = request.name.as_ref();
        let args = request
            .arguments
            .map(Value::Object)
            .unwrap_or_else(|| Value::Object(JsonObject::new()));
        tracing::debug!(session = %id, tool = name, "mcp tools/call");
        Ok(match self.gw.call(&id, name, args).await {
            Ok(out) => to_call_result(name, out),
            Err(e) => gateway_failure(&e),
        }
        .into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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

        let g = serde_json::to_value(gateway_failure(&ApiError::unknown_session("ses_x"))).unwrap();
        assert_eq!(g["isError"], true);
        assert_eq!(g["structuredContent"]["error"]["code"], "unknown_session");
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
