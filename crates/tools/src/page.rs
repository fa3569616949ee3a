//! Running tabgate's in-page script in a frame's isolated world, and never hanging on a
//! dialog while doing it.

use std::future::Future;
use std::time::Duration;

use serde_json::{json, Value};
use tabgate_supervisor::{CdpSupervisor, Frame, PendingDialog, WORLD_NAME};
use tokio::time::Instant;

use crate::ToolError;

/// The snapshot/actions script (see `snapshot/README.md` for its contract).
pub const SCRIPT: &str = include_str!("snapshot/snapshot.js");

/// Deadline for one page evaluation, ms.
pub const EVAL_TIMEOUT_MS: u64 = 10_000;

/// How a page operation ended when raced against dialogs. (Short-lived, on the stack:
/// boxing the dialog would buy nothing.)
#[allow(clippy::large_enum_variant)]
pub enum Raced<T> {
    Done(T),
    /// A dialog opened on the tab while the operation ran (the operation is abandoned;
    /// its reply, if any, is discarded).
    Dialog(PendingDialog),
}

/// Runs `fut` until it finishes or a dialog opens on `tab`, whichever comes first.
pub async fn race_dialog<T>(sup: &CdpSupervisor, tab: &str, fut: impl Future<Output = T>) -> Raced<T> {
    let far = Instant::now() + Duration::from_secs(3600);
    tokio::select! {
        biased;
        d = sup.wait_for(far, |st| st.pending.iter().find(|d| d.tab_id == tab && !d.stale).cloned()) => match d {
            Some(d) => Raced::Dialog(d),
            None => std::future::pending().await,
        },
        r = fut => Raced::Done(r),
    }
}

/// The error for an operation a dialog interrupted.
pub fn dialog_error(d: &PendingDialog) -> ToolError {
    ToolError::new(
        "blocked_by_dialog",
        format!(
            "the page is showing {} dialog ({:?}); answer it with browser_dialog (accept or dismiss), then retry",
            a_kind(&d.kind),
            d.message
        ),
    )
    .with(json!({"dialog": d}))
}

/// The frame's isolated-world context id, creating the world when needed
/// (`Page.createIsolatedWorld` on the session hosting the frame).
pub async fn world(sup: &CdpSupervisor, frame: &Frame) -> Result<i64, ToolError> {
    let key = (frame.session_id.clone(), frame.frame_id.clone());
    if let Some(id) = sup.state().worlds.get(&key).copied() {
        return Ok(id);
    }
    let r = sup
        .conn()
        .call(
            Some(&frame.session_id),
            "Page.createIsolatedWorld",
            json!({"frameId": frame.frame_id, "worldName": WORLD_NAME, "grantUniveralAccess": false}),
            EVAL_TIMEOUT_MS,
        )
        .await?;
    let id = r["executionContextId"]
        .as_i64()
        .ok_or_else(|| ToolError::new("cdp_error", "Page.createIsolatedWorld returned no executionContextId"))?;
    sup.state().worlds.insert(key, id);
    Ok(id)
}

/// Evaluates `call` (an expression using `globalThis.__tabgate`) in the frame's isolated
/// world, installing the script first when the world is new. Returns the value by value.
/// A JavaScript exception is an `script_error`.
pub async fn eval_world(sup: &CdpSupervisor, frame: &Frame, call: &str) -> Result<Value, ToolError> {
    for attempt in 0..2 {
        let ctx = world(sup, frame).await?;
        let guarded =
            format!("(globalThis.__tabgate && globalThis.__tabgate.version) ? ({call}) : '__tabgate_missing__'");
        let mut r = evaluate(sup, &frame.session_id, ctx, &guarded).await;
        if matches!(&r, Ok(Value::String(s)) if s == "__tabgate_missing__") {
            r = match evaluate(sup, &frame.session_id, ctx, SCRIPT).await {
                Ok(_) => evaluate(sup, &frame.session_id, ctx, call).await,
                Err(e) => Err(e),
            };
        }
        match r {
            Err(e) if attempt == 0 && e.message.contains("Cannot find context") => {
                sup.state()
                    .worlds
                    .remove(&(frame.session_id.clone(), frame.frame_id.clone()));
            }
            other => return other,
        }
    }
    Err(ToolError::new(
        "stale_ref",
        "the frame's document went away while reading it; take a new snapshot",
    ))
}

async fn evaluate(sup: &CdpSupervisor, sid: &str, ctx: i64, expr: &str) -> Result<Value, ToolError> {
    let r = sup
        .conn()
        .call(
            Some(sid),
            "Runtime.evaluate",
            json!({"expression": expr, "contextId": ctx, "returnByValue": true, "awaitPromise": true}),
            EVAL_TIMEOUT_MS,
        )
        .await?;
    if let Some(ex) = r.get("exceptionDetails") {
        let msg = ex["exception"]["description"]
            .as_str()
            .or(ex["text"].as_str())
            .unwrap_or("exception");
        return Err(ToolError::new("script_error", format!("in-page script failed: {msg}")));
    }
    Ok(r["result"]["value"].clone())
}

/// "an alert", "a confirm", … for messages.
pub fn a_kind(kind: &str) -> String {
    match kind.chars().next() {
        Some('a' | 'e' | 'i' | 'o' | 'u') => format!("an {kind}"),
        _ => format!("a {kind}"),
    }
}

/// JSON-encodes a value for embedding in a JavaScript call expression.
pub fn js(v: impl serde::Serialize) -> String {
    serde_json::to_string(&v).unwrap_or_else(|_| "null".into())
}
