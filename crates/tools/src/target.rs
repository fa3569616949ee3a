//! Resolving a ref to a live element and a point on the tab's screen.

use serde_json::{json, Value};
use tabgate_supervisor::{CdpSupervisor, Frame};

use crate::page::{eval_world, js};
use crate::refs::{RefEntry, Refs};
use crate::snapshot::owner_of;
use crate::ToolError;

/// A ref resolved against the live page.
pub struct Target {
    pub entry: RefEntry,
    pub frame: Frame,
}

/// Checks that `r` names a live node: known ref, current tab, frame still attached, same
/// document (`loaderId`). Errors: `unknown_ref`, `stale_ref` (with the reason and "take a
/// new snapshot").
pub fn resolve(sup: &CdpSupervisor, refs: &std::sync::Mutex<Refs>, tab: &str, r: &str) -> Result<Target, ToolError> {
    let entry = refs
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(r)
        .cloned()
        .ok_or_else(|| {
            ToolError::new(
                "unknown_ref",
                format!("ref {r:?} is not from this session; take a browser_snapshot and use its refs"),
            )
        })?;
    if entry.tab != tab {
        return Err(ToolError::new(
            "stale_ref",
            format!(
                "ref {r} belongs to tab {}, not the current tab {tab}; browser_tab_activate it or take a new snapshot",
                entry.tab
            ),
        ));
    }
    let st = sup.state();
    let frame = st.frames.get(&entry.frame_id).cloned().ok_or_else(|| {
        ToolError::new(
            "stale_ref",
            format!("stale_ref: the frame of ref {r} is gone (detached) — take a new snapshot"),
        )
    })?;
    if frame.loader_id != entry.loader_id {
        return Err(ToolError::new(
            "stale_ref",
            format!("stale_ref: document replaced by navigation (loaderId changed) — take a new snapshot; ref {r} was {} {:?}", entry.role, entry.name),
        ));
    }
    Ok(Target { entry, frame })
}

/// Calls `__tabgate.<method>(elem, ...args)` on the target's element in its frame, checking
/// the document token first. Returns the script's value; `{error: ...}` values become
/// `stale_ref` / `not_visible` / script-specific errors.
pub async fn call(sup: &CdpSupervisor, t: &Target, method: &str, args: &[Value]) -> Result<Value, ToolError> {
    let mut a = vec![json!(t.entry.elem)];
    a.extend_from_slice(args);
    let list: Vec<String> = a.iter().map(js).collect();
    let expr = format!(
        "globalThis.__tabgate.doc === {} ? globalThis.__tabgate.{method}({}) : {{error: 'stale_doc'}}",
        js(&t.entry.doc),
        list.join(",")
    );
    let v = eval_world(sup, &t.frame, &expr).await?;
    if let Some(e) = v.get("error").and_then(Value::as_str) {
        let what = format!("{} {:?}", t.entry.role, t.entry.name);
        return Err(match e {
            "stale_doc" => ToolError::new(
                "stale_ref",
                format!("stale_ref: the document of {what} was replaced — take a new snapshot"),
            ),
            "gone" | "detached" => ToolError::new(
                "stale_ref",
                format!("stale_ref: {what} is no longer in the document — take a new snapshot"),
            ),
            "not_visible" => ToolError::new(
                "not_visible",
                format!("{what} has no visible box (hidden or zero-size); take a new snapshot or scroll"),
            ),
            other => ToolError::new(other.to_string(), format!("{what}: {other}")).with(v.clone()),
        });
    }
    Ok(v)
}

/// Offset of a frame's viewport in the tab's top viewport (CSS px): the sum of each owner
/// `<iframe>`'s content-box origin up the frame chain (OOPIFs included), each owner scrolled
/// into view in its parent first. `local` is a point in the frame's own viewport: it must
/// fall inside every ancestor frame's visible box, else the element cannot be hit
/// (`not_visible`, clipped by a frame).
pub async fn frame_offset(
    sup: &CdpSupervisor,
    refs: &std::sync::Mutex<Refs>,
    frame: &Frame,
    local: (f64, f64),
) -> Result<(f64, f64), ToolError> {
    let frames: Vec<Frame> = sup
        .state()
        .frames
        .values()
        .filter(|f| f.tab_id == frame.tab_id)
        .cloned()
        .collect();
    let (mut x, mut y) = local;
    let mut cur = frame.clone();
    while let Some(pid) = cur.parent_frame_id.clone() {
        let parent = frames
            .iter()
            .find(|f| f.frame_id == pid)
            .cloned()
            .ok_or_else(|| ToolError::new("stale_ref", "a parent frame is gone; take a new snapshot"))?;
        let owner = owner_of(sup, refs, &frames, &cur).await.ok_or_else(|| {
            ToolError::new(
                "frame_owner_unknown",
                "cannot find the <iframe> element of a frame; take a new snapshot",
            )
        })?;
        let o = eval_world(sup, &parent, &format!("globalThis.__tabgate.contentOrigin({owner})")).await?;
        let (w, h) = (o["w"].as_f64().unwrap_or(f64::MAX), o["h"].as_f64().unwrap_or(f64::MAX));
        if x < 0.0 || y < 0.0 || x >= w || y >= h {
            return Err(ToolError::new(
                "not_visible",
                format!("the element lies outside the visible area of its enclosing frame ({w:.0}×{h:.0} px) at ({x:.0}, {y:.0}); scroll inside that frame (browser_scroll with a ref in it) or use a larger viewport"),
            ));
        }
        x += o["x"].as_f64().unwrap_or(0.0);
        y += o["y"].as_f64().unwrap_or(0.0);
        cur = parent;
    }
    Ok((x, y))
}

/// Pause before re-measuring an element inside frames, ms (about three compositor frames).
const FRAME_SETTLE_MS: u64 = 50;

/// The element's centre in the top viewport after scrolling it into view, and whether it
/// is the topmost element there (`hit`).
pub async fn point(
    sup: &CdpSupervisor,
    refs: &std::sync::Mutex<Refs>,
    t: &Target,
) -> Result<(f64, f64, Value), ToolError> {
    let p = call(sup, t, "point", &[]).await?;
    let local = (p["x"].as_f64().unwrap_or(0.0), p["y"].as_f64().unwrap_or(0.0));
    let (x, y) = frame_offset(sup, refs, &t.frame, local).await?;
    if t.frame.parent_frame_id.is_none() {
        return Ok((x, y, p));
    }
    // Inside frames the browser routes input by hit-test data that the compositor updates
    // a frame after a scroll: let it catch up, and measure again.
    tokio::time::sleep(std::time::Duration::from_millis(FRAME_SETTLE_MS)).await;
    let p = call(sup, t, "point", &[]).await?;
    let local = (p["x"].as_f64().unwrap_or(0.0), p["y"].as_f64().unwrap_or(0.0));
    let (x, y) = frame_offset(sup, refs, &t.frame, local).await?;
    Ok((x, y, p))
}
