//! browser_navigate, browser_back, browser_snapshot.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

use crate::args::{bool_arg, str_arg};
use crate::page::{dialog_error, race_dialog, Raced};
use crate::session::{pending_banner, Done, Session};
use crate::{snapshot, ToolError};

/// Default navigation deadline, ms.
pub const NAV_TIMEOUT_MS: u64 = 30_000;
/// Without an explicit timeout, how long to wait for `load` once `DOMContentLoaded` fired, ms.
pub const LOAD_CAP_MS: u64 = 5_000;

enum Wait {
    Complete,
    Partial(&'static str),
}

/// How long to wait for `load` once `DOMContentLoaded` fired.
#[derive(Clone, Copy, PartialEq)]
enum LoadWait {
    /// Not at all (`wait_until: "domcontentloaded"`).
    Skip,
    /// At most [`LOAD_CAP_MS`] (the default).
    Capped,
    /// Until the deadline (`wait_until: "load"`, or an explicit `timeout_ms`).
    Deadline,
}

impl Session {
    /// Waits for the top frame's document `loader` to load, raced with dialogs.
    /// Returns the lifecycle events seen and how the wait ended.
    async fn wait_loaded(
        &self,
        tab: &str,
        loader: Option<&str>,
        before: &str,
        deadline: Instant,
        load: LoadWait,
    ) -> Result<(Wait, Vec<String>), Value> {
        let fire = |st: &tabgate_supervisor::State, ev: &str| {
            st.frames.get(tab).is_some_and(|f| {
                let new_doc = match loader {
                    Some(l) => f.lifecycle_loader == l,
                    None => f.lifecycle_loader != before,
                };
                new_doc && f.lifecycle.iter().any(|x| x == ev)
            })
        };
        let lifecycle =
            |st: &tabgate_supervisor::State| st.frames.get(tab).map(|f| f.lifecycle.clone()).unwrap_or_default();
        let sup = &self.sup;
        let waited = race_dialog(sup, tab, async {
            if sup
                .wait_for(deadline, |st| fire(st, "DOMContentLoaded").then_some(()))
                .await
                .is_none()
            {
                return Wait::Partial("DOMContentLoaded did not fire before the deadline");
            }
            let cap = match load {
                LoadWait::Skip => return Wait::Complete,
                LoadWait::Deadline => deadline,
                LoadWait::Capped => deadline.min(Instant::now() + Duration::from_millis(LOAD_CAP_MS)),
            };
            match sup.wait_for(cap, |st| fire(st, "load").then_some(())).await {
                Some(()) => Wait::Complete,
                None => Wait::Partial(
                    "the load event did not fire in time (a resource is still loading); the document is usable",
                ),
            }
        })
        .await;
        let lc = lifecycle(&sup.state());
        match waited {
            Raced::Done(w) => Ok((w, lc)),
            Raced::Dialog(d) => Err(json!({"dialog": d, "lifecycle": lc})),
        }
    }

    /// True when the last call on `tab` ran out of time.
    fn is_suspect(&self, tab: &str) -> bool {
        self.suspect.lock().unwrap_or_else(|p| p.into_inner()).as_deref() == Some(tab)
    }

    /// Whether the page's main thread answers a trivial evaluation within 1.5 s.
    async fn responsive(&self, sid: &str) -> bool {
        let probe = json!({"expression": "1", "returnByValue": true});
        let ok = self
            .sup
            .conn()
            .call(Some(sid), "Runtime.evaluate", probe, 1_500)
            .await
            .is_ok();
        if ok {
            *self.suspect.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
        ok
    }

    pub(crate) async fn navigate(&self, a: &Value) -> Done {
        let url = str_arg(a, "url").unwrap_or_default().to_string();
        check_url(&url)?;
        let explicit = a.get("timeout_ms").and_then(Value::as_u64);
        let timeout = explicit.unwrap_or(NAV_TIMEOUT_MS);
        let deadline = Instant::now() + Duration::from_millis(timeout);
        let mut recovered = None;
        let (tab, sid) = match self.current() {
            Ok(x) => x,
            Err(e) if e.code == "tab_crashed" || e.code == "tab_closed" => {
                let old = self.sup.state().current.clone().unwrap_or_default();
                let new = self.sup.replace_tab(&old).await?;
                recovered = Some(format!(
                    "tab {old} was {}; opened tab {new} in its place",
                    if e.code == "tab_crashed" { "crashed" } else { "closed" }
                ));
                self.current()?
            }
            Err(e) => return Err(e),
        };
        // A dialog left open across a CDP reconnect wedges its tab (Chromium lets only the
        // old connection answer it, and it blocks navigation); so does a page whose
        // JavaScript never yields (an endless loop). Replace such a tab.
        let wedged = if self.sup.state().pending.iter().any(|d| d.tab_id == tab && d.stale) {
            Some("was blocked by a dialog that could not be answered after a reconnect")
        } else if self.is_suspect(&tab) && !self.responsive(&sid).await {
            Some("was unresponsive (its JavaScript never yields)")
        } else {
            None
        };
        let (tab, sid) = match wedged {
            Some(why) => {
                let new = self.sup.replace_tab(&tab).await?;
                recovered = Some(format!("tab {tab} {why}; opened tab {new} in its place"));
                self.current()?
            }
            None => (tab, sid),
        };
        if let Some(d) = self.sup.state().pending.iter().find(|d| d.tab_id == tab && !d.stale) {
            return Err(dialog_error(d));
        }
        let before = self
            .sup
            .state()
            .frames
            .get(&tab)
            .map(|f| f.lifecycle_loader.clone())
            .unwrap_or_default();
        let seq = self.sup.state().seq;
        let conn = self.sup.conn();
        let nav = conn.call(Some(&sid), "Page.navigate", json!({"url": url}), timeout);
        let r = match race_dialog(&self.sup, &tab, nav).await {
            Raced::Dialog(d) => return Ok(blocked(&url, json!({"dialog": d, "lifecycle": []}))),
            Raced::Done(Err(tabgate_cdp::CdpError::Timeout { .. })) => {
                let pending = outstanding(&self.sup.state(), &tab);
                return Err(ToolError::new(
                    "navigation_timeout",
                    format!(
                        "no response for {url} within {timeout} ms (nothing committed; the tab still shows the previous page); check the URL or raise timeout_ms{}",
                        outstanding_text(&pending)
                    ),
                )
                .with(json!({"url": url, "timeout_ms": timeout, "outstanding_requests": pending})));
            }
            Raced::Done(r) => r?,
        };
        if let Some(err) = r.get("errorText").and_then(Value::as_str).filter(|e| !e.is_empty()) {
            // a URL that answers with an attachment is a download, not a failed navigation
            if let Some(res) = self.navigation_download(&tab, seq, deadline).await {
                return Ok(res);
            }
            return Err(
                ToolError::new("navigation_failed", format!("navigation to {url} failed: {err}"))
                    .with(json!({"url": url})),
            );
        }
        let loader = r.get("loaderId").and_then(Value::as_str).map(str::to_string);
        let load = match str_arg(a, "wait_until") {
            Some("domcontentloaded") => LoadWait::Skip,
            Some("load") => LoadWait::Deadline,
            _ if explicit.is_some() => LoadWait::Deadline,
            _ => LoadWait::Capped,
        };
        let (wait, lifecycle) = match &loader {
            None => (Wait::Complete, vec![]), // same-document navigation (#hash, pushState)
            Some(_) if str_arg(a, "wait_until") == Some("commit") => {
                let lc = self.sup.state().frames.get(&tab).map(|f| f.lifecycle.clone());
                (Wait::Complete, lc.unwrap_or_default())
            }
            Some(l) => match self.wait_loaded(&tab, Some(l), &before, deadline, load).await {
                Ok(x) => x,
                Err(b) => return Ok(blocked(&url, b)),
            },
        };
        if let Some(l) = &loader {
            let committed = self.sup.state().frames.get(&tab).is_some_and(|f| &f.loader_id == l);
            if !committed && matches!(wait, Wait::Partial(_)) {
                let old = self
                    .sup
                    .state()
                    .frames
                    .get(&tab)
                    .map(|f| f.url.clone())
                    .unwrap_or_default();
                return Err(ToolError::new(
                    "navigation_timeout",
                    format!("{url} did not commit within {timeout} ms; the tab still shows {old}. The server may be slow (raise timeout_ms) or the current page busy (browser_navigate again replaces an unresponsive tab)"),
                )
                .with(json!({"url": url, "timeout_ms": timeout})));
            }
        }
        let mut res = self.nav_result(&tab, wait, lifecycle).await;
        if let Some(r) = recovered {
            res.0 = format!("{r}.\n{}", res.0);
            res.1["recovered"] = json!(r);
        }
        Ok(res)
    }

    async fn nav_result(&self, tab: &str, wait: Wait, lifecycle: Vec<String>) -> (String, Value) {
        // the page's own title: Chromium's target info lags behind `<title>`
        let sid = self.sup.state().tab(tab).and_then(|t| t.session_id.clone());
        let title = match sid {
            Some(sid) => self
                .sup
                .conn()
                .call(
                    Some(&sid),
                    "Runtime.evaluate",
                    json!({"expression": "document.title", "returnByValue": true}),
                    2_000,
                )
                .await
                .ok()
                .and_then(|r| r["result"]["value"].as_str().map(str::to_string)),
            None => None,
        };
        let (url, title) = {
            let mut st = self.sup.state();
            let url = st.frames.get(tab).map(|f| f.url.clone()).unwrap_or_default();
            if let (Some(t), Some(title)) = (st.tab_mut(tab), &title) {
                t.title = title.clone();
            }
            (url, title.unwrap_or_default())
        };
        let (status, why) = match wait {
            Wait::Complete => ("complete", None),
            Wait::Partial(w) => ("partial", Some(w)),
        };
        let mut text = format!(
            "Navigated to {url} (status: {status}; title: {title:?}). Take a browser_snapshot to see the page."
        );
        let mut v =
            json!({"status": status, "url": url, "title": title, "tab_id": tab, "lifecycle": lifecycle, "reason": why});
        if let Some(w) = why {
            let pending = outstanding(&self.sup.state(), tab);
            text.push_str(&format!(
                "\nPartial: {w}. Lifecycle so far: {}.{}",
                lifecycle.join(", "),
                outstanding_text(&pending)
            ));
            v["outstanding_requests"] = json!(pending);
        }
        (text, v)
    }

    pub(crate) async fn back(&self) -> Done {
        let (tab, sid) = self.current()?;
        if let Some(d) = self.sup.state().pending.iter().find(|d| d.tab_id == tab && !d.stale) {
            return Err(dialog_error(d));
        }
        let h = self
            .sup
            .conn()
            .call(Some(&sid), "Page.getNavigationHistory", json!({}), 5_000)
            .await?;
        let i = h["currentIndex"].as_i64().unwrap_or(0);
        if i <= 0 {
            return Err(ToolError::new(
                "no_history",
                "there is no previous page in this tab's history",
            ));
        }
        let entry = &h["entries"][(i - 1) as usize];
        let before = self
            .sup
            .state()
            .frames
            .get(&tab)
            .map(|f| f.lifecycle_loader.clone())
            .unwrap_or_default();
        let deadline = Instant::now() + Duration::from_millis(NAV_TIMEOUT_MS);
        let conn = self.sup.conn();
        let go = conn.call(
            Some(&sid),
            "Page.navigateToHistoryEntry",
            json!({"entryId": entry["id"]}),
            NAV_TIMEOUT_MS,
        );
        let target = entry["url"].as_str().unwrap_or("").to_string();
        match race_dialog(&self.sup, &tab, go).await {
            Raced::Dialog(d) => return Ok(blocked(&target, json!({"dialog": d, "lifecycle": []}))),
            Raced::Done(r) => {
                r?;
            }
        }
        // A back/forward-cache restore keeps the document and fires no new lifecycle.
        let bf = self
            .sup
            .wait_for(Instant::now() + Duration::from_millis(1_000), |st| {
                st.frames
                    .get(&tab)
                    .filter(|f| f.url == target && f.lifecycle_loader == before)
                    .map(|_| ())
            })
            .await;
        let (wait, lc) = if bf.is_some() {
            (Wait::Complete, vec![])
        } else {
            match self.wait_loaded(&tab, None, &before, deadline, LoadWait::Capped).await {
                Ok(x) => x,
                Err(b) => return Ok(blocked(&target, b)),
            }
        };
        Ok(self.nav_result(&tab, wait, lc).await)
    }

    pub(crate) async fn snapshot(&self, a: &Value) -> Done {
        let (tab, _) = self.current()?;
        let opts = self.snapshot_opts(a, &tab)?;
        let paused = self.sup.state().pending.iter().find(|d| d.tab_id == tab).cloned();
        let snap = match paused {
            Some(d) => Err(d),
            None => match race_dialog(&self.sup, &tab, snapshot::take_opts(&self.sup, &self.refs, &tab, &opts)).await {
                Raced::Done(r) => Ok(r?),
                Raced::Dialog(d) => Err(d),
            },
        };
        let (extra_text, sup_json) = self.supervisor_fields(&tab);
        match snap {
            Ok(s) => {
                let mut text = format!("Tab {tab} · {:?} · {}\n{}", s.title, s.url, s.text);
                let prev = self
                    .last_snapshot
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .replace((tab.clone(), text.clone()))
                    .filter(|(t, _)| *t == tab);
                if let (true, Some((_, old))) = (bool_arg(a, "diff"), prev) {
                    let (d, added, removed) = crate::find::diff_text(&old, &text);
                    text = format!(
                        "Tab {tab} · {:?} · {} — changes since the previous snapshot: {added} lines added (+), {removed} removed (-)\n{d}",
                        s.title, s.url
                    );
                }
                text.push_str(&extra_text);
                let mut v =
                    json!({"tab_id": tab, "url": s.url, "title": s.title, "snapshot": s.text, "element_count": s.refs});
                if let Some(t) = &s.truncated {
                    v["truncated"] = t.clone();
                }
                merge(&mut v, sup_json);
                if !s.unreadable.is_empty() {
                    v["unreadable_frames"] = json!(s.unreadable);
                }
                Ok((text, v))
            }
            Err(d) => {
                let last = self
                    .last_snapshot
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone()
                    .filter(|(t, _)| *t == tab)
                    .map(|(_, s)| s);
                let mut text = format!(
                    "The page is paused by {} dialog ({:?}, id {}): nothing can be read from it until the dialog is answered with browser_dialog.",
                    crate::page::a_kind(&d.kind),
                    d.message,
                    d.id
                );
                if let Some(l) = &last {
                    text.push_str("\nLast good snapshot (before the dialog; may be outdated):\n");
                    text.push_str(l);
                }
                text.push_str(&extra_text);
                let mut v = json!({"tab_id": tab, "paused_by_dialog": true, "snapshot": last});
                merge(&mut v, sup_json);
                Ok((text, v))
            }
        }
    }

    /// `pending_dialogs`, `recent_dialogs`, `frame_tree` as text lines and JSON.
    fn supervisor_fields(&self, tab: &str) -> (String, Value) {
        let st = self.sup.state();
        let tree = st.frame_tree(tab);
        let recent: Vec<_> = st.recent.iter().cloned().collect();
        let mut text = pending_banner(&st.pending);
        if let Some(r) = recent.last() {
            text.push_str(&format!("\nrecent_dialogs ({}), latest: {}", recent.len(), json!(r)));
        }
        if tree["children"].as_array().is_some_and(|c| !c.is_empty()) {
            text.push_str(&format!("\nframe_tree: {tree}"));
        }
        (
            text,
            json!({"pending_dialogs": st.pending, "recent_dialogs": recent, "frame_tree": tree, "page_target_id": tab}),
        )
    }
}

/// The tab's outstanding requests as `{url, type, pending_ms}`, oldest first.
fn outstanding(st: &tabgate_supervisor::State, tab: &str) -> Vec<Value> {
    let now = tabgate_supervisor::now_epoch();
    st.outstanding(tab)
        .into_iter()
        .map(|r| json!({"url": r.url, "type": r.resource_type, "pending_ms": ((now - r.started_at) * 1000.0) as u64}))
        .collect()
}

/// `\nOutstanding requests (2): GET …` for result texts (at most 10 listed).
fn outstanding_text(list: &[Value]) -> String {
    if list.is_empty() {
        return String::new();
    }
    let mut s = format!("\nOutstanding requests ({}):", list.len());
    for r in list.iter().take(10) {
        s.push_str(&format!(
            "\n- {} {} (pending {} ms)",
            r["type"].as_str().unwrap_or(""),
            r["url"].as_str().unwrap_or(""),
            r["pending_ms"]
        ));
    }
    s
}

/// Refuses what is not a URL to open: no scheme, or `javascript:` (which runs script in the
/// current page instead of navigating; use browser_console for that).
fn check_url(url: &str) -> Result<(), ToolError> {
    let scheme = url
        .split_once(':')
        .map(|(s, _)| s.to_ascii_lowercase())
        .unwrap_or_default();
    let ok = !scheme.is_empty()
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        && scheme != "javascript";
    if ok {
        Ok(())
    } else {
        Err(ToolError::new(
            "invalid_argument",
            format!("browser_navigate: {url:?} is not a URL to open; give an absolute URL such as https://example.com/ (http, https, file, data, about; javascript: is refused — use browser_console)"),
        ))
    }
}

fn merge(v: &mut Value, extra: Value) {
    if let (Some(o), Value::Object(e)) = (v.as_object_mut(), extra) {
        o.extend(e);
    }
}

fn blocked(url: &str, b: Value) -> (String, Value) {
    let d = &b["dialog"];
    let kind = d["type"].as_str().unwrap_or("?");
    let what = if kind == "beforeunload" {
        "The page asks to confirm leaving (beforeunload). browser_dialog accept leaves the page and the navigation goes on; dismiss stays (navigation cancelled by page).".to_string()
    } else {
        format!(
            "The page opened {} dialog {:?} while loading; answer it with browser_dialog and the page goes on loading.",
            crate::page::a_kind(kind),
            d["message"].as_str().unwrap_or("")
        )
    };
    let text = format!(
        "Navigation to {url}: blocked_by_dialog. {what}\nLifecycle so far: {}",
        b["lifecycle"]
    );
    (
        text,
        json!({"status": "blocked_by_dialog", "url": url, "dialog": b["dialog"], "lifecycle": b["lifecycle"]}),
    )
}
