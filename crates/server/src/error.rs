//! Errors on the HTTP surface: one JSON shape for every failure,
//! `{"ok": false, "error": {"code", "message", "type", ...details}}`, with the status
//! derived from the stable `code` ([`status_for_code`]).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use tabgate_tools::ToolError;

/// A failure answered as JSON: HTTP status, stable snake_case `code`, a `message` that
/// names the fix, a broad `type`, and optional `details` merged into the error object.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// Stable snake_case code (`unauthorized`, `unknown_session`, `stale_ref`, …).
    pub code: String,
    /// What went wrong and how to fix it.
    pub message: String,
    /// Broad category: `invalid_request_error`, `authentication_error`, `tool_error`, …
    pub kind: &'static str,
    /// Extra fields (ids, limits) merged into the `error` object.
    pub details: Value,
    /// Seconds for a `Retry-After` header (429, 503).
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// An error with `status` and `code`; `type` is derived from the status.
    pub fn new(status: StatusCode, code: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code: code.into(),
            message: message.into(),
            kind: kind_for_status(status),
            details: Value::Null,
            retry_after: None,
        }
    }

    /// 400 `code`.
    pub fn bad_request(code: &str, message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// 404 `unknown_session`, naming the id.
    pub fn unknown_session(id: &str) -> Self {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_session",
            format!("no session {id:?}; create one with POST /v1/sessions, list them with GET /v1/sessions"),
        )
        .with(json!({"session_id": id}))
    }

    /// Adds details merged into the error object.
    pub fn with(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    /// Sets `Retry-After`.
    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs);
        self
    }

    /// The error object: `{"code", "message", "type", ...details}`.
    pub fn error_object(&self) -> Value {
        let mut v = json!({"code": self.code, "message": self.message, "type": self.kind});
        if let (Some(o), Some(d)) = (v.as_object_mut(), self.details.as_object()) {
            for (k, x) in d {
                if !o.contains_key(k) {
                    o.insert(k.clone(), x.clone());
                }
            }
        }
        v
    }

    /// A tool failure: status from its code, `type: tool_error`, details kept.
    pub fn from_tool(e: &ToolError) -> Self {
        let mut a = ApiError::new(status_for_code(&e.code), e.code.clone(), e.message.clone()).with(e.details.clone());
        a.kind = "tool_error";
        a
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.status.as_u16(), self.code, self.message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"ok": false, "error": self.error_object()});
        let mut r = (self.status, axum::Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(s) = self.retry_after {
            if let Ok(v) = HeaderValue::from_str(&s.to_string()) {
                r.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        r
    }
}

/// The `type` for a status.
pub fn kind_for_status(s: StatusCode) -> &'static str {
    match s.as_u16() {
        400 | 405 | 415 | 422 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 | 410 => "not_found_error",
        409 => "conflict_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        502 => "upstream_error",
        503 => "unavailable_error",
        504 => "timeout_error",
        _ => "server_error",
    }
}

/// The HTTP status for a stable error code, tool or gateway (README, "Errors"):
///
/// - 400: `invalid_argument`, `invalid_json`, `invalid_body`, `invalid_path`, `invalid_settings`,
///   `not_a_select`, `no_session`;
/// - 404: `unknown_tool`, `unknown_session`, `not_found`;
/// - 409: the page's state does not allow the call — `stale_ref`, `unknown_ref`,
///   `blocked_by_dialog`, `tab_crashed`, `tab_closed`, `no_dialog`, … (and any code not
///   listed here): take a new snapshot or answer the dialog, then retry;
/// - 422: `js_exception`, `script_error`, `cdp_error` (the page or browser refused it);
/// - 410: `session_deleted` (while the call ran);
/// - 429: `session_busy`, `too_many_tabs`;
/// - 502: `navigation_failed` (the site did not answer);
/// - 503: `browser_disconnected`, `browser_unavailable`, `browser_lost`, `pool_exhausted`,
///   `session_stopped`, `shutting_down`;
/// - 504: `cdp_timeout`, `navigation_timeout`, `tool_timeout`;
/// - 500: `snapshot_failed`, `internal_error`, `storage_error`.
pub fn status_for_code(code: &str) -> StatusCode {
    match code {
        "invalid_argument" | "invalid_json" | "invalid_body" | "invalid_path" | "invalid_settings" | "not_a_select"
        | "no_session" => StatusCode::BAD_REQUEST,
        "unknown_tool" | "unknown_session" | "not_found" => StatusCode::NOT_FOUND,
        "js_exception" | "script_error" | "cdp_error" => StatusCode::UNPROCESSABLE_ENTITY,
        "session_busy" | "too_many_tabs" => StatusCode::TOO_MANY_REQUESTS,
        "navigation_failed" => StatusCode::BAD_GATEWAY,
        "session_deleted" => StatusCode::GONE,
        "browser_disconnected"
        | "browser_unavailable"
        | "browser_lost"
        | "pool_exhausted"
        | "session_stopped"
        | "shutting_down" => StatusCode::SERVICE_UNAVAILABLE,
        "cdp_timeout" | "navigation_timeout" | "tool_timeout" => StatusCode::GATEWAY_TIMEOUT,
        "snapshot_failed" | "internal_error" | "storage_error" => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::CONFLICT,
    }
}

/// A gateway-level failure of a tool call (before or around the tool itself): the
/// session is unknown or busy, the call outlived its deadline, the browser is gone.
pub fn gateway_error(code: &str, message: impl Into<String>) -> ApiError {
    ApiError::new(status_for_code(code), code, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_for_codes() {
        assert_eq!(status_for_code("invalid_argument"), StatusCode::BAD_REQUEST);
        assert_eq!(status_for_code("stale_ref"), StatusCode::CONFLICT);
        assert_eq!(status_for_code("unknown_ref"), StatusCode::CONFLICT);
        assert_eq!(status_for_code("unknown_tool"), StatusCode::NOT_FOUND);
        assert_eq!(status_for_code("cdp_timeout"), StatusCode::GATEWAY_TIMEOUT);
        assert_eq!(status_for_code("navigation_timeout"), StatusCode::GATEWAY_TIMEOUT);
        assert_eq!(status_for_code("tab_crashed"), StatusCode::CONFLICT);
        assert_eq!(status_for_code("something_new"), StatusCode::CONFLICT);
    }

    #[test]
    fn error_object_keeps_core_fields() {
        let e = ApiError::from_tool(
            &ToolError::new("stale_ref", "ref e3 is stale").with(json!({"ref": "e3", "code": "x"})),
        );
        let v = e.error_object();
        assert_eq!(v["code"], "stale_ref");
        assert_eq!(v["type"], "tool_error");
        assert_eq!(v["ref"], "e3");
        assert_eq!(e.status, StatusCode::CONFLICT);
    }
}
