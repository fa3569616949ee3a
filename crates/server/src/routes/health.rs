//! `GET /v1/health`: liveness without a key.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::routes::AppState;

/// `GET /v1/health` → `{"ok", "version", "browser": {"connected"}}`; 503 when the
/// browser connection is gone. Needs no API key and tells nothing about sessions.
pub fn routes() -> Router<AppState> {
    Router::new().route("/v1/health", get(health))
}

async fn health(State(s): State<AppState>) -> (axum::http::StatusCode, Json<Value>) {
    let closed = s.gw.browser().conn().closed_reason();
    let status = if closed.is_none() {
        axum::http::StatusCode::OK
    } else {
        axum::http::StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(json!({
            "ok": closed.is_none(),
            "version": env!("CARGO_PKG_VERSION"),
            "browser": {"connected": closed.is_none(), "closed_reason": closed},
        })),
    )
}
