//! browser_find and browser_wait_for (case 10), and the arguments of browser_snapshot's
//! narrower views (case 28).
//!
//! Both tools read the tab exactly as `browser_snapshot` does (every frame, same-origin and
//! out-of-process, and shadow roots, with the same visibility rules), so whatever a snapshot
//! shows can be found and waited for, and every result carries a ref that acts on it.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

use crate::args::{bool_arg, str_arg};
use crate::page::{dialog_error, race_dialog, Raced};
use crate::session::{Done, Session};
use crate::snapshot::{self, find_nodes, write_line, Opts, Query, DEFAULT_MAX_TOKENS};
use crate::{target, ToolError};

/// Matches listed by browser_find unless `limit` says otherwise.
const FIND_LIMIT: usize = 20;
/// Default and largest browser_wait_for timeout, ms.
const WAIT_DEFAULT_MS: u64 = 5_000;
/// How often browser_wait_for looks again, ms.
const WAIT_POLL_MS: u64 = 150;

fn usize_arg(a: &Value, k: &str) -> Option<usize> {
    a.get(k).and_then(Value::as_u64).map(|n| n as usize)
}

impl Session {
    /// browser_snapshot's view arguments: `ref` (a subtree), `offset`/`limit`,
    /// `interactive_only`, `search`, `max_tokens`, `full`.
    pub(crate) fn snapshot_opts(&self, a: &Value, tab: &str) -> Result<Opts, ToolError> {
        let root = match str_arg(a, "ref") {
            Some(r) => Some(target::resolve(&self.sup, &self.refs, tab, r)?),
            None => None,
        };
        let max_tokens = usize_arg(a, "max_tokens").unwrap_or(DEFAULT_MAX_TOKENS);
        Ok(Opts {
            full: bool_arg(a, "full"),
            root,
            interactive_only: bool_arg(a, "interactive_only"),
            search: str_arg(a, "search")
                .map(str::to_string)
                .filter(|s| !s.trim().is_empty()),
            offset: usize_arg(a, "offset").unwrap_or(0),
            limit: usize_arg(a, "limit"),
            max_chars: max_tokens * snapshot::CHARS_PER_TOKEN,
        })
    }

    fn query(a: &Value) -> Query {
        let s = |k: &str| str_arg(a, k).map(str::to_string).filter(|s| !s.trim().is_empty());
        Query {
            text: s("text"),
            role: s("role"),
            name: s("name"),
            exact: bool_arg(a, "exact"),
        }
    }

    /// Runs `q` over the current tab; returns the rendered matches and their JSON.
    async fn find_once(&self, tab: &str, q: &Query, limit: usize) -> Result<(String, Vec<Value>, usize), ToolError> {
        let c = match race_dialog(
            &self.sup,
            tab,
            snapshot::collect(&self.sup, &self.refs, tab, false, None),
        )
        .await
        {
            Raced::Done(r) => r?,
            Raced::Dialog(d) => return Err(dialog_error(&d)),
        };
        let found = find_nodes(&c, q);
        let total = found.len();
        let mut refs = self.refs.lock().unwrap_or_else(|p| p.into_inner());
        let mut text = String::new();
        let mut list = vec![];
        for m in found.into_iter().take(limit) {
            let n = &c.nodes[m.node];
            let r = snapshot::node_ref(&mut refs, &c, n, tab, true);
            let mut line = String::new();
            write_line(&mut line, 0, &n.role, &n.name, &n.attrs, r.as_deref());
            line.pop();
            if let Some(ctx) = &m.context {
                line.push_str(&format!(" — in {ctx}"));
            }
            if !m.frames.is_empty() {
                let path: Vec<String> = m.frames.iter().map(|f| format!("iframe {f:?}")).collect();
                line.push_str(&format!(" (inside {})", path.join(" › ")));
            }
            text.push_str(&line);
            text.push('\n');
            list.push(json!({
                "ref": r, "role": n.role, "name": n.name, "attrs": n.attrs.trim(),
                "frame_id": c.frames[n.frame].frame_id, "frames": m.frames, "context": m.context,
            }));
        }
        Ok((text, list, total))
    }

    fn describe_query(q: &Query) -> String {
        let mut parts = vec![];
        if let Some(t) = &q.text {
            parts.push(format!("text {t:?}"));
        }
        if let Some(r) = &q.role {
            parts.push(format!("role {r}"));
        }
        if let Some(n) = &q.name {
            parts.push(format!("name {n:?}"));
        }
        parts.join(", ")
    }

    pub(crate) async fn find(&self, a: &Value) -> Done {
        let (tab, _) = self.current()?;
        if let Some(d) = self.sup.state().pending.iter().find(|d| d.tab_id == tab && !d.stale) {
            return Err(dialog_error(d));
        }
        let q = Self::query(a);
        if q.is_empty() {
            return Err(ToolError::new(
                "invalid_argument",
                "browser_find needs `text`, or `role` and/or `name`",
            ));
        }
        let limit = usize_arg(a, "limit").unwrap_or(FIND_LIMIT);
        let (lines, list, total) = self.find_once(&tab, &q, limit).await?;
        let what = Self::describe_query(&q);
        let text = if total == 0 {
            format!("No match for {what} in any frame of the tab (hidden elements are not searched; take a browser_snapshot to see the page).")
        } else {
            format!(
                "{} match{} for {what}{}:\n{lines}",
                total,
                if total == 1 { "" } else { "es" },
                if total > list.len() {
                    format!(" (first {}; pass limit for more)", list.len())
                } else {
                    String::new()
                }
            )
        };
        Ok((text, json!({"matches": list, "total": total, "tab_id": tab})))
    }

    pub(crate) async fn wait_for(&self, a: &Value) -> Done {
        let (tab, _) = self.current()?;
        if let Some(d) = self.sup.state().pending.iter().find(|d| d.tab_id == tab && !d.stale) {
            return Err(dialog_error(d));
        }
        let timeout = a.get("timeout_ms").and_then(Value::as_u64).unwrap_or(WAIT_DEFAULT_MS);
        let t0 = Instant::now();
        let deadline = t0 + Duration::from_millis(timeout);
        let appear_q = Self::query(a);
        let appear = (!appear_q.is_empty()).then(|| Self::describe_query(&appear_q));
        let gone = str_arg(a, "gone").filter(|s| !s.trim().is_empty());
        let target = match str_arg(a, "ref") {
            Some(r) => Some(target::resolve(&self.sup, &self.refs, &tab, r)?),
            None => None,
        };
        if appear.is_none() && gone.is_none() && target.is_none() {
            return Err(ToolError::new(
                "invalid_argument",
                "browser_wait_for needs `text` or `role`/`name` (to appear), `gone` (text to disappear) or `ref` (to become visible)",
            ));
        }
        let what = [
            appear.as_ref().map(|t| format!("{t} to appear")),
            gone.map(|t| format!("text {t:?} to disappear")),
            target
                .as_ref()
                .map(|t| format!("{} {:?} to be visible", t.entry.role, t.entry.name)),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" and ");
        loop {
            let mut ok = true;
            let mut found = vec![];
            let mut lines = String::new();
            if appear.is_some() {
                let (l, list, _) = self.find_once(&tab, &appear_q, 5).await?;
                ok &= !list.is_empty();
                lines = l;
                found = list;
            }
            if let Some(g) = gone {
                if ok {
                    let q = Query {
                        text: Some(g.to_string()),
                        ..Query::default()
                    };
                    ok &= self.find_once(&tab, &q, 1).await?.2 == 0;
                }
            }
            if let Some(t) = &target {
                if ok {
                    let v = match race_dialog(&self.sup, &tab, target::call(&self.sup, t, "isVisible", &[])).await {
                        Raced::Done(Ok(v)) => v,
                        Raced::Done(Err(e)) if e.code == "stale_ref" => json!({"visible": false}),
                        Raced::Done(Err(e)) => return Err(e),
                        Raced::Dialog(d) => return Err(dialog_error(&d)),
                    };
                    ok &= v["visible"] == true;
                }
            }
            let ms = t0.elapsed().as_millis() as u64;
            if ok {
                let mut text = format!("Done waiting for {what} after {ms} ms.");
                if !lines.is_empty() {
                    text.push('\n');
                    text.push_str(&lines);
                }
                return Ok((text, json!({"waited_ms": ms, "matches": found})));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(ToolError::new(
                    "wait_timeout",
                    format!("still waiting for {what} after {timeout} ms; take a browser_snapshot to see the page, or wait longer with timeout_ms"),
                )
                .with(json!({"waited_ms": ms})));
            }
            let pause = (deadline - now).min(Duration::from_millis(WAIT_POLL_MS));
            if let Raced::Dialog(d) = race_dialog(&self.sup, &tab, tokio::time::sleep(pause)).await {
                return Err(dialog_error(&d));
            }
        }
    }
}

/// Lines added and removed since `old` (both rendered snapshots), `+ `/`- ` prefixed, in
/// the order they appear. Refs are stable, so unchanged elements compare equal.
pub(crate) fn diff_text(old: &str, new: &str) -> (String, usize, usize) {
    use std::collections::HashMap;
    let count = |s: &str| {
        let mut m: HashMap<String, i64> = HashMap::new();
        for l in s.lines().skip(1) {
            *m.entry(l.to_string()).or_default() += 1;
        }
        m
    };
    let strip = |l: &str| -> String {
        let t = l.trim_start();
        t.strip_prefix("- ").unwrap_or(t).to_string()
    };
    let (mut o, mut n) = (count(old), count(new));
    let mut out = String::new();
    let (mut added, mut removed) = (0, 0);
    for l in old.lines().skip(1) {
        let k = n.entry(l.to_string()).or_default();
        if *k > 0 {
            *k -= 1;
        } else {
            out.push_str("- ");
            out.push_str(&strip(l));
            out.push('\n');
            removed += 1;
        }
    }
    for l in new.lines().skip(1) {
        let k = o.entry(l.to_string()).or_default();
        if *k > 0 {
            *k -= 1;
        } else {
            out.push_str("+ ");
            out.push_str(&strip(l));
            out.push('\n');
            added += 1;
        }
    }
    (out, added, removed)
}

#[cfg(test)]
mod tests {
    use super::diff_text;

    #[test]
    fn diff_lists_added_and_removed_lines() {
        let old = "Tab 1\n- button \"A\" [ref=e1]\n- text \"x\"\n";
        let new = "Tab 1\n- button \"A\" [ref=e1]\n- text \"y\"\n- link \"B\" [ref=e2]\n";
        let (d, a, r) = diff_text(old, new);
        assert_eq!((a, r), (2, 1));
        assert_eq!(d, "- text \"x\"\n+ text \"y\"\n+ link \"B\" [ref=e2]\n");
    }
}
