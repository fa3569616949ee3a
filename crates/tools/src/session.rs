//! A tool session: one supervised set of tabs in a browser, its refs, and the dispatcher.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tabgate_supervisor::{Browser, CdpSupervisor, SupervisorConfig, SupervisorError};

use crate::refs::Refs;
use crate::{args, catalogue, ToolError, ToolOutput, ToolSpec};

/// Per-session settings.
#[derive(Debug, Clone, Default)]
pub struct SessionConfig {
    /// Dialog policy and watchdog.
    pub supervisor: SupervisorConfig,
    /// Adopt this existing page target as the first tab instead of creating one.
    pub adopt_target: Option<String>,
}

/// How long a call waits for a reconnect in progress before it reports the state, ms.
const RECONNECT_WAIT_MS: u64 = 20_000;

/// Every call's overall deadline, ms, beyond its own (`browser_navigate{timeout_ms}` gets
/// this much on top): no call may hang, whatever the page does.
const CALL_TIMEOUT_MS: u64 = 120_000;

/// What a tool implementation returns: the text for the model and the same as JSON.
pub(crate) type Done = Result<(String, Value), ToolError>;

/// One agent session: its own page target(s) in a browser, never shared with another session.
pub struct Session {
    pub(crate) sup: CdpSupervisor,
    pub(crate) refs: Mutex<Refs>,
    /// Last good snapshot text per tab, shown (flagged) while a dialog pauses the page.
    pub(crate) last_snapshot: Mutex<Option<(String, String)>>,
    /// Calls run one at a time, except `browser_dialog`, which never waits behind another.
    lock: tokio::sync::Mutex<()>,
    /// A tab whose page stopped answering (a call on it ran out of time): navigate probes
    /// it and replaces it when it is still stuck.
    pub(crate) suspect: Mutex<Option<String>>,
}

impl From<SupervisorError> for ToolError {
    fn from(e: SupervisorError) -> Self {
        ToolError::new(e.code, e.message).with(e.details)
    }
}

impl Session {
    /// Opens a session: creates (or adopts) its page target and starts its supervisor.
    pub async fn open(browser: Arc<Browser>, cfg: SessionConfig) -> Result<Session, ToolError> {
        let sup = CdpSupervisor::start(browser, cfg.supervisor, cfg.adopt_target).await?;
        Ok(Session {
            sup,
            refs: Mutex::new(Refs::default()),
            last_snapshot: Mutex::new(None),
            lock: tokio::sync::Mutex::new(()),
            suspect: Mutex::new(None),
        })
    }

    /// The session's supervisor.
    pub fn supervisor(&self) -> &CdpSupervisor {
        &self.sup
    }

    /// The tools this session offers (all of them: the backend speaks CDP).
    pub fn catalogue(&self) -> Vec<ToolSpec> {
        catalogue::catalogue()
    }

    /// Runs tool `name` with `args` (a JSON object). Never panics on bad input; every
    /// failure is a [`ToolOutput`] with `error` set. Every result says when a dialog is
    /// pending, and names dialogs that a policy answered during the call.
    pub async fn call(&self, name: &str, args: Value) -> ToolOutput {
        let Some(spec) = catalogue::find(name) else {
            let known: Vec<&str> = catalogue::catalogue().iter().map(|t| t.name).collect();
            return ToolOutput::failure(ToolError::new(
                "unknown_tool",
                format!("no tool named {name:?}; known tools: {}", known.join(", ")),
            ));
        };
        if let Err(e) = args::validate(&spec, &args) {
            return ToolOutput::failure(e);
        }
        // a dropped CDP connection is being re-established: wait for it rather than fail
        if self.sup.state().reconnecting {
            let until = tokio::time::Instant::now() + std::time::Duration::from_millis(RECONNECT_WAIT_MS);
            self.sup.wait_for(until, |st| (!st.reconnecting).then_some(())).await;
        }
        let _guard = if name == "browser_dialog" {
            None
        } else {
            Some(self.lock.lock().await)
        };
        let started = tabgate_supervisor::now_epoch();
        let own = args.get("timeout_ms").and_then(Value::as_u64).unwrap_or(0);
        let deadline = std::time::Duration::from_millis(CALL_TIMEOUT_MS + own);
        let res = match tokio::time::timeout(deadline, self.dispatch(name, &args)).await {
            Ok(r) => r,
            Err(_) => Err(ToolError::new(
                "tool_timeout",
                format!(
                    "{name} did not finish within {} s: the page is busy (a long task or an endless loop) or very slow; browser_navigate replaces an unresponsive tab",
                    deadline.as_secs()
                ),
            )),
        };
        if let Err(e) = &res {
            if matches!(e.code.as_str(), "tool_timeout" | "cdp_timeout" | "snapshot_failed") {
                *self.suspect.lock().unwrap_or_else(|p| p.into_inner()) = self.sup.state().current.clone();
            }
        }
        let (auto, pending) = {
            let st = self.sup.state();
            let auto: Vec<Value> = st
                .recent
                .iter()
                .filter(|r| r.closed_by == "auto_policy" && r.closed_at >= started)
                .map(|r| json!(r))
                .collect();
            (auto, st.pending.clone())
        };
        let mut out = match res {
            Ok((text, structured)) => ToolOutput {
                text,
                structured: Some(structured),
                image_png: None,
                error: None,
            },
            Err(e) => ToolOutput::failure(e),
        };
        if let Some(Value::Object(o)) = out.structured.as_mut() {
            if let Some(img) = o.remove("__png") {
                out.image_png = img.as_str().map(str::to_string);
            }
            if !auto.is_empty() {
                for r in &auto {
                    out.text.push_str(&format!(
                        "\nNote: {} dialog {:?} was {} automatically by the dialog policy.",
                        r["type"].as_str().unwrap_or("?"),
                        r["message"].as_str().unwrap_or(""),
                        if r["action"] == "accept" {
                            "accepted"
                        } else {
                            "dismissed"
                        }
                    ));
                }
                o.insert("auto_handled_dialogs".into(), Value::Array(auto));
            }
            if !pending.is_empty() && name != "browser_snapshot" {
                out.text.push_str(&pending_banner(&pending));
                o.insert("pending_dialogs".into(), json!(pending));
            }
        }
        out
    }

    async fn dispatch(&self, name: &str, a: &Value) -> Done {
        if name != "browser_dialog" {
            self.prepare().await;
        }
        match name {
            "browser_navigate" => self.navigate(a).await,
            "browser_snapshot" => self.snapshot(a).await,
            "browser_click" => self.click(a).await,
            "browser_type" => self.type_text(a).await,
            "browser_select_option" => self.select_option(a).await,
            "browser_press" => self.press(a).await,
            "browser_scroll" => self.scroll(a).await,
            "browser_back" => self.back().await,
            "browser_screenshot" => self.screenshot(a).await,
            "browser_tabs" => self.tabs(a).await,
            "browser_tab_activate" => self.tab_activate(a).await,
            "browser_dialog" => self.dialog(a).await,
            "browser_cdp" => self.cdp(a).await,
            "browser_console" => self.console(a).await,
            "browser_find" => self.find(a).await,
            "browser_wait_for" => self.wait_for(a).await,
            "browser_hover" => self.hover(a).await,
            "browser_upload" => self.upload(a).await,
            _ => Err(ToolError::new("unknown_tool", format!("no tool named {name:?}"))),
        }
    }

    /// The current tab and its page session. Errors: `tab_crashed` / `tab_closed` /
    /// `session_stopped`, each naming the recovery.
    pub(crate) fn current(&self) -> Result<(String, String), ToolError> {
        let st = self.sup.state();
        if !st.active {
            return Err(ToolError::new(
                "session_stopped",
                format!(
                    "{}; restart tabgate or open a new session",
                    st.stopped_reason
                        .clone()
                        .unwrap_or_else(|| "the session is stopped".into())
                ),
            ));
        }
        let tab_id = st
            .current
            .clone()
            .ok_or_else(|| ToolError::new("no_tab", "the session has no tab; call browser_navigate"))?;
        let tab = st
            .tab(&tab_id)
            .ok_or_else(|| ToolError::new("no_tab", "the session has no tab; call browser_navigate"))?;
        match tab.state.as_str() {
            "crashed" => Err(ToolError::new(
                "tab_crashed",
                format!("tab {tab_id} crashed (renderer gone); browser_navigate reloads it in a fresh tab, browser_tabs lists the others"),
            )),
            "closed" => Err(ToolError::new("tab_closed", format!("tab {tab_id} was closed; browser_tabs lists the open ones"))),
            _ => match &tab.session_id {
                Some(s) => Ok((tab_id.clone(), s.clone())),
                None => Err(ToolError::new("tab_not_ready", format!("tab {tab_id} is still being attached; retry"))),
            },
        }
    }

    /// Closes the session's tabs and stops its supervisor.
    pub async fn close(&self) {
        self.sup.close_tabs().await;
        self.sup.stop("session closed");
    }
}

/// The banner every result carries while a dialog is pending.
pub(crate) fn pending_banner(p: &[tabgate_supervisor::PendingDialog]) -> String {
    let mut s = String::new();
    for d in p {
        s.push_str(&format!(
            "\n⚠ Pending {} dialog {} on tab {}: {:?}{} — the page is paused until you answer it with browser_dialog (accept or dismiss).",
            d.kind,
            d.id,
            d.tab_id,
            d.message,
            if d.kind == "prompt" { format!(" (default {:?})", d.default_prompt) } else { String::new() }
        ));
    }
    s
}
