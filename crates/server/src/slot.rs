//! One stored session at run time: its tool session (tab) when open, opened on first use
//! and closed when idle, and the counters that keep the two from racing.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tabgate_supervisor::{Browser, ConsoleEntry, DialogRecord, SupervisorConfig};
use tabgate_tools::{Session, SessionConfig};
use tokio_util::sync::CancellationToken;

use crate::audit::Audit;
use crate::error::{gateway_error, ApiError};
use crate::gateway::Gateway;
use crate::pool::{lost_error, Endpoint, Health};

/// How long opening a session's tab may take.
const OPEN_TIMEOUT: Duration = Duration::from_secs(15);
/// How long closing a session's tabs may take.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(6);

/// An open tool session and where it runs.
#[derive(Clone)]
pub(crate) struct Open {
    pub(crate) session: Arc<Session>,
    pub(crate) endpoint: Arc<Endpoint>,
    browser: Arc<Browser>,
    /// The endpoint's loss epoch when the tab was opened.
    epoch: u64,
}

impl Open {
    /// Why this tab's browser is gone, if it is: its endpoint went down since it opened,
    /// or its supervisor gave up on the connection.
    pub(crate) fn lost(&self) -> Option<String> {
        if self.endpoint.loss_epoch() > self.epoch {
            return Some(self.endpoint.loss_reason(&self.browser, None));
        }
        let stopped = {
            let st = self.session.supervisor().state();
            if st.active {
                return None;
            }
            st.stopped_reason.clone()
        };
        Some(self.endpoint.loss_reason(&self.browser, stopped.as_deref()))
    }

    /// After a call failed on a dropped connection: waits up to `max` until the browser
    /// reads as lost (`Some(reason)`) or the connection is back (`None`).
    pub(crate) async fn settle_lost(&self, max: Duration) -> Option<String> {
        let deadline = Instant::now() + max;
        loop {
            if let Some(r) = self.lost() {
                return Some(r);
            }
            if self.browser.conn().closed_reason().is_none() || Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Resolves (with the reason) once the tab's browser is lost.
    pub(crate) async fn wait_lost(&self) -> String {
        let mut ep = self.endpoint.subscribe_loss();
        let mut sup = self.session.supervisor().subscribe();
        loop {
            if let Some(r) = self.lost() {
                return r;
            }
            tokio::select! {
                r = ep.changed() => if r.is_err() { std::future::pending::<()>().await },
                r = sup.changed() => if r.is_err() { std::future::pending::<()>().await },
            }
        }
    }
}

struct Live {
    open: Open,
    audit: Audit,
}

/// What a session keeps when its browser is lost and it moves to a new tab: the recent
/// dialogs (those still open are closed `remote`), the console ring and the dialog counter
/// (new dialogs get new ids).
struct History {
    recent: VecDeque<DialogRecord>,
    console: VecDeque<ConsoleEntry>,
    next_dialog: u64,
}

impl History {
    fn take(s: &Session) -> History {
        let mut st = s.supervisor().state();
        let gone: Vec<_> = st.pending.drain(..).collect();
        for d in gone {
            st.push_recent(DialogRecord {
                id: d.id,
                kind: d.kind,
                message: d.message,
                opened_at: d.opened_at,
                closed_at: tabgate_supervisor::now_epoch(),
                closed_by: "remote".into(),
                action: None,
                frame_id: d.frame_id,
                tab_id: d.tab_id,
            });
        }
        History {
            recent: st.recent.clone(),
            console: st.console.clone(),
            next_dialog: st.next_dialog,
        }
    }

    /// Puts the history in front of what the new session has seen; returns the dialog ids
    /// it carried (already in the audit).
    fn restore(self, s: &Session) -> Vec<String> {
        let ids = self.recent.iter().map(|r| r.id.clone()).collect();
        let mut st = s.supervisor().state();
        let newer = std::mem::replace(&mut st.recent, self.recent);
        for r in newer {
            st.push_recent(r);
        }
        let newer = std::mem::replace(&mut st.console, self.console);
        for e in newer {
            st.push_console(e);
        }
        st.next_dialog = st.next_dialog.max(self.next_dialog);
        ids
    }
}

/// A session's run-time state.
pub(crate) struct Slot {
    pub(crate) id: String,
    sup_cfg: SupervisorConfig,
    /// Pinned to this endpoint (named at creation): never placed elsewhere.
    pinned: Option<String>,
    /// Held only while opening or closing the tab, never during a call.
    live: tokio::sync::Mutex<Option<Live>>,
    /// The open tool session, for readers that must not wait (status views).
    current: Mutex<Option<Open>>,
    /// Calls holding the open session (a lease), `browser_dialog` included.
    inflight: AtomicUsize,
    /// Calls other than `browser_dialog` admitted and not finished (queue bound → 429).
    pub(crate) queued: AtomicUsize,
    last_used: Mutex<Instant>,
    last_written: Mutex<Option<Instant>>,
    removed: AtomicBool,
    /// Cancelled when the session is deleted or the gateway shuts down: calls in flight
    /// return at once instead of waiting on a closed tab.
    pub(crate) cancel: CancellationToken,
}

/// A call's hold on an open session: while it lives the tab is not closed as idle.
pub(crate) struct Lease {
    slot: Arc<Slot>,
    /// The open tool session.
    pub(crate) session: Arc<Session>,
    /// Where it runs.
    pub(crate) open: Open,
}

impl Drop for Lease {
    fn drop(&mut self) {
        *lock(&self.slot.last_used) = Instant::now();
        self.slot.inflight.fetch_sub(1, Ordering::SeqCst);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Slot {
    pub(crate) fn new(id: String, sup_cfg: SupervisorConfig, pinned: Option<String>) -> Slot {
        Slot {
            id,
            sup_cfg,
            pinned,
            live: tokio::sync::Mutex::new(None),
            current: Mutex::new(None),
            inflight: AtomicUsize::new(0),
            queued: AtomicUsize::new(0),
            last_used: Mutex::new(Instant::now()),
            last_written: Mutex::new(None),
            removed: AtomicBool::new(false),
            cancel: CancellationToken::new(),
        }
    }

    /// The open tool session, if any.
    pub(crate) fn session(&self) -> Option<Arc<Session>> {
        lock(&self.current).as_ref().map(|o| o.session.clone())
    }

    /// Why the open tab's browser is gone, if it is.
    pub(crate) fn lost(&self) -> Option<String> {
        let open = lock(&self.current).clone();
        open.and_then(|o| o.lost())
    }

    /// True when the session is pinned to its endpoint.
    pub(crate) fn pinned(&self) -> bool {
        self.pinned.is_some()
    }

    /// True once the session was deleted.
    pub(crate) fn removed(&self) -> bool {
        self.removed.load(Ordering::SeqCst)
    }

    /// True while a call holds the session.
    pub(crate) fn busy(&self) -> bool {
        self.inflight.load(Ordering::SeqCst) > 0
    }

    /// Leases the open session, opening the session's tab first when it has none (on
    /// the session's endpoint, placing it first when it has none).
    ///
    /// A session whose browser is lost (its endpoint went down, or its connection is gone
    /// for good) fails with 503 `browser_lost`, except for `browser_navigate`, which
    /// places it again (unless pinned) and opens a new tab, carrying the dialog and
    /// console history over.
    ///
    /// Errors: the session was deleted (404), the tab cap is reached (429), the gateway
    /// is shutting down, the browser is lost or refused a new tab, or the pool has no room
    /// (503).
    pub(crate) async fn acquire(self: &Arc<Self>, gw: &Gateway, tool: &str) -> Result<Lease, ApiError> {
        let navigate = tool == "browser_navigate";
        let mut g = self.live.lock().await;
        if self.removed.load(Ordering::SeqCst) {
            return Err(ApiError::unknown_session(&self.id));
        }
        let mut history = None;
        let mut replace = false;
        if let Some((reason, ep)) = g
            .as_ref()
            .and_then(|l| l.open.lost().map(|r| (r, l.open.endpoint.clone())))
        {
            if !navigate {
                return Err(lost_error(&self.id, &ep, &reason, self.pinned.is_some()));
            }
            if let Some(dead) = g.take() {
                tracing::warn!(session = %self.id, endpoint = %ep.name(), "the session's browser is lost ({reason}); opening a new tab");
                history = Some(History::take(&dead.open.session));
                self.finish(gw, dead).await;
            }
            replace = true;
        }
        if g.is_none() {
            if gw.is_closing() {
                return Err(gateway_error("shutting_down", "tabgate is shutting down").retry_after(5));
            }
            let pool = gw.pool();
            let mut ep = pool.placement(&self.id);
            // an idle session whose endpoint went down meanwhile is lost too; a navigate
            // places it elsewhere, or (pinned) tries its endpoint, which may be back
            if let Some(e) = ep
                .clone()
                .filter(|e| e.health() == Health::Down && e.kind() != tabgate_config::EndpointKind::Launch)
            {
                if !navigate {
                    let reason = format!(
                        "the endpoint is down ({})",
                        e.error().unwrap_or_else(|| "unreachable".into())
                    );
                    return Err(lost_error(&self.id, &e, &reason, self.pinned.is_some()));
                }
                replace = true;
            }
            if replace && self.pinned.is_none() {
                ep = None;
            }
            let ep = match ep {
                Some(e) => e,
                None => pool.place(&self.id, self.pinned.as_deref()).await?,
            };
            gw.reserve_tab()?;
            let opened = tokio::time::timeout(OPEN_TIMEOUT, self.open_on(&ep)).await;
            let open = match opened {
                Ok(Ok(o)) => o,
                Ok(Err(msg)) => {
                    gw.release_tab();
                    if ep.health() == Health::Down {
                        return Err(lost_error(&self.id, &ep, &msg, self.pinned.is_some()));
                    }
                    return Err(gateway_error(
                        "browser_unavailable",
                        format!("cannot open a tab for session {}: {msg}", self.id),
                    )
                    .with(json!({"session_id": self.id, "endpoint": ep.name()})));
                }
                Err(_) => {
                    gw.release_tab();
                    return Err(gateway_error(
                        "browser_unavailable",
                        format!(
                            "{} did not open a tab for session {} within {OPEN_TIMEOUT:?}",
                            ep.describe(),
                            self.id
                        ),
                    )
                    .with(json!({"session_id": self.id, "endpoint": ep.name()})));
                }
            };
            let known = history.map(|h| h.restore(&open.session)).unwrap_or_default();
            tracing::info!(session = %self.id, endpoint = %ep.name(), "tab opened");
            let audit = Audit::start(gw.store().clone(), self.id.clone(), open.session.clone(), known);
            *lock(&self.current) = Some(open.clone());
            *g = Some(Live { open, audit });
        }
        let open = g.as_ref().map(|l| l.open.clone()).expect("opened above");
        self.inflight.fetch_add(1, Ordering::SeqCst);
        Ok(Lease {
            slot: self.clone(),
            session: open.session.clone(),
            open,
        })
    }

    /// Opens the session's first tab on `ep`. Errors name the endpoint (scrubbed).
    async fn open_on(&self, ep: &Arc<Endpoint>) -> Result<Open, String> {
        let epoch = ep.loss_epoch();
        let browser = ep.browser_for_session().await?;
        let adopt = ep.initial_page(&browser).await;
        let opened = Session::open(
            browser.clone(),
            SessionConfig {
                supervisor: ep.supervisor_config(self.sup_cfg.clone()),
                adopt_target: adopt,
            },
        )
        .await;
        match opened {
            Ok(s) => {
                ep.session_opened();
                Ok(Open {
                    session: Arc::new(s),
                    endpoint: ep.clone(),
                    browser,
                    epoch,
                })
            }
            Err(e) => {
                ep.session_opened();
                ep.session_closed(&browser).await;
                Err(format!("{}: {}", ep.describe(), ep.scrub(&e.message)))
            }
        }
    }

    /// Notes the answer an agent gave to prompt `dialog_id` in the audit.
    pub(crate) async fn record_answer(&self, dialog_id: &str, text: &str) {
        if let Some(l) = self.live.lock().await.as_ref() {
            l.audit.record_answer(dialog_id, text);
        }
    }

    /// Closes the tab when nobody used it for `idle`; returns whether it did.
    pub(crate) async fn close_if_idle(&self, gw: &Gateway, idle: Duration) -> bool {
        let Ok(mut g) = self.live.try_lock() else {
            return false; // being opened or closed right now
        };
        if g.is_none() || self.busy() || lock(&self.last_used).elapsed() < idle {
            return false;
        }
        if let Some(l) = g.take() {
            tracing::info!(session = %self.id, "closing the tab of an idle session");
            // closed under the lock: a concurrent close (delete, shutdown) waits for it
            self.finish(gw, l).await;
        }
        true
    }

    /// Closes the tab whatever is running (delete, shutdown): calls in flight are cancelled.
    /// With `remove`, later calls get `unknown_session`. Returns once the tab is closed,
    /// also when another close of this slot was already under way.
    pub(crate) async fn close(&self, gw: &Gateway, remove: bool) {
        if remove {
            self.removed.store(true, Ordering::SeqCst);
        }
        self.cancel.cancel();
        let mut g = self.live.lock().await;
        if let Some(l) = g.take() {
            self.finish(gw, l).await;
        }
    }

    async fn finish(&self, gw: &Gateway, l: Live) {
        *lock(&self.current) = None;
        let Live { open, audit } = l;
        let url = current_url(&open.session);
        if open.browser.conn().closed_reason().is_some() {
            // the browser is gone and its tabs with it: nothing to close
            open.session.supervisor().stop("session closed");
        } else {
            let tabs: Vec<String> = {
                let st = open.session.supervisor().state();
                st.tabs
                    .iter()
                    .filter(|t| t.state != "closed")
                    .map(|t| t.tab_id.clone())
                    .collect()
            };
            if tokio::time::timeout(CLOSE_TIMEOUT, open.session.close()).await.is_err() {
                tracing::warn!(session = %self.id, "closing the session's tabs timed out");
                open.session.supervisor().stop("session closed");
            }
            wait_closed(&open.browser, &self.id, &tabs).await;
        }
        audit.stop().await;
        open.endpoint.session_closed(&open.browser).await;
        gw.release_tab();
        if !self.removed.load(Ordering::SeqCst) {
            if let Err(e) = gw
                .store()
                .touch(&self.id, tabgate_supervisor::now_epoch(), url.as_deref())
            {
                tracing::warn!("{e}");
            }
        }
    }

    /// Writes `last_used_at` (and the current URL) at most every few seconds.
    pub(crate) fn touch(&self, gw: &Gateway) {
        {
            let mut w = lock(&self.last_written);
            if w.is_some_and(|t| t.elapsed() < Duration::from_secs(2)) {
                return;
            }
            *w = Some(Instant::now());
        }
        let url = self.session().and_then(|s| current_url(&s));
        if let Err(e) = gw
            .store()
            .touch(&self.id, tabgate_supervisor::now_epoch(), url.as_deref())
        {
            tracing::warn!("{e}");
        }
    }

    /// The run-time part of a session's status: `status`, `busy`, `current_tab`, `tabs`,
    /// `pending_dialogs`.
    pub(crate) fn view(&self) -> Value {
        let lost = self.lost();
        let Some(s) = self.session() else {
            return Slot::idle_view();
        };
        let st = s.supervisor().state();
        let tabs: Vec<Value> = st
            .tabs
            .iter()
            .filter(|t| t.state != "closed")
            .map(|t| {
                json!({"tab_id": t.tab_id, "url": t.url, "title": t.title, "state": t.state,
                       "opener_tab": t.opener_tab, "current": st.current.as_deref() == Some(t.tab_id.as_str())})
            })
            .collect();
        let current = st
            .current
            .as_ref()
            .and_then(|c| st.tab(c))
            .map(|t| json!({"tab_id": t.tab_id, "url": t.url, "title": t.title, "state": t.state}));
        let mut v = json!({
            "status": if lost.is_some() { "lost" } else if st.active { "open" } else { "stopped" },
            "busy": self.busy(),
            "current_tab": current,
            "tabs": tabs,
            "pending_dialogs": st.pending,
        });
        if let Some(r) = lost {
            v["lost_reason"] = json!(r);
        }
        v
    }
}

impl Slot {
    /// The run-time status of a session without a tab.
    pub(crate) fn idle_view() -> Value {
        json!({"status": "idle", "busy": false, "current_tab": null, "tabs": [], "pending_dialogs": []})
    }
}

/// Waits (up to 2 s) until the browser no longer lists `tabs`: `Target.closeTarget`
/// answers before the target is gone, and a deleted session's tabs must be gone when
/// DELETE answers. Survivors are closed once more, then logged.
async fn wait_closed(browser: &Browser, session: &str, tabs: &[String]) {
    if tabs.is_empty() {
        return;
    }
    let conn = browser.conn();
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut retried = false;
    loop {
        let open: Vec<String> = match conn.call(None, "Target.getTargets", json!({}), 2_000).await {
            Ok(r) => r["targetInfos"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t["targetId"].as_str())
                .filter(|id| tabs.iter().any(|x| x == id))
                .map(str::to_string)
                .collect(),
            Err(_) => return, // the browser is gone, and so are its tabs
        };
        if open.is_empty() {
            return;
        }
        if Instant::now() >= deadline {
            tracing::warn!(session, ?open, "tabs still open after closing the session");
            return;
        }
        if !retried && deadline.saturating_duration_since(Instant::now()) < Duration::from_secs(1) {
            retried = true;
            for id in &open {
                let _ = conn
                    .call(None, "Target.closeTarget", json!({"targetId": id}), 1_000)
                    .await;
            }
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn current_url(s: &Session) -> Option<String> {
    let st = s.supervisor().state();
    st.current
        .as_ref()
        .and_then(|c| st.tab(c))
        .map(|t| t.url.clone())
        .filter(|u| !u.is_empty() && u != "about:blank")
}
