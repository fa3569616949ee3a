//! The JSON body extractor of the `/v1` API: size-limited, any content type, an empty
//! body reads as `null`, and every rejection is a JSON error (400 `invalid_json`,
//! 413 `body_too_large`).

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde_json::Value;

use crate::error::ApiError;

/// Largest request body accepted on `/v1` and `/mcp`, bytes.
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// A request body parsed as JSON (`Value::Null` when empty).
#[derive(Debug, Clone)]
pub struct JsonBody(pub Value);

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(|r| {
            if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "body_too_large",
                    format!("the request body is larger than {MAX_BODY_BYTES} bytes"),
                )
                .with(serde_json::json!({"limit_bytes": MAX_BODY_BYTES}))
            } else {
                ApiError::bad_request(
                    "invalid_body",
                    format!("cannot read the request body: {}", r.body_text()),
                )
            }
        })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(JsonBody(Value::Null));
        }
        serde_json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(|e| ApiError::bad_request("invalid_json", format!("the request body is not valid JSON: {e}")))
    }
}
