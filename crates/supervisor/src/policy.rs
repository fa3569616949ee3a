//! Dialog policy (seed 000; DESIGN.md section 2; case 6).

use serde::Serialize;

/// What to do when a dialog of one type opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DialogAction {
    /// Keep it pending for the agent; a watchdog dismisses it after the timeout.
    MustRespond,
    /// Record it, then dismiss it (`closed_by: auto_policy`).
    AutoDismiss,
    /// Record it, then accept it (prompt gets its default text).
    AutoAccept,
}

impl DialogAction {
    /// Parses `must_respond` | `auto_dismiss` | `auto_accept`.
    pub fn parse(s: &str) -> Option<DialogAction> {
        match s {
            "must_respond" => Some(DialogAction::MustRespond),
            "auto_dismiss" => Some(DialogAction::AutoDismiss),
            "auto_accept" => Some(DialogAction::AutoAccept),
            _ => None,
        }
    }
}

/// Policy per dialog type. One blanket answer to every `confirm()` is how agents
/// delete things by accident, so each type is set on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DialogPolicy {
    pub alert: DialogAction,
    pub confirm: DialogAction,
    pub prompt: DialogAction,
    pub beforeunload: DialogAction,
}

impl Default for DialogPolicy {
    fn default() -> Self {
        DialogPolicy::all(DialogAction::MustRespond)
    }
}

impl DialogPolicy {
    /// The same action for every type.
    pub fn all(a: DialogAction) -> Self {
        DialogPolicy {
            alert: a,
            confirm: a,
            prompt: a,
            beforeunload: a,
        }
    }
    /// The action for a CDP dialog type (`alert`, `confirm`, `prompt`, `beforeunload`).
    pub fn for_type(&self, kind: &str) -> DialogAction {
        match kind {
            "alert" => self.alert,
            "confirm" => self.confirm,
            "prompt" => self.prompt,
            _ => self.beforeunload,
        }
    }
}

/// Supervisor settings.
#[derive(Debug, Clone)]
pub struct SupervisorConfig {
    pub dialog_policy: DialogPolicy,
    /// `must_respond` watchdog, ms (config `browser.dialog_timeout_s`, default 300 s).
    pub dialog_timeout_ms: u64,
    /// Answer alert/confirm/prompt through the XHR dialog bridge (config
    /// `browser.dialog_bridge`), for backends that close native dialogs by themselves.
    pub dialog_bridge: bool,
    /// Reconnect attempts after the CDP connection drops (study 2.2: 5) before the
    /// supervisor gives up and says so on the next call.
    pub reconnect_attempts: u32,
    /// First reconnect delay, ms; doubles per attempt up to 10 s (study 2.2: 0.5 s).
    pub reconnect_backoff_ms: u64,
}

impl Default for SupervisorConfig {
    fn default() -> Self {
        SupervisorConfig {
            dialog_policy: DialogPolicy::default(),
            dialog_timeout_ms: 300_000,
            dialog_bridge: false,
            reconnect_attempts: 5,
            reconnect_backoff_ms: 500,
        }
    }
}
