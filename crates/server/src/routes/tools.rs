//! Tools over HTTP: `GET /v1/tools` and `POST /v1/sessions/{id}/tools/{name}`.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tabgate_tools::ToolOutput;

use crate::body::JsonBody;
use crate::error::ApiError;
use crate::routes::{path_error, AppState};

/// The tool routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/tools", get(list))
        .route("/v1/sessions/{id}/tools/{name}", post(call))
}

/// `GET /v1/tools` → `{"tools": [{name, description, input_schema}]}`.
async fn list() -> Json<Value> {
    let tools: Vec<Value> = tabgate_tools::catalogue()
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
        .collect();
    Json(json!({"tools": tools}))
}

/// `POST /v1/sessions/{id}/tools/{name}` with the arguments as the body.
async fn call(
    State(s): State<AppState>,
    p: Result<Path<(String, String)>, PathRejection>,
    JsonBody(args): JsonBody,
) -> Result<Response, ApiError> {
    let Path((id, name)) = p.map_err(path_error)?;
    let out = s.gw.call(&id, &name, args).await?;
    Ok(tool_response(&name, out))
}

/// The HTTP answer for a tool's output: 200 `{"ok": true, "tool", "result", "text",
/// "image_png"?}`, or the error status for its code with
/// `{"ok": false, "error": {code, message, type: "tool_error", …}, "text"}`.
pub fn tool_response(tool: &str, out: ToolOutput) -> Response {
    match out.error {
        None => {
            let mut v =
                json!({"ok": true, "tool": tool, "result": out.structured.unwrap_or(Value::Null), "text": out.text});
            if let Some(png) = out.image_png {
                v["image_png"] = Value::String(png);
            }
            (StatusCode::OK, Json(v)).into_response()
        }
        Some(e) => {
            let a = ApiError::from_tool(&e);
            let body = json!({"ok": false, "tool": tool, "error": a.error_object(), "text": out.text});
            (a.status, Json(body)).into_response()
        }
    }
}
