//! The dialog bridge (seed 000; study 2.8), for CDP backends whose proxy closes native
//! dialogs by itself within milliseconds: the page never opens a native dialog; its
//! alert/confirm/prompt become a synchronous XHR that the supervisor intercepts.

use base64::Engine;
use serde_json::{json, Value};
use tabgate_cdp::Connection;

/// The host the bridge's XHR goes to (`.invalid` never resolves: an uncaught request
/// fails, and the page falls back to the native dialog).
pub const BRIDGE_HOST: &str = "hermes-dialog-bridge.invalid";

/// The injected script.
pub const SCRIPT: &str = include_str!("bridge.js");

/// Installs the bridge on one session (page or OOPIF child): the script for new documents
/// and the current one, and `Fetch.enable` for the bridge URL. Best effort: a failure
/// leaves native dialogs, which the supervisor still sees.
pub async fn install(conn: &Connection, sid: &str) {
    let s = Some(sid);
    let pattern = json!({"patterns": [{"urlPattern": format!("http://{BRIDGE_HOST}/*"), "requestStage": "Request"}], "handleAuthRequests": false});
    let (a, b) = tokio::join!(
        conn.call(
            s,
            "Page.addScriptToEvaluateOnNewDocument",
            json!({"source": SCRIPT, "runImmediately": true}),
            5_000
        ),
        conn.call(s, "Fetch.enable", pattern, 5_000),
    );
    if let Err(e) = a.and(b) {
        tracing::debug!("dialog bridge not installed on {sid}: {e}");
    }
    let _ = conn
        .call(
            s,
            "Runtime.evaluate",
            json!({"expression": SCRIPT, "returnByValue": true}),
            3_000,
        )
        .await;
}

/// The parts of a bridge request: `(kind, message, default_prompt)`, or `None` when the
/// URL is not the bridge's.
pub fn parse(url: &str) -> Option<(String, String, String)> {
    let rest = url.strip_prefix(&format!("http://{BRIDGE_HOST}/"))?;
    let query = rest.split_once('?').map(|(_, q)| q).unwrap_or("");
    let (mut kind, mut message, mut def) = ("alert".to_string(), String::new(), String::new());
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let v = decode(v);
        match k {
            "kind" => kind = v,
            "message" => message = v,
            "default_prompt" => def = v,
            _ => {}
        }
    }
    if !matches!(kind.as_str(), "alert" | "confirm" | "prompt") {
        kind = "alert".into();
    }
    Some((kind, message, def))
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                match u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz"), 16) {
                    Ok(x) => {
                        out.push(x);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `Fetch.fulfillRequest` params answering a bridge request.
pub fn fulfill(request_id: &str, accept: bool, prompt_text: &str, dialog_id: &str) -> Value {
    let body = json!({"accept": accept, "prompt_text": prompt_text, "dialog_id": dialog_id}).to_string();
    json!({
        "requestId": request_id,
        "responseCode": 200,
        "responseHeaders": [
            {"name": "Content-Type", "value": "application/json"},
            {"name": "Access-Control-Allow-Origin", "value": "*"}
        ],
        "body": base64::engine::general_purpose::STANDARD.encode(body),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bridge_urls() {
        let (k, m, d) =
            parse("http://hermes-dialog-bridge.invalid/?kind=prompt&message=Your%20name%3F&default_prompt=a+b")
                .unwrap();
        assert_eq!((k.as_str(), m.as_str(), d.as_str()), ("prompt", "Your name?", "a b"));
        assert!(parse("http://example.com/?kind=alert").is_none());
        let (_, m, _) = parse("http://hermes-dialog-bridge.invalid/?kind=alert&message=%E6%9D%B1%E4%BA%AC%").unwrap();
        assert_eq!(m, "東京%");
    }
}
