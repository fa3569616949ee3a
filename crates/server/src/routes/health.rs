//! `GET /v1/health`: liveness without a key.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::routes::AppState;

/// `GET /v1/health` → `{"ok", "version", "browser": {"connected", "closed_reason"},
/// "endpoints": {"up", "total"}}`; 503 when no browser endpoint is up. Needs no API key
/// and tells nothing about sessions or where the endpoints are.
pub fn routes() -> Router<AppState> {
    Router::new().route("/v1/health", get(health))
}

async fn health(State(s): State<AppState>) -> (axum::http::StatusCode, Json<Value>) {
    let (up, total, _) = s.gw.pool().health_summary();
    let ok = up > 0;
    let status = if ok {
        axum::http::StatusCode::OK
    } else {
        axum::http::StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(json!({
            "ok": ok,
            "version": env!("CARGO_PKG_VERSION"),
            "browser": {"connected": ok, "closed_reason": if ok { None } else { Some("no browser endpoint is up; GET /v1/endpoints (with the key) says why") }},
            "endpoints": {"up": up, "total": total},
        })),
    )
}
