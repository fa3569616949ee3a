//! One stored session at run time: its tool session (tab) when open, opened on first use
//! and closed when idle, and the counters that keep the two from racing.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tabgate_supervisor::SupervisorConfig;
use tabgate_tools::{Session, SessionConfig};
use tokio_util::sync::CancellationToken;

use crate::audit::Audit;
use crate::error::{gateway_error, ApiError};
use crate::gateway::Gateway;

/// How long opening a session's tab may take.
const OPEN_TIMEOUT: Duration = Duration::from_secs(15);
/// How long closing a session's tabs may take.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(6);

struct Live {
    session: Arc<Session>,
    audit: Audit,
}

/// A session's run-time state.
pub(crate) struct Slot {
    pub(crate) id: String,
    sup_cfg: SupervisorConfig,
    /// Held only while opening or closing the tab, never during a call.
    live: tokio::sync::Mutex<Option<Live>>,
    /// The open tool session, for readers that must not wait (status views).
    current: Mutex<Option<Arc<Session>>>,
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
    pub(crate) fn new(id: String, sup_cfg: SupervisorConfig) -> Slot {
        Slot {
            id,
            sup_cfg,
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
        lock(&self.current).clone()
    }

    /// True once the session was deleted.
    pub(crate) fn removed(&self) -> bool {
        self.removed.load(Ordering::SeqCst)
    }

    /// True while a call holds the session.
    pub(crate) fn busy(&self) -> bool {
        self.inflight.load(Ordering::SeqCst) > 0
    }

    /// Leases the open session, opening the session's tab first when it has none.
    ///
    /// Errors: the session was deleted (404), the tab cap is reached (429), the gateway
    /// is shutting down or the browser refused a new tab (503).
    pub(crate) async fn acquire(self: &Arc<Self>, gw: &Gateway) -> Result<Lease, ApiError> {
        let mut g = self.live.lock().await;
        if self.removed.load(Ordering::SeqCst) {
            return Err(ApiError::unknown_session(&self.id));
        }
        // A tool session whose supervisor gave up (the browser connection was lost for
        // good) is replaced: the stored session goes on in a fresh tab.
        if g.as_ref().is_some_and(|l| !l.session.supervisor().state().active) {
            if let Some(dead) = g.take() {
                tracing::warn!(session = %self.id, "the session's browser connection is gone; opening a new tab");
                self.finish(gw, dead).await;
            }
        }
        if g.is_none() {
            if gw.is_closing() {
                return Err(gateway_error("shutting_down", "tabgate is shutting down").retry_after(5));
            }
            gw.reserve_tab()?;
            let opened = tokio::time::timeout(
                OPEN_TIMEOUT,
                Session::open(
                    gw.browser().clone(),
                    SessionConfig {
                        supervisor: self.sup_cfg.clone(),
                        adopt_target: None,
                    },
                ),
            )
            .await;
            let session = match opened {
                Ok(Ok(s)) => Arc::new(s),
                Ok(Err(e)) => {
                    gw.release_tab();
                    let code = if e.code.starts_with("browser_") {
                        e.code.as_str()
                    } else {
                        "browser_unavailable"
                    };
                    return Err(gateway_error(
                        code,
                        format!("cannot open a tab for session {}: {}", self.id, e.message),
                    ));
                }
                Err(_) => {
                    gw.release_tab();
                    return Err(gateway_error(
                        "browser_unavailable",
                        format!(
                            "the browser did not open a tab for session {} within {OPEN_TIMEOUT:?}",
                            self.id
                        ),
                    ));
                }
            };
            tracing::info!(session = %self.id, "tab opened");
            let audit = Audit::start(gw.store().clone(), self.id.clone(), session.clone());
            *lock(&self.current) = Some(session.clone());
            *g = Some(Live { session, audit });
        }
        let session = g.as_ref().map(|l| l.session.clone()).expect("opened above");
        self.inflight.fetch_add(1, Ordering::SeqCst);
        Ok(Lease {
            slot: self.clone(),
            session,
        })
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
        let url = current_url(&l.session);
        let tabs: Vec<String> = {
            let st = l.session.supervisor().state();
            st.tabs
                .iter()
                .filter(|t| t.state != "closed")
                .map(|t| t.tab_id.clone())
                .collect()
        };
        if tokio::time::timeout(CLOSE_TIMEOUT, l.session.close()).await.is_err() {
            tracing::warn!(session = %self.id, "closing the session's tabs timed out");
            l.session.supervisor().stop("session closed");
        }
        wait_closed(gw, &self.id, &tabs).await;
        l.audit.stop().await;
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
        json!({
            "status": if st.active { "open" } else { "stopped" },
            "busy": self.busy(),
            "current_tab": current,
            "tabs": tabs,
            "pending_dialogs": st.pending,
        })
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
async fn wait_closed(gw: &Gateway, session: &str, tabs: &[String]) {
    if tabs.is_empty() {
        return;
    }
    let conn = gw.browser().conn();
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
