//! Per-session settings given to `POST /v1/sessions`, layered over the config file.

use serde_json::{json, Map, Value};
use tabgate_config::Config;
use tabgate_supervisor::{DialogPolicy, SupervisorConfig};

use crate::error::ApiError;

/// Keys a session may set, and what they take.
const KEYS: &str = "name (string), dialog_policy (must_respond | auto_dismiss | auto_accept, or a map per dialog type), dialog_timeout_s (number > 0), endpoint (the name of a browser endpoint: pins the session to it)";

/// A validated `POST /v1/sessions` body.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    /// Optional label.
    pub name: Option<String>,
    /// The settings to store (only what was given; the config supplies the rest).
    pub settings: Value,
}

fn bad(msg: String) -> ApiError {
    ApiError::bad_request("invalid_settings", format!("{msg}; a session takes {KEYS}"))
}

/// Validates a `POST /v1/sessions` body (`null` or `{}` for the defaults).
pub fn parse_new_session(body: &Value) -> Result<NewSession, ApiError> {
    let empty = Map::new();
    let obj = match body {
        Value::Null => &empty,
        Value::Object(o) => o,
        other => return Err(bad(format!("the body must be a JSON object, got {other}"))),
    };
    let mut out = NewSession {
        settings: json!({}),
        ..Default::default()
    };
    for (k, v) in obj {
        match k.as_str() {
            "name" => match v {
                Value::String(s) if s.len() <= 200 => out.name = Some(s.clone()),
                Value::Null => {}
                _ => return Err(bad(format!("`name` must be a string of at most 200 bytes, got {v}"))),
            },
            "dialog_policy" => {
                parse_policy(v)?;
                out.settings["dialog_policy"] = v.clone();
            }
            "endpoint" => match v {
                Value::String(s) if !s.is_empty() => out.settings["endpoint"] = v.clone(),
                Value::Null => {}
                _ => {
                    return Err(bad(format!(
                        "`endpoint` must be an endpoint name (GET /v1/endpoints), got {v}"
                    )))
                }
            },
            "dialog_timeout_s" => {
                if !v.as_f64().is_some_and(|n| n > 0.0 && n.is_finite()) {
                    return Err(bad(format!("`dialog_timeout_s` must be a number > 0, got {v}")));
                }
                out.settings["dialog_timeout_s"] = v.clone();
            }
            other => return Err(bad(format!("unknown setting `{other}`"))),
        }
    }
    Ok(out)
}

/// `must_respond` | `auto_dismiss` | `auto_accept`, or a map from dialog type to one — the
/// same rules as `browser.dialog_policy` in config.yaml.
fn parse_policy(v: &Value) -> Result<DialogPolicy, ApiError> {
    tabgate_config::parse_dialog_policy(v).map_err(|e| bad(format!("`dialog_policy`: {}", e.0)))
}

/// The supervisor settings for a session: the config's, overridden by the stored
/// per-session `settings`.
pub fn supervisor_config(config: &Config, settings: &Value) -> SupervisorConfig {
    let mut s = config.supervisor();
    if let Some(p) = settings.get("dialog_policy").and_then(|v| parse_policy(v).ok()) {
        s.dialog_policy = p;
    }
    if let Some(t) = settings.get("dialog_timeout_s").and_then(Value::as_f64) {
        s.dialog_timeout_ms = (t * 1000.0).round() as u64;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use tabgate_supervisor::DialogAction;

    #[test]
    fn parses_and_layers_settings() {
        let n = parse_new_session(
            &json!({"name": "x", "dialog_policy": {"confirm": "auto_accept"}, "dialog_timeout_s": 2}),
        )
        .unwrap();
        assert_eq!(n.name.as_deref(), Some("x"));
        let s = supervisor_config(&Config::default(), &n.settings);
        assert_eq!(s.dialog_policy.confirm, DialogAction::AutoAccept);
        assert_eq!(s.dialog_policy.alert, DialogAction::MustRespond);
        assert_eq!(s.dialog_timeout_ms, 2000);
        assert!(parse_new_session(&Value::Null).is_ok());
    }

    #[test]
    fn rejects_bad_settings() {
        for b in [
            json!({"dialog_policy": "sometimes"}),
            json!({"dialog_policy": {"toast": "auto_accept"}}),
            json!({"dialog_timeout_s": -1}),
            json!({"colour": 1}),
            json!([1]),
        ] {
            let e = parse_new_session(&b).unwrap_err();
            assert_eq!(e.code, "invalid_settings", "{b}");
        }
    }
}
