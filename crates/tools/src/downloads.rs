//! Downloads in tool results (case 23): what a click, a key press or a navigation started,
//! with file name, bytes, state and path, and the session's download list in `browser_tabs`.
//!
//! The browser reports downloads with `Browser.downloadWillBegin` / `downloadProgress`
//! (enabled by [`Session::prepare`]); the supervisor keeps them in its state and moves each
//! finished file to the session's download directory under its sanitised name.

use std::time::Duration;

use serde_json::{json, Value};
use tabgate_supervisor::{Download, State};
use tokio::time::Instant;

use crate::session::Session;

/// How long an action waits for a navigation it started to commit or turn into a
/// download, ms.
const NAV_DECIDE_MS: u64 = 1_500;
/// After a navigation stopped without committing, how long to wait for the download it
/// became to be announced, ms (Chromium reports it some 50 ms after the frame stops loading).
const STOPPED_GRACE_MS: u64 = 600;
/// How long a result waits for a started download to finish, ms (a larger one is reported
/// `in_progress`; `browser_tabs` shows its progress later).
const FINISH_MS: u64 = 2_000;

fn since(st: &State, tab: &str, seq: u64) -> Vec<Download> {
    st.downloads
        .iter()
        .filter(|d| d.tab_id == tab && d.seq > seq)
        .cloned()
        .collect()
}

fn tab_loading(st: &State, tab: &str) -> bool {
    st.loading
        .iter()
        .any(|f| st.frames.get(f).is_some_and(|fr| fr.tab_id == tab))
}

fn committed_since(st: &State, tab: &str, seq: u64) -> bool {
    st.committed
        .iter()
        .any(|(f, s)| *s > seq && st.frames.get(f).is_some_and(|fr| fr.tab_id == tab))
}

/// `12.3 MB`, `512 bytes`, …
fn size(n: u64) -> String {
    match n {
        0..=9_999 => format!("{n} bytes"),
        10_000..=9_999_999 => format!("{:.1} kB", n as f64 / 1e3),
        _ => format!("{:.1} MB", n as f64 / 1e6),
    }
}

/// One line describing a download, for result texts.
pub(crate) fn describe(d: &Download) -> String {
    match d.state.as_str() {
        "completed" => format!(
            "{} ({}), completed, saved to {}",
            d.suggested_filename,
            size(d.bytes),
            d.path.as_deref().unwrap_or("(unknown path)")
        ),
        "canceled" => format!("{} canceled after {}", d.suggested_filename, size(d.bytes)),
        _ => format!(
            "{} in progress ({}{} so far); browser_tabs shows its progress",
            d.suggested_filename,
            size(d.bytes),
            d.total_bytes.map(|t| format!(" of {}", size(t))).unwrap_or_default()
        ),
    }
}

impl Session {
    /// Waits until `list` (downloads by guid) are all finished or `deadline` passes;
    /// returns their latest state.
    async fn finish(&self, list: Vec<Download>, deadline: Instant) -> Vec<Download> {
        let guids: Vec<String> = list.iter().map(|d| d.guid.clone()).collect();
        let pick = |st: &State| -> Vec<Download> {
            st.downloads
                .iter()
                .filter(|d| guids.contains(&d.guid))
                .cloned()
                .collect()
        };
        self.sup
            .wait_for(deadline, |st| {
                let now = pick(st);
                now.iter().all(|d| d.state != "in_progress").then_some(now)
            })
            .await
            .unwrap_or_else(|| pick(&self.sup.state()))
    }

    /// Downloads an action on `tab` started (the action ran after state sequence `seq`). A
    /// download the page starts itself (`<a download>`, a blob) is already listed by the
    /// time the action's popup window closed; a navigation still in flight is given up to
    /// [`NAV_DECIDE_MS`] to commit or turn into a download.
    pub(crate) async fn action_downloads(&self, tab: &str, seq: u64) -> Vec<Download> {
        let pending = {
            let st = self.sup.state();
            let d = since(&st, tab, seq);
            if d.is_empty() && (!tab_loading(&st, tab) || committed_since(&st, tab, seq)) {
                return vec![];
            }
            d
        };
        let list = if pending.is_empty() {
            // a navigation in flight: it commits (a page), or stops without committing and
            // the download it became is announced a moment later
            let until = Instant::now() + Duration::from_millis(NAV_DECIDE_MS);
            let decided = self
                .sup
                .wait_for(until, |st| {
                    let d = since(st, tab, seq);
                    if !d.is_empty() {
                        Some(Some(d))
                    } else if committed_since(st, tab, seq) {
                        Some(Some(vec![]))
                    } else if !tab_loading(st, tab) {
                        Some(None)
                    } else {
                        None
                    }
                })
                .await;
            let found = match decided {
                Some(Some(d)) => d,
                Some(None) => {
                    let grace = Instant::now() + Duration::from_millis(STOPPED_GRACE_MS);
                    self.sup
                        .wait_for(grace, |st| Some(since(st, tab, seq)).filter(|d| !d.is_empty()))
                        .await
                        .unwrap_or_default()
                }
                None => vec![],
            };
            if found.is_empty() {
                return found;
            }
            found
        } else {
            pending
        };
        self.finish(list, Instant::now() + Duration::from_millis(FINISH_MS))
            .await
    }

    /// After a click on `t`: when it followed a link, submitted a form or clicked an
    /// `<a download>` (the page's own report, read after dispatch), waits up to
    /// [`NAV_DECIDE_MS`] for the navigation to start or commit, or the download to begin.
    pub(crate) async fn await_click_effects(&self, tab: &str, seq: u64, t: &crate::target::Target) {
        let Ok(fx) = crate::page::eval_world(&self.sup, &t.frame, "globalThis.__tabgate.clickEffects()").await else {
            return;
        };
        let (nav, dl) = (fx["navigation"] == true, fx["download"] == true);
        if !nav && !dl {
            return;
        }
        let until = Instant::now() + Duration::from_millis(NAV_DECIDE_MS);
        self.sup
            .wait_for(until, |st| {
                let started =
                    !since(st, tab, seq).is_empty() || (nav && (tab_loading(st, tab) || committed_since(st, tab, seq)));
                started.then_some(())
            })
            .await;
    }

    /// For a navigation that did not commit (`net::ERR_ABORTED`): the download it became,
    /// as the navigate result (`status: "download"`), or `None` when it was no download.
    pub(crate) async fn navigation_download(&self, tab: &str, seq: u64, deadline: Instant) -> Option<(String, Value)> {
        let soon = deadline.min(Instant::now() + Duration::from_millis(1_000));
        let found = self
            .sup
            .wait_for(soon, |st| Some(since(st, tab, seq)).filter(|d| !d.is_empty()))
            .await?;
        let list = self
            .finish(found, deadline.min(Instant::now() + Duration::from_millis(10_000)))
            .await;
        let d = list.first()?.clone();
        let url = self.sup.state().tab(tab).map(|t| t.url.clone()).unwrap_or_default();
        let text = format!(
            "The URL is a file download, not a page: {}. The tab stays on {url}.",
            describe(&d)
        );
        Some((
            text,
            json!({"status": "download", "url": url, "tab_id": tab, "download": d, "downloads": list}),
        ))
    }

    /// The session's downloads, newest last, as text lines and JSON.
    pub(crate) fn downloads_listing(&self) -> (String, Value) {
        let list = self.sup.state().downloads.clone();
        let mut text = String::new();
        if !list.is_empty() {
            text.push_str("Downloads:\n");
            for d in &list {
                text.push_str(&format!("- {}\n", describe(d)));
            }
        }
        (text, json!(list))
    }
}

/// Text for an action result that started downloads.
pub(crate) fn action_text(v: &Value) -> String {
    let mut s = String::new();
    for d in v["downloads"].as_array().into_iter().flatten() {
        if let Ok(d) = serde_json::from_value::<DownloadView>(d.clone()) {
            s.push_str(&format!("\nIt started a download: {}.", d.line()));
        }
    }
    s
}

/// The serialised shape of a [`Download`] read back for texts.
#[derive(serde::Deserialize)]
struct DownloadView {
    suggested_filename: String,
    state: String,
    bytes: u64,
    total_bytes: Option<u64>,
    path: Option<String>,
}

impl DownloadView {
    fn line(self) -> String {
        describe(&Download {
            guid: String::new(),
            url: String::new(),
            suggested_filename: self.suggested_filename,
            state: self.state,
            bytes: self.bytes,
            total_bytes: self.total_bytes,
            path: self.path,
            tab_id: String::new(),
            frame_id: String::new(),
            started_at: 0.0,
            seq: 0,
        })
    }
}
