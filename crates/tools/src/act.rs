//! Actions on refs with trusted input: click, type, select, press, scroll, screenshot.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

use crate::args::{bool_arg, str_arg};
use crate::keys;
use crate::page::{dialog_error, race_dialog, Raced};
use crate::session::{Done, Session};
use crate::target::{self, Target};
use crate::ToolError;

/// How long after a click to look for tabs it opened, ms (popups are created
/// asynchronously by the browser; `Target.targetCreated` follows within a few ms).
const POPUP_WINDOW_MS: u64 = 60;

/// Longest text `browser_type` accepts, characters.
const MAX_TYPE_CHARS: usize = 100_000;

/// Beyond this many characters `browser_type` inserts the text in one go (`Input.insertText`)
/// instead of one key event per character, which would take minutes.
const KEYS_UP_TO_CHARS: usize = 500;

impl Session {
    fn target(&self, a: &Value) -> Result<(String, String, Target), ToolError> {
        let (tab, sid) = self.current()?;
        if let Some(d) = self.sup.state().pending.iter().find(|d| d.tab_id == tab) {
            return Err(dialog_error(d));
        }
        let r = str_arg(a, "ref").unwrap_or_default();
        let t = target::resolve(&self.sup, &self.refs, &tab, r)?;
        Ok((tab, sid, t))
    }

    async fn mouse(&self, sid: &str, x: f64, y: f64, kind: &str, clicks: i64) -> Result<(), ToolError> {
        let mut p = json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": clicks});
        if kind == "mouseMoved" {
            p["button"] = json!("none");
        }
        self.sup
            .conn()
            .call(Some(sid), "Input.dispatchMouseEvent", p, 10_000)
            .await?;
        Ok(())
    }

    /// What a page action led to: dialogs it opened, tabs it opened, the URL after it.
    async fn aftermath(&self, tab: &str, seq_before: u64, dialog: Option<tabgate_supervisor::PendingDialog>) -> Value {
        let new_tabs = |st: &tabgate_supervisor::State| -> Vec<(String, String)> {
            st.tabs
                .iter()
                .filter(|t| t.seq > seq_before && t.opener_tab.as_deref() == Some(tab))
                .map(|t| (t.tab_id.clone(), t.url.clone()))
                .collect()
        };
        // a click that raised a dialog is paused inside its handler: nothing more will open now
        let window = if dialog.is_some() { 0 } else { POPUP_WINDOW_MS };
        let soon = Instant::now() + Duration::from_millis(window);
        let mut opened = self
            .sup
            .wait_for(soon, |st| Some(new_tabs(st)).filter(|v| !v.is_empty()))
            .await
            .unwrap_or_default();
        if !opened.is_empty() {
            // a popup starts as about:blank; give it a moment to say where it is going
            let known = |v: &Vec<(String, String)>| v.iter().all(|(_, u)| !u.is_empty() && u != "about:blank");
            let later = Instant::now() + Duration::from_millis(1_000);
            opened = self
                .sup
                .wait_for(later, |st| Some(new_tabs(st)).filter(known))
                .await
                .unwrap_or_else(|| new_tabs(&self.sup.state()));
        }
        let opened: Vec<Value> = opened
            .into_iter()
            .map(|(id, url)| json!({"tab_id": id, "url": url, "opener_tab": tab, "cause": "click"}))
            .collect();
        let downloads = if dialog.is_none() {
            self.action_downloads(tab, seq_before).await
        } else {
            vec![]
        };
        let url = self.sup.state().tab(tab).map(|t| t.url.clone()).unwrap_or_default();
        let mut v = json!({"url": url});
        if !opened.is_empty() {
            v["opened_tabs"] = json!(opened);
        }
        if !downloads.is_empty() {
            v["downloads"] = json!(downloads);
        }
        if let Some(fc) = self.chooser_since(tab, seq_before) {
            v["file_chooser"] = json!(fc);
        }
        if let Some(d) = dialog {
            v["dialog"] = json!(d);
        }
        v
    }

    fn describe(v: &Value) -> String {
        let mut s = String::new();
        if let Some(d) = v.get("dialog") {
            s.push_str(&format!(
                "\nIt opened {} dialog {:?} ({}); the page waits for browser_dialog (accept or dismiss).",
                crate::page::a_kind(d["type"].as_str().unwrap_or("?")),
                d["message"].as_str().unwrap_or(""),
                d["id"].as_str().unwrap_or("")
            ));
        }
        for t in v["opened_tabs"].as_array().into_iter().flatten() {
            s.push_str(&format!(
                "\nIt opened a new tab {} ({}); browser_tab_activate it to work there.",
                t["tab_id"].as_str().unwrap_or(""),
                t["url"].as_str().unwrap_or("")
            ));
        }
        s.push_str(&crate::downloads::action_text(v));
        if v.get("file_chooser").is_some() {
            s.push_str("\nIt opened a file chooser; answer it with browser_upload{paths} (paths: [] cancels it).");
        }
        s
    }

    pub(crate) async fn click(&self, a: &Value) -> Done {
        let (tab, sid, t) = self.target(a)?;
        let seq = self.sup.state().seq;
        let mut pt = target::point(&self.sup, &self.refs, &t).await?;
        if pt.2["hit"] == false {
            // one retry after a short pause: an animation or a transition may be ending
            tokio::time::sleep(Duration::from_millis(150)).await;
            pt = target::point(&self.sup, &self.refs, &t).await?;
            if pt.2["hit"] == false {
                return Err(ToolError::new(
                    "element_obscured",
                    format!(
                        "{} {:?} is covered by {} at its centre; close the overlay or scroll, then take a new snapshot",
                        t.entry.role,
                        t.entry.name,
                        pt.2["hitDesc"].as_str().unwrap_or("another element")
                    ),
                ));
            }
        }
        let (x, y) = (pt.0, pt.1);
        let clicked = async {
            self.mouse(&sid, x, y, "mouseMoved", 0).await?;
            self.mouse(&sid, x, y, "mousePressed", 1).await?;
            self.mouse(&sid, x, y, "mouseReleased", 1).await
        };
        let dialog = match race_dialog(&self.sup, &tab, clicked).await {
            Raced::Done(r) => {
                r?;
                None
            }
            Raced::Dialog(d) => Some(d),
        };
        if dialog.is_none() {
            // a link, a form submit or an <a download>: wait for it to show
            self.await_click_effects(&tab, seq, &t).await;
        }
        let mut v = self.aftermath(&tab, seq, dialog).await;
        let text = format!(
            "Clicked {} {:?} [ref={}].{}",
            t.entry.role,
            t.entry.name,
            str_arg(a, "ref").unwrap_or(""),
            Self::describe(&v)
        );
        v["clicked"] = json!(str_arg(a, "ref"));
        Ok((text, v))
    }

    pub(crate) async fn type_text(&self, a: &Value) -> Done {
        let (tab, sid, t) = self.target(a)?;
        let text = str_arg(a, "text").unwrap_or_default().to_string();
        // date and time inputs take their value in their own format, not keystrokes
        if let Some(done) = self.type_date(&t, &text).await? {
            return Ok(done);
        }
        if text.chars().count() > MAX_TYPE_CHARS {
            return Err(ToolError::new(
                "invalid_argument",
                format!(
                    "browser_type: text is {} characters; the limit is {MAX_TYPE_CHARS}",
                    text.chars().count()
                ),
            ));
        }
        // focus by a real click when the element is in view, then select what is there
        let f = target::call(&self.sup, &t, "focusForTyping", &[]).await?;
        let kind = f["kind"].as_str().unwrap_or("other").to_string();
        let multiline = kind == "textarea" || kind == "contenteditable";
        let conn = self.sup.conn();
        let typed = async {
            if text.is_empty() {
                for ev in keys::chord("Delete")? {
                    conn.call(Some(&sid), "Input.dispatchKeyEvent", ev, 10_000).await?;
                }
            }
            if text.chars().count() > KEYS_UP_TO_CHARS {
                let t = if multiline {
                    text.clone()
                } else {
                    text.replace('\n', "")
                };
                conn.call(Some(&sid), "Input.insertText", json!({"text": t}), 30_000)
                    .await?;
                return Ok(());
            }
            let mut pending = String::new();
            for c in text.chars() {
                let key = if c == '\n' { None } else { keys::char_key(c) };
                if key.is_none() && c != '\n' {
                    pending.push(c);
                    continue;
                }
                if !pending.is_empty() {
                    conn.call(Some(&sid), "Input.insertText", json!({"text": pending}), 10_000)
                        .await?;
                    pending.clear();
                }
                if c == '\n' {
                    if multiline {
                        for ev in keys::chord("Enter")? {
                            conn.call(Some(&sid), "Input.dispatchKeyEvent", ev, 10_000).await?;
                        }
                    }
                    continue;
                }
                let mut down = key.unwrap_or_default();
                down["type"] = json!("keyDown");
                let mut up = down.clone();
                up["type"] = json!("keyUp");
                if let Some(o) = up.as_object_mut() {
                    o.remove("text");
                    o.remove("unmodifiedText");
                }
                conn.call(Some(&sid), "Input.dispatchKeyEvent", down, 10_000).await?;
                conn.call(Some(&sid), "Input.dispatchKeyEvent", up, 10_000).await?;
            }
            if !pending.is_empty() {
                conn.call(Some(&sid), "Input.insertText", json!({"text": pending}), 10_000)
                    .await?;
            }
            Ok::<(), ToolError>(())
        };
        if let Raced::Dialog(d) = race_dialog(&self.sup, &tab, typed).await.map_done()? {
            let v = json!({"typed": text, "dialog": d});
            return Ok((
                format!("Typing into {} opened a dialog.{}", t.entry.name, Self::describe(&v)),
                v,
            ));
        }
        let value = target::call(&self.sup, &t, "readValue", &[]).await?;
        let expect: String = if multiline {
            text.clone()
        } else {
            text.replace('\n', "")
        };
        let same = value
            .as_str()
            .map(|v| v.replace("\r\n", "\n") == expect)
            .unwrap_or(false);
        let mut out = format!(
            "Typed into {} {:?}; value read back: {}",
            t.entry.role, t.entry.name, value
        );
        if !same {
            out.push_str("\nNote: the value differs from the text typed (the page may reformat or limit input).");
        }
        Ok((
            out,
            json!({"typed": text, "element": str_arg(a, "ref"), "value": value, "matches": same}),
        ))
    }

    pub(crate) async fn select_option(&self, a: &Value) -> Done {
        let (_, _, t) = self.target(a)?;
        let values = a.get("values").cloned().unwrap_or(json!([]));
        let r = target::call(&self.sup, &t, "selectOption", std::slice::from_ref(&values)).await?;
        if r.get("custom").is_some() {
            // an ARIA combobox or another custom dropdown: open it and click the option
            return self.select_custom(&t, &values).await;
        }
        // read back after the page's own change handlers ran
        tokio::time::sleep(Duration::from_millis(30)).await;
        let now = target::call(&self.sup, &t, "readValue", &[]).await?;
        // what was asked for (option labels) against what the page shows now: a change
        // handler may already have put the old value back
        let wanted = if r["wanted"].is_array() {
            r["wanted"].clone()
        } else {
            r["selected"].clone()
        };
        let stuck = match (&now, &wanted) {
            (Value::Array(n), Value::Array(w)) => n == w,
            (Value::String(n), Value::Array(w)) => w.len() == 1 && w[0].as_str() == Some(n.as_str()),
            _ => true,
        };
        if !stuck {
            return Err(ToolError::new(
                "selection_reverted",
                format!("selected {wanted} but the page put the value back to {now}; try clicking the select and using the keyboard"),
            ));
        }
        Ok((
            format!("Selected {wanted} in {:?}.", t.entry.name),
            json!({"selected": wanted, "value": now}),
        ))
    }

    pub(crate) async fn press(&self, a: &Value) -> Done {
        let (tab, sid) = self.current()?;
        if let Some(d) = self.sup.state().pending.iter().find(|d| d.tab_id == tab) {
            return Err(dialog_error(d));
        }
        let key = str_arg(a, "key").unwrap_or_default();
        let events = keys::chord(key)?;
        let seq = self.sup.state().seq;
        let conn = self.sup.conn();
        let pressed = async {
            for ev in events {
                conn.call(Some(&sid), "Input.dispatchKeyEvent", ev, 10_000).await?;
            }
            Ok::<(), ToolError>(())
        };
        let dialog = match race_dialog(&self.sup, &tab, pressed).await {
            Raced::Done(r) => {
                r?;
                None
            }
            Raced::Dialog(d) => Some(d),
        };
        let mut v = self.aftermath(&tab, seq, dialog).await;
        v["pressed"] = json!(key);
        Ok((format!("Pressed {key}.{}", Self::describe(&v)), v))
    }

    pub(crate) async fn scroll(&self, a: &Value) -> Done {
        let (tab, sid) = self.current()?;
        if let Some(d) = self.sup.state().pending.iter().find(|d| d.tab_id == tab) {
            return Err(dialog_error(d));
        }
        let down = str_arg(a, "direction") == Some("down");
        let m = self
            .sup
            .conn()
            .call(Some(&sid), "Page.getLayoutMetrics", json!({}), 5_000)
            .await?;
        let vv = &m["cssVisualViewport"];
        let (w, h) = (
            vv["clientWidth"].as_f64().unwrap_or(800.0),
            vv["clientHeight"].as_f64().unwrap_or(600.0),
        );
        let before = vv["pageY"].as_f64().unwrap_or(0.0);
        let (x, y) = match str_arg(a, "ref") {
            Some(_) => {
                let (_, _, t) = self.target(a)?;
                let p = target::point(&self.sup, &self.refs, &t).await?;
                (p.0, p.1)
            }
            None => (w / 2.0, h / 2.0),
        };
        let dy = (h * 0.8).round() * if down { 1.0 } else { -1.0 };
        self.sup
            .conn()
            .call(
                Some(&sid),
                "Input.dispatchMouseEvent",
                json!({"type": "mouseWheel", "x": x, "y": y, "deltaX": 0, "deltaY": dy}),
                10_000,
            )
            .await?;
        // the wheel scroll is applied asynchronously by the compositor
        let mut after = before;
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_millis(30)).await;
            let m = self
                .sup
                .conn()
                .call(Some(&sid), "Page.getLayoutMetrics", json!({}), 5_000)
                .await?;
            after = m["cssVisualViewport"]["pageY"].as_f64().unwrap_or(after);
            if after != before {
                break;
            }
        }
        let dir = if down { "down" } else { "up" };
        let note = if after == before && str_arg(a, "ref").is_none() {
            " (the page did not move: already at the end, or an inner element scrolls — pass its ref)"
        } else {
            ""
        };
        Ok((
            format!("Scrolled {dir}: page y {before} → {after}{note}."),
            json!({"scrolled": dir, "scroll_y_before": before, "scroll_y_after": after}),
        ))
    }

    pub(crate) async fn screenshot(&self, a: &Value) -> Done {
        let (tab, sid) = self.current()?;
        if let Some(d) = self.sup.state().pending.iter().find(|d| d.tab_id == tab) {
            return Err(dialog_error(d));
        }
        let mut p = json!({"format": "png"});
        if let Some(r) = str_arg(a, "ref") {
            let t = target::resolve(&self.sup, &self.refs, &tab, r)?;
            let pt = target::point(&self.sup, &self.refs, &t).await?;
            let m = self
                .sup
                .conn()
                .call(Some(&sid), "Page.getLayoutMetrics", json!({}), 5_000)
                .await?;
            let vv = &m["cssVisualViewport"];
            let (w, h) = (pt.2["w"].as_f64().unwrap_or(1.0), pt.2["h"].as_f64().unwrap_or(1.0));
            p["clip"] = json!({
                "x": pt.0 - w / 2.0 + vv["pageX"].as_f64().unwrap_or(0.0),
                "y": pt.1 - h / 2.0 + vv["pageY"].as_f64().unwrap_or(0.0),
                "width": w.max(1.0), "height": h.max(1.0), "scale": 1
            });
        } else if bool_arg(a, "full_page") {
            p["captureBeyondViewport"] = json!(true);
            let m = self
                .sup
                .conn()
                .call(Some(&sid), "Page.getLayoutMetrics", json!({}), 5_000)
                .await?;
            let cs = &m["cssContentSize"];
            p["clip"] = json!({"x": 0, "y": 0, "width": cs["width"], "height": cs["height"], "scale": 1});
        }
        let shot = self
            .sup
            .conn()
            .call(Some(&sid), "Page.captureScreenshot", p, 30_000)
            .await?;
        let data = shot["data"].as_str().unwrap_or("").to_string();
        let bytes = data.len() / 4 * 3;
        Ok((
            format!("Screenshot of tab {tab} ({bytes} bytes PNG)."),
            json!({"tab_id": tab, "bytes": bytes, "__png": data}),
        ))
    }
}

trait MapDone<T> {
    fn map_done(self) -> Result<Raced<()>, ToolError>;
}

impl MapDone<Result<(), ToolError>> for Raced<Result<(), ToolError>> {
    fn map_done(self) -> Result<Raced<()>, ToolError> {
        match self {
            Raced::Done(r) => r.map(Raced::Done),
            Raced::Dialog(d) => Ok(Raced::Dialog(d)),
        }
    }
}
