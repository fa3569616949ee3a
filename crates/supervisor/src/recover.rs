//! Surviving a dropped CDP connection (study 2.5, pitfall 2.14-2): reconnect with backoff,
//! re-attach the session's tabs, keep pending dialogs (answered on the tab's new session;
//! their watchdogs keep running), and give up with a clear reason after the last attempt.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::supervisor::Inner;

/// Longest pause between reconnect attempts, ms (study 2.2).
const BACKOFF_CAP_MS: u64 = 10_000;

impl Inner {
    pub(crate) async fn recover(self: Arc<Self>, reason: String) {
        let mut delay = self.cfg.reconnect_backoff_ms.max(1);
        let attempts = self.cfg.reconnect_attempts;
        for attempt in 1..=attempts {
            tokio::time::sleep(Duration::from_millis(delay)).await;
            if self.lock().stopped {
                return;
            }
            match self.browser.reconnect().await {
                Ok(_) if self.lock().stopped => return,
                Ok((conn, relaunched)) => {
                    self.sink.store(conn.subscribe(self.tx.clone()), Ordering::Relaxed);
                    let _ = conn
                        .call(None, "Target.setDiscoverTargets", json!({"discover": true}), 5_000)
                        .await;
                    self.reattach(relaunched).await;
                    let mut st = self.lock();
                    st.reconnecting = false;
                    st.active = true;
                    drop(st);
                    self.changed.send_modify(|v| *v += 1);
                    tracing::info!("CDP connection restored after attempt {attempt}");
                    return;
                }
                Err(e) => {
                    tracing::warn!(
                        "reconnect attempt {attempt}/{attempts} to {} failed: {e}",
                        self.browser.describe()
                    );
                    delay = (delay * 2).min(BACKOFF_CAP_MS);
                }
            }
        }
        let mut st = self.lock();
        st.reconnecting = false;
        st.active = false;
        st.stopped_reason = Some(format!(
            "lost the CDP connection to {} ({reason}) and {attempts} reconnect attempts failed; check the browser or endpoint and open a new session",
            self.browser.describe()
        ));
        drop(st);
        self.changed.send_modify(|v| *v += 1);
    }

    /// Re-attaches every open tab on the new connection. Tabs whose targets are gone (the
    /// browser was relaunched) are marked closed; a session left without a tab gets a new
    /// one so it stays usable.
    async fn reattach(self: &Arc<Self>, relaunched: bool) {
        let tabs: Vec<String> = {
            let mut st = self.lock();
            st.sessions.clear();
            st.worlds.clear();
            // frames are re-seeded from each tab's new session (same loaderIds: refs survive)
            st.frames.clear();
            for t in st.tabs.iter_mut() {
                t.session_id = None;
                if relaunched && t.state != "closed" {
                    t.state = "closed".into();
                }
            }
            if relaunched {
                let lost: Vec<_> = st.pending.drain(..).collect();
                for d in lost {
                    st.push_recent(crate::supervisor::record(&d, "remote", None));
                }
            }
            st.tabs
                .iter()
                .filter(|t| t.state == "open")
                .map(|t| t.tab_id.clone())
                .collect()
        };
        for tab in tabs {
            if self.attach_page(&tab).await.is_err() {
                if let Some(t) = self.lock().tab_mut(&tab) {
                    t.state = "closed".into();
                }
            }
        }
        // pending dialogs are answered on their tab's new page session
        {
            let mut st = self.lock();
            let by_tab: Vec<(String, Option<String>)> = st
                .tabs
                .iter()
                .map(|t| (t.tab_id.clone(), t.session_id.clone()))
                .collect();
            for d in st.pending.iter_mut() {
                d.stale = true;
                if let Some((_, Some(sid))) = by_tab.iter().find(|(t, _)| *t == d.tab_id) {
                    d.session_id = sid.clone();
                }
            }
        }
        let need_tab = {
            let st = self.lock();
            !st.tabs.iter().any(|t| t.state == "open")
        };
        if need_tab {
            let conn = self.conn();
            let created = conn
                .call(
                    None,
                    "Target.createTarget",
                    json!({"url": "about:blank", "newWindow": true}),
                    10_000,
                )
                .await;
            if let Some(t) = created.ok().and_then(|r| r["targetId"].as_str().map(str::to_string)) {
                {
                    let mut st = self.lock();
                    st.seq += 1;
                    let seq = st.seq;
                    st.tabs.push(crate::state::Tab {
                        tab_id: t.clone(),
                        url: String::new(),
                        title: String::new(),
                        opener_tab: None,
                        state: "open".into(),
                        session_id: None,
                        seq,
                    });
                    st.current = Some(t.clone());
                }
                let _ = self.attach_page(&t).await;
            }
        } else {
            let mut st = self.lock();
            let cur_open = st
                .current
                .as_ref()
                .and_then(|c| st.tab(c))
                .is_some_and(|t| t.state == "open");
            if !cur_open {
                st.current = st.tabs.iter().find(|t| t.state == "open").map(|t| t.tab_id.clone());
            }
        }
    }
}
