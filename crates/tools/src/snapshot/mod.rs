//! The accessibility snapshot: the in-page script runs in every frame of the tab (each in
//! its own isolated world, OOPIFs on their own sessions), and the frames' line lists are
//! stitched under their `<iframe>` owners (`DOM.getFrameOwner`), with session-wide refs.

use std::collections::HashMap;
use std::fmt::Write;

use futures_util::future::join_all;
use serde::Deserialize;
use serde_json::{json, Value};
use tabgate_supervisor::{CdpSupervisor, Frame};

use crate::page::{eval_world, js, world};
use crate::refs::{RefEntry, Refs};
use crate::ToolError;

mod budget;
mod query;

pub use budget::{Opts, CHARS_PER_TOKEN, DEFAULT_MAX_TOKENS};
pub(crate) use query::{find_nodes, Query};

/// One frame's result from `__tabgate.snapshot()`.
#[derive(Debug, Deserialize)]
struct FrameSnap {
    doc: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    title: String,
    /// `[depth, role, name, attrs, id, isFrameOwner?]`; `id` > 0 has a ref, < 0 is an
    /// element without one (negated), 0 is nothing to point at.
    lines: Vec<Value>,
}

/// A rendered snapshot of one tab.
pub struct Snapshot {
    pub text: String,
    pub url: String,
    pub title: String,
    /// Number of refs in this snapshot.
    pub refs: usize,
    /// Frames whose content could not be read, with the reason.
    pub unreadable: Vec<(String, String)>,
    /// Set when the size budget, paging or a filter left nodes out: `{total_nodes,
    /// shown_nodes, omitted, max_tokens, how}`.
    pub truncated: Option<Value>,
}

/// One output node of a tab's stitched snapshot (every frame, in document order).
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub depth: usize,
    pub role: String,
    pub name: String,
    pub attrs: String,
    /// In-page element id: > 0 has a ref, < 0 (negated) is an element shown without one.
    pub id: i64,
    /// Index into [`Collected::frames`].
    pub frame: usize,
}

/// A frame a node came from: what a ref needs.
#[derive(Debug, Clone)]
pub(crate) struct FrameCtx {
    pub frame_id: String,
    pub loader_id: String,
    pub doc: String,
}

/// Every frame of a tab read and stitched into one node list.
pub(crate) struct Collected {
    pub nodes: Vec<Node>,
    pub frames: Vec<FrameCtx>,
    pub url: String,
    pub title: String,
    pub unreadable: Vec<(String, String)>,
}

/// Takes the snapshot of `tab` (or of one element's subtree) with a size budget, paging and
/// filters ([`Opts`]). Frames are read concurrently; a frame that fails (paused by a dialog,
/// gone mid-read) is shown as a text line saying so rather than failing the whole.
pub async fn take_opts(
    sup: &CdpSupervisor,
    refs: &std::sync::Mutex<Refs>,
    tab: &str,
    opts: &Opts,
) -> Result<Snapshot, ToolError> {
    let c = collect(sup, refs, tab, opts.full, opts.root.as_ref()).await?;
    let mut r = refs.lock().unwrap_or_else(|p| p.into_inner());
    let out = budget::render(&c, opts, &mut r, tab);
    Ok(Snapshot {
        text: out.text,
        url: c.url,
        title: c.title,
        refs: out.refs,
        unreadable: c.unreadable,
        truncated: out.truncated,
    })
}

/// Reads every frame of `tab` (or, with `root`, the root element's frame from that element
/// down, and the frames inside it) and stitches them into one node list.
pub(crate) async fn collect(
    sup: &CdpSupervisor,
    refs: &std::sync::Mutex<Refs>,
    tab: &str,
    full: bool,
    root: Option<&crate::target::Target>,
) -> Result<Collected, ToolError> {
    let frames: Vec<Frame> = sup
        .state()
        .frames
        .values()
        .filter(|f| f.tab_id == tab)
        .cloned()
        .collect();
    let top = frames.iter().find(|f| f.frame_id == tab).cloned().ok_or_else(|| {
        ToolError::new(
            "tab_not_ready",
            "the tab has no document yet; call browser_navigate first",
        )
    })?;
    let start = match root {
        Some(t) => t.frame.clone(),
        None => top.clone(),
    };
    // the start frame and the frames below it
    let below = |f: &Frame| -> bool {
        let mut cur = Some(f.frame_id.clone());
        while let Some(id) = cur {
            if id == start.frame_id {
                return true;
            }
            cur = frames
                .iter()
                .find(|x| x.frame_id == id)
                .and_then(|x| x.parent_frame_id.clone());
        }
        false
    };
    let frames: Vec<Frame> = frames.iter().filter(|f| below(f)).cloned().collect();
    let call = format!("globalThis.__tabgate.snapshot({})", js(json!({"full": full})));
    let results = join_all(frames.iter().map(|f| {
        let call = match root {
            Some(t) if f.frame_id == start.frame_id => format!(
                "globalThis.__tabgate.doc === {} ? globalThis.__tabgate.snapshot({}) : {{error: 'stale_doc'}}",
                js(&t.entry.doc),
                js(json!({"full": full, "root": t.entry.elem}))
            ),
            _ => call.clone(),
        };
        async move { read_frame(sup, f, &call).await }
    }))
    .await;
    let mut snaps: HashMap<String, Result<FrameSnap, String>> = HashMap::new();
    for (f, r) in frames.iter().zip(results) {
        snaps.insert(f.frame_id.clone(), r);
    }
    if let Some(Err(e)) = snaps.get(&start.frame_id) {
        return Err(match (root, e.as_str()) {
            (Some(t), "stale_doc" | "gone" | "detached") => ToolError::new(
                "stale_ref",
                format!(
                    "stale_ref: {} {:?} is no longer in the document — take a new snapshot",
                    t.entry.role, t.entry.name
                ),
            ),
            (Some(t), "not_visible") => ToolError::new(
                "not_visible",
                format!("{} {:?} is hidden; nothing to show", t.entry.role, t.entry.name),
            ),
            _ => ToolError::new("snapshot_failed", format!("cannot read the page: {e}")),
        });
    }
    // owner element of every child frame whose parent was read
    let children: Vec<&Frame> = frames
        .iter()
        .filter(|f| f.parent_frame_id.is_some() && f.frame_id != start.frame_id)
        .collect();
    let all: Vec<Frame> = sup
        .state()
        .frames
        .values()
        .filter(|f| f.tab_id == tab)
        .cloned()
        .collect();
    let owner_ids = join_all(children.iter().map(|c| owner_of(sup, refs, &all, c))).await;
    let mut by_owner: HashMap<(String, u64), String> = HashMap::new();
    for (c, o) in children.iter().zip(owner_ids) {
        if let (Some(p), Some(o)) = (&c.parent_frame_id, o) {
            by_owner.insert((p.clone(), o), c.frame_id.clone());
        }
    }
    let mut s = Stitch {
        snaps: &snaps,
        frames: &frames,
        by_owner: &by_owner,
        nodes: vec![],
        ctx: vec![],
        unreadable: vec![],
    };
    s.frame(&start.frame_id, 0);
    let (url, title) = match snaps.get(&top.frame_id) {
        Some(Ok(s)) => (s.url.clone(), s.title.clone()),
        _ => (top.url.clone(), String::new()),
    };
    Ok(Collected {
        nodes: s.nodes,
        frames: s.ctx,
        url,
        title,
        unreadable: s.unreadable,
    })
}

async fn read_frame(sup: &CdpSupervisor, f: &Frame, call: &str) -> Result<FrameSnap, String> {
    let n = eval_world(sup, f, "globalThis.__tabgate.closedHosts().length")
        .await
        .map_err(|e| e.message)?;
    if n.as_u64().unwrap_or(0) > 0 {
        if let Err(e) = adopt_closed_roots(sup, f).await {
            tracing::debug!("closed shadow roots of frame {} not adopted: {}", f.frame_id, e.message);
        }
    }
    let v = eval_world(sup, f, call).await.map_err(|e| e.message)?;
    if let Some(e) = v.get("error").and_then(Value::as_str) {
        return Err(e.to_string());
    }
    serde_json::from_value(v).map_err(|e| format!("bad snapshot data: {e}"))
}

/// Hands closed shadow roots to the in-page script: a page script cannot reach them, CDP
/// can (`DOM.describeNode{pierce: true}` lists a host's `shadowRoots`, closed ones
/// included), so each candidate host's closed root is resolved into the isolated world and
/// passed to `__tabgate.adoptRoot(host, root)`. Hosts without one are marked as asked.
async fn adopt_closed_roots(sup: &CdpSupervisor, f: &Frame) -> Result<(), ToolError> {
    let conn = &sup.conn();
    let sid = Some(f.session_id.as_str());
    let ctx = world(sup, f).await?;
    let group = json!(object_group());
    let arr = conn
        .call(
            sid,
            "Runtime.evaluate",
            json!({"expression": "globalThis.__tabgate.closedHosts()", "contextId": ctx, "objectGroup": group}),
            5_000,
        )
        .await?;
    let Some(arr_id) = arr["result"]["objectId"].as_str() else {
        return Ok(());
    };
    let props = conn
        .call(
            sid,
            "Runtime.getProperties",
            json!({"objectId": arr_id, "ownProperties": true}),
            5_000,
        )
        .await?;
    let hosts: Vec<String> = props["result"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["name"].as_str().is_some_and(|n| n.parse::<usize>().is_ok()))
        .filter_map(|p| p["value"]["objectId"].as_str().map(str::to_string))
        .collect();
    let group = &group;
    let adopt = |host: String| async move {
        let node = conn
            .call(
                sid,
                "DOM.describeNode",
                json!({"objectId": host, "depth": 0, "pierce": true}),
                5_000,
            )
            .await?;
        let closed = node["node"]["shadowRoots"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["shadowRootType"] == "closed")
            .and_then(|r| r["backendNodeId"].as_i64());
        let mut args = vec![json!({"value": null})];
        if let Some(b) = closed {
            let root = conn
                .call(
                    sid,
                    "DOM.resolveNode",
                    json!({"backendNodeId": b, "executionContextId": ctx, "objectGroup": group}),
                    5_000,
                )
                .await?;
            args = vec![json!({"objectId": root["object"]["objectId"]})];
        }
        conn.call(
            sid,
            "Runtime.callFunctionOn",
            json!({"objectId": host, "functionDeclaration": "function(r){return globalThis.__tabgate.adoptRoot(this, r)}", "arguments": args}),
            5_000,
        )
        .await?;
        Ok::<(), ToolError>(())
    };
    for r in join_all(hosts.into_iter().map(adopt)).await {
        r?;
    }
    let _ = conn
        .call(sid, "Runtime.releaseObjectGroup", json!({"objectGroup": group}), 5_000)
        .await;
    Ok(())
}

/// A fresh object group name: concurrent reads on one session must not release each
/// other's remote objects.
fn object_group() -> String {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!("tabgate-{}", N.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

/// The owner element id (in the parent document) of child frame `c`, cached per parent
/// document: `DOM.getFrameOwner` → `DOM.resolveNode` in the parent's isolated world →
/// `__tabgate.idOf(this)`.
pub(crate) async fn owner_of(
    sup: &CdpSupervisor,
    refs: &std::sync::Mutex<Refs>,
    frames: &[Frame],
    c: &Frame,
) -> Option<u64> {
    let parent = frames
        .iter()
        .find(|f| Some(&f.frame_id) == c.parent_frame_id.as_ref())?;
    if let Some(o) = refs.lock().ok()?.owner(&c.frame_id, &parent.loader_id) {
        return Some(o);
    }
    let conn = &sup.conn();
    let sid = Some(parent.session_id.as_str());
    let owner = conn
        .call(sid, "DOM.getFrameOwner", json!({"frameId": c.frame_id}), 5_000)
        .await
        .ok()?;
    let ctx = world(sup, parent).await.ok()?;
    let group = object_group();
    let obj = conn
        .call(
            sid,
            "DOM.resolveNode",
            json!({"backendNodeId": owner["backendNodeId"], "executionContextId": ctx, "objectGroup": group}),
            5_000,
        )
        .await
        .ok()?;
    let id = conn
        .call(
            sid,
            "Runtime.callFunctionOn",
            json!({"objectId": obj["object"]["objectId"], "functionDeclaration": "function(){return globalThis.__tabgate ? globalThis.__tabgate.idOf(this) : 0}", "returnByValue": true}),
            5_000,
        )
        .await
        .ok()?["result"]["value"]
        .as_u64()
        .filter(|&i| i > 0)?;
    let _ = conn
        .call(sid, "Runtime.releaseObjectGroup", json!({"objectGroup": group}), 5_000)
        .await;
    refs.lock().ok()?.set_owner(&c.frame_id, &parent.loader_id, id);
    Some(id)
}

struct Stitch<'a> {
    snaps: &'a HashMap<String, Result<FrameSnap, String>>,
    frames: &'a [Frame],
    by_owner: &'a HashMap<(String, u64), String>,
    nodes: Vec<Node>,
    ctx: Vec<FrameCtx>,
    unreadable: Vec<(String, String)>,
}

impl Stitch<'_> {
    fn frame(&mut self, frame_id: &str, base: usize) {
        let snap = match self.snaps.get(frame_id) {
            Some(Ok(s)) => s,
            Some(Err(e)) => {
                self.nodes.push(Node {
                    depth: base,
                    role: "text".into(),
                    name: format!("(frame content unavailable: {e})"),
                    attrs: String::new(),
                    id: 0,
                    frame: 0,
                });
                self.unreadable.push((frame_id.to_string(), e.clone()));
                return;
            }
            None => return,
        };
        let loader = self
            .frames
            .iter()
            .find(|f| f.frame_id == frame_id)
            .map(|f| f.loader_id.clone())
            .unwrap_or_default();
        let fi = self.ctx.len();
        self.ctx.push(FrameCtx {
            frame_id: frame_id.to_string(),
            loader_id: loader,
            doc: snap.doc.clone(),
        });
        for l in &snap.lines {
            let depth = l[0].as_u64().unwrap_or(0) as usize + base;
            let id = l[4].as_i64().unwrap_or(0);
            self.nodes.push(Node {
                depth,
                role: l[1].as_str().unwrap_or("generic").to_string(),
                name: l[2].as_str().unwrap_or("").to_string(),
                attrs: l[3].as_str().unwrap_or("").to_string(),
                id,
                frame: fi,
            });
            if l.get(5).and_then(Value::as_u64) == Some(1) && id > 0 {
                if let Some(child) = self.by_owner.get(&(frame_id.to_string(), id as u64)).cloned() {
                    self.frame(&child, depth + 1);
                }
            }
        }
    }
}

/// Appends one snapshot line: `- role "name" attrs [ref=eN]`, indented two spaces per level.
pub(crate) fn write_line(out: &mut String, depth: usize, role: &str, name: &str, attrs: &str, r: Option<&str>) {
    for _ in 0..depth {
        out.push_str("  ");
    }
    out.push_str("- ");
    out.push_str(role);
    if !name.is_empty() {
        out.push_str(" \"");
        for ch in name.chars() {
            match ch {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' | '\r' => out.push(' '),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    out.push_str(attrs);
    if let Some(r) = r {
        let _ = write!(out, " [ref={r}]");
    }
    out.push('\n');
}

/// The ref of node `n`, assigning one to an element shown without a ref when `force`.
pub(crate) fn node_ref(refs: &mut Refs, c: &Collected, n: &Node, tab: &str, force: bool) -> Option<String> {
    if n.id == 0 || (n.id < 0 && !force) {
        return None;
    }
    let f = &c.frames[n.frame];
    Some(refs.assign(RefEntry {
        tab: tab.to_string(),
        frame_id: f.frame_id.clone(),
        loader_id: f.loader_id.clone(),
        doc: f.doc.clone(),
        elem: n.id.unsigned_abs(),
        role: n.role.clone(),
        name: n.name.clone(),
    }))
}
