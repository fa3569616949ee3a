//! `browser.endpoints`: the browsers sessions are placed on (DESIGN.md section 7).
//!
//! ```yaml
//! browser:
//!   placement_timeout_s: 10
//!   endpoints:
//!     - {name: local, kind: launch, capacity: 8}
//!     - {name: grid, kind: cdp, url: "http://10.0.0.5:9222", capacity: 20}
//!     - {name: bl, kind: browserless, url: "ws://10.0.0.6:3000", token: "…", capacity: 5}
//! ```
//!
//! Every entry is checked on its own and errors name it (`browser.endpoints[2] ("bl").url:
//! …`). Tokens and URL credentials never leave this module unredacted except through
//! the fields themselves: `Debug` redacts them, and so does [`Config::raw`](crate::Config).

use std::collections::HashSet;

use serde_json::{Map, Value};
use tabgate_cdp::redact_url;

use crate::{kind as type_name, ConfigError};

/// What runs an endpoint's browsers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointKind {
    /// The Chromium `tabgate` launches itself (the browser options of `tabgate serve`).
    Launch,
    /// A running browser's DevTools endpoint (`ws://…/devtools/browser/…` or
    /// `http://host:port`); every session gets its own page targets in it.
    Cdp,
    /// A Browserless v2 server: one browser per WebSocket connection, so one per session.
    Browserless,
}

impl EndpointKind {
    /// `launch` | `cdp` | `browserless`.
    pub fn as_str(&self) -> &'static str {
        match self {
            EndpointKind::Launch => "launch",
            EndpointKind::Cdp => "cdp",
            EndpointKind::Browserless => "browserless",
        }
    }
}

/// One entry of `browser.endpoints`.
#[derive(Clone, PartialEq)]
pub struct EndpointConfig {
    /// Unique name: letters, digits, `-`, `_` (sessions name it to pin themselves).
    pub name: String,
    /// What runs its browsers.
    pub kind: EndpointKind,
    /// Where it is (`cdp`, `browserless`); may carry credentials: show
    /// [`EndpointConfig::shown_url`] instead.
    pub url: Option<String>,
    /// Sent as the `token` query parameter of the WebSocket URL. Secret.
    pub token: Option<String>,
    /// At most this many sessions are placed on it.
    pub capacity: usize,
    /// `browserless` only: Chromium launch options (a mapping, sent as the `launch` query
    /// parameter of every connection; its `args` are added to tabgate's own).
    pub launch: Option<Value>,
}

impl std::fmt::Debug for EndpointConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EndpointConfig")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("url", &self.shown_url())
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("capacity", &self.capacity)
            .field("launch", &self.launch)
            .finish()
    }
}

impl EndpointConfig {
    /// The URL for logs and API answers: query strings and `user:pass@` redacted.
    pub fn shown_url(&self) -> Option<String> {
        self.url.as_deref().map(redact_url)
    }
}

const KEYS: &str = "name, kind, url, token, capacity, launch";

/// Parses and checks the `browser.endpoints` list found at `path`.
pub(crate) fn parse(v: &Value, path: &str) -> Result<Vec<EndpointConfig>, ConfigError> {
    let Some(list) = v.as_array() else {
        return Err(ConfigError(format!(
            "`{path}` must be a list of endpoint mappings ({KEYS}), got {}",
            type_name(v)
        )));
    };
    if list.is_empty() {
        return Err(ConfigError(format!(
            "`{path}` is empty; list at least one endpoint, or remove the key to use the browser tabgate launches"
        )));
    }
    let mut out: Vec<EndpointConfig> = Vec::new();
    let mut names = HashSet::new();
    for (i, e) in list.iter().enumerate() {
        let at = match e.get("name").and_then(Value::as_str) {
            Some(n) => format!("{path}[{i}] ({n:?})"),
            None => format!("{path}[{i}]"),
        };
        let ep = entry(e, &at)?;
        if !names.insert(ep.name.clone()) {
            return Err(ConfigError(format!(
                "`{at}`: the name {:?} is used twice; endpoint names must be unique",
                ep.name
            )));
        }
        if ep.kind == EndpointKind::Launch && out.iter().any(|o| o.kind == EndpointKind::Launch) {
            return Err(ConfigError(format!(
                "`{at}`: only one endpoint may be of kind launch (tabgate launches one browser)"
            )));
        }
        out.push(ep);
    }
    Ok(out)
}

fn entry(e: &Value, at: &str) -> Result<EndpointConfig, ConfigError> {
    let Some(m) = e.as_object() else {
        return Err(ConfigError(format!(
            "`{at}` must be a mapping ({KEYS}), got {}",
            type_name(e)
        )));
    };
    for k in m.keys() {
        if !KEYS.split(", ").any(|x| x == k) {
            return Err(ConfigError(format!("unknown key `{at}.{k}`; known here: {KEYS}")));
        }
    }
    let err = |key: &str, msg: String| ConfigError(format!("`{at}.{key}` {msg}"));
    let string = |key: &str| -> Result<Option<String>, ConfigError> {
        match m.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            // never echo a token that was given with the wrong type
            Some(x) => Err(err(key, format!("must be a string, got {}", type_name(x)))),
        }
    };
    let name = string("name")?.ok_or_else(|| err("name", "is missing; every endpoint needs a name".into()))?;
    if name.is_empty() || name.len() > 64 || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err(err(
            "name",
            format!("must be 1–64 letters, digits, `-` or `_`, got {name:?}"),
        ));
    }
    let kind_s = string("kind")?.ok_or_else(|| err("kind", "is missing; use launch, cdp or browserless".into()))?;
    let kind = match kind_s.as_str() {
        "launch" => EndpointKind::Launch,
        "cdp" => EndpointKind::Cdp,
        "browserless" => EndpointKind::Browserless,
        other => {
            return Err(err(
                "kind",
                format!("must be launch, cdp or browserless, got {other:?}"),
            ))
        }
    };
    let capacity = match m.get("capacity") {
        None => {
            return Err(err(
                "capacity",
                "is missing; say how many sessions this endpoint takes".into(),
            ))
        }
        Some(x) => match x.as_u64() {
            Some(n) if (1..=100_000).contains(&n) => n as usize,
            _ => {
                return Err(err(
                    "capacity",
                    format!("must be a whole number of sessions >= 1, got {x}"),
                ))
            }
        },
    };
    let url = string("url")?;
    let token = string("token")?;
    if token.as_deref() == Some("") {
        return Err(err("token", "is empty; remove it or give the token".into()));
    }
    let launch = match m.get("launch") {
        None | Some(Value::Null) => None,
        Some(x @ Value::Object(_)) => Some(x.clone()),
        Some(x) => {
            return Err(err(
                "launch",
                format!("must be a mapping of launch options, got {}", type_name(x)),
            ))
        }
    };
    match kind {
        EndpointKind::Launch => {
            for (k, present) in [
                ("url", url.is_some()),
                ("token", token.is_some()),
                ("launch", launch.is_some()),
            ] {
                if present {
                    return Err(err(
                        k,
                        "is not used by kind launch (it runs the browser `tabgate serve` launches; its flags are the --browser options)".into(),
                    ));
                }
            }
        }
        EndpointKind::Cdp | EndpointKind::Browserless => {
            let Some(u) = url.as_deref() else {
                return Err(err(
                    "url",
                    format!(
                        "is missing; kind {} needs the endpoint's address ({})",
                        kind.as_str(),
                        if kind == EndpointKind::Cdp {
                            "ws://host:port/devtools/browser/… or http://host:port"
                        } else {
                            "ws://host:port"
                        }
                    ),
                ));
            };
            check_url(u).map_err(|m| err("url", format!("{m}, got {}", redact_url(u))))?;
            let has_query_token = u
                .split_once('?')
                .is_some_and(|(_, q)| q.split('&').any(|p| p.starts_with("token=")));
            if token.is_some() && has_query_token {
                return Err(err("token", "is given twice (also as ?token= in url); keep one".into()));
            }
            if kind == EndpointKind::Cdp {
                if launch.is_some() {
                    return Err(err("launch", "is used only by kind browserless".into()));
                }
                if token.is_some() && !(u.starts_with("ws://") || u.starts_with("wss://")) {
                    return Err(err(
                        "token",
                        "needs a ws:// or wss:// url for kind cdp (an http://host:port endpoint is asked for its WebSocket URL, which takes no token)".into(),
                    ));
                }
            }
        }
    }
    Ok(EndpointConfig {
        name,
        kind,
        url,
        token,
        capacity,
        launch,
    })
}

/// `ws`, `wss`, `http` or `https`, with a host.
fn check_url(u: &str) -> Result<(), String> {
    let Some((scheme, rest)) = u.split_once("://") else {
        return Err("must be a ws://, wss://, http:// or https:// URL".into());
    };
    if !matches!(scheme, "ws" | "wss" | "http" | "https") {
        return Err("must be a ws://, wss://, http:// or https:// URL".into());
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map(|(_, h)| h).unwrap_or(authority);
    if host.is_empty() || host.starts_with(':') {
        return Err("has no host".into());
    }
    Ok(())
}

/// Replaces tokens and URL credentials in the raw `browser.endpoints` value.
pub(crate) fn redact_raw(v: &mut Value) {
    let Some(list) = v.as_array_mut() else { return };
    for e in list.iter_mut().filter_map(Value::as_object_mut) {
        redact_entry(e);
    }
}

fn redact_entry(e: &mut Map<String, Value>) {
    if e.contains_key("token") {
        e.insert("token".into(), Value::String("<redacted>".into()));
    }
    if let Some(Value::String(u)) = e.get("url") {
        let shown = redact_url(u);
        e.insert("url".into(), Value::String(shown));
    }
}

#[cfg(test)]
mod tests {
    use crate::{Config, EndpointKind};

    const GOOD: &str = "browser:
  placement_timeout_s: 3
  endpoints:
    - {name: local, kind: launch, capacity: 4}
    - {name: grid, kind: cdp, url: 'http://10.0.0.5:9222', capacity: 20}
    - {name: bl, kind: browserless, url: 'ws://10.0.0.6:3000', token: s3cret-tok, capacity: 2, launch: {args: [--lang=de]}}
";

    #[test]
    fn parses_a_pool() {
        let c = Config::parse(GOOD).unwrap();
        assert_eq!(c.placement_timeout_s, 3.0);
        assert_eq!(c.endpoints.len(), 3);
        assert_eq!(c.endpoints[0].kind, EndpointKind::Launch);
        assert_eq!(c.endpoints[1].url.as_deref(), Some("http://10.0.0.5:9222"));
        assert_eq!(c.endpoints[2].token.as_deref(), Some("s3cret-tok"));
        assert_eq!(c.endpoints[2].capacity, 2);
        assert_eq!(c.endpoints[2].launch.as_ref().unwrap()["args"][0], "--lang=de");
        assert_eq!(Config::parse("").unwrap().placement_timeout_s, 10.0);
        assert!(Config::parse("").unwrap().endpoints.is_empty());
    }

    #[test]
    fn tokens_never_show() {
        let c = Config::parse(&GOOD.replace("ws://10.0.0.6:3000", "ws://u:pw-secret@10.0.0.6:3000")).unwrap();
        let shown = format!("{c:?}");
        assert!(!shown.contains("s3cret-tok") && !shown.contains("pw-secret"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
        let raw = c.raw.to_string();
        assert!(!raw.contains("s3cret-tok") && !raw.contains("pw-secret"), "{raw}");
        let c = Config::parse(
            "browser:\n  endpoints:\n    - {name: a, kind: cdp, url: 'ws://h:1/devtools/browser/x?token=qq-secret', capacity: 1}\n",
        )
        .unwrap();
        assert!(!format!("{c:?}").contains("qq-secret"));
        assert_eq!(
            c.endpoints[0].shown_url().unwrap(),
            "ws://h:1/devtools/browser/x?<redacted>"
        );
    }

    #[test]
    fn errors_name_the_entry_and_key() {
        let cases: &[(&str, &[&str])] = &[
            ("endpoints: {a: 1}", &["`browser.endpoints` must be a list"]),
            ("endpoints: []", &["`browser.endpoints` is empty"]),
            ("endpoints: [7]", &["`browser.endpoints[0]` must be a mapping"]),
            (
                "endpoints: [{kind: launch, capacity: 1}]",
                &["browser.endpoints[0].name", "missing"],
            ),
            (
                "endpoints: [{name: 'a b', kind: launch, capacity: 1}]",
                &["(\"a b\").name", "letters"],
            ),
            (
                "endpoints: [{name: a, kind: selenium, capacity: 1}]",
                &["(\"a\").kind", "launch, cdp or browserless"],
            ),
            ("endpoints: [{name: a, kind: launch}]", &["(\"a\").capacity", "missing"]),
            (
                "endpoints: [{name: a, kind: launch, capacity: 0}]",
                &["(\"a\").capacity", ">= 1"],
            ),
            (
                "endpoints: [{name: a, kind: launch, capacity: 1.5}]",
                &["(\"a\").capacity"],
            ),
            (
                "endpoints: [{name: a, kind: cdp, capacity: 1}]",
                &["(\"a\").url", "missing"],
            ),
            (
                "endpoints: [{name: a, kind: cdp, url: 'ftp://x', capacity: 1}]",
                &["(\"a\").url", "ws://"],
            ),
            (
                "endpoints: [{name: a, kind: cdp, url: 'http://', capacity: 1}]",
                &["(\"a\").url", "no host"],
            ),
            (
                "endpoints: [{name: a, kind: launch, url: 'ws://h:1', capacity: 1}]",
                &["(\"a\").url", "not used by kind launch"],
            ),
            (
                "endpoints: [{name: a, kind: cdp, url: 'http://h:1', token: t, capacity: 1}]",
                &["(\"a\").token", "ws://"],
            ),
            (
                "endpoints: [{name: a, kind: cdp, url: 'ws://h:1', launch: {}, capacity: 1}]",
                &["(\"a\").launch", "browserless"],
            ),
            (
                "endpoints: [{name: a, kind: browserless, url: 'ws://h:1?token=x', token: yy, capacity: 1}]",
                &["(\"a\").token", "twice"],
            ),
            (
                "endpoints: [{name: a, kind: browserless, url: 'ws://h:1', token: 5, capacity: 1}]",
                &["(\"a\").token", "must be a string"],
            ),
            (
                "endpoints: [{name: a, kind: browserless, url: 'ws://h:1', launch: [1], capacity: 1}]",
                &["(\"a\").launch", "mapping"],
            ),
            (
                "endpoints: [{name: a, kind: launch, capacity: 1, colour: red}]",
                &["unknown key `browser.endpoints[0] (\"a\").colour`"],
            ),
            (
                "endpoints: [{name: a, kind: launch, capacity: 1}, {name: a, kind: cdp, url: 'ws://h:1', capacity: 1}]",
                &["[1] (\"a\")", "used twice"],
            ),
            (
                "endpoints: [{name: a, kind: launch, capacity: 1}, {name: b, kind: launch, capacity: 1}]",
                &["[1] (\"b\")", "only one"],
            ),
            ("placement_timeout_s: -1", &["browser.placement_timeout_s", ">= 0"]),
        ];
        for (yaml, want) in cases {
            let e = Config::parse(&format!("browser:\n  {yaml}\n")).unwrap_err().0;
            for w in *want {
                assert!(e.contains(w), "{yaml}: {e:?} lacks {w:?}");
            }
        }
        let e =
            Config::parse("browser:\n  endpoints: [{name: a, kind: cdp, url: 'gopher://u:tok-zz@h', capacity: 1}]\n")
                .unwrap_err()
                .0;
        assert!(!e.contains("tok-zz"), "{e}");
        assert!(Config::parse("browser:\n  placement_timeout_s: 0\n").is_ok());
    }
}
