//! The axum app: one router per area, composed, with the host check, the API key, the
//! body limit and panic catching as layers; unknown paths and methods answer JSON too.

mod browser_control;
mod console;
mod endpoints;
mod health;
mod llm;
mod mcp;
mod proxy;
mod sessions;
mod tools;

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::Router;
use tabgate_config::Config;
use tokio_util::sync::CancellationToken;

use crate::auth::{check_host, require_key, AuthState};
use crate::body::MAX_BODY_BYTES;
use crate::error::ApiError;
use crate::gateway::Gateway;

/// What every handler gets.
#[derive(Clone)]
pub struct AppState {
    /// The gateway.
    pub gw: Arc<Gateway>,
}

/// The whole app: `/v1/health`, `/v1/tools`, `/v1/sessions…`, `/mcp`, and the console
/// (`/`, `/web/…`, `/v1/console/…`, `/v1/proxy`, `/v1/chat/completions`, `/v1/models`,
/// which authenticate with the API key or a console token). `cancel` ends `/mcp`
/// sessions and their event streams (shutdown); `config` supplies `proxy.*` and `llm.*`.
pub fn app(gw: Arc<Gateway>, auth: AuthState, cancel: CancellationToken, config: &Config) -> Router {
    let console = crate::console::Console::new(gw.clone(), auth.key.clone(), config);
    let browser_control = browser_control::routes(gw.clone(), auth.key.clone());
    let auth = Arc::new(auth);
    let state = AppState { gw: gw.clone() };
    Router::new()
        .merge(health::routes())
        .merge(tools::routes())
        .merge(sessions::routes())
        .merge(endpoints::routes())
        .with_state(state)
        .merge(mcp::routes(gw, cancel))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(auth.clone(), require_key))
        .merge(browser_control)
        .merge(console::routes(console))
        .layer(middleware::from_fn_with_state(auth, check_host))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(panicked))
}

async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("no endpoint {}; see GET /v1/tools, /v1/sessions and /mcp", uri.path()),
    )
}

async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{method} is not supported on {}", uri.path()),
    )
}

fn panicked(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a request handler panicked");
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal_error",
        "internal error; see the server log",
    )
    .into_response()
}

pub(crate) use proxy::log_refusal as log_proxy_refusal;

/// A path that does not decode (bad percent-encoding) as a 400.
pub(crate) fn path_error(r: PathRejection) -> ApiError {
    ApiError::bad_request("invalid_path", r.body_text())
}
