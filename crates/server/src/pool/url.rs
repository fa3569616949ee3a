//! Endpoint URLs: the Browserless WebSocket URL (token and launch options as query
//! parameters), host and port for probes, and the secrets a URL carries (to scrub them).

use serde_json::{json, Value};

/// Flags every browser Browserless starts for tabgate gets (as for the launched one): each
/// session's tab is in its own window, and none may be throttled as a background tab.
const BROWSERLESS_ARGS: &[&str] = &[
    "--disable-renderer-backgrounding",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-dev-shm-usage",
];

/// Host and port of a `ws`/`wss`/`http`/`https` URL (default ports filled in).
pub(super) fn host_port(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let hp = authority.rsplit_once('@').map(|(_, h)| h).unwrap_or(authority);
    let default = if matches!(scheme, "wss" | "https") { 443 } else { 80 };
    if let Some(v6) = hp.strip_prefix('[') {
        let (h, rest) = v6.split_once(']')?;
        let port = rest.strip_prefix(':').and_then(|p| p.parse().ok()).unwrap_or(default);
        return Some((h.to_string(), port));
    }
    match hp.rsplit_once(':') {
        Some((h, p)) => Some((h.to_string(), p.parse().ok()?)),
        None => Some((hp.to_string(), default)),
    }
}

/// The password of `user:pass@` and every query value of a URL (secrets to scrub).
pub(super) fn url_secrets(url: &str) -> Vec<String> {
    let mut out = vec![];
    if let Some((_, rest)) = url.split_once("://") {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        if let Some((cred, _)) = authority.rsplit_once('@') {
            out.push(cred.to_string());
            if let Some((_, pass)) = cred.split_once(':') {
                out.push(pass.to_string());
            }
        }
    }
    if let Some((_, q)) = url.split_once('?') {
        out.extend(
            q.split('&')
                .filter_map(|p| p.split_once('='))
                .map(|(_, v)| v.to_string()),
        );
    }
    out.retain(|s| !s.is_empty());
    out
}

/// Adds query parameters (those with a value) to `url`.
pub(super) fn with_query(url: &str, params: &[(&str, Option<&str>)]) -> String {
    let mut out = url.to_string();
    for (k, v) in params {
        let Some(v) = v else { continue };
        out.push(if out.contains('?') { '&' } else { '?' });
        out.push_str(k);
        out.push('=');
        out.push_str(&percent_encode(v));
    }
    out
}

/// The WebSocket URL of a Browserless v2 endpoint: `http(s)` becomes `ws(s)`, an empty
/// path becomes `/chromium`, and `token` and `launch` (JSON: tabgate's flags plus the
/// endpoint's own launch options) are added as query parameters.
pub fn browserless_url(url: &str, token: Option<&str>, launch: Option<&Value>) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("ws", url));
    let scheme = match scheme {
        "http" => "ws",
        "https" => "wss",
        s => s,
    };
    let (before_query, query) = match rest.split_once('?') {
        Some((a, q)) => (a, Some(q)),
        None => (rest, None),
    };
    let (authority, path) = match before_query.split_once('/') {
        Some((a, p)) => (a, format!("/{p}")),
        None => (before_query, String::new()),
    };
    let path = if path.is_empty() || path == "/" {
        "/chromium".to_string()
    } else {
        path
    };
    let mut base = format!("{scheme}://{authority}{path}");
    if let Some(q) = query.filter(|q| !q.is_empty()) {
        base.push('?');
        base.push_str(q);
    }
    let mut opts = launch.cloned().unwrap_or_else(|| json!({}));
    if let Some(o) = opts.as_object_mut() {
        let mut args: Vec<Value> = BROWSERLESS_ARGS.iter().map(|a| json!(a)).collect();
        if let Some(Value::Array(extra)) = o.get("args") {
            args.extend(extra.iter().cloned());
        }
        o.insert("args".into(), Value::Array(args));
    }
    with_query(&base, &[("token", token), ("launch", Some(&opts.to_string()))])
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browserless_urls() {
        let u = browserless_url("ws://127.0.0.1:3000", Some("t/k=n"), None);
        assert!(
            u.starts_with("ws://127.0.0.1:3000/chromium?token=t%2Fk%3Dn&launch="),
            "{u}"
        );
        assert!(u.contains("disable-renderer-backgrounding"), "{u}");
        let u = browserless_url(
            "https://bl.example/chromium?stealth=true",
            None,
            Some(&json!({"args": ["--lang=de"], "headless": "shell"})),
        );
        assert!(u.starts_with("wss://bl.example/chromium?stealth=true&launch="), "{u}");
        assert!(u.contains("lang%3Dde") && u.contains("headless"), "{u}");
        assert!(!u.contains("token="), "{u}");
    }

    #[test]
    fn host_ports_and_secrets() {
        assert_eq!(host_port("ws://h:3000/x?y"), Some(("h".into(), 3000)));
        assert_eq!(host_port("wss://u:p@h/x"), Some(("h".into(), 443)));
        assert_eq!(host_port("http://[::1]:9/"), Some(("::1".into(), 9)));
        let s = url_secrets("ws://u:pw@h:1/x?token=abc&launch=q");
        assert!(s.contains(&"pw".to_string()) && s.contains(&"abc".to_string()), "{s:?}");
    }
}
