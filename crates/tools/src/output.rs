use serde_json::{json, Value};

/// A tool failure: stable snake_case `code`, a `message` that names the cause and the
/// fix, and `details` with the relevant ids. Reads the same on MCP, HTTP and the CLI.
#[derive(Debug, Clone)]
pub struct ToolError {
    pub code: String,
    pub message: String,
    pub details: Value,
}

impl ToolError {
    /// A new error with no details.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        ToolError {
            code: code.into(),
            message: message.into(),
            details: Value::Null,
        }
    }
    /// Adds `details` (an object of ids and context).
    pub fn with(mut self, details: Value) -> Self {
        self.details = details;
        self
    }
    /// JSON form `{"code", "message", ...details}`.
    pub fn to_json(&self) -> Value {
        let mut v = json!({"code": self.code, "message": self.message});
        if let (Some(o), Some(d)) = (v.as_object_mut(), self.details.as_object()) {
            for (k, x) in d {
                o.insert(k.clone(), x.clone());
            }
        }
        v
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl From<tabgate_cdp::CdpError> for ToolError {
    fn from(e: tabgate_cdp::CdpError) -> Self {
        ToolError::new(e.code(), e.to_string())
    }
}

/// What a tool call returns to a surface.
///
/// - `text`: the human/model-readable result (a snapshot's text, a summary line, or the
///   error message);
/// - `structured`: the same result as JSON (MCP `structuredContent`, HTTP `result`);
/// - `image_png`: base64 PNG for screenshots (MCP image content);
/// - `error`: set when the call failed.
#[derive(Debug, Clone, Default)]
pub struct ToolOutput {
    pub text: String,
    pub structured: Option<Value>,
    pub image_png: Option<String>,
    pub error: Option<ToolError>,
}

impl ToolOutput {
    /// A failed call; `text` carries the code and message.
    pub fn failure(e: ToolError) -> Self {
        let mut text = format!("Error [{}]: {}", e.code, e.message);
        if e.details.as_object().is_some_and(|o| !o.is_empty()) {
            text.push('\n');
            text.push_str(&e.details.to_string());
        }
        ToolOutput {
            text,
            structured: Some(json!({"error": e.to_json()})),
            image_png: None,
            error: Some(e),
        }
    }
}
