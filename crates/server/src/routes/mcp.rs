//! `/mcp`: MCP over streamable HTTP (rmcp), one [`GatewayMcp`] per MCP session.

use std::sync::Arc;

use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::body::MAX_BODY_BYTES;
use crate::gateway::Gateway;
use crate::mcp::GatewayMcp;

/// Mounts the MCP service at `/mcp`. Host checks and the API key are the app's layers,
/// so rmcp's own `Host` allow-list is turned off here (it would duplicate them).
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
    Router::new().route_service("/mcp", service)
}
