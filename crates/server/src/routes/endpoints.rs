//! The browser pool: `GET /v1/endpoints`.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::Value;

use crate::routes::AppState;

/// The endpoint routes.
pub fn routes() -> Router<AppState> {
    Router::new().route("/v1/endpoints", get(list))
}

/// `GET /v1/endpoints` → `{"endpoints": [{name, kind, url, capacity, placed, free, open,
/// health, error, health_since, sessions}], "placement_timeout_s"}`. URLs are redacted;
/// tokens never appear.
async fn list(State(s): State<AppState>) -> Json<Value> {
    Json(s.gw.pool().view())
}
