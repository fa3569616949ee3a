//! Model forwarding: `POST /v1/chat/completions` and `GET /v1/models` go to the
//! configured OpenAI-compatible upstream (`llm.base_url`: OpenAI, Ollama, llama.cpp,
//! vLLM, …) with `llm.api_key`, which never reaches the page. A request without `model`
//! gets `llm.model`. With `"stream": true` the upstream's server-sent events are relayed
//! as they arrive. An upstream failure is a 502 `llm_upstream_error` carrying the
//! upstream status and message; no upstream configured is 503 `llm_not_configured`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use serde_json::{json, Value};

use crate::body::JsonBody;
use crate::console::{Caller, Console};
use crate::error::ApiError;

/// Largest non-streamed upstream answer relayed: 32 MiB.
const MAX_ANSWER_BYTES: usize = 32 * 1024 * 1024;

/// The model routes (state: the console).
pub fn routes() -> Router<Arc<Console>> {
    Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/models", get(models))
}

fn base_url(c: &Console) -> Result<&str, ApiError> {
    c.llm.base_url.as_deref().ok_or_else(|| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "llm_not_configured",
            "no model upstream: set llm.base_url (and llm.api_key, llm.model) in tabgate's config.yaml, e.g. base_url: http://127.0.0.1:11434/v1 for Ollama",
        )
    })
}

fn unreachable(url: &str, e: &reqwest::Error) -> ApiError {
    let mut msg = e.to_string();
    let mut cur = std::error::Error::source(e);
    while let Some(s) = cur {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        cur = s.source();
    }
    ApiError::new(
        StatusCode::BAD_GATEWAY,
        "llm_unreachable",
        format!("the model upstream {url} did not answer: {msg}; check llm.base_url"),
    )
}

/// A non-2xx upstream answer as 502 `llm_upstream_error` with its status and message.
fn upstream_error(status: u16, body: &[u8]) -> ApiError {
    let text = String::from_utf8_lossy(body);
    let message = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| {
            v["error"]["message"]
                .as_str()
                .or_else(|| v["error"].as_str())
                .or_else(|| v["message"].as_str())
                .map(str::to_string)
        })
        .unwrap_or_else(|| text.chars().take(2000).collect());
    let hint = if status == 401 || status == 403 {
        " (the upstream refused llm.api_key)"
    } else {
        ""
    };
    ApiError::new(
        StatusCode::BAD_GATEWAY,
        "llm_upstream_error",
        format!("the model upstream answered {status}{hint}: {message}"),
    )
    .with(json!({"upstream_status": status}))
}

async fn relay(resp: reqwest::Response, url: &str, stream: bool) -> Result<Response, ApiError> {
    let status = resp.status();
    let ctype = resp.headers().get(header::CONTENT_TYPE).cloned();
    if !status.is_success() {
        let body = resp.bytes().await.unwrap_or_default();
        return Err(upstream_error(status.as_u16(), &body));
    }
    let mut out = if stream {
        Response::new(Body::from_stream(resp.bytes_stream()))
    } else {
        if resp.content_length().is_some_and(|n| n > MAX_ANSWER_BYTES as u64) {
            return Err(ApiError::new(
                StatusCode::BAD_GATEWAY,
                "llm_upstream_error",
                format!("the model upstream's answer is larger than {MAX_ANSWER_BYTES} bytes"),
            ));
        }
        let body = resp.bytes().await.map_err(|e| unreachable(url, &e))?;
        Response::new(Body::from(body))
    };
    *out.status_mut() = StatusCode::from_u16(status.as_u16()).unwrap_or(StatusCode::OK);
    let h = out.headers_mut();
    let fallback = if stream {
        "text/event-stream"
    } else {
        "application/json"
    };
    h.insert(
        header::CONTENT_TYPE,
        ctype
            .and_then(|v| HeaderValue::from_bytes(v.as_bytes()).ok())
            .unwrap_or(HeaderValue::from_static(fallback)),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if stream {
        h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    }
    Ok(out)
}

/// `POST /v1/chat/completions`: the body as OpenAI defines it; relayed upstream.
async fn chat(
    State(c): State<Arc<Console>>,
    Extension(caller): Extension<Caller>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let base = base_url(&c)?;
    let Value::Object(mut o) = body else {
        return Err(ApiError::bad_request(
            "invalid_json",
            "the body must be an OpenAI chat completions request object ({model?, messages, tools?, stream?})",
        ));
    };
    if !o.get("messages").is_some_and(Value::is_array) {
        return Err(ApiError::bad_request("invalid_argument", "`messages` must be an array"));
    }
    let has_model = o.get("model").and_then(Value::as_str).is_some_and(|m| !m.is_empty());
    if !has_model {
        match &c.llm.model {
            Some(m) => {
                o.insert("model".into(), Value::String(m.clone()));
            }
            None => {
                return Err(ApiError::bad_request(
                    "invalid_argument",
                    "no `model` in the request and no llm.model in the config; name one",
                ))
            }
        }
    }
    let stream = o.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let url = format!("{base}/chat/completions");
    tracing::info!(session = ?caller.session(), model = ?o.get("model"), stream, "chat completion forwarded");
    let mut req = c.llm_client.post(&url).json(&Value::Object(o));
    if let Some(k) = &c.llm.api_key {
        req = req.bearer_auth(k);
    }
    let resp = req.send().await.map_err(|e| unreachable(&url, &e))?;
    relay(resp, &url, stream).await
}

/// `GET /v1/models`: the upstream's model list, plus the configured default.
async fn models(State(c): State<Arc<Console>>) -> Result<Response, ApiError> {
    let base = base_url(&c)?;
    let url = format!("{base}/models");
    let mut req = c.llm_client.get(&url);
    if let Some(k) = &c.llm.api_key {
        req = req.bearer_auth(k);
    }
    let resp = req.send().await.map_err(|e| unreachable(&url, &e))?;
    let status = resp.status();
    let body = resp.bytes().await.map_err(|e| unreachable(&url, &e))?;
    if !status.is_success() {
        return Err(upstream_error(status.as_u16(), &body));
    }
    let mut v: Value = serde_json::from_slice(&body).unwrap_or(json!({"data": []}));
    v["default_model"] = json!(c.llm.model);
    Ok((StatusCode::OK, axum::Json(v)).into_response())
}
