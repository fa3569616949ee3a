//! browser_upload (case 24): files into a real `<input type=file>` directly, or through
//! the file chooser a button or a drop zone opens (intercepted with
//! `Page.setInterceptFileChooserDialog`: `Page.fileChooserOpened` names the input behind
//! it). Only paths under the session's upload roots are accepted; files are never set on
//! anything but a file input.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use tabgate_supervisor::FileChooser;
use tokio::time::Instant;

use crate::args::str_arg;
use crate::page::{dialog_error, eval_world, js, race_dialog, world, Raced};
use crate::session::{Done, Session};
use crate::{target, ToolError};

/// How long a click may take to open the file chooser, ms.
const CHOOSER_WAIT_MS: u64 = 3_000;

impl Session {
    /// The file chooser an action on `tab` opened (after state sequence `seq`), if any.
    pub(crate) fn chooser_since(&self, tab: &str, seq: u64) -> Option<FileChooser> {
        self.sup
            .state()
            .file_chooser
            .clone()
            .filter(|c| c.tab_id == tab && c.seq > seq)
    }

    /// Checks every path: absolute, an existing file, under an upload root. Returns the
    /// canonical paths.
    fn upload_paths(&self, paths: &[String]) -> Result<Vec<PathBuf>, ToolError> {
        let roots = self.upload_roots();
        let mut out = vec![];
        for p in paths {
            let pb = Path::new(p);
            if !pb.is_absolute() {
                return Err(ToolError::new(
                    "invalid_argument",
                    format!("{p:?} is not an absolute path; pass absolute file paths"),
                ));
            }
            let c = std::fs::canonicalize(pb).map_err(|e| {
                ToolError::new("file_not_found", format!("cannot read {p:?}: {e}")).with(json!({"path": p}))
            })?;
            if !roots.iter().any(|r| c.starts_with(r)) {
                return Err(ToolError::new(
                    "path_not_allowed",
                    format!(
                        "{p:?} is outside the directories uploads may come from ({}); copy the file under one of them, or set TABGATE_UPLOAD_ROOTS",
                        roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
                    ),
                )
                .with(json!({"path": p})));
            }
            if !c.is_file() {
                return Err(ToolError::new("not_a_file", format!("{p:?} is not a regular file")));
            }
            out.push(c);
        }
        Ok(out)
    }

    /// Sets `files` on the input behind a chooser; returns the file names the input holds.
    async fn fill_chooser(&self, ch: &FileChooser, files: &[PathBuf]) -> Result<Value, ToolError> {
        let Some(node) = ch.backend_node_id else {
            return Err(ToolError::new(
                "upload_failed",
                "the page opened a file picker that is not an <input type=file> (showOpenFilePicker); it cannot be answered",
            ));
        };
        if ch.mode == "selectSingle" && files.len() > 1 {
            return Err(ToolError::new(
                "too_many_files",
                format!("the file input takes one file, got {}", files.len()),
            ));
        }
        let conn = self.sup.conn();
        let list: Vec<String> = files.iter().map(|f| f.to_string_lossy().into_owned()).collect();
        conn.call(
            Some(&ch.session_id),
            "DOM.setFileInputFiles",
            json!({"files": list, "backendNodeId": node}),
            10_000,
        )
        .await?;
        // read the input back
        let obj = conn
            .call(
                Some(&ch.session_id),
                "DOM.resolveNode",
                json!({"backendNodeId": node}),
                5_000,
            )
            .await?;
        let names = conn
            .call(
                Some(&ch.session_id),
                "Runtime.callFunctionOn",
                json!({"objectId": obj["object"]["objectId"], "returnByValue": true,
                       "functionDeclaration": "function(){return Array.prototype.map.call(this.files||[], function(f){return f.name})}"}),
                5_000,
            )
            .await?;
        if let Some(o) = obj["object"]["objectId"].as_str() {
            let _ = conn
                .call(
                    Some(&ch.session_id),
                    "Runtime.releaseObject",
                    json!({"objectId": o}),
                    2_000,
                )
                .await;
        }
        Ok(names["result"]["value"].clone())
    }

    pub(crate) async fn upload(&self, a: &Value) -> Done {
        let (tab, sid) = self.current()?;
        if let Some(d) = self.sup.state().pending.iter().find(|d| d.tab_id == tab && !d.stale) {
            return Err(dialog_error(d));
        }
        let paths: Vec<String> = a["paths"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p.as_str().map(str::to_string))
            .collect();
        let files = self.upload_paths(&paths)?;
        let sizes: Vec<Value> = files
            .iter()
            .map(|f| {
                json!({"name": f.file_name().map(|n| n.to_string_lossy().into_owned()),
                       "bytes": std::fs::metadata(f).map(|m| m.len()).unwrap_or(0)})
            })
            .collect();
        let Some(r) = str_arg(a, "ref") else {
            // answer (or cancel) the chooser a click opened
            let ch = {
                let mut st = self.sup.state();
                match &st.file_chooser {
                    Some(c) if c.tab_id == tab => st.file_chooser.take(),
                    _ => None,
                }
            };
            let Some(ch) = ch else {
                return Err(ToolError::new(
                    "no_file_chooser",
                    "no file chooser is open on this tab; pass the ref of the upload button or file input",
                ));
            };
            if files.is_empty() {
                return Ok((
                    "Cancelled the file chooser; no file was chosen.".into(),
                    json!({"cancelled": true}),
                ));
            }
            let names = self.fill_chooser(&ch, &files).await?;
            return Ok((
                format!(
                    "Chose {} file(s) in the open file chooser; the input now holds {names}.",
                    files.len()
                ),
                json!({"files": sizes, "input_files": names}),
            ));
        };
        if files.is_empty() {
            return Err(ToolError::new(
                "invalid_argument",
                "browser_upload with a ref needs at least one path (paths: [] without ref cancels an open chooser)",
            ));
        }
        let t = target::resolve(&self.sup, &self.refs, &tab, r)?;
        let fi = target::call(&self.sup, &t, "fileInput", &[]).await?;
        if fi["file"] == true {
            // a real file input (or its label): set the files on it directly
            if fi["multiple"] != true && files.len() > 1 {
                return Err(ToolError::new(
                    "too_many_files",
                    format!("the file input takes one file, got {}", files.len()),
                ));
            }
            let ctx = world(&self.sup, &t.frame).await?;
            let conn = self.sup.conn();
            let obj = conn
                .call(
                    Some(&t.frame.session_id),
                    "Runtime.evaluate",
                    json!({"expression": format!("globalThis.__tabgate.byId({})", js(&fi["id"])), "contextId": ctx}),
                    5_000,
                )
                .await?;
            let oid = obj["result"]["objectId"]
                .as_str()
                .ok_or_else(|| ToolError::new("stale_ref", "the file input is gone; take a new snapshot"))?
                .to_string();
            let list: Vec<String> = files.iter().map(|f| f.to_string_lossy().into_owned()).collect();
            conn.call(
                Some(&t.frame.session_id),
                "DOM.setFileInputFiles",
                json!({"files": list, "objectId": oid}),
                10_000,
            )
            .await?;
            let _ = conn
                .call(
                    Some(&t.frame.session_id),
                    "Runtime.releaseObject",
                    json!({"objectId": oid}),
                    2_000,
                )
                .await;
            let names = eval_world(
                &self.sup,
                &t.frame,
                &format!(
                    "(function(e){{return e ? Array.prototype.map.call(e.files||[], function(f){{return f.name}}) : null}})(globalThis.__tabgate.byId({}))",
                    js(&fi["id"])
                ),
            )
            .await?;
            return Ok((
                format!(
                    "Set {} file(s) on the file input {:?}; it now holds {names}.",
                    files.len(),
                    t.entry.name
                ),
                json!({"files": sizes, "input_files": names, "via": "input"}),
            ));
        }
        // anything else: click it and answer the chooser it opens
        let before = {
            let mut st = self.sup.state();
            st.file_chooser = None;
            st.seq
        };
        let pt = target::point(&self.sup, &self.refs, &t).await?;
        let conn = self.sup.conn();
        let clicked = async {
            for (kind, button, count) in [
                ("mouseMoved", "none", 0),
                ("mousePressed", "left", 1),
                ("mouseReleased", "left", 1),
            ] {
                conn.call(
                    Some(&sid),
                    "Input.dispatchMouseEvent",
                    json!({"type": kind, "x": pt.0, "y": pt.1, "button": button, "clickCount": count}),
                    10_000,
                )
                .await?;
            }
            Ok::<(), ToolError>(())
        };
        match race_dialog(&self.sup, &tab, clicked).await {
            Raced::Done(r) => r?,
            Raced::Dialog(d) => return Err(dialog_error(&d)),
        }
        let until = Instant::now() + Duration::from_millis(CHOOSER_WAIT_MS);
        let ch = self
            .sup
            .wait_for(until, |st| {
                st.file_chooser
                    .as_ref()
                    .filter(|c| c.seq > before && c.tab_id == tab)
                    .cloned()
            })
            .await
            .ok_or_else(|| {
                ToolError::new(
                    "no_file_chooser",
                    format!(
                        "clicking {} {:?} opened no file chooser within {CHOOSER_WAIT_MS} ms; pass the ref of the upload button or of the <input type=file> itself",
                        t.entry.role, t.entry.name
                    ),
                )
            })?;
        self.sup.state().file_chooser = None;
        let names = self.fill_chooser(&ch, &files).await?;
        Ok((
            format!(
                "Clicked {} {:?}, which opened a file chooser; chose {} file(s): the input now holds {names}.",
                t.entry.role,
                t.entry.name,
                files.len()
            ),
            json!({"files": sizes, "input_files": names, "via": "file_chooser"}),
        ))
    }
}
