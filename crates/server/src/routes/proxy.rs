//! `GET|POST /v1/proxy?url=…`: the gateway fetch proxy (see [`crate::proxy`]), and
//! `GET /v1/proxy/log`: what it did.
//!
//! A relayed response keeps the upstream status and `content-type`, `content-language`,
//! `last-modified`, `etag`; it adds `x-tabgate-proxy-url` (the last hop's URL),
//! `x-tabgate-proxy-redirects`, `cache-control: no-store`, `x-content-type-options:
//! nosniff` and a sandboxing CSP, and carries no upstream cookies or CORS headers. A
//! refusal is the usual JSON error with `rule`, `url` and `hop`, plus
//! `x-tabgate-proxy-error: <code>`. Every request, relayed or refused, is logged.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{Query, RawQuery, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use tabgate_supervisor::now_epoch;

use crate::console::db::ProxyLogEntry;
use crate::console::{Caller, Console};
use crate::error::ApiError;
use crate::proxy::{ProxyRequest, Trace};

/// The proxy's routes (state: the console).
pub fn routes() -> Router<Arc<Console>> {
    Router::new()
        .route("/v1/proxy", get(proxy).post(proxy))
        .route("/v1/proxy/log", get(log))
}

fn url_param(q: Option<&str>) -> Option<String> {
    url::form_urlencoded::parse(q?.as_bytes())
        .find(|(k, _)| k == "url")
        .map(|(_, v)| v.into_owned())
}

/// Keeps log lines bounded.
fn clip(s: &str) -> String {
    if s.len() <= 2048 {
        return s.to_string();
    }
    let mut end = 2048;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

async fn proxy(
    State(c): State<Arc<Console>>,
    Extension(caller): Extension<Caller>,
    method: Method,
    RawQuery(q): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let started = Instant::now();
    let Some(url) = url_param(q.as_deref()).filter(|u| !u.trim().is_empty()) else {
        let e = ApiError::bad_request(
            "invalid_url",
            "missing `url`: call /v1/proxy?url=<absolute http(s) URL, percent-encoded>",
        )
        .with(json!({"rule": "invalid_url"}));
        log_refusal(
            &c,
            caller.session(),
            &method,
            q.as_deref(),
            "invalid_url",
            "invalid_url",
        );
        return refusal_response(e, "invalid_url");
    };
    let req = ProxyRequest {
        method: method.clone(),
        url: url.clone(),
        body: (method == Method::POST).then_some(body),
        headers,
    };
    let mut trace = Trace::default();
    let result = c.proxy.fetch(req, &mut trace).await;
    let mut entry = ProxyLogEntry {
        at: now_epoch(),
        session_id: caller.session().map(str::to_string),
        method: method.to_string(),
        url: clip(&url),
        final_url: trace.final_url.as_deref().map(clip),
        status: None,
        bytes: 0,
        outcome: "ok".into(),
        rule: None,
        redirects: trace.redirects as u32,
        duration_ms: started.elapsed().as_millis() as u64,
    };
    let resp = match result {
        Ok(r) => {
            entry.status = Some(r.status);
            entry.bytes = r.body.len() as u64;
            tracing::info!(session = ?entry.session_id, url = %entry.url, status = r.status, bytes = entry.bytes, "proxied");
            let mut out = (
                StatusCode::from_u16(r.status).unwrap_or(StatusCode::BAD_GATEWAY),
                r.body,
            )
                .into_response();
            let h = out.headers_mut();
            for (k, v) in r.headers {
                h.insert(k, v);
            }
            if let Ok(v) = HeaderValue::from_str(&r.final_url) {
                h.insert(HeaderName::from_static("x-tabgate-proxy-url"), v);
            }
            h.insert(
                HeaderName::from_static("x-tabgate-proxy-redirects"),
                HeaderValue::from(r.redirects as u64),
            );
            h.insert("cache-control", HeaderValue::from_static("no-store"));
            h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
            h.insert(
                "content-security-policy",
                HeaderValue::from_static("sandbox; default-src 'none'"),
            );
            out
        }
        Err(r) => {
            entry.outcome = r.code.to_string();
            entry.rule = Some(r.rule.to_string());
            tracing::warn!(session = ?entry.session_id, url = %entry.url, code = r.code, rule = r.rule, "proxy refused: {}", r.message);
            refusal_response(r.to_api_error(), r.code)
        }
    };
    if let Err(e) = c.db.log_proxy(&entry) {
        tracing::error!("proxy log: {e}");
    }
    resp
}

/// Logs a proxy request refused before it was looked at (no or bad credentials, no URL).
pub(crate) fn log_refusal(
    c: &Console,
    session: Option<&str>,
    method: &Method,
    query: Option<&str>,
    code: &str,
    rule: &str,
) {
    let entry = ProxyLogEntry {
        at: now_epoch(),
        session_id: session.map(str::to_string),
        method: method.to_string(),
        url: clip(&url_param(query).unwrap_or_default()),
        final_url: None,
        status: None,
        bytes: 0,
        outcome: code.to_string(),
        rule: Some(rule.to_string()),
        redirects: 0,
        duration_ms: 0,
    };
    if let Err(e) = c.db.log_proxy(&entry) {
        tracing::error!("proxy log: {e}");
    }
}

fn refusal_response(e: ApiError, code: &str) -> Response {
    let mut r = e.into_response();
    if let Ok(v) = HeaderValue::from_str(code) {
        r.headers_mut()
            .insert(HeaderName::from_static("x-tabgate-proxy-error"), v);
    }
    r
}

#[derive(Deserialize)]
struct LogQuery {
    limit: Option<usize>,
}

/// `GET /v1/proxy/log?limit=N` → `{"entries": [...]}`: the caller's session's requests
/// (a console token), or every request (the API key without `X-Tabgate-Session`);
/// newest last, at most `limit` (default 100, at most 1000).
async fn log(
    State(c): State<Arc<Console>>,
    Extension(caller): Extension<Caller>,
    q: Result<Query<LogQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let limit = q
        .map_err(|e| ApiError::bad_request("invalid_argument", e.body_text()))?
        .limit
        .unwrap_or(100)
        .clamp(1, 1000);
    let entries = c.db.proxy_log(caller.session(), limit).map_err(|e| {
        tracing::error!("{e}");
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "storage_error", e.0)
    })?;
    Ok(Json(json!({"entries": entries})))
}
