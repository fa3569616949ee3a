//! Capabilities a controller may hold, and the feature flags that gate them.

use std::collections::BTreeSet;

use serde_json::Value;

/// The controller protocol version (the only one spoken).
pub const PROTOCOL_VERSION: u64 = 1;

/// The WebSocket subprotocol naming the protocol; the server echoes it on accept.
pub const SUBPROTOCOL: &str = "hermes-browser-control-v1";

/// Prefix of the subprotocol entry that carries the ticket (`<prefix><ticket>`).
pub const TICKET_SUBPROTOCOL_PREFIX: &str = "hermes-browser-control-ticket.";

/// Transport family of a controller registered from a loopback peer.
pub const TRANSPORT_LOCAL: &str = "local-api";

/// Transport family of a controller registered from any other peer.
pub const TRANSPORT_REMOTE: &str = "remote-api";

/// The allow-list every controller may be granted (seed `004_*`): no raw CDP, no script
/// execution, no console.
pub const BASE_CAPABILITIES: [&str; 11] = [
    "controller.noop",
    "browser_back",
    "browser_click",
    "browser_navigate",
    "browser_press",
    "browser_screenshot",
    "browser_scroll",
    "browser_snapshot",
    "browser_tab_activate",
    "browser_tabs",
    "browser_type",
];

/// Capabilities granted only while `browser.extension_control.developer_mode` is `true`.
pub const DEVELOPER_CAPABILITIES: [&str; 2] = ["browser_cdp", "browser_evaluate"];

/// True for a developer capability.
pub fn is_developer(cap: &str) -> bool {
    DEVELOPER_CAPABILITIES.contains(&cap)
}

/// True for a capability on either list.
pub fn is_known(cap: &str) -> bool {
    BASE_CAPABILITIES.contains(&cap) || is_developer(cap)
}

/// Filters a requested capability list: a non-array gives the empty set; non-strings and
/// names on neither list are dropped; developer capabilities are kept only when
/// `developer_mode`. The result is sorted and deduplicated.
pub fn filter_capabilities(requested: &Value, developer_mode: bool) -> BTreeSet<String> {
    let Some(list) = requested.as_array() else {
        return BTreeSet::new();
    };
    list.iter()
        .filter_map(Value::as_str)
        .filter(|c| BASE_CAPABILITIES.contains(c) || (developer_mode && is_developer(c)))
        .map(str::to_string)
        .collect()
}

/// True when `requested` names a developer capability (used to answer 403
/// `browser_control_developer_mode_required` instead of silently dropping it).
pub fn requests_developer(requested: &Value) -> bool {
    requested
        .as_array()
        .is_some_and(|l| l.iter().filter_map(Value::as_str).any(is_developer))
}

/// `browser.extension_control.enabled` of a parsed config: on only when literally
/// boolean `true` (`"true"`, `1`, `"yes"` are off).
pub fn extension_control_enabled(raw_config: &Value) -> bool {
    raw_config["browser"]["extension_control"]["enabled"] == Value::Bool(true)
}

/// `browser.extension_control.developer_mode` of a parsed config, literal `true` only.
pub fn developer_mode(raw_config: &Value) -> bool {
    raw_config["browser"]["extension_control"]["developer_mode"] == Value::Bool(true)
}

/// The principal a server-authenticated request acts as:
/// `principal:<profile>:` and the first 32 hex digits of SHA-256(`<profile>\0<api key>`).
/// Never taken from the client.
pub fn principal_for(profile: &str, api_key: &str) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(profile.as_bytes());
    h.update([0u8]);
    h.update(api_key.as_bytes());
    let hex: String = h.finalize().iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("principal:{profile}:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn filter_keeps_only_the_allow_list() {
        let req = json!([
            "controller.noop",
            "browser_navigate",
            "browser_cdp",
            "browser_evaluate",
            "browser_console",
            "run_js",
            "browser_artifact_upload",
            7,
            null,
            "browser_navigate"
        ]);
        let got: Vec<String> = filter_capabilities(&req, false).into_iter().collect();
        assert_eq!(got, ["browser_navigate", "controller.noop"]);
        let dev: Vec<String> = filter_capabilities(&req, true).into_iter().collect();
        assert_eq!(
            dev,
            ["browser_cdp", "browser_evaluate", "browser_navigate", "controller.noop"]
        );
        assert!(filter_capabilities(&json!("browser_click"), false).is_empty());
        assert!(filter_capabilities(&json!({"a": 1}), true).is_empty());
        assert!(requests_developer(&req));
        assert!(!requests_developer(&json!(["browser_click"])));
    }

    #[test]
    fn principal_is_derived_from_profile_and_key() {
        let p = principal_for("default", "k1");
        assert!(p.starts_with("principal:default:") && p.len() == "principal:default:".len() + 32);
        assert_eq!(p, principal_for("default", "k1"));
        assert_ne!(p, principal_for("default", "k2"));
    }

    #[test]
    fn the_whole_allow_list_passes() {
        let all = Value::from(BASE_CAPABILITIES.to_vec());
        assert_eq!(filter_capabilities(&all, false).len(), 11);
    }

    #[test]
    fn feature_flag_requires_literal_boolean_true() {
        for off in [json!("true"), json!(1), json!("yes"), json!(null), json!(false)] {
            let c = json!({"browser": {"extension_control": {"enabled": off, "developer_mode": off}}});
            assert!(!extension_control_enabled(&c) && !developer_mode(&c));
        }
        let on = json!({"browser": {"extension_control": {"enabled": true, "developer_mode": true}}});
        assert!(extension_control_enabled(&on) && developer_mode(&on));
        assert!(!extension_control_enabled(&json!({})));
    }
}
