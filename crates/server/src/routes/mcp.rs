//! `/mcp`: MCP over streamable HTTP (rmcp), one [`GatewayMcp`] per MCP session.

use std::sync::Arc;

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::body::MAX_BODY_BYTES;
use crate::error::ApiError;
use crate::gateway::Gateway;
use crate::mcp::GatewayMcp;

/// Mounts the MCP service at `/mcp`. Host checks and the API key are the app's layers,
/// so rmcp's own `Host` allow-list is turned off here (it would duplicate them). rmcp's
/// plain-text HTTP errors are turned into the API's JSON error shape.
pub fn routes(gw: Arc<Gateway>, cancel: CancellationToken) -> Router {
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_cancellation_token(cancel)
        .with_max_request_body_bytes(MAX_BODY_BYTES);
    let service = StreamableHttpService::new(
        move || Ok(GatewayMcp::new(gw.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Router::new()
        .route_service("/mcp", service)
        .layer(axum::middleware::map_response(json_errors))
}

/// An HTTP error from rmcp that is not JSON (e.g. `406 Not Acceptable: …`) as
/// `{"ok": false, "error": {…}}`, keeping its status and headers (`Allow`, …).
async fn json_errors(resp: Response) -> Response {
    let st = resp.status();
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.contains("json"));
    if !(st.is_client_error() || st.is_server_error()) || is_json {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let text = axum::body::to_bytes(body, 64 * 1024).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text).trim().to_string();
    let code = match st {
        StatusCode::NOT_FOUND => "unknown_mcp_session",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::NOT_ACCEPTABLE => "not_acceptable",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
        StatusCode::PAYLOAD_TOO_LARGE => "body_too_large",
        _ => "mcp_error",
    };
    let message = match (st, text.is_empty()) {
        (StatusCode::NOT_FOUND, _) => {
            "no such MCP session (it ended or tabgate restarted); send initialize again".to_string()
        }
        (_, true) => format!("MCP transport error {st}"),
        _ => text,
    };
    let mut out = ApiError::new(st, code, message).into_response();
    for (k, v) in parts.headers.iter() {
        if k != header::CONTENT_TYPE && k != header::CONTENT_LENGTH {
            out.headers_mut().insert(k.clone(), v.clone());
        }
    }
    out
}
