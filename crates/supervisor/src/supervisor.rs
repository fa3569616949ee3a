//! The supervisor handle: start, tabs, dialogs, waiting on state.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Value};
use tabgate_cdp::{CdpError, Connection, Event};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::policy::SupervisorConfig;
use crate::state::{now_epoch, DialogRecord, PendingDialog, SessionInfo, SessionKind, State, Tab};
use crate::Browser;

/// Name of the isolated world tabgate's scripts run in (`Page.createIsolatedWorld`).
pub const WORLD_NAME: &str = "__tabgate";

/// A supervisor failure with a stable `code` and a message that names the fix.
#[derive(Debug, Clone)]
pub struct SupervisorError {
    pub code: &'static str,
    pub message: String,
    pub details: Value,
}

impl SupervisorError {
    pub(crate) fn new(code: &'static str, message: impl Into<String>) -> Self {
        SupervisorError {
            code,
            message: message.into(),
            details: Value::Null,
        }
    }
}

impl From<CdpError> for SupervisorError {
    fn from(e: CdpError) -> Self {
        SupervisorError::new(e.code(), e.to_string())
    }
}

pub(crate) struct Inner {
    pub browser: Arc<Browser>,
    /// Our subscription on the current connection (renewed after a reconnect).
    pub sink: AtomicU64,
    /// Where events go; subscribed again on every new connection.
    pub tx: mpsc::UnboundedSender<Event>,
    pub cfg: SupervisorConfig,
    pub state: Mutex<State>,
    pub changed: watch::Sender<u64>,
}

/// One session's supervisor. Cheap to clone.
#[derive(Clone)]
pub struct CdpSupervisor {
    pub(crate) inner: Arc<Inner>,
}

impl CdpSupervisor {
    /// Starts supervising on `browser`: subscribes to its events and opens (or adopts,
    /// when `adopt` names an existing page target) the session's first tab.
    ///
    /// Errors: the browser refused `Target.createTarget` / `Target.attachToTarget`, or the
    /// connection is closed.
    pub async fn start(
        browser: Arc<Browser>,
        cfg: SupervisorConfig,
        adopt: Option<String>,
    ) -> Result<CdpSupervisor, SupervisorError> {
        let conn = browser.conn();
        let (tx, mut rx) = mpsc::unbounded_channel::<Event>();
        let sink = conn.subscribe(tx.clone());
        let (changed, _) = watch::channel(0u64);
        let inner = Arc::new(Inner {
            browser,
            sink: AtomicU64::new(sink),
            tx,
            cfg,
            state: Mutex::new(State {
                active: true,
                ..State::default()
            }),
            changed,
        });
        let weak = Arc::downgrade(&inner);
        tokio::spawn(async move {
            while let Some(ev) = rx.recv().await {
                let Some(inner) = weak.upgrade() else { break };
                inner.handle(ev);
                inner.changed.send_modify(|v| *v += 1);
            }
        });
        let sup = CdpSupervisor { inner };
        // Browser-level target discovery is how popups of our tabs are found.
        conn.call(None, "Target.setDiscoverTargets", json!({"discover": true}), 10_000)
            .await?;
        let target = match adopt {
            Some(t) => t,
            None => sup.create_target("about:blank").await?,
        };
        sup.adopt_tab(&target, None).await?;
        sup.inner.lock().current = Some(target);
        Ok(sup)
    }

    /// Each tab gets its own window: it stays visible (it renders, so screenshots and
    /// input work) and opening it never switches away from, and so never dismisses the
    /// dialogs of, another session's tab.
    async fn create_target(&self, url: &str) -> Result<String, SupervisorError> {
        let r = self
            .inner
            .conn()
            .call(
                None,
                "Target.createTarget",
                json!({"url": url, "newWindow": true}),
                10_000,
            )
            .await?;
        r.get("targetId")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| SupervisorError::new("cdp_error", "Target.createTarget returned no targetId"))
    }

    /// Registers `target_id` as a tab of this session and attaches to it.
    pub(crate) async fn adopt_tab(&self, target_id: &str, opener: Option<String>) -> Result<(), SupervisorError> {
        {
            let mut st = self.inner.lock();
            if st.tab(target_id).is_none() {
                st.seq += 1;
                let seq = st.seq;
                st.tabs.push(Tab {
                    tab_id: target_id.to_string(),
                    url: String::new(),
                    title: String::new(),
                    opener_tab: opener,
                    state: "open".into(),
                    session_id: None,
                    seq,
                });
            }
        }
        self.inner.attach_page(target_id).await
    }

    /// Opens a new tab of this session at `url` and makes it current. Returns its tab id.
    pub async fn new_tab(&self, url: &str) -> Result<String, SupervisorError> {
        let t = self.create_target(url).await?;
        self.adopt_tab(&t, None).await?;
        self.inner.lock().current = Some(t.clone());
        self.inner.changed.send_modify(|v| *v += 1);
        Ok(t)
    }

    /// Re-creates a crashed or lost tab in place: closes the old target and opens a new one
    /// that takes over as current. Returns the new tab id.
    pub async fn replace_tab(&self, tab_id: &str) -> Result<String, SupervisorError> {
        let _ = self
            .inner
            .conn()
            .call(None, "Target.closeTarget", json!({"targetId": tab_id}), 3_000)
            .await;
        {
            let mut st = self.inner.lock();
            if let Some(t) = st.tab_mut(tab_id) {
                t.state = "closed".into();
            }
            let gone: Vec<PendingDialog> = st.pending.iter().filter(|d| d.tab_id == tab_id).cloned().collect();
            st.pending.retain(|d| d.tab_id != tab_id);
            for d in gone {
                st.push_recent(record(&d, "remote", None));
            }
        }
        self.new_tab("about:blank").await
    }

    /// Makes `tab_id` the current tab of this session (the tab tools act on).
    pub async fn activate(&self, tab_id: &str) -> Result<(), SupervisorError> {
        {
            let st = self.inner.lock();
            match st.tab(tab_id) {
                None => {
                    let known: Vec<_> = st
                        .tabs
                        .iter()
                        .filter(|t| t.state != "closed")
                        .map(|t| t.tab_id.clone())
                        .collect();
                    return Err(SupervisorError {
                        code: "unknown_tab",
                        message: format!("no tab {tab_id} in this session; call browser_tabs for the list"),
                        details: json!({"tabs": known}),
                    });
                }
                Some(t) if t.state == "closed" => {
                    return Err(SupervisorError::new(
                        "tab_closed",
                        format!("tab {tab_id} is closed; call browser_tabs and pick an open one"),
                    ))
                }
                _ => {}
            }
        }
        // No Target.activateTarget: bringing a tab to the front dismisses JavaScript dialogs
        // in the tab that loses it, which may belong to another session. Focus emulation
        // (set on every tab) keeps input working without it.
        self.inner.lock().current = Some(tab_id.to_string());
        self.inner.changed.send_modify(|v| *v += 1);
        Ok(())
    }

    /// Locks the state for a short, synchronous read. Never hold the guard across `.await`.
    pub fn state(&self) -> MutexGuard<'_, State> {
        self.inner.lock()
    }

    /// The CDP connection this supervisor uses (the browser's current one).
    pub fn conn(&self) -> Connection {
        self.inner.conn()
    }

    /// The browser this supervisor runs in.
    pub fn browser(&self) -> &Arc<Browser> {
        &self.inner.browser
    }

    /// The settings this supervisor was started with.
    pub fn config(&self) -> &SupervisorConfig {
        &self.inner.cfg
    }

    /// A receiver that ticks on every state change (each processed CDP event).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.changed.subscribe()
    }

    /// Waits until `f` returns `Some` for the current state, or `deadline` passes (→ `None`).
    /// `f` runs under the state lock: keep it short.
    pub async fn wait_for<T>(&self, deadline: Instant, mut f: impl FnMut(&State) -> Option<T>) -> Option<T> {
        let mut rx = self.inner.changed.subscribe();
        loop {
            if let Some(x) = f(&self.inner.lock()) {
                return Some(x);
            }
            tokio::select! {
                r = rx.changed() => if r.is_err() { return None },
                _ = tokio::time::sleep_until(deadline) => return f(&self.inner.lock()),
            }
        }
    }

    /// Answers a pending dialog (study 2.9, `respond_to_dialog`): `action` is `accept` or
    /// `dismiss`; `dialog_id` is needed only when more than one is pending. The dialog is
    /// retired as `closed_by: agent` whatever the browser answers (an error usually means it
    /// already closed).
    pub async fn respond_dialog(
        &self,
        action: &str,
        prompt_text: Option<&str>,
        dialog_id: Option<&str>,
    ) -> Result<DialogRecord, SupervisorError> {
        let accept = match action {
            "accept" => true,
            "dismiss" => false,
            other => {
                return Err(SupervisorError::new(
                    "invalid_argument",
                    format!("action must be 'accept' or 'dismiss', got '{other}'"),
                ))
            }
        };
        let d = {
            let mut st = self.inner.lock();
            let ids: Vec<String> = st.pending.iter().map(|d| d.id.clone()).collect();
            let idx = match dialog_id {
                _ if st.pending.is_empty() => {
                    return Err(SupervisorError::new(
                        "no_dialog",
                        "no dialog is currently open; browser_snapshot lists pending_dialogs and recent_dialogs",
                    ))
                }
                Some(id) => st
                    .pending
                    .iter()
                    .position(|d| d.id == id)
                    .ok_or_else(|| SupervisorError {
                        code: "unknown_dialog",
                        message: format!("dialog_id '{id}' not found (pending: {ids:?})"),
                        details: json!({"pending": st.pending}),
                    })?,
                // several pending: the one on the current tab is the obvious choice
                None if st.pending.len() > 1
                    && st
                        .pending
                        .iter()
                        .filter(|d| Some(&d.tab_id) == st.current.as_ref())
                        .count()
                        == 1 =>
                {
                    st.pending
                        .iter()
                        .position(|d| Some(&d.tab_id) == st.current.as_ref())
                        .unwrap_or(0)
                }
                None if st.pending.len() > 1 => {
                    return Err(SupervisorError {
                        code: "ambiguous_dialog",
                        message: format!("{} pending dialogs; pass dialog_id, one of {ids:?}", ids.len()),
                        details: json!({"pending": st.pending}),
                    })
                }
                None => 0,
            };
            let d = st.pending.remove(idx);
            st.push_recent(record(&d, "agent", Some(action)));
            d
        };
        self.inner.changed.send_modify(|v| *v += 1);
        let answered = self.inner.answer(&d, accept, prompt_text.map(str::to_string)).await;
        if answered.is_err() && d.stale {
            // Chromium lets only the CDP session that saw a native dialog answer it; this one
            // opened before the connection was re-established. Keep it pending and say so.
            let mut st = self.inner.lock();
            st.recent.retain(|r| r.id != d.id);
            st.pending.insert(0, d.clone());
            return Err(SupervisorError {
                code: "dialog_unanswerable",
                message: format!(
                    "dialog {} opened before the CDP connection to the browser was re-established, and Chromium lets only the old connection answer it: browser_navigate replaces the blocked tab (the page gets no answer)",
                    d.id
                ),
                details: json!({"dialog": d}),
            });
        }
        Ok(record(&d, "agent", Some(action)))
    }

    /// Stops supervising: unsubscribes from the connection; the state reads inactive.
    /// Tabs are left open (see [`CdpSupervisor::close_tabs`]).
    pub fn stop(&self, reason: &str) {
        self.inner.conn().unsubscribe(self.inner.sink.load(Ordering::Relaxed));
        let mut st = self.inner.lock();
        st.active = false;
        st.stopped = true;
        st.stopped_reason = Some(reason.to_string());
    }

    /// Closes every tab of this session (`Target.closeTarget`) and waits (≤ 3 s) until the
    /// browser has dropped them. Returns the tab ids still open after that (normally none).
    pub async fn close_tabs(&self) -> Vec<String> {
        let ids: Vec<String> = self
            .inner
            .lock()
            .tabs
            .iter()
            .filter(|t| t.state != "closed")
            .map(|t| t.tab_id.clone())
            .collect();
        let conn = self.inner.conn();
        for id in &ids {
            let _ = conn
                .call(None, "Target.closeTarget", json!({"targetId": id}), 3_000)
                .await;
        }
        // Target.closeTarget answers before the target is gone: wait for the
        // Target.targetDestroyed events (bounded), and return the ids still open
        let deadline = Instant::now() + Duration::from_millis(CLOSE_WAIT_MS);
        let open = |st: &State| -> Vec<String> {
            ids.iter()
                .filter(|id| st.tab(id).is_some_and(|t| t.state != "closed"))
                .cloned()
                .collect()
        };
        self.wait_for(deadline, |st| open(st).is_empty().then_some(())).await;
        open(&self.inner.lock())
    }
}

/// How long [`CdpSupervisor::close_tabs`] waits for the browser to drop closed tabs, ms.
const CLOSE_WAIT_MS: u64 = 3_000;

pub(crate) fn record(d: &PendingDialog, by: &str, action: Option<&str>) -> DialogRecord {
    DialogRecord {
        id: d.id.clone(),
        kind: d.kind.clone(),
        message: d.message.clone(),
        opened_at: d.opened_at,
        closed_at: now_epoch(),
        closed_by: by.to_string(),
        action: action.map(str::to_string),
        frame_id: d.frame_id.clone(),
        tab_id: d.tab_id.clone(),
    }
}

impl Inner {
    pub(crate) fn conn(&self) -> Connection {
        self.browser.conn()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Attaches to a page target, enables what the supervisor needs, and seeds its frames.
    pub(crate) async fn attach_page(self: &Arc<Self>, target_id: &str) -> Result<(), SupervisorError> {
        let sid = self
            .conn()
            .attach_to_target(target_id, self.sink.load(Ordering::Relaxed), 10_000)
            .await?;
        {
            let mut st = self.lock();
            st.sessions.insert(
                sid.clone(),
                SessionInfo {
                    target_id: target_id.to_string(),
                    kind: SessionKind::Page,
                    tab_id: target_id.to_string(),
                },
            );
            if let Some(t) = st.tab_mut(target_id) {
                t.session_id = Some(sid.clone());
            }
        }
        self.prepare_session(&sid, target_id, SessionKind::Page).await;
        Ok(())
    }

    /// Enables `Page`, `Runtime`, lifecycle events and nested auto-attach on a session,
    /// seeds its frames from `Page.getFrameTree`, then resumes it
    /// (`Runtime.runIfWaitingForDebugger`; a child never resumed stalls the page's load).
    pub(crate) async fn prepare_session(self: &Arc<Self>, sid: &str, target_id: &str, kind: SessionKind) {
        let c = &self.conn();
        let s = Some(sid);
        let t = 5_000;
        let (_, _, _, _, tree) = tokio::join!(
            c.call(s, "Page.enable", json!({}), t),
            c.call(s, "Runtime.enable", json!({}), t),
            c.call(s, "Page.setLifecycleEventsEnabled", json!({"enabled": true}), t),
            c.call(
                s,
                "Target.setAutoAttach",
                json!({"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true}),
                t
            ),
            c.call(s, "Page.getFrameTree", json!({}), t),
        );
        if kind == SessionKind::Page {
            // a tab of one session is a background tab for the others; focus emulation
            // keeps focus, keyboard and input working in every one of them
            let _ = tokio::join!(
                c.call(s, "Inspector.enable", json!({}), t),
                c.call(s, "Emulation.setFocusEmulationEnabled", json!({"enabled": true}), t),
            );
        }
        match tree {
            Ok(tree) => self.seed(sid, target_id, &kind, &tree),
            Err(_) => {
                // the renderer is blocked (a dialog left open across a reconnect): seed the
                // frames as soon as it answers again
                let me = self.clone();
                let (sid, target_id, kind) = (sid.to_string(), target_id.to_string(), kind.clone());
                tokio::spawn(async move {
                    for _ in 0..120 {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        let r = me.conn().call(Some(&sid), "Page.getFrameTree", json!({}), 2_000).await;
                        match r {
                            Ok(tree) => return me.seed(&sid, &target_id, &kind, &tree),
                            Err(e) if e.is_target_gone() => return,
                            Err(_) => {}
                        }
                    }
                });
            }
        }
        if self.cfg.dialog_bridge {
            crate::bridge::install(c, sid).await;
        }
        let _ = c.call(s, "Runtime.runIfWaitingForDebugger", json!({}), t).await;
        self.changed.send_modify(|v| *v += 1);
    }

    fn seed(&self, sid: &str, target_id: &str, kind: &SessionKind, tree: &Value) {
        let mut st = self.lock();
        if let Some(tab) = st.tab_of_session(sid) {
            seed_frames(&mut st, tree.get("frameTree"), sid, &tab, target_id, kind);
        }
        drop(st);
        self.changed.send_modify(|v| *v += 1);
    }

    /// Sends the answer for a dialog on the session it fired on. Errors are ignored: the
    /// page must be unblocked whatever happens, and "no dialog is showing" means it closed.
    pub(crate) async fn answer(
        &self,
        d: &PendingDialog,
        accept: bool,
        prompt_text: Option<String>,
    ) -> Result<(), CdpError> {
        if let Some(rid) = &d.bridge_request_id {
            let text = if d.kind == "prompt" && accept {
                prompt_text.unwrap_or_else(|| d.default_prompt.clone())
            } else {
                String::new()
            };
            let p = crate::bridge::fulfill(rid, accept, &text, &d.id);
            return self
                .conn()
                .call(Some(&d.session_id), "Fetch.fulfillRequest", p, 5_000)
                .await
                .map(|_| ());
        }
        let mut p = json!({"accept": accept});
        if d.kind == "prompt" {
            p["promptText"] = json!(prompt_text.unwrap_or_else(|| if accept {
                d.default_prompt.clone()
            } else {
                String::new()
            }));
        }
        self.conn()
            .call(Some(&d.session_id), "Page.handleJavaScriptDialog", p, 5_000)
            .await
            .map(|_| ())
    }

    /// Arms the `must_respond` watchdog for dialog `id`: after the timeout it is retired as
    /// `closed_by: watchdog` and dismissed.
    pub(crate) fn arm_watchdog(self: &Arc<Self>, id: String) {
        let weak = Arc::downgrade(self);
        let ms = self.cfg.dialog_timeout_ms;
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            let Some(inner) = weak.upgrade() else { return };
            let d = {
                let mut st = inner.lock();
                let Some(i) = st.pending.iter().position(|d| d.id == id) else {
                    return;
                };
                let d = st.pending.remove(i);
                st.push_recent(record(&d, "watchdog", Some("dismiss")));
                d
            };
            tracing::warn!(dialog = %d.id, "dialog auto-dismissed after {ms} ms (must_respond watchdog)");
            inner.changed.send_modify(|v| *v += 1);
            let _ = inner.answer(&d, false, None).await;
        });
    }
}

/// Upserts frames from a `Page.getFrameTree` result.
fn seed_frames(st: &mut State, tree: Option<&Value>, sid: &str, tab: &str, target_id: &str, kind: &SessionKind) {
    let Some(tree) = tree else { return };
    // The reply may be older than events already applied (a popup navigating while we
    // attach): seed only frames not known yet, never overwrite newer state.
    if let Some(f) = tree.get("frame").filter(|f| {
        f["id"]
            .as_str()
            .is_some_and(|id| !st.frames.contains_key(id) || st.frames[id].loader_id.is_empty())
    }) {
        crate::events::upsert_frame(st, f, sid, tab, kind == &SessionKind::Iframe && f["id"] == target_id);
    }
    if let Some(children) = tree.get("childFrames").and_then(Value::as_array) {
        for c in children {
            seed_frames(st, Some(c), sid, tab, target_id, kind);
        }
    }
}
