//! browser_select_option on custom dropdowns (case 17): an ARIA combobox (or any element
//! that opens a list of `role=option` items, often mounted at the end of `<body>`) is
//! opened with a real click, the option is found in the list that appeared and clicked,
//! and the choice is read back.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

use crate::page::{race_dialog, Raced};
use crate::refs::RefEntry;
use crate::session::{Done, Session};
use crate::target::{self, Target};
use crate::{keys, ToolError};

/// How long to wait for options to appear after opening, ms.
const OPTIONS_WAIT_MS: u64 = 1_500;

fn norm(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

impl Session {
    /// A real click at the element's centre (scrolled into view); errors when something
    /// else covers it.
    async fn click_target(&self, tab: &str, sid: &str, t: &Target) -> Result<(), ToolError> {
        let pt = target::point(&self.sup, &self.refs, t).await?;
        if pt.2["hit"] == false {
            return Err(ToolError::new(
                "element_obscured",
                format!(
                    "{} {:?} is covered by {} at its centre",
                    t.entry.role,
                    t.entry.name,
                    pt.2["hitDesc"].as_str().unwrap_or("another element")
                ),
            ));
        }
        let conn = self.sup.conn();
        let clicked = async {
            for (kind, button, count) in [
                ("mouseMoved", "none", 0),
                ("mousePressed", "left", 1),
                ("mouseReleased", "left", 1),
            ] {
                conn.call(
                    Some(sid),
                    "Input.dispatchMouseEvent",
                    json!({"type": kind, "x": pt.0, "y": pt.1, "button": button, "clickCount": count}),
                    10_000,
                )
                .await?;
            }
            Ok::<(), ToolError>(())
        };
        match race_dialog(&self.sup, tab, clicked).await {
            Raced::Done(r) => r,
            Raced::Dialog(d) => Err(crate::page::dialog_error(&d)),
        }
    }

    /// The visible options belonging to (or opened by) `t`: `[(id, name)]`.
    async fn options_of(&self, t: &Target) -> Result<Vec<(u64, String)>, ToolError> {
        let v = target::call(&self.sup, t, "findOptions", &[]).await?;
        Ok(v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|o| Some((o["id"].as_u64()?, o["name"].as_str().unwrap_or("").to_string())))
            .collect())
    }

    async fn wait_options(&self, t: &Target) -> Result<Vec<(u64, String)>, ToolError> {
        let until = Instant::now() + Duration::from_millis(OPTIONS_WAIT_MS);
        loop {
            let o = self.options_of(t).await?;
            if !o.is_empty() || Instant::now() >= until {
                return Ok(o);
            }
            tokio::time::sleep(Duration::from_millis(80)).await;
        }
    }

    async fn escape(&self, sid: &str) {
        if let Ok(evs) = keys::chord("Escape") {
            for ev in evs {
                let _ = self
                    .sup
                    .conn()
                    .call(Some(sid), "Input.dispatchKeyEvent", ev, 5_000)
                    .await;
            }
        }
    }

    /// Selects `values` (option labels) in a custom dropdown `t`.
    pub(crate) async fn select_custom(&self, t: &Target, values: &Value) -> Done {
        let (tab, sid) = self.current()?;
        let wanted: Vec<String> = values
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        let what = format!("{} {:?}", t.entry.role, t.entry.name);
        let mut chosen = vec![];
        for w in &wanted {
            let mut opts = self.options_of(t).await?;
            if opts.is_empty() {
                self.click_target(&tab, &sid, t).await?;
                opts = self.wait_options(t).await?;
            }
            if opts.is_empty() {
                return Err(ToolError::new(
                    "no_options",
                    format!("{what} is not a <select>, and clicking it showed no options (role=option); take a browser_snapshot and click the option's ref"),
                ));
            }
            let pick = opts
                .iter()
                .find(|(_, n)| n == w)
                .or_else(|| opts.iter().find(|(_, n)| norm(n) == norm(w)))
                .cloned();
            let Some((id, name)) = pick else {
                self.escape(&sid).await;
                let names: Vec<&String> = opts.iter().map(|(_, n)| n).collect();
                return Err(ToolError::new(
                    "missing_option",
                    format!("{what} has no option {w:?}; available: {names:?}"),
                )
                .with(json!({"missing": [w], "options": names})));
            };
            let opt = Target {
                entry: RefEntry {
                    elem: id,
                    role: "option".into(),
                    name: name.clone(),
                    ..t.entry.clone()
                },
                frame: t.frame.clone(),
            };
            self.click_target(&tab, &sid, &opt).await?;
            chosen.push(name);
        }
        // read back after the page's handlers ran
        tokio::time::sleep(Duration::from_millis(50)).await;
        let state = target::call(&self.sup, t, "comboState", &[]).await?;
        let shown = [state["text"].as_str(), state["value"].as_str()]
            .into_iter()
            .flatten()
            .map(norm)
            .collect::<Vec<_>>();
        let selected: Vec<String> = state["selected"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(norm))
            .collect();
        let missing: Vec<&String> = chosen
            .iter()
            .filter(|c| !shown.iter().any(|s| s.contains(&norm(c))) && !selected.contains(&norm(c)))
            .collect();
        if !missing.is_empty() {
            return Err(ToolError::new(
                "selection_reverted",
                format!(
                    "clicked option(s) {missing:?} of {what}, but it now shows {:?}; the page did not take the choice — take a browser_snapshot",
                    state["text"].as_str().unwrap_or("")
                ),
            )
            .with(json!({"state": state})));
        }
        Ok((
            format!(
                "Selected {chosen:?} in {what} (opened it and clicked the option); it now shows {:?}.",
                state["text"].as_str().unwrap_or("")
            ),
            json!({"selected": chosen, "value": state["text"], "custom": true}),
        ))
    }
}
