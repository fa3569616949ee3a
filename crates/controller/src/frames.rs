//! The frames of protocol version 1: JSON text messages `{"method": …, "params": {…}}`
//! (study section 6.5). Method strings are exactly those of the reference system, so
//! controllers written for it work unchanged.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `browser.controller.command`.
pub const METHOD_COMMAND: &str = "browser.controller.command";
/// `browser.controller.result`.
pub const METHOD_RESULT: &str = "browser.controller.result";
/// `browser.controller.cancel`.
pub const METHOD_CANCEL: &str = "browser.controller.cancel";
/// `browser.controller.detach`.
pub const METHOD_DETACH: &str = "browser.controller.detach";
/// `browser.controller.heartbeat`.
pub const METHOD_HEARTBEAT: &str = "browser.controller.heartbeat";

/// A frame the server sends to a controller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", content = "params")]
pub enum ServerFrame {
    /// Run `action` with `arguments` (a copy of the tool's arguments, never altered).
    #[serde(rename = "browser.controller.command")]
    Command {
        /// 32 lowercase hex digits, unique per command.
        command_id: String,
        /// The capability being exercised (`browser_click`, `controller.noop`, …).
        action: String,
        /// The tool call's arguments.
        arguments: Value,
        /// The controller the command is meant for.
        controller_id: String,
        /// The browser profile the command is meant for.
        browser_profile_id: String,
        /// The agent's tool call this command serves (may be empty).
        tool_call_id: String,
    },
    /// Stop working on a command (explicit cancel, its deadline passed, or detach).
    #[serde(rename = "browser.controller.cancel")]
    Cancel {
        /// The command to stop.
        command_id: String,
        /// Its tool call.
        tool_call_id: String,
    },
    /// A heartbeat: the echo of the controller's nonce, or a server keepalive
    /// (`server-keepalive-<n>`; controllers ignore nonces they did not send).
    #[serde(rename = "browser.controller.heartbeat")]
    Heartbeat {
        /// The nonce.
        nonce: String,
        /// Always `true`.
        ok: bool,
    },
    /// The answer to a controller's detach.
    #[serde(rename = "browser.controller.detach")]
    Detach {
        /// Always `true`.
        ok: bool,
    },
}

impl ServerFrame {
    /// The frame as JSON text.
    pub fn to_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".into())
    }

    /// A server keepalive heartbeat number `n`.
    pub fn keepalive(n: u64) -> ServerFrame {
        ServerFrame::Heartbeat {
            nonce: format!("server-keepalive-{n}"),
            ok: true,
        }
    }
}

/// A frame a controller sends to the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", content = "params")]
pub enum ControllerFrame {
    /// The outcome of a command. Success only when `ok` is exactly JSON `true`.
    #[serde(rename = "browser.controller.result")]
    Result {
        /// The command answered.
        command_id: String,
        /// Must be JSON `true` for success; anything else (`"true"`, `1`) is a failure.
        #[serde(default)]
        ok: Value,
        /// The result, when ok.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        /// The error (e.g. `{code, message}`), when not ok.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<Value>,
    },
    /// The controller gives up the pending command of this tool call.
    #[serde(rename = "browser.controller.cancel")]
    Cancel {
        /// The tool call whose command is cancelled.
        tool_call_id: String,
    },
    /// A liveness probe; the server echoes the nonce (1–128 characters after trimming).
    #[serde(rename = "browser.controller.heartbeat")]
    Heartbeat {
        /// The nonce to echo.
        nonce: String,
    },
    /// Hard detach: pending work is cancelled at once.
    #[serde(rename = "browser.controller.detach")]
    Detach {},
}

impl ControllerFrame {
    /// Parses a text message. Not JSON, not an object, no string `method`, `params`
    /// present but not an object, an unknown method or missing fields → `None` (such
    /// frames are ignored, never answered).
    pub fn parse(text: &str) -> Option<ControllerFrame> {
        let v: Value = serde_json::from_str(text).ok()?;
        let o = v.as_object()?;
        let method = o.get("method")?.as_str()?;
        let params = match o.get("params") {
            None => Value::Object(Default::default()),
            Some(p @ Value::Object(_)) => p.clone(),
            Some(_) => return None,
        };
        serde_json::from_value(serde_json::json!({"method": method, "params": params})).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn server_frames_have_the_reference_shape() {
        let c = ServerFrame::Command {
            command_id: "ab".into(),
            action: "browser_click".into(),
            arguments: json!({"ref": "e1"}),
            controller_id: "c".into(),
            browser_profile_id: "p".into(),
            tool_call_id: "t".into(),
        };
        let v: Value = serde_json::from_str(&c.to_text()).unwrap();
        assert_eq!(
            v,
            json!({"method": "browser.controller.command", "params": {"command_id": "ab", "action": "browser_click",
                "arguments": {"ref": "e1"}, "controller_id": "c", "browser_profile_id": "p", "tool_call_id": "t"}})
        );
        let k: Value = serde_json::from_str(&ServerFrame::keepalive(3).to_text()).unwrap();
        assert_eq!(
            k,
            json!({"method": "browser.controller.heartbeat", "params": {"nonce": "server-keepalive-3", "ok": true}})
        );
        let d: Value = serde_json::from_str(&ServerFrame::Detach { ok: true }.to_text()).unwrap();
        assert_eq!(
            d,
            json!({"method": "browser.controller.detach", "params": {"ok": true}})
        );
        let x: Value = serde_json::from_str(
            &ServerFrame::Cancel {
                command_id: "ab".into(),
                tool_call_id: "t".into(),
            }
            .to_text(),
        )
        .unwrap();
        assert_eq!(
            x,
            json!({"method": "browser.controller.cancel", "params": {"command_id": "ab", "tool_call_id": "t"}})
        );
    }

    #[test]
    fn controller_frames_parse_strictly() {
        let r = ControllerFrame::parse(
            r#"{"method":"browser.controller.result","params":{"command_id":"x","ok":"false","error":{"code":"e"}}}"#,
        );
        assert_eq!(
            r,
            Some(ControllerFrame::Result {
                command_id: "x".into(),
                ok: json!("false"),
                result: None,
                error: Some(json!({"code": "e"}))
            })
        );
        assert_eq!(
            ControllerFrame::parse(r#"{"method":"browser.controller.detach","params":{}}"#),
            Some(ControllerFrame::Detach {})
        );
        assert_eq!(
            ControllerFrame::parse(r#"{"method":"browser.controller.heartbeat","params":{"nonce":"n1"}}"#),
            Some(ControllerFrame::Heartbeat { nonce: "n1".into() })
        );
        for bad in [
            "not json",
            "[1]",
            r#"{"method":"browser.controller.detach","params":[]}"#,
            r#"{"method":"browser.controller.result","params":{"ok":true}}"#,
            r#"{"method":"browser.controller.other","params":{}}"#,
            r#"{"params":{}}"#,
        ] {
            assert_eq!(ControllerFrame::parse(bad), None, "{bad}");
        }
    }
}
