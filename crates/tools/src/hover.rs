//! browser_hover (case 18): moves the real pointer onto an element, so CSS `:hover` and
//! `mouseenter`/`mouseover` handlers run as they do for a person. The pointer stays there
//! until the next action, which moves it straight to its own target.

use std::time::Duration;

use serde_json::{json, Value};

use crate::args::str_arg;
use crate::page::{dialog_error, race_dialog, Raced};
use crate::session::{Done, Session};
use crate::{target, ToolError};

/// Pause after the move so transitions and timers started by `mouseenter` settle, ms.
const SETTLE_MS: u64 = 60;

impl Session {
    pub(crate) async fn hover(&self, a: &Value) -> Done {
        let (tab, sid) = self.current()?;
        if let Some(d) = self.sup.state().pending.iter().find(|d| d.tab_id == tab && !d.stale) {
            return Err(dialog_error(d));
        }
        let r = str_arg(a, "ref").unwrap_or_default();
        let t = target::resolve(&self.sup, &self.refs, &tab, r)?;
        let mut pt = target::point(&self.sup, &self.refs, &t).await?;
        if pt.2["hit"] == false {
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
        let conn = self.sup.conn();
        let moved = conn.call(
            Some(&sid),
            "Input.dispatchMouseEvent",
            json!({"type": "mouseMoved", "x": pt.0, "y": pt.1, "button": "none"}),
            10_000,
        );
        let dialog = match race_dialog(&self.sup, &tab, moved).await {
            Raced::Done(r) => {
                r?;
                tokio::time::sleep(Duration::from_millis(SETTLE_MS)).await;
                None
            }
            Raced::Dialog(d) => Some(d),
        };
        let mut text = format!(
            "Hovering over {} {:?} [ref={r}]; the pointer stays there until the next action. Take a browser_snapshot to see what appeared.",
            t.entry.role, t.entry.name
        );
        let mut v = json!({"hovered": r, "x": pt.0, "y": pt.1});
        if let Some(d) = dialog {
            text.push_str(&format!(
                "\nIt opened {} dialog {:?} ({}); the page waits for browser_dialog (accept or dismiss).",
                crate::page::a_kind(&d.kind),
                d.message,
                d.id
            ));
            v["dialog"] = json!(d);
        }
        Ok((text, v))
    }
}
