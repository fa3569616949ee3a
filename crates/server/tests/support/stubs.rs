//! Test servers on loopback for the console's tests:
//!
//! - [`LlmStub`]: a scripted OpenAI-compatible model server (`POST /v1/chat/completions`,
//!   streamed or not, `GET /v1/models`), recording every request;
//! - [`Origin`]: an upstream for the proxy — redirects, a header echo that also sets a
//!   cookie and a wildcard CORS header, a chunked body of any size, a POST echo.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

/// What the scripted model answers to a request: an assistant message
/// (`{"content", "tool_calls"?}`), or `{"__status": N, "__body": {...}}` for an error.
pub type Script = Arc<dyn Fn(&Value) -> Value + Send + Sync>;

#[derive(Clone)]
struct LlmState {
    script: Script,
    requests: Arc<Mutex<Vec<Value>>>,
    auth: Arc<Mutex<Vec<Option<String>>>>,
}

/// A scripted OpenAI-compatible upstream.
pub struct LlmStub {
    /// `http://127.0.0.1:PORT/v1` (what `llm.base_url` takes).
    pub base_url: String,
    requests: Arc<Mutex<Vec<Value>>>,
    auth: Arc<Mutex<Vec<Option<String>>>>,
}

impl LlmStub {
    pub async fn start(script: Script) -> LlmStub {
        let requests = Arc::new(Mutex::new(vec![]));
        let auth = Arc::new(Mutex::new(vec![]));
        let st = LlmState {
            script,
            requests: requests.clone(),
            auth: auth.clone(),
        };
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/v1/models", get(models))
            .with_state(st);
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(l, app).await });
        LlmStub {
            base_url: format!("http://127.0.0.1:{port}/v1"),
            requests,
            auth,
        }
    }

    /// Every request body received, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    /// The `Authorization` header of every request.
    pub fn auth(&self) -> Vec<Option<String>> {
        self.auth.lock().unwrap().clone()
    }
}

async fn models() -> Json<Value> {
    Json(json!({"object": "list", "data": [{"id": "stub-model", "object": "model"}]}))
}

fn sse(v: Value) -> String {
    format!("data: {v}\n\n")
}

async fn chat(State(st): State<LlmState>, headers: HeaderMap, Json(req): Json<Value>) -> Response {
    st.requests.lock().unwrap().push(req.clone());
    st.auth.lock().unwrap().push(
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
    );
    let answer = (st.script)(&req);
    if let Some(s) = answer.get("__status").and_then(Value::as_u64) {
        return (StatusCode::from_u16(s as u16).unwrap(), Json(answer["__body"].clone())).into_response();
    }
    let content = answer["content"].as_str().unwrap_or("").to_string();
    let calls: Vec<Value> = answer["tool_calls"].as_array().cloned().unwrap_or_default();
    let finish = if calls.is_empty() { "stop" } else { "tool_calls" };
    let model = req["model"].clone();
    if req["stream"] == true {
        // text in two pieces, each tool call's arguments in two pieces
        let mut out = String::new();
        let mid = content
            .char_indices()
            .nth(content.chars().count() / 2)
            .map(|(i, _)| i)
            .unwrap_or(0);
        for piece in [&content[..mid], &content[mid..]] {
            out += &sse(
                json!({"object": "chat.completion.chunk", "model": model, "choices": [{"index": 0, "delta": {"role": "assistant", "content": piece}}]}),
            );
        }
        for (i, c) in calls.iter().enumerate() {
            let args = c["function"]["arguments"].as_str().unwrap_or("{}").to_string();
            let cut = args.len() / 2;
            let cut = (0..=cut).rev().find(|k| args.is_char_boundary(*k)).unwrap_or(0);
            out += &sse(
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": c["id"], "type": "function", "function": {"name": c["function"]["name"], "arguments": &args[..cut]}}]}}]}),
            );
            out += &sse(
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "function": {"arguments": &args[cut..]}}]}}]}),
            );
        }
        out += &sse(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}));
        out += "data: [DONE]\n\n";
        return ([(header::CONTENT_TYPE, "text/event-stream")], out).into_response();
    }
    let mut message = json!({"role": "assistant", "content": content});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    Json(json!({
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }))
    .into_response()
}

/// An assistant message with tool calls `[(id, name, arguments)]`.
pub fn tool_calls(calls: &[(&str, &str, Value)]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}))
        .collect();
    json!({"content": "", "tool_calls": calls})
}

/// An upstream for the proxy, on `127.0.0.1`.
pub struct Origin {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    pub port: u16,
}

impl Origin {
    pub async fn start() -> Origin {
        let app = Router::new()
            .route("/redirect", get(redirect).post(redirect))
            .route(
                "/loop",
                get(|| async {
                    Response::builder()
                        .status(302)
                        .header(header::LOCATION, "/loop")
                        .body(Body::empty())
                        .unwrap()
                }),
            )
            .route("/headers", any(echo_headers))
            .route("/chunked", get(chunked))
            .route("/post", post(echo_post));
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(l, app).await });
        Origin {
            url: format!("http://127.0.0.1:{port}"),
            port,
        }
    }
}

async fn redirect(Query(q): Query<HashMap<String, String>>) -> Response {
    let status = q.get("status").and_then(|s| s.parse().ok()).unwrap_or(302);
    Response::builder()
        .status(status)
        .header(
            header::LOCATION,
            q.get("to").cloned().unwrap_or_else(|| "/headers".into()),
        )
        .body(Body::empty())
        .unwrap()
}

async fn echo_headers(method: axum::http::Method, headers: HeaderMap) -> Response {
    let h: serde_json::Map<String, Value> = headers
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v.to_str().unwrap_or(""))))
        .collect();
    (
        [
            (header::SET_COOKIE, "upstream=1; Path=/"),
            (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
            (header::CONTENT_TYPE, "application/json"),
        ],
        json!({"method": method.as_str(), "headers": h}).to_string(),
    )
        .into_response()
}

async fn chunked(Query(q): Query<HashMap<String, String>>) -> Response {
    let n: usize = q.get("n").and_then(|s| s.parse().ok()).unwrap_or(1000);
    let chunks: Vec<Result<Bytes, std::io::Error>> = (0..n.div_ceil(1000))
        .map(|i| Ok(Bytes::from(vec![b'x'; 1000.min(n - i * 1000)])))
        .collect();
    Response::new(Body::from_stream(futures_util::stream::iter(chunks)))
}

async fn echo_post(headers: HeaderMap, body: Bytes) -> Json<Value> {
    Json(json!({
        "content_type": headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()),
        "body": String::from_utf8_lossy(&body),
    }))
}
