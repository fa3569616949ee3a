//! Sessions: `POST /v1/sessions`, `GET /v1/sessions`, `GET|DELETE /v1/sessions/{id}`,
//! `GET /v1/sessions/{id}/dialogs`.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::body::JsonBody;
use crate::error::ApiError;
use crate::routes::{path_error, AppState};
use crate::settings::parse_new_session;

/// The session routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/sessions", get(list).post(create))
        .route("/v1/sessions/{id}", get(show).delete(delete))
        .route("/v1/sessions/{id}/dialogs", get(dialogs))
}

/// `POST /v1/sessions` with optional settings → 201 and the session's status (placed on
/// a browser endpoint; 503 `pool_exhausted` when the pool has no room in time).
async fn create(State(s): State<AppState>, JsonBody(body): JsonBody) -> Result<(StatusCode, Json<Value>), ApiError> {
    let new = parse_new_session(&body)?;
    let rec = s.gw.create_session_waiting("http", new).await?;
    Ok((StatusCode::CREATED, Json(s.gw.status(&rec))))
}

/// `GET /v1/sessions` → `{"sessions": [status, …]}`, oldest first.
async fn list(State(s): State<AppState>) -> Result<Json<Value>, ApiError> {
    let recs = s.gw.records()?;
    let all: Vec<Value> = recs.iter().map(|r| s.gw.status(r)).collect();
    Ok(Json(json!({"sessions": all})))
}

/// `GET /v1/sessions/{id}` → the session's status.
async fn show(State(s): State<AppState>, id: Result<Path<String>, PathRejection>) -> Result<Json<Value>, ApiError> {
    let Path(id) = id.map_err(path_error)?;
    let rec = s.gw.record(&id)?;
    Ok(Json(s.gw.status(&rec)))
}

/// `DELETE /v1/sessions/{id}` → `{"session_id", "deleted": true}`.
async fn delete(State(s): State<AppState>, id: Result<Path<String>, PathRejection>) -> Result<Json<Value>, ApiError> {
    let Path(id) = id.map_err(path_error)?;
    s.gw.delete_session(&id).await?;
    Ok(Json(json!({"session_id": id, "deleted": true})))
}

/// `GET /v1/sessions/{id}/dialogs` → `{"dialogs": [audit, …]}` (last 200, oldest first).
async fn dialogs(State(s): State<AppState>, id: Result<Path<String>, PathRejection>) -> Result<Json<Value>, ApiError> {
    let Path(id) = id.map_err(path_error)?;
    s.gw.record(&id)?;
    let d =
        s.gw.store()
            .dialogs(&id, 200)
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "storage_error", e.0))?;
    Ok(Json(json!({"session_id": id, "dialogs": d})))
}
