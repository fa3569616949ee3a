use std::fmt;

/// Everything a CDP command can fail with. Each variant names its cause; `Display`
/// is the message a tool shows, and [`CdpError::code`] the stable snake_case code.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CdpError {
    /// The command got no reply within its deadline (ms). A renderer paused by a
    /// JavaScript dialog is the usual cause.
    #[error("CDP {method} got no reply within {timeout_ms} ms (the page may be paused by a dialog or busy)")]
    Timeout { method: String, timeout_ms: u64 },
    /// The browser answered with a protocol error (`{"error": {code, message}}`).
    #[error("CDP {method} failed: {message} (code {code})")]
    Protocol { method: String, code: i64, message: String },
    /// The WebSocket is closed: the browser exited or the endpoint dropped us.
    #[error("the CDP connection is closed ({0}); the browser exited or the endpoint went away")]
    Disconnected(String),
    /// Could not connect, launch or resolve an endpoint.
    #[error("{0}")]
    Connect(String),
}

impl CdpError {
    /// Stable snake_case code for this error, the same on every surface.
    pub fn code(&self) -> &'static str {
        match self {
            CdpError::Timeout { .. } => "cdp_timeout",
            CdpError::Protocol { .. } => "cdp_error",
            CdpError::Disconnected(_) => "browser_disconnected",
            CdpError::Connect(_) => "browser_unavailable",
        }
    }

    /// True when the protocol error says the session or target is gone
    /// (`Session with given id not found`, `No target with given id`).
    pub fn is_target_gone(&self) -> bool {
        match self {
            CdpError::Protocol { message, .. } => {
                let m = message.to_ascii_lowercase();
                m.contains("session with given id not found")
                    || m.contains("no target with given id")
                    || m.contains("target closed")
                    || m.contains("inspected target navigated or closed")
            }
            CdpError::Disconnected(_) => true,
            _ => false,
        }
    }
}

/// Strips credentials and query strings from a CDP URL before it is logged or shown
/// (study 2.13: endpoint URLs may carry `?token=` or `user:pass@`).
pub fn redact_url(url: &str) -> String {
    let mut out = url.to_string();
    if let Some(q) = out.find('?') {
        out.truncate(q);
        out.push_str("?<redacted>");
    }
    if let Some(scheme_end) = out.find("://") {
        let rest = &out[scheme_end + 3..];
        if let Some(at) = rest.find('@') {
            if rest[..at].find('/').is_none() {
                out = format!("{}://<redacted>@{}", &out[..scheme_end], &rest[at + 1..]);
            }
        }
    }
    out
}

pub(crate) struct Redacted<'a>(pub &'a str);
impl fmt::Display for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact_url(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::redact_url;
    #[test]
    fn redacts_tokens_and_userinfo() {
        assert_eq!(redact_url("ws://h:1/x?token=abc"), "ws://h:1/x?<redacted>");
        assert_eq!(redact_url("ws://u:p@h:1/x"), "ws://<redacted>@h:1/x");
        assert_eq!(redact_url("ws://h:1/devtools/browser/1"), "ws://h:1/devtools/browser/1");
    }
}
