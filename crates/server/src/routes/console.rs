//! The in-page agent console: the page itself (`/`, `/web/…`, no key), and its API —
//! tokens, the session's tools, conversations — plus the proxy and model routes, all
//! behind [`authenticate`] (API key or console token) instead of the key-only layer.
//!
//! - `POST /v1/console/token` (API key) `{session_id?, name?}` → 201 `{token, session_id,
//!   expires_at}`: a console token for an existing session, or for a new one (origin
//!   `console`);
//! - `DELETE /v1/console/token` (the token) → revokes it;
//! - `GET /v1/console/session` → the caller's session status and how it authenticated;
//! - `GET /v1/console/tools` → the tools the console may call (the catalogue without
//!   `browser_cdp`, which reaches beyond the session);
//! - `POST /v1/console/tools/{name}` → a tool call in the caller's session (same answer as
//!   `POST /v1/sessions/{id}/tools/{name}`);
//! - `GET /v1/console/conversations`, `GET|PUT|DELETE /v1/console/conversations/{id}`.

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde_json::{json, Value};
use tabgate_supervisor::now_epoch;

use crate::body::JsonBody;
use crate::console::db::ConversationInfo;
use crate::console::{assets, authenticate, object, own_origin_only, Caller, Console, CONSOLE_MAX_BODY, TOKEN_TTL};
use crate::error::ApiError;
use crate::settings::NewSession;

/// Tools the console may not call through its token.
const DENIED_TOOLS: &[&str] = &["browser_cdp"];

/// The console's routes, with their own authentication; merged by [`crate::routes::app`]
/// outside the key-only layer and inside the `Host` check.
pub fn routes(c: Arc<Console>) -> Router {
    let api = Router::new()
        .route("/v1/console/token", post(create_token).delete(revoke_token))
        .route("/v1/console/session", get(session))
        .route("/v1/console/tools", get(tools))
        .route("/v1/console/tools/{name}", post(call_tool))
        .route("/v1/console/conversations", get(list_conversations))
        .route(
            "/v1/console/conversations/{id}",
            get(get_conversation).put(put_conversation).delete(delete_conversation),
        )
        .merge(super::proxy::routes())
        .merge(super::llm::routes())
        .method_not_allowed_fallback(super::method_not_allowed)
        .layer(DefaultBodyLimit::max(CONSOLE_MAX_BODY))
        .layer(middleware::from_fn_with_state(c.clone(), authenticate))
        .layer(middleware::from_fn(own_origin_only))
        .with_state(c);
    Router::new()
        .route("/", get(index))
        .route("/web/{*path}", get(asset))
        .merge(api)
}

fn serve(a: &assets::Asset) -> Response {
    let mut r = (StatusCode::OK, a.body).into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(a.mime));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    if a.path.ends_with(".html") {
        h.insert(
            "content-security-policy",
            HeaderValue::from_static("frame-ancestors 'none'"),
        );
        h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    }
    r
}

/// `GET /`: the console page.
async fn index() -> Response {
    match assets::find("index.html") {
        Some(a) => serve(a),
        None => ApiError::new(StatusCode::NOT_FOUND, "not_found", "the console is not built in").into_response(),
    }
}

/// `GET /web/{path}`: the console's modules and styles.
async fn asset(p: Result<Path<String>, PathRejection>) -> Response {
    let path = match p {
        Ok(Path(p)) => p,
        Err(r) => return super::path_error(r).into_response(),
    };
    match assets::find(&path) {
        Some(a) => serve(a),
        None => ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no console file web/{path}"),
        )
        .into_response(),
    }
}

/// `POST /v1/console/token` (API key only).
async fn create_token(
    State(c): State<Arc<Console>>,
    Extension(caller): Extension<Caller>,
    JsonBody(body): JsonBody,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    if matches!(caller, Caller::Token { .. }) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "api_key_required",
            "a console token cannot mint tokens; connect with the API key",
        ));
    }
    let o = object(&body, "POST /v1/console/token")?;
    for k in o.keys() {
        if !matches!(k.as_str(), "session_id" | "name") {
            return Err(ApiError::bad_request(
                "invalid_argument",
                format!("unknown field `{k}`; POST /v1/console/token takes session_id and name"),
            ));
        }
    }
    let session_id = match o.get("session_id").and_then(Value::as_str) {
        Some(id) => c.gw.record(id)?.session_id,
        None => {
            let name = o.get("name").and_then(Value::as_str).unwrap_or("console");
            let new = NewSession {
                name: Some(name.chars().take(200).collect()),
                settings: json!({}),
            };
            c.gw.create_session("console", new)?.session_id
        }
    };
    let token = crate::auth::generate_key()
        .map(|k| format!("tgc_{}", k.trim_start_matches("tg_")))
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", e))?;
    let now = now_epoch();
    let expires_at = now + TOKEN_TTL.as_secs_f64();
    c.db.insert_token(&token, &session_id, now, expires_at)
        .map_err(storage)?;
    tracing::info!(session = %session_id, "console token issued");
    Ok((
        StatusCode::CREATED,
        Json(json!({"token": token, "session_id": session_id, "expires_at": expires_at})),
    ))
}

/// `DELETE /v1/console/token` (the token itself).
async fn revoke_token(
    State(c): State<Arc<Console>>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<Value>, ApiError> {
    let Caller::Token { token, session } = caller else {
        return Err(ApiError::bad_request(
            "invalid_argument",
            "send the console token to revoke as the bearer credential",
        ));
    };
    c.db.revoke_token(&token).map_err(storage)?;
    Ok(Json(json!({"revoked": true, "session_id": session})))
}

/// `GET /v1/console/session`.
async fn session(State(c): State<Arc<Console>>, Extension(caller): Extension<Caller>) -> Result<Json<Value>, ApiError> {
    let id = caller.require_session()?;
    let rec = c.gw.record(id)?;
    let via = match caller {
        Caller::Key { .. } => "api_key",
        Caller::Token { .. } => "console_token",
    };
    Ok(Json(json!({
        "session": c.gw.status(&rec),
        "via": via,
        "llm": {"configured": c.llm.base_url.is_some(), "model": c.llm.model},
        "proxy": {"max_bytes": c.proxy.policy().max_bytes, "timeout_ms": c.proxy.policy().timeout.as_millis() as u64},
    })))
}

/// `GET /v1/console/tools`.
async fn tools() -> Json<Value> {
    let tools: Vec<Value> = tabgate_tools::catalogue()
        .iter()
        .filter(|t| !DENIED_TOOLS.contains(&t.name))
        .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
        .collect();
    Json(json!({"tools": tools}))
}

/// `POST /v1/console/tools/{name}` in the caller's session.
async fn call_tool(
    State(c): State<Arc<Console>>,
    Extension(caller): Extension<Caller>,
    p: Result<Path<String>, PathRejection>,
    JsonBody(args): JsonBody,
) -> Result<Response, ApiError> {
    let Path(name) = p.map_err(super::path_error)?;
    if DENIED_TOOLS.contains(&name.as_str()) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "tool_not_allowed",
            format!("{name} is not available to the console: it reaches the whole browser, beyond the session; call it with the API key on /v1/sessions/{{id}}/tools/{name}"),
        ));
    }
    let id = caller.require_session()?.to_string();
    let out = c.gw.call(&id, &name, args).await?;
    Ok(super::tools::tool_response(&name, out))
}

fn storage(e: crate::store::StoreError) -> ApiError {
    tracing::error!("{e}");
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "storage_error", e.0)
}

fn conversation_id(p: Result<Path<String>, PathRejection>) -> Result<String, ApiError> {
    let Path(id) = p.map_err(super::path_error)?;
    let ok = !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !ok {
        return Err(ApiError::bad_request(
            "invalid_argument",
            format!("conversation id {id:?}: use 1-64 letters, digits, `_` or `-`"),
        ));
    }
    Ok(id)
}

fn no_conversation(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "unknown_conversation",
        format!("no conversation {id:?} in this session; list them with GET /v1/console/conversations"),
    )
    .with(json!({"conversation_id": id}))
}

/// `GET /v1/console/conversations` → `{"conversations": [info, …]}`, newest first.
async fn list_conversations(
    State(c): State<Arc<Console>>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<Value>, ApiError> {
    let sid = caller.require_session()?;
    let list = c.db.conversations(sid).map_err(storage)?;
    Ok(Json(json!({"session_id": sid, "conversations": list})))
}

/// `GET /v1/console/conversations/{id}` → info and `messages`.
async fn get_conversation(
    State(c): State<Arc<Console>>,
    Extension(caller): Extension<Caller>,
    p: Result<Path<String>, PathRejection>,
) -> Result<Json<Value>, ApiError> {
    let id = conversation_id(p)?;
    let sid = caller.require_session()?;
    let (info, messages) =
        c.db.conversation(sid, &id)
            .map_err(storage)?
            .ok_or_else(|| no_conversation(&id))?;
    let mut v = json!(info);
    v["messages"] = messages;
    Ok(Json(v))
}

/// `PUT /v1/console/conversations/{id}` with `{title, runner_mode?, messages: [...]}`.
async fn put_conversation(
    State(c): State<Arc<Console>>,
    Extension(caller): Extension<Caller>,
    p: Result<Path<String>, PathRejection>,
    JsonBody(body): JsonBody,
) -> Result<Json<Value>, ApiError> {
    let id = conversation_id(p)?;
    let sid = caller.require_session()?;
    let o = object(&body, "PUT /v1/console/conversations/{id}")?;
    let messages = match o.get("messages") {
        Some(m @ Value::Array(_)) => m.clone(),
        _ => {
            return Err(ApiError::bad_request(
                "invalid_argument",
                "`messages` must be an array (the conversation's chat messages)",
            ))
        }
    };
    let runner_mode = match o.get("runner_mode") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) if m == "isolated" || m == "page" => Some(m.clone()),
        Some(other) => {
            return Err(ApiError::bad_request(
                "invalid_argument",
                format!("`runner_mode` must be \"isolated\" or \"page\", got {other}"),
            ))
        }
    };
    let title: String = o
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or("")
        .chars()
        .take(200)
        .collect();
    let now = now_epoch();
    let info = ConversationInfo {
        id,
        title,
        runner_mode,
        created_at: now,
        updated_at: now,
    };
    let saved = c.db.put_conversation(sid, &info, &messages).map_err(storage)?;
    Ok(Json(json!(saved)))
}

/// `DELETE /v1/console/conversations/{id}`.
async fn delete_conversation(
    State(c): State<Arc<Console>>,
    Extension(caller): Extension<Caller>,
    p: Result<Path<String>, PathRejection>,
) -> Result<Json<Value>, ApiError> {
    let id = conversation_id(p)?;
    let sid = caller.require_session()?;
    if !c.db.delete_conversation(sid, &id).map_err(storage)? {
        return Err(no_conversation(&id));
    }
    Ok(Json(json!({"conversation_id": id, "deleted": true})))
}
