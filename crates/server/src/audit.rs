//! The dialog audit: a task per open tool session that follows its supervisor's state and
//! writes every dialog — opened, and how and when it closed — to the `dialog_audit` table.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tabgate_supervisor::{DialogRecord, PendingDialog};
use tabgate_tools::Session;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::store::{DialogAudit, Store};

#[derive(Default)]
struct Seen {
    /// dialog id → (audit row, closed yet)
    rows: HashMap<String, (i64, bool)>,
    /// prompt texts an agent answered with, waiting for their dialog's row to close
    answers: HashMap<String, String>,
    /// cheap change detector: (pending ids, newest recent id and close time)
    fingerprint: (Vec<String>, Option<(String, u64)>, usize),
}

/// The audit follower of one open tool session.
pub(crate) struct Audit {
    seen: Arc<Mutex<Seen>>,
    store: Arc<Store>,
    stop: Arc<Notify>,
    task: JoinHandle<()>,
}

impl Audit {
    /// Starts following `session`'s dialogs for `session_id`. `known` are the ids of
    /// dialogs it carries over from an earlier tab, already audited (not written again).
    pub(crate) fn start(store: Arc<Store>, session_id: String, session: Arc<Session>, known: Vec<String>) -> Audit {
        let mut s = Seen::default();
        for id in known {
            s.rows.insert(id, (0, true));
        }
        let seen = Arc::new(Mutex::new(s));
        let stop = Arc::new(Notify::new());
        let task = {
            let (seen, store, stop) = (seen.clone(), store.clone(), stop.clone());
            tokio::spawn(async move {
                let mut rx = session.supervisor().subscribe();
                loop {
                    sync(&store, &session_id, &session, &seen);
                    tokio::select! {
                        r = rx.changed() => if r.is_err() { break },
                        _ = stop.notified() => break,
                    }
                }
                sync(&store, &session_id, &session, &seen);
            })
        };
        Audit {
            seen,
            store,
            stop,
            task,
        }
    }

    /// Notes the text an agent answered prompt `dialog_id` with.
    pub(crate) fn record_answer(&self, dialog_id: &str, text: &str) {
        let mut s = lock(&self.seen);
        match s.rows.get(dialog_id) {
            Some(&(row, true)) => {
                if let Err(e) = self.store.audit_prompt_text(row, text) {
                    tracing::warn!("dialog audit: {e}");
                }
            }
            _ => {
                s.answers.insert(dialog_id.to_string(), text.to_string());
            }
        }
    }

    /// Writes what is left and stops following.
    pub(crate) async fn stop(self) {
        self.stop.notify_one();
        let _ = self.task.await;
    }
}

fn lock(m: &Mutex<Seen>) -> std::sync::MutexGuard<'_, Seen> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Writes the dialogs that opened or closed since the last call.
fn sync(store: &Store, session_id: &str, session: &Session, seen: &Mutex<Seen>) {
    let (pending, recent): (Vec<PendingDialog>, Vec<DialogRecord>) = {
        let st = session.supervisor().state();
        let fp = (
            st.pending.iter().map(|d| d.id.clone()).collect::<Vec<_>>(),
            st.recent.back().map(|r| (r.id.clone(), r.closed_at.to_bits())),
            st.recent.len(),
        );
        let mut s = lock(seen);
        if s.fingerprint == fp {
            return;
        }
        s.fingerprint = fp;
        (st.pending.clone(), st.recent.iter().cloned().collect())
    };
    let mut s = lock(seen);
    let log = |r: Result<(), crate::store::StoreError>| {
        if let Err(e) = r {
            tracing::warn!("dialog audit: {e}");
        }
    };
    for d in &pending {
        if s.rows.contains_key(&d.id) {
            continue;
        }
        let a = DialogAudit {
            dialog_id: d.id.clone(),
            kind: d.kind.clone(),
            message: d.message.clone(),
            default_prompt: (d.kind == "prompt").then(|| d.default_prompt.clone()),
            tab_id: Some(d.tab_id.clone()),
            frame_id: d.frame_id.clone(),
            opened_at: d.opened_at,
            closed_at: None,
            closed_by: None,
            action: None,
            prompt_text: None,
        };
        match store.audit_open(session_id, &a) {
            Ok(row) => {
                s.rows.insert(d.id.clone(), (row, false));
            }
            Err(e) => tracing::warn!("dialog audit: {e}"),
        }
    }
    for r in &recent {
        let answer = s.answers.remove(&r.id);
        match s.rows.get(&r.id).copied() {
            Some((_, true)) => {}
            Some((row, false)) => {
                log(store.audit_close(row, r.closed_at, &r.closed_by, r.action.as_deref()));
                if let Some(t) = &answer {
                    log(store.audit_prompt_text(row, t));
                }
                s.rows.insert(r.id.clone(), (row, true));
            }
            None => {
                let a = DialogAudit {
                    dialog_id: r.id.clone(),
                    kind: r.kind.clone(),
                    message: r.message.clone(),
                    default_prompt: None,
                    tab_id: Some(r.tab_id.clone()),
                    frame_id: r.frame_id.clone(),
                    opened_at: r.opened_at,
                    closed_at: Some(r.closed_at),
                    closed_by: Some(r.closed_by.clone()),
                    action: r.action.clone(),
                    prompt_text: answer,
                };
                match store.audit_open(session_id, &a) {
                    Ok(row) => {
                        s.rows.insert(r.id.clone(), (row, true));
                    }
                    Err(e) => tracing::warn!("dialog audit: {e}"),
                }
            }
        }
    }
}
