//! tabgate's configuration file, `config.yaml` (seed 000 keys; DESIGN.md sections 2, 4, 6).
//!
//! Loaded from `--config FILE`, else `<platform config dir>/tabgate/config.yaml` when it
//! exists, else defaults. Every problem is reported with its key path
//! (`browser.dialog_timeout_s: must be a number > 0, got -1`); unknown keys are errors, so
//! a typo never silently falls back to a default. Nothing starts on a bad config.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tabgate_supervisor::{DialogAction, DialogPolicy, SupervisorConfig};

mod endpoints;

pub use endpoints::{EndpointConfig, EndpointKind};

/// The whole configuration, with defaults filled in.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where it was read from (`None` = defaults only).
    pub source: Option<PathBuf>,
    /// `browser.dialog_policy`: one action for every type, or a map per type.
    pub dialog_policy: DialogPolicy,
    /// `browser.dialog_timeout_s` (default 300): the `must_respond` watchdog, seconds.
    pub dialog_timeout_s: f64,
    /// `browser.dialog_bridge` (default false): answer dialogs through the XHR bridge.
    pub dialog_bridge: bool,
    /// `browser.inactivity_timeout` (default 300): an idle session's tab is closed, seconds.
    pub inactivity_timeout_s: u64,
    /// `server.api_key`: the bearer key of `tabgate serve` (else `TABGATE_API_KEY`, else generated).
    pub api_key: Option<String>,
    /// `server.allowed_hosts`: extra `Host` header values accepted on loopback binds.
    pub allowed_hosts: Vec<String>,
    /// `browser.endpoints`: the pool sessions are placed on (empty = the one browser
    /// `tabgate` launches or attaches to with `--cdp-url`).
    pub endpoints: Vec<EndpointConfig>,
    /// `browser.placement_timeout_s` (default 10): how long creating a session waits for
    /// free capacity in the pool before it fails with `pool_exhausted`.
    pub placement_timeout_s: f64,
    /// Everything else, as parsed (for keys owned by later features). Endpoint tokens and
    /// URL credentials are redacted here; the real values are only in
    /// [`Config::endpoints`].
    pub raw: Value,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            source: None,
            dialog_policy: DialogPolicy::default(),
            dialog_timeout_s: 300.0,
            dialog_bridge: false,
            inactivity_timeout_s: 300,
            api_key: None,
            allowed_hosts: vec![],
            endpoints: vec![],
            placement_timeout_s: 10.0,
            raw: Value::Object(Default::default()),
        }
    }
}

/// A configuration error: the file, the key path and what is wrong with it.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Known keys and their types: `(path, type)`; a `section` admits only its listed children.
const KEYS: &[(&str, Kind)] = &[
    ("browser", Kind::Section),
    ("browser.dialog_policy", Kind::Policy),
    ("browser.dialog_timeout_s", Kind::PositiveNumber),
    ("browser.dialog_bridge", Kind::Bool),
    ("browser.inactivity_timeout", Kind::PositiveNumber),
    ("browser.endpoints", Kind::Endpoints),
    ("browser.placement_timeout_s", Kind::NonNegativeNumber),
    ("browser.extension_control", Kind::Section),
    ("browser.extension_control.enabled", Kind::Bool),
    ("browser.extension_control.developer_mode", Kind::Bool),
    ("server", Kind::Section),
    ("server.api_key", Kind::String),
    ("server.allowed_hosts", Kind::StringList),
    ("server.bind", Kind::String),
    ("server.state_dir", Kind::String),
    ("server.max_open_sessions", Kind::PositiveNumber),
    ("server.call_timeout_s", Kind::PositiveNumber),
    ("proxy", Kind::Section),
    ("proxy.allow_hosts", Kind::StringList),
    ("proxy.max_bytes", Kind::PositiveNumber),
    ("proxy.timeout_s", Kind::PositiveNumber),
    ("llm", Kind::Section),
    ("llm.base_url", Kind::String),
    ("llm.api_key", Kind::String),
    ("llm.model", Kind::String),
];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Section,
    Policy,
    PositiveNumber,
    NonNegativeNumber,
    Bool,
    String,
    StringList,
    /// A list of endpoint mappings, each validated on its own ([`EndpointConfig`]).
    Endpoints,
}

impl Config {
    /// Loads `explicit`, or the platform default file when it exists, or defaults.
    pub fn load(explicit: Option<&Path>) -> Result<Config, ConfigError> {
        let path = match explicit {
            Some(p) => Some(p.to_path_buf()),
            None => default_path().filter(|p| p.is_file()),
        };
        let Some(path) = path else { return Ok(Config::default()) };
        let text = std::fs::read_to_string(&path)
            .map_err(|e| ConfigError(format!("cannot read config {}: {e}", path.display())))?;
        let mut c = Config::parse(&text).map_err(|e| ConfigError(format!("{}: {}", path.display(), e.0)))?;
        c.source = Some(path);
        Ok(c)
    }

    /// Parses YAML text. Errors name the key path and the expected type.
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let raw: Value = if text.trim().is_empty() {
            Value::Object(Default::default())
        } else {
            serde_saphyr::from_str(text).map_err(|e| ConfigError(format!("not valid YAML: {e}")))?
        };
        let raw = match raw {
            Value::Null => Value::Object(Default::default()),
            v @ Value::Object(_) => v,
            other => {
                return Err(ConfigError(format!(
                    "the top level must be a mapping of sections, got {}",
                    kind(&other)
                )))
            }
        };
        check(&raw, "")?;
        let mut c = Config {
            raw: raw.clone(),
            ..Config::default()
        };
        if let Some(list) = raw["browser"].get("endpoints") {
            c.endpoints = endpoints::parse(list, "browser.endpoints")?;
            endpoints::redact_raw(&mut c.raw["browser"]["endpoints"]);
        }
        if let Some(t) = raw["browser"].get("placement_timeout_s").and_then(Value::as_f64) {
            c.placement_timeout_s = t;
        }
        let b = &raw["browser"];
        if let Some(p) = b.get("dialog_policy") {
            c.dialog_policy = parse_dialog_policy(p)?;
        }
        if let Some(t) = b.get("dialog_timeout_s").and_then(Value::as_f64) {
            c.dialog_timeout_s = t;
        }
        if let Some(x) = b.get("dialog_bridge").and_then(Value::as_bool) {
            c.dialog_bridge = x;
        }
        if let Some(t) = b.get("inactivity_timeout").and_then(Value::as_f64) {
            c.inactivity_timeout_s = t.ceil() as u64;
        }
        c.api_key = raw["server"].get("api_key").and_then(Value::as_str).map(str::to_string);
        c.allowed_hosts = strings(&raw["server"]["allowed_hosts"]);
        Ok(c)
    }

    /// The supervisor settings this config asks for.
    pub fn supervisor(&self) -> SupervisorConfig {
        SupervisorConfig {
            dialog_policy: self.dialog_policy,
            dialog_timeout_ms: (self.dialog_timeout_s * 1000.0).round() as u64,
            dialog_bridge: self.dialog_bridge,
            ..SupervisorConfig::default()
        }
    }
}

/// `<platform config dir>/tabgate/config.yaml` (Linux: `$XDG_CONFIG_HOME` or `~/.config`).
pub fn default_path() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("tabgate").join("config.yaml"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing (null)",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

fn check(v: &Value, prefix: &str) -> Result<(), ConfigError> {
    let Some(obj) = v.as_object() else { return Ok(()) };
    for (k, x) in obj {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        let Some((_, kd)) = KEYS.iter().find(|(p, _)| *p == path) else {
            let known: Vec<&str> = KEYS
                .iter()
                .filter(|(p, _)| p.rsplit_once('.').map(|(a, _)| a).unwrap_or("") == prefix)
                .map(|(p, _)| *p)
                .collect();
            return Err(ConfigError(format!(
                "unknown key `{path}`; known here: {}",
                known.join(", ")
            )));
        };
        let bad = |want: &str| ConfigError(format!("`{path}` must be {want}, got {}", kind(x)));
        match kd {
            Kind::Section => {
                if !x.is_object() {
                    return Err(bad("a mapping"));
                }
                check(x, &path)?;
            }
            Kind::Policy => {
                parse_dialog_policy(x).map_err(|e| ConfigError(format!("`{path}`: {}", e.0)))?;
            }
            Kind::PositiveNumber => {
                if !x.as_f64().is_some_and(|n| n > 0.0 && n.is_finite()) {
                    return Err(ConfigError(format!("`{path}` must be a number > 0, got {x}")));
                }
            }
            Kind::NonNegativeNumber => {
                if !x.as_f64().is_some_and(|n| n >= 0.0 && n.is_finite()) {
                    return Err(ConfigError(format!("`{path}` must be a number >= 0, got {x}")));
                }
            }
            Kind::Endpoints => {
                endpoints::parse(x, &path)?;
            }
            Kind::Bool => {
                if !x.is_boolean() {
                    return Err(bad("true or false"));
                }
            }
            Kind::String => {
                if !x.is_string() {
                    return Err(bad("a string"));
                }
            }
            Kind::StringList => {
                if !x.as_array().is_some_and(|a| a.iter().all(Value::is_string)) {
                    return Err(bad("a list of strings"));
                }
            }
        }
    }
    Ok(())
}

const POLICY_HELP: &str = "must_respond, auto_dismiss or auto_accept";

/// `browser.dialog_policy`: `must_respond` | `auto_dismiss` | `auto_accept`, or a map from
/// dialog type (`alert`, `confirm`, `prompt`, `beforeunload`) to one of those; types not
/// in the map keep `must_respond`.
pub fn parse_dialog_policy(v: &Value) -> Result<DialogPolicy, ConfigError> {
    let action = |x: &Value, at: &str| -> Result<DialogAction, ConfigError> {
        x.as_str()
            .and_then(DialogAction::parse)
            .ok_or_else(|| ConfigError(format!("{at}must be {POLICY_HELP}, got {x}")))
    };
    match v {
        Value::String(_) => Ok(DialogPolicy::all(action(v, "")?)),
        Value::Object(m) => {
            let mut p = DialogPolicy::default();
            for (k, x) in m {
                let a = action(x, &format!("`{k}` "))?;
                match k.as_str() {
                    "alert" => p.alert = a,
                    "confirm" => p.confirm = a,
                    "prompt" => p.prompt = a,
                    "beforeunload" => p.beforeunload = a,
                    _ => {
                        return Err(ConfigError(format!(
                            "unknown dialog type `{k}`; use alert, confirm, prompt or beforeunload"
                        )))
                    }
                }
            }
            Ok(p)
        }
        other => Err(ConfigError(format!(
            "must be {POLICY_HELP} or a map per dialog type, got {}",
            kind(other)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_when_empty() {
        let c = Config::parse("").unwrap();
        assert_eq!(c.dialog_policy, DialogPolicy::default());
        assert_eq!(c.dialog_timeout_s, 300.0);
        assert!(!c.dialog_bridge);
    }

    #[test]
    fn blanket_and_per_type_policies() {
        let c = Config::parse("browser:\n  dialog_policy: auto_dismiss\n").unwrap();
        assert_eq!(c.dialog_policy, DialogPolicy::all(DialogAction::AutoDismiss));
        let c =
            Config::parse("browser:\n  dialog_policy: {confirm: must_respond, beforeunload: auto_accept}\n").unwrap();
        assert_eq!(c.dialog_policy.beforeunload, DialogAction::AutoAccept);
        assert_eq!(c.dialog_policy.confirm, DialogAction::MustRespond);
        assert_eq!(c.dialog_policy.alert, DialogAction::MustRespond);
    }

    #[test]
    fn errors_name_the_key_path() {
        let e = Config::parse("browser:\n  dialog_timeout_s: 0\n").unwrap_err().0;
        assert!(e.contains("browser.dialog_timeout_s") && e.contains("> 0"), "{e}");
        let e = Config::parse("browser:\n  dialog_timeout_s: soon\n").unwrap_err().0;
        assert!(e.contains("browser.dialog_timeout_s"), "{e}");
        let e = Config::parse("browser:\n  dialog_polcy: auto_accept\n").unwrap_err().0;
        assert!(
            e.contains("unknown key `browser.dialog_polcy`") && e.contains("browser.dialog_policy"),
            "{e}"
        );
        let e = Config::parse("browser:\n  dialog_policy: yes_please\n").unwrap_err().0;
        assert!(e.contains("browser.dialog_policy") && e.contains("must_respond"), "{e}");
        let e = Config::parse("browser:\n  dialog_policy: {confrm: auto_accept}\n")
            .unwrap_err()
            .0;
        assert!(e.contains("confrm"), "{e}");
        let e = Config::parse("browser:\n  dialog_bridge: 1\n").unwrap_err().0;
        assert!(
            e.contains("browser.dialog_bridge") && e.contains("true or false"),
            "{e}"
        );
        let e = Config::parse("browser: [1]\n").unwrap_err().0;
        assert!(e.contains("`browser` must be a mapping"), "{e}");
        assert!(Config::parse("browser: {dialog_timeout_s: [")
            .unwrap_err()
            .0
            .contains("YAML"));
    }
}
