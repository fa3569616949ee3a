//! CDP event handling (study 2.7). Runs on the supervisor's event task; never awaits:
//! follow-up CDP work (enabling a child session, answering a dialog) is spawned.

use std::sync::Arc;

use serde_json::{json, Value};
use tabgate_cdp::Event;

use crate::policy::DialogAction;
use crate::state::{
    now_epoch, ConsoleEntry, Download, FileChooser, Frame, NetRequest, PendingDialog, SessionInfo, SessionKind, State,
    Tab, DOWNLOADS_KEPT, REQUESTS_TRACKED,
};
use crate::supervisor::{record, CdpSupervisor, Inner, WORLD_NAME};

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// Upserts a frame from a CDP `Frame` object (`Page.frameNavigated`, `Page.getFrameTree`).
pub(crate) fn upsert_frame(st: &mut State, f: &Value, sid: &str, tab: &str, is_oopif_root: bool) {
    let id = s(f, "id").to_string();
    if id.is_empty() {
        return;
    }
    let loader = s(f, "loaderId").to_string();
    let e = st.frames.entry(id.clone()).or_insert_with(|| Frame {
        frame_id: id.clone(),
        ..Frame::default()
    });
    if let Some(p) = f.get("parentId").and_then(Value::as_str) {
        e.parent_frame_id = Some(p.to_string());
    }
    e.url = s(f, "url").to_string() + s(f, "urlFragment");
    e.origin = f
        .get("securityOrigin")
        .or(f.get("origin"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    e.name = s(f, "name").to_string();
    // a committed document: lifecycle `commit` (Chromium reports `init`, then the rest)
    if e.lifecycle_loader != loader {
        e.lifecycle_loader = loader.clone();
        e.lifecycle.clear();
    }
    if !e.lifecycle.iter().any(|x| x == "commit") {
        e.lifecycle.push("commit".into());
    }
    e.loader_id = loader;
    e.session_id = sid.to_string();
    e.is_oopif = e.is_oopif || is_oopif_root;
    e.tab_id = tab.to_string();
    if e.parent_frame_id.is_none() {
        if let Some(t) = st.tab_mut(tab) {
            t.url = s(f, "url").to_string() + s(f, "urlFragment");
        }
    }
}

impl Inner {
    pub(crate) fn handle(self: &Arc<Self>, ev: Event) {
        let (sid, method, p) = match ev {
            Event::Cdp {
                session_id,
                method,
                params,
            } => (session_id, method, params),
            Event::Closed(reason) => {
                if self.lock().stopped {
                    return;
                }
                self.lock().reconnecting = true;
                let me = self.clone();
                tokio::spawn(async move { me.recover(reason).await });
                return;
            }
        };
        let Some(sid) = sid else {
            return self.handle_browser_event(&method, &p);
        };
        let sid: &str = &sid;
        let mut st = self.lock();
        let Some(info) = st.sessions.get(sid).cloned() else {
            // A session routed to us whose attach reply we have not processed yet:
            // only `Target.attachedToTarget` children matter and they carry their own info.
            return;
        };
        let tab = info.tab_id.clone();
        match method.as_str() {
            "Target.attachedToTarget" => {
                let child = s(&p, "sessionId").to_string();
                let ti = &p["targetInfo"];
                let ty = s(ti, "type");
                let target_id = s(ti, "targetId").to_string();
                if ty == "iframe" {
                    st.sessions.insert(
                        child.clone(),
                        SessionInfo {
                            target_id: target_id.clone(),
                            kind: SessionKind::Iframe,
                            tab_id: tab.clone(),
                        },
                    );
                    let f = st.frames.entry(target_id.clone()).or_insert_with(|| Frame {
                        frame_id: target_id.clone(),
                        ..Frame::default()
                    });
                    f.is_oopif = true;
                    f.session_id = child.clone();
                    f.tab_id = tab.clone();
                    if f.url.is_empty() {
                        f.url = s(ti, "url").to_string();
                    }
                    drop(st);
                    let me = self.clone();
                    let conn = self.conn();
                    let net = child.clone();
                    tokio::spawn(async move { me.prepare_session(&child, &target_id, SessionKind::Iframe).await });
                    // outstanding requests of the frame (navigate's `partial` report)
                    tokio::spawn(async move {
                        enable_network(&conn, &net).await;
                        // a file chooser opened inside the frame becomes a pending state too
                        let _ = conn
                            .call(
                                Some(&net),
                                "Page.setInterceptFileChooserDialog",
                                json!({"enabled": true}),
                                5_000,
                            )
                            .await;
                    });
                } else {
                    // Workers and other helpers: resume them and let go (case 12).
                    drop(st);
                    let conn = self.conn();
                    let parent = sid.to_string();
                    tokio::spawn(async move {
                        let _ = conn
                            .call(Some(&child), "Runtime.runIfWaitingForDebugger", json!({}), 3_000)
                            .await;
                        let _ = conn
                            .call(
                                Some(&parent),
                                "Target.detachFromTarget",
                                json!({"sessionId": child}),
                                3_000,
                            )
                            .await;
                    });
                }
            }
            "Target.detachedFromTarget" => {
                let child = s(&p, "sessionId").to_string();
                st.forget_session(&child);
            }
            "Page.frameAttached" => {
                let id = s(&p, "frameId").to_string();
                let parent = s(&p, "parentFrameId").to_string();
                let f = st.frames.entry(id.clone()).or_insert_with(|| Frame {
                    frame_id: id,
                    ..Frame::default()
                });
                f.parent_frame_id = Some(parent);
                if f.session_id.is_empty() {
                    f.session_id = sid.to_string();
                }
                f.tab_id = tab;
            }
            "Page.frameNavigated" => {
                // a new document: the old one's child frames are gone (Chromium does not
                // always send frameDetached for them); the new ones attach after this event
                let fid = s(&p["frame"], "id");
                if st
                    .frames
                    .get(fid)
                    .is_some_and(|f| f.loader_id != s(&p["frame"], "loaderId"))
                {
                    // no dialog outlives its tab's document (a stale one, which the new CDP
                    // connection could not answer, is dismissed by this navigation)
                    if fid == tab {
                        let gone: Vec<PendingDialog> = st.pending.iter().filter(|d| d.tab_id == tab).cloned().collect();
                        st.pending.retain(|d| d.tab_id != tab);
                        for d in gone {
                            st.push_recent(record(&d, "remote", None));
                        }
                    }
                    let kids: Vec<String> = st
                        .frames
                        .values()
                        .filter(|f| f.parent_frame_id.as_deref() == Some(fid))
                        .map(|f| f.frame_id.clone())
                        .collect();
                    for k in kids {
                        remove_frame_tree(&mut st, &k);
                    }
                }
                let oopif_root = info.kind == SessionKind::Iframe && p["frame"]["id"] == info.target_id.as_str();
                upsert_frame(&mut st, &p["frame"], sid, &tab, oopif_root);
                st.seq += 1;
                let seq = st.seq;
                st.committed.insert(s(&p["frame"], "id").to_string(), seq);
            }
            "Page.navigatedWithinDocument" => {
                let url = s(&p, "url").to_string();
                if let Some(f) = st.frames.get_mut(s(&p, "frameId")) {
                    f.url = url.clone();
                    if f.parent_frame_id.is_none() {
                        if let Some(t) = st.tab_mut(&tab) {
                            t.url = url;
                        }
                    }
                }
            }
            "Page.frameDetached" if s(&p, "reason") != "swap" => {
                // `swap` is a frame moving to another process (becoming an OOPIF): keep it
                let id = s(&p, "frameId").to_string();
                let keep = st
                    .frames
                    .get(&id)
                    .is_some_and(|f| f.is_oopif && st.sessions.contains_key(&f.session_id) && f.session_id != sid);
                if !keep {
                    remove_frame_tree(&mut st, &id);
                }
            }
            "Page.lifecycleEvent" => {
                let name = s(&p, "name").to_string();
                let loader = s(&p, "loaderId");
                if let Some(f) = st.frames.get_mut(s(&p, "frameId")) {
                    if name == "init" || f.lifecycle_loader != loader {
                        f.lifecycle_loader = loader.to_string();
                        f.lifecycle.clear();
                    }
                    if !f.lifecycle.contains(&name) {
                        f.lifecycle.push(name);
                    }
                }
            }
            "Fetch.requestPaused" => {
                let rid = s(&p, "requestId").to_string();
                let Some((kind, message, default_prompt)) = crate::bridge::parse(s(&p["request"], "url")) else {
                    drop(st);
                    let conn = self.conn();
                    let sid = sid.to_string();
                    tokio::spawn(async move {
                        let _ = conn
                            .call(Some(&sid), "Fetch.continueRequest", json!({"requestId": rid}), 3_000)
                            .await;
                    });
                    return;
                };
                st.next_dialog += 1;
                let d = PendingDialog {
                    id: format!("d-{}", st.next_dialog),
                    kind,
                    message,
                    default_prompt,
                    opened_at: now_epoch(),
                    frame_id: p.get("frameId").and_then(Value::as_str).map(str::to_string),
                    tab_id: tab,
                    session_id: sid.to_string(),
                    bridge_request_id: Some(rid),
                    stale: false,
                };
                self.on_dialog(st, d);
            }
            "Page.javascriptDialogOpening" => {
                st.next_dialog += 1;
                let d = PendingDialog {
                    id: format!("d-{}", st.next_dialog),
                    kind: s(&p, "type").to_string(),
                    message: s(&p, "message").to_string(),
                    default_prompt: s(&p, "defaultPrompt").to_string(),
                    opened_at: now_epoch(),
                    frame_id: p.get("frameId").and_then(Value::as_str).map(str::to_string),
                    tab_id: tab,
                    session_id: sid.to_string(),
                    bridge_request_id: None,
                    stale: false,
                };
                self.on_dialog(st, d);
            }
            "Page.javascriptDialogClosed" => {
                // Cleared only by this event or our own answer (case 4), never by which tool ran.
                let i = st
                    .pending
                    .iter()
                    .position(|d| d.bridge_request_id.is_none() && d.session_id == sid)
                    .or_else(|| {
                        st.pending
                            .iter()
                            .position(|d| d.bridge_request_id.is_none() && d.tab_id == tab)
                    });
                if let Some(i) = i {
                    let d = st.pending.remove(i);
                    st.push_recent(record(&d, "remote", None));
                }
            }
            "Runtime.executionContextCreated" => {
                let c = &p["context"];
                if s(c, "name") == WORLD_NAME {
                    if let (Some(fid), Some(id)) = (c["auxData"]["frameId"].as_str(), c["id"].as_i64()) {
                        st.worlds.insert((sid.to_string(), fid.to_string()), id);
                    }
                }
            }
            "Runtime.executionContextDestroyed" => {
                let id = p["executionContextId"].as_i64();
                st.worlds.retain(|(s2, _), v| !(s2 == sid && Some(*v) == id));
            }
            "Runtime.executionContextsCleared" => {
                st.worlds.retain(|(s2, _), _| s2 != sid);
            }
            "Runtime.consoleAPICalled" => {
                let level = match s(&p, "type") {
                    "error" | "assert" => "error",
                    "warning" => "warning",
                    _ => return,
                };
                let text = p["args"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .take(4)
                            .map(|x| match x.get("value") {
                                Some(Value::String(v)) => v.clone(),
                                Some(v) => v.to_string(),
                                None => s(x, "description").to_string(),
                            })
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .unwrap_or_default();
                let url = p["stackTrace"]["callFrames"][0]["url"].as_str().map(str::to_string);
                st.push_console(ConsoleEntry {
                    level: level.into(),
                    text,
                    url,
                    time: now_epoch(),
                    tab_id: tab,
                });
            }
            "Runtime.exceptionThrown" => {
                let d = &p["exceptionDetails"];
                let text = d["exception"]["description"]
                    .as_str()
                    .unwrap_or(s(d, "text"))
                    .to_string();
                let url = d.get("url").and_then(Value::as_str).map(str::to_string);
                st.push_console(ConsoleEntry {
                    level: "exception".into(),
                    text,
                    url,
                    time: now_epoch(),
                    tab_id: tab,
                });
            }
            "Network.requestWillBeSent" => {
                let key = format!("{sid}/{}", s(&p, "requestId"));
                if st.requests.len() < REQUESTS_TRACKED || st.requests.contains_key(&key) {
                    let r = NetRequest {
                        url: s(&p["request"], "url").to_string(),
                        resource_type: s(&p, "type").to_string(),
                        frame_id: s(&p, "frameId").to_string(),
                        tab_id: tab,
                        started_at: now_epoch(),
                        session_id: sid.to_string(),
                    };
                    st.requests.insert(key, r);
                }
            }
            "Network.loadingFinished" | "Network.loadingFailed" => {
                st.requests.remove(&format!("{sid}/{}", s(&p, "requestId")));
            }
            "Page.frameStartedLoading" => {
                st.loading.insert(s(&p, "frameId").to_string());
            }
            "Page.frameStoppedLoading" => {
                st.loading.remove(s(&p, "frameId"));
            }
            "Page.fileChooserOpened" => {
                st.seq += 1;
                let seq = st.seq;
                st.file_chooser = Some(FileChooser {
                    tab_id: tab,
                    frame_id: s(&p, "frameId").to_string(),
                    mode: s(&p, "mode").to_string(),
                    opened_at: now_epoch(),
                    backend_node_id: p["backendNodeId"].as_i64(),
                    session_id: sid.to_string(),
                    seq,
                });
            }
            "Inspector.targetCrashed" => {
                if let Some(t) = st.tab_mut(&tab) {
                    t.state = "crashed".into();
                }
            }
            _ => {}
        }
    }

    /// Applies the dialog policy to a dialog that just opened (natively or via the bridge):
    /// `must_respond` keeps it pending and arms the watchdog; the automatic policies record
    /// it first (`closed_by: auto_policy`) and then answer it.
    fn on_dialog(self: &Arc<Self>, mut st: std::sync::MutexGuard<'_, State>, d: PendingDialog) {
        match self.cfg.dialog_policy.for_type(&d.kind) {
            DialogAction::MustRespond => {
                st.pending.push(d.clone());
                drop(st);
                self.arm_watchdog(d.id);
            }
            a => {
                let accept = a == DialogAction::AutoAccept;
                st.push_recent(record(
                    &d,
                    "auto_policy",
                    Some(if accept { "accept" } else { "dismiss" }),
                ));
                drop(st);
                let me = self.clone();
                tokio::spawn(async move {
                    let _ = me.answer(&d, accept, None).await;
                });
            }
        }
    }

    fn handle_browser_event(self: &Arc<Self>, method: &str, p: &Value) {
        let ti = &p["targetInfo"];
        let target = p
            .get("targetId")
            .and_then(Value::as_str)
            .unwrap_or(s(ti, "targetId"))
            .to_string();
        let mut st = self.lock();
        match method {
            "Target.targetCreated" => {
                let opener = s(ti, "openerId");
                if s(ti, "type") == "page"
                    && !opener.is_empty()
                    && st.tab(opener).is_some()
                    && st.tab(&target).is_none()
                {
                    st.seq += 1;
                    let seq = st.seq;
                    st.tabs.push(Tab {
                        tab_id: target.clone(),
                        url: s(ti, "url").to_string(),
                        title: s(ti, "title").to_string(),
                        opener_tab: Some(opener.to_string()),
                        state: "open".into(),
                        session_id: None,
                        seq,
                    });
                    drop(st);
                    let sup = CdpSupervisor { inner: self.clone() };
                    tokio::spawn(async move {
                        if let Err(e) = sup.inner.attach_page(&target).await {
                            tracing::debug!("attach to popup {target} failed: {}", e.message);
                        }
                    });
                }
            }
            "Target.targetInfoChanged" => {
                if let Some(t) = st.tab_mut(&target) {
                    t.url = s(ti, "url").to_string();
                    t.title = s(ti, "title").to_string();
                }
            }
            "Target.targetDestroyed" => {
                if let Some(t) = st.tab_mut(&target) {
                    t.state = "closed".into();
                    t.session_id = None;
                }
                if st.current.as_deref() == Some(target.as_str()) {
                    // Fall back to the opener, else any open tab; the closed one stays listed.
                    let opener = st.tab(&target).and_then(|t| t.opener_tab.clone());
                    let next = opener
                        .filter(|o| st.tab(o).is_some_and(|t| t.state == "open"))
                        .or_else(|| st.tabs.iter().find(|t| t.state == "open").map(|t| t.tab_id.clone()));
                    if next.is_some() {
                        st.current = next;
                    }
                }
                st.pending.retain(|d| d.tab_id != target);
            }
            "Browser.downloadWillBegin" => {
                // only downloads of this session's frames
                let frame = s(p, "frameId");
                let Some(tab) = st.frames.get(frame).map(|f| f.tab_id.clone()) else {
                    return;
                };
                st.seq += 1;
                let seq = st.seq;
                st.downloads.push(Download {
                    guid: s(p, "guid").to_string(),
                    url: s(p, "url").to_string(),
                    suggested_filename: sanitize_filename(s(p, "suggestedFilename")),
                    state: "in_progress".into(),
                    bytes: 0,
                    total_bytes: None,
                    path: None,
                    tab_id: tab,
                    frame_id: frame.to_string(),
                    started_at: now_epoch(),
                    seq,
                });
                let over = st.downloads.len().saturating_sub(DOWNLOADS_KEPT);
                st.downloads.drain(..over);
            }
            "Browser.downloadProgress" => {
                let guid = s(p, "guid");
                let dir = st.files.download_dir.clone().filter(|_| !st.files.leave_in_place);
                let Some(d) = st.downloads.iter_mut().find(|d| d.guid == guid) else {
                    return;
                };
                if d.state != "in_progress" {
                    return;
                }
                d.bytes = p["receivedBytes"].as_f64().unwrap_or(0.0) as u64;
                if let Some(t) = p["totalBytes"].as_f64().filter(|t| *t > 0.0) {
                    d.total_bytes = Some(t as u64);
                }
                match s(p, "state") {
                    "canceled" => d.state = "canceled".into(),
                    "completed" => {
                        // the browser saved it as <dir>/<guid> (allowAndName); give it its
                        // name in the session's own directory, then report it completed
                        let from = p
                            .get("filePath")
                            .and_then(Value::as_str)
                            .filter(|f| !f.is_empty())
                            .map(std::path::PathBuf::from)
                            .or_else(|| dir.as_ref().map(|d| d.join(guid)));
                        let name = d.suggested_filename.clone();
                        let guid = guid.to_string();
                        drop(st);
                        let me = self.clone();
                        tokio::task::spawn_blocking(move || {
                            let path = match (from, dir) {
                                (Some(from), Some(dir)) => place_download(&from, &dir, &name),
                                (Some(from), None) => Some(from),
                                _ => None,
                            };
                            {
                                let mut st = me.lock();
                                if let Some(d) = st.downloads.iter_mut().find(|d| d.guid == guid) {
                                    d.state = "completed".into();
                                    d.path = path.map(|p| p.to_string_lossy().into_owned());
                                }
                            }
                            me.changed.send_modify(|v| *v += 1);
                        });
                    }
                    _ => {}
                }
            }
            "Target.targetCrashed" => {
                if let Some(t) = st.tab_mut(&target) {
                    t.state = "crashed".into();
                }
            }
            _ => {}
        }
    }
}

fn remove_frame_tree(st: &mut State, id: &str) {
    let mut stack = vec![id.to_string()];
    while let Some(x) = stack.pop() {
        st.frames.remove(&x);
        stack.extend(
            st.frames
                .values()
                .filter(|f| f.parent_frame_id.as_deref() == Some(x.as_str()))
                .map(|f| f.frame_id.clone()),
        );
    }
}

/// Enables the `Network` domain on a session (small buffers: tabgate only tracks which
/// requests are outstanding).
pub(crate) async fn enable_network(conn: &tabgate_cdp::Connection, sid: &str) {
    let _ = conn
        .call(
            Some(sid),
            "Network.enable",
            json!({"maxTotalBufferSize": 1_000_000, "maxResourceBufferSize": 500_000}),
            5_000,
        )
        .await;
}

/// A file name safe to create in a directory: the last path component, without control
/// characters or `<>:"/\|?*`, no leading dots, at most 200 bytes; `download` when nothing
/// is left.
pub fn sanitize_filename(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or("");
    let mut out: String = last
        .chars()
        .map(|c| {
            if c.is_control() || "<>:\"|?*".contains(c) {
                '_'
            } else {
                c
            }
        })
        .collect();
    out = out.trim().trim_start_matches('.').trim().to_string();
    while out.len() > 200 {
        out.pop();
    }
    if out.is_empty() {
        "download".into()
    } else {
        out
    }
}

/// Moves a finished download to `dir/name`, adding ` (1)`, ` (2)`, … before the extension
/// when the name is taken. Returns where the file is (its old path when the move failed).
fn place_download(from: &std::path::Path, dir: &std::path::Path, name: &str) -> Option<std::path::PathBuf> {
    if !from.exists() {
        return None;
    }
    let _ = std::fs::create_dir_all(dir);
    let (stem, ext) = match name.rfind('.') {
        Some(i) if i > 0 => (&name[..i], &name[i..]),
        _ => (name, ""),
    };
    for n in 0..1000 {
        let candidate = if n == 0 {
            dir.join(name)
        } else {
            dir.join(format!("{stem} ({n}){ext}"))
        };
        if candidate == from {
            return Some(candidate);
        }
        if candidate.exists() {
            continue;
        }
        if std::fs::rename(from, &candidate).is_ok()
            || (std::fs::copy(from, &candidate).is_ok() && std::fs::remove_file(from).is_ok())
        {
            return Some(candidate);
        }
        break;
    }
    Some(from.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::sanitize_filename;

    #[test]
    fn file_names_are_sanitised() {
        assert_eq!(sanitize_filename("report.csv"), "report.csv");
        assert_eq!(sanitize_filename("../../etc/passwd"), "passwd");
        assert_eq!(sanitize_filename("a\\b:c*?.txt"), "b_c__.txt");
        assert_eq!(sanitize_filename(".bashrc"), "bashrc");
        assert_eq!(sanitize_filename(""), "download");
        assert_eq!(sanitize_filename("x\u{0}y"), "x_y");
    }
}
