//! browser_tabs, browser_tab_activate, browser_dialog, browser_cdp, browser_console.

use serde_json::{json, Value};

use crate::args::{bool_arg, str_arg};
use crate::page::{dialog_error, race_dialog, Raced};
use crate::session::{Done, Session};
use crate::ToolError;

/// Deadline for a raw `browser_cdp` command and a console expression, ms.
const RAW_TIMEOUT_MS: u64 = 30_000;

impl Session {
    pub(crate) async fn tabs(&self, a: &Value) -> Done {
        match str_arg(a, "action").unwrap_or("list") {
            "new" => {
                let url = str_arg(a, "url").unwrap_or("about:blank");
                let t = self.sup.new_tab(url).await?;
                let (text, mut v) = self.tab_list().await;
                v["opened"] = json!(t);
                Ok((format!("Opened tab {t} at {url}; it is now current.\n{text}"), v))
            }
            "close" => {
                let id = match str_arg(a, "tab_id") {
                    Some(t) => t.to_string(),
                    None => self.sup.state().current.clone().unwrap_or_default(),
                };
                let sid = {
                    let st = self.sup.state();
                    let t = st.tab(&id).filter(|t| t.state != "closed").ok_or_else(|| {
                        ToolError::new(
                            "unknown_tab",
                            format!("no open tab {id} in this session; call browser_tabs"),
                        )
                    })?;
                    t.session_id.clone()
                };
                // Page.close runs beforeunload like a person closing the tab would; a tab
                // already held by a dialog (an alert loop) or whose page stopped answering is
                // closed by force (Target.closeTarget), as is one Page.close cannot reach.
                let before: Vec<String> = self.sup.state().pending.iter().map(|d| d.id.clone()).collect();
                let held = self.sup.state().pending.iter().any(|d| d.tab_id == id)
                    || self.suspect.lock().unwrap_or_else(|p| p.into_inner()).as_deref() == Some(id.as_str());
                let conn = self.sup.conn();
                let force = json!({"targetId": id});
                let closed = match sid.filter(|_| !held) {
                    Some(s) => match race_dialog(&self.sup, &id, conn.call(Some(&s), "Page.close", json!({}), 5_000))
                        .await
                    {
                        Raced::Done(Err(_)) => Raced::Done(conn.call(None, "Target.closeTarget", force, 5_000).await),
                        other => other,
                    },
                    None => Raced::Done(conn.call(None, "Target.closeTarget", force, 5_000).await),
                };
                if let Raced::Done(Err(e)) = closed {
                    return Err(e.into());
                }
                // Page.close returns before beforeunload runs: wait for the tab to go or a dialog
                let outcome = self
                    .sup
                    .wait_for(
                        tokio::time::Instant::now() + std::time::Duration::from_millis(5_000),
                        |st| {
                            if let Some(d) = st.pending.iter().find(|d| d.tab_id == id && !before.contains(&d.id)) {
                                return Some(Some(d.clone()));
                            }
                            st.tab(&id).filter(|t| t.state == "closed").map(|_| None)
                        },
                    )
                    .await;
                if let Some(Some(d)) = outcome {
                    let v = json!({"status": "blocked_by_dialog", "dialog": d});
                    return Ok((
                        format!(
                            "Closing tab {id} raised {} dialog; browser_dialog accept closes it, dismiss keeps it.",
                            crate::page::a_kind(&d.kind)
                        ),
                        v,
                    ));
                }
                let (text, mut v) = self.tab_list().await;
                v["closed"] = json!(id);
                Ok((format!("Closed tab {id}.\n{text}"), v))
            }
            _ => Ok(self.tab_list().await),
        }
    }

    async fn tab_list(&self) -> (String, Value) {
        // titles: Chromium sends Target.targetInfoChanged at commit (with a placeholder
        // title) but not when <title> is set; Target.getTargets has the current one
        if let Ok(r) = self.sup.conn().call(None, "Target.getTargets", json!({}), 2_000).await {
            let mut st = self.sup.state();
            for ti in r["targetInfos"].as_array().into_iter().flatten() {
                if let Some(t) = ti["targetId"].as_str().and_then(|id| st.tab_mut(id)) {
                    t.title = ti["title"].as_str().unwrap_or("").to_string();
                    t.url = ti["url"].as_str().unwrap_or("").to_string();
                }
            }
        }
        let st = self.sup.state();
        let cur = st.current.clone().unwrap_or_default();
        let tabs: Vec<Value> = st
            .tabs
            .iter()
            .filter(|t| t.state != "closed")
            .map(|t| {
                json!({"tab_id": t.tab_id, "url": t.url, "title": t.title, "current": t.tab_id == cur,
                       "opener_tab": t.opener_tab, "state": t.state, "kind": if t.opener_tab.is_some() { "popup" } else { "tab" }})
            })
            .collect();
        let mut text = String::new();
        for t in &tabs {
            text.push_str(&format!(
                "{} {} {:?} {}{}\n",
                if t["current"] == true { "*" } else { "-" },
                t["tab_id"].as_str().unwrap_or(""),
                t["title"].as_str().unwrap_or(""),
                t["url"].as_str().unwrap_or(""),
                match (t["state"].as_str(), t["opener_tab"].as_str()) {
                    (Some("crashed"), _) => " (crashed)".to_string(),
                    (_, Some(o)) => format!(" (popup of {o})"),
                    _ => String::new(),
                }
            ));
        }
        drop(st);
        let (dl_text, downloads) = self.downloads_listing();
        text.push_str(&dl_text);
        (text, json!({"tabs": tabs, "downloads": downloads}))
    }

    pub(crate) async fn tab_activate(&self, a: &Value) -> Done {
        let id = str_arg(a, "tab_id").unwrap_or_default();
        self.sup.activate(id).await?;
        let (text, v) = self.tab_list().await;
        Ok((format!("Tab {id} is now current.\n{text}"), v))
    }

    pub(crate) async fn dialog(&self, a: &Value) -> Done {
        let action = str_arg(a, "action").unwrap_or_default();
        let r = self
            .sup
            .respond_dialog(action, str_arg(a, "prompt_text"), str_arg(a, "dialog_id"))
            .await?;
        let text = format!(
            "{} the {} dialog {} ({:?}).",
            if action == "accept" { "Accepted" } else { "Dismissed" },
            r.kind,
            r.id,
            r.message
        );
        Ok((text, json!({"action": action, "dialog": r})))
    }

    pub(crate) async fn cdp(&self, a: &Value) -> Done {
        let method = str_arg(a, "method").unwrap_or_default().to_string();
        if !method.contains('.') {
            return Err(ToolError::new(
                "invalid_argument",
                format!("method {method:?} is not Domain.method (e.g. Runtime.evaluate)"),
            ));
        }
        if matches!(
            method.as_str(),
            "Browser.close" | "Browser.crash" | "Browser.crashGpuProcess"
        ) {
            return Err(ToolError::new(
                "method_refused",
                format!("{method} would end the browser every session shares; close this session's tabs with browser_tabs instead"),
            ));
        }
        let params = a.get("params").cloned().filter(|p| !p.is_null()).unwrap_or(json!({}));
        let (sid, scope, tab) = if let Some(fid) = str_arg(a, "frame_id") {
            let st = self.sup.state();
            let f = st.frames.get(fid).ok_or_else(|| {
                ToolError::new(
                    "frame_not_found",
                    format!("frame_id {fid:?} not found; browser_snapshot lists frame_tree"),
                )
            })?;
            if !f.is_oopif {
                return Err(ToolError::new(
                    "not_oopif",
                    format!("frame_id {fid:?} is not an out-of-process iframe (no session of its own); from the top frame use document.querySelector('iframe').contentWindow / contentDocument with Runtime.evaluate"),
                ));
            }
            (
                Some(f.session_id.clone()),
                json!({"frame_id": fid, "session_id": f.session_id}),
                Some(f.tab_id.clone()),
            )
        } else if let Some(tid) = str_arg(a, "target_id") {
            let st = self.sup.state();
            let t = st.tab(tid).and_then(|t| t.session_id.clone()).ok_or_else(|| {
                ToolError::new(
                    "unknown_tab",
                    format!("target_id {tid:?} is not an open tab of this session; browser_tabs lists them"),
                )
            })?;
            (Some(t), json!({"target_id": tid}), Some(tid.to_string()))
        } else if method.starts_with("Browser.") || method.starts_with("Target.") || method.starts_with("SystemInfo.") {
            (None, json!({"scope": "browser"}), None)
        } else {
            let (tab, sid) = self.current()?;
            (Some(sid), json!({"target_id": tab}), Some(tab))
        };
        let conn = self.sup.conn();
        let call = conn.call(sid.as_deref(), &method, params, RAW_TIMEOUT_MS);
        let r = match tab {
            None => call.await?,
            Some(tab) => {
                // a command that kills or pauses its page (Page.crash, an alert) gets no reply:
                // return as soon as the tab's state says why
                let far = tokio::time::Instant::now() + std::time::Duration::from_millis(RAW_TIMEOUT_MS);
                let gone = self.sup.wait_for(far, |st| {
                    st.tab(&tab).filter(|t| t.state != "open").map(|t| t.state.clone())
                });
                // with a dialog already showing, a dialog is no news: don't end the wait on it
                let showing = self.sup.state().pending.iter().any(|d| d.tab_id == tab);
                let call = async {
                    if showing {
                        Raced::Done(call.await)
                    } else {
                        race_dialog(&self.sup, &tab, call).await
                    }
                };
                tokio::select! {
                    r = call => match r {
                        Raced::Done(r) => r?,
                        Raced::Dialog(d) => json!({"note": "the command opened a dialog; answer it with browser_dialog", "dialog": d}),
                    },
                    Some(state) = gone => json!({"note": format!("no reply: the tab is now {state}")}),
                }
            }
        };
        let mut v = json!({"method": method, "result": r});
        if let (Some(o), Value::Object(s)) = (v.as_object_mut(), scope) {
            o.extend(s);
        }
        let text = serde_json::to_string(&v).unwrap_or_default();
        Ok((text, v))
    }

    pub(crate) async fn console(&self, a: &Value) -> Done {
        if let Some(expr) = str_arg(a, "expression") {
            let (tab, sid) = self.current()?;
            if let Some(d) = self.sup.state().pending.iter().find(|d| d.tab_id == tab) {
                return Err(dialog_error(d));
            }
            let p = json!({"expression": expr, "returnByValue": true, "awaitPromise": true, "userGesture": true, "replMode": true});
            let r = match race_dialog(
                &self.sup,
                &tab,
                self.sup.conn().call(Some(&sid), "Runtime.evaluate", p, RAW_TIMEOUT_MS),
            )
            .await
            {
                Raced::Done(r) => r?,
                Raced::Dialog(d) => {
                    let v = json!({"dialog": d});
                    return Ok((
                        format!(
                            "The expression opened {} dialog {:?} ({}); answer it with browser_dialog.",
                            crate::page::a_kind(&d.kind),
                            d.message,
                            d.id
                        ),
                        v,
                    ));
                }
            };
            if let Some(ex) = r.get("exceptionDetails") {
                let msg = ex["exception"]["description"]
                    .as_str()
                    .or(ex["text"].as_str())
                    .unwrap_or("exception");
                return Err(ToolError::new("js_exception", format!("the expression threw: {msg}")));
            }
            let res = &r["result"];
            let value = res.get("value").cloned().unwrap_or_else(|| {
                res.get("unserializableValue")
                    .or(res.get("description"))
                    .cloned()
                    .unwrap_or(Value::Null)
            });
            let text = match &value {
                Value::String(s) => s.clone(),
                v => v.to_string(),
            };
            return Ok((text, json!({"result": value, "result_type": res["type"]})));
        }
        let entries: Vec<Value> = {
            let mut st = self.sup.state();
            let e = st.console.iter().map(|e| json!(e)).collect();
            if bool_arg(a, "clear") {
                st.console.clear();
            }
            e
        };
        let mut text = format!(
            "{} console errors/warnings/exceptions (last {}):\n",
            entries.len(),
            tabgate_supervisor::CONSOLE_RING
        );
        for e in &entries {
            text.push_str(&format!(
                "[{}] {} {}\n",
                e["level"].as_str().unwrap_or(""),
                e["text"].as_str().unwrap_or(""),
                e["url"].as_str().unwrap_or("")
            ));
        }
        Ok((text, json!({"messages": entries})))
    }
}
