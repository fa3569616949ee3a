//! The supervisor's state and its serialized shapes (seed 000, study 2.3).

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;

use serde::Serialize;
use serde_json::{json, Value};

/// Recent-dialogs ring size (study 2.2).
pub const RECENT_DIALOGS: usize = 20;
/// Console ring size (study 2.2).
pub const CONSOLE_RING: usize = 50;
/// Frame-tree cap in snapshots: entries and OOPIF depth (study 2.10).
pub const FRAME_TREE_MAX: usize = 30;
/// OOPIF depth cap for the frame tree (study 2.10).
pub const FRAME_TREE_MAX_OOPIF_DEPTH: usize = 2;

/// A JavaScript dialog waiting for an answer (`Page.javascriptDialogOpening`).
#[derive(Debug, Clone, Serialize)]
pub struct PendingDialog {
    /// `d-1`, `d-2`, … per supervisor.
    pub id: String,
    /// `alert` | `confirm` | `prompt` | `beforeunload`.
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
    pub default_prompt: String,
    /// Epoch seconds.
    pub opened_at: f64,
    pub frame_id: Option<String>,
    /// The tab (page `targetId`) the dialog belongs to.
    pub tab_id: String,
    /// Flattened session the dialog fired on (answered there).
    #[serde(skip)]
    pub session_id: String,
    /// Set when captured by the dialog bridge (answer with `Fetch.fulfillRequest`).
    #[serde(skip)]
    pub bridge_request_id: Option<String>,
    /// Opened before the CDP connection was re-established: Chromium lets only the old
    /// connection answer it; a navigation dismisses it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
}

/// A dialog that was closed, and by whom.
#[derive(Debug, Clone, Serialize)]
pub struct DialogRecord {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
    pub opened_at: f64,
    pub closed_at: f64,
    /// `agent` | `auto_policy` | `watchdog` | `remote`.
    pub closed_by: String,
    /// The answer when tabgate gave it: `accept` | `dismiss`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    pub frame_id: Option<String>,
    pub tab_id: String,
}

/// One frame of a tab (`Page.frameNavigated`, `Target.attachedToTarget` for OOPIFs).
#[derive(Debug, Clone, Default)]
pub struct Frame {
    pub frame_id: String,
    pub parent_frame_id: Option<String>,
    pub url: String,
    pub origin: String,
    pub name: String,
    pub loader_id: String,
    /// Session whose renderer hosts this frame's document.
    pub session_id: String,
    /// True for the root frame of an out-of-process iframe target (frame id == target id).
    pub is_oopif: bool,
    /// Lifecycle events (`Page.lifecycleEvent`: `init`, `commit`, `DOMContentLoaded`,
    /// `load`, `networkIdle`, …) seen for the document of `lifecycle_loader`.
    pub lifecycle: Vec<String>,
    /// The `loaderId` the lifecycle events belong to (may run ahead of `loader_id` while a
    /// navigation is in flight).
    pub lifecycle_loader: String,
    pub tab_id: String,
}

impl Frame {
    fn to_json(&self) -> Value {
        let mut v =
            json!({"frame_id": self.frame_id, "url": self.url, "origin": self.origin, "is_oopif": self.is_oopif});
        if let Some(p) = &self.parent_frame_id {
            v["parent_frame_id"] = json!(p);
        }
        if self.is_oopif {
            v["session_id"] = json!(self.session_id);
        }
        if !self.name.is_empty() {
            v["name"] = json!(self.name);
        }
        v
    }
}

/// Kind of a flattened session the supervisor holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionKind {
    Page,
    Iframe,
}

/// A flattened CDP session owned by this supervisor.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    pub target_id: String,
    pub kind: SessionKind,
    /// The tab this session belongs to.
    pub tab_id: String,
}

/// A page target owned by this session.
#[derive(Debug, Clone, Serialize)]
pub struct Tab {
    pub tab_id: String,
    pub url: String,
    pub title: String,
    /// The tab that opened this one (`targetInfo.openerId`).
    pub opener_tab: Option<String>,
    /// `crashed` after `Inspector.targetCrashed`; `closed` after `Target.targetDestroyed`.
    pub state: String,
    #[serde(skip)]
    pub session_id: Option<String>,
    /// Monotonic sequence number at which the supervisor learned of the tab.
    #[serde(skip)]
    pub seq: u64,
}

/// One console error or uncaught exception.
#[derive(Debug, Clone, Serialize)]
pub struct ConsoleEntry {
    /// `error` | `warning` | `exception` | `log`.
    pub level: String,
    pub text: String,
    pub url: Option<String>,
    /// Epoch seconds.
    pub time: f64,
    pub tab_id: String,
}

/// A download started by one of this session's tabs (`Browser.downloadWillBegin`,
/// `Browser.downloadProgress`). The file lands in the session's download directory under
/// its sanitised suggested name once complete.
#[derive(Debug, Clone, Serialize)]
pub struct Download {
    pub guid: String,
    pub url: String,
    /// The page's suggested file name, sanitised (no path separators or control characters).
    pub suggested_filename: String,
    /// `in_progress` | `completed` | `canceled`.
    pub state: String,
    /// Bytes received so far.
    pub bytes: u64,
    /// Expected size when the server said (`Content-Length`).
    pub total_bytes: Option<u64>,
    /// Where the file is: the final path once `completed`.
    pub path: Option<String>,
    pub tab_id: String,
    pub frame_id: String,
    /// Epoch seconds.
    pub started_at: f64,
    /// Monotonic sequence number (of [`State::seq`]) at which the download began.
    #[serde(skip)]
    pub seq: u64,
}

/// Most downloads listed per session (oldest dropped first).
pub const DOWNLOADS_KEPT: usize = 50;

/// A file chooser the page opened while interception was on (`Page.fileChooserOpened`);
/// at most one is pending per session, a newer one replaces it.
#[derive(Debug, Clone, Serialize)]
pub struct FileChooser {
    pub tab_id: String,
    pub frame_id: String,
    /// `selectSingle` | `selectMultiple`.
    pub mode: String,
    /// Epoch seconds.
    pub opened_at: f64,
    /// The `<input type=file>` behind the chooser, on `session_id`.
    #[serde(skip)]
    pub backend_node_id: Option<i64>,
    #[serde(skip)]
    pub session_id: String,
    #[serde(skip)]
    pub seq: u64,
}

/// A network request that has started and not yet finished or failed (`Network.*` events of
/// the sessions tabgate enabled `Network` on).
#[derive(Debug, Clone, Serialize)]
pub struct NetRequest {
    pub url: String,
    /// `Document`, `Image`, `Script`, `XHR`, `Fetch`, …
    pub resource_type: String,
    pub frame_id: String,
    pub tab_id: String,
    /// Epoch seconds.
    pub started_at: f64,
    #[serde(skip)]
    pub session_id: String,
}

/// Most outstanding requests tracked per session; beyond it new ones are not recorded.
pub const REQUESTS_TRACKED: usize = 2_000;

/// Where downloads go and which files may be uploaded (per session).
#[derive(Debug, Clone, Default)]
pub struct FilesConfig {
    /// The session's download directory (created on first use).
    pub download_dir: Option<PathBuf>,
    /// Canonical directories uploads may come from.
    pub upload_roots: Vec<PathBuf>,
    /// Downloads stay where the browser saved them (a browser tabgate attached to keeps
    /// its own download settings); otherwise they are moved to `download_dir`.
    pub leave_in_place: bool,
}

/// Everything the supervisor knows; guarded by one mutex that is never held across `.await`.
#[derive(Debug, Default)]
pub struct State {
    pub active: bool,
    /// True while the supervisor re-establishes a dropped CDP connection.
    pub reconnecting: bool,
    /// Set by [`crate::CdpSupervisor::stop`]: never reconnect or re-attach after that.
    pub stopped: bool,
    pub stopped_reason: Option<String>,
    pub tabs: Vec<Tab>,
    pub current: Option<String>,
    pub sessions: HashMap<String, SessionInfo>,
    pub frames: HashMap<String, Frame>,
    pub pending: Vec<PendingDialog>,
    pub recent: VecDeque<DialogRecord>,
    pub console: VecDeque<ConsoleEntry>,
    /// `(session_id, frame_id)` → isolated world execution context id.
    pub worlds: HashMap<(String, String), i64>,
    pub next_dialog: u64,
    pub seq: u64,
    /// Downloads started by this session's tabs, oldest first (at most [`DOWNLOADS_KEPT`]).
    pub downloads: Vec<Download>,
    /// The pending file chooser, if any.
    pub file_chooser: Option<FileChooser>,
    /// Outstanding network requests by `"{session_id}/{requestId}"`.
    pub requests: HashMap<String, NetRequest>,
    /// Frames between `Page.frameStartedLoading` and `Page.frameStoppedLoading`.
    pub loading: HashSet<String>,
    /// Frame id → [`State::seq`] at its latest committed document (`Page.frameNavigated`).
    pub committed: HashMap<String, u64>,
    /// Sessions the tools already enabled `Network` and file-chooser interception on.
    pub prepared: HashSet<String>,
    /// Download directory and upload roots.
    pub files: FilesConfig,
}

impl State {
    pub fn tab(&self, id: &str) -> Option<&Tab> {
        self.tabs.iter().find(|t| t.tab_id == id)
    }
    pub fn tab_mut(&mut self, id: &str) -> Option<&mut Tab> {
        self.tabs.iter_mut().find(|t| t.tab_id == id)
    }
    /// The tab a flattened session belongs to.
    pub fn tab_of_session(&self, sid: &str) -> Option<String> {
        self.sessions.get(sid).map(|s| s.tab_id.clone())
    }
    /// The top frame of a tab (frame id == tab target id).
    pub fn top_frame(&self, tab: &str) -> Option<&Frame> {
        self.frames.get(tab)
    }
    pub fn push_recent(&mut self, r: DialogRecord) {
        self.recent.push_back(r);
        while self.recent.len() > RECENT_DIALOGS {
            self.recent.pop_front();
        }
    }
    pub fn push_console(&mut self, e: ConsoleEntry) {
        self.console.push_back(e);
        while self.console.len() > CONSOLE_RING {
            self.console.pop_front();
        }
    }
    /// Removes every frame, session and world of a tab's subtree hosted by `sid`.
    pub fn forget_session(&mut self, sid: &str) {
        self.sessions.remove(sid);
        self.worlds.retain(|(s, _), _| s != sid);
        self.requests.retain(|_, r| r.session_id != sid);
        self.prepared.remove(sid);
    }

    /// Outstanding requests of `tab`, oldest first.
    pub fn outstanding(&self, tab: &str) -> Vec<NetRequest> {
        let mut v: Vec<NetRequest> = self.requests.values().filter(|r| r.tab_id == tab).cloned().collect();
        v.sort_by(|a, b| a.started_at.total_cmp(&b.started_at));
        v
    }

    /// The bounded frame tree of `tab` (study 2.10): `{top, children, truncated}`, at most
    /// [`FRAME_TREE_MAX`] children in BFS order; OOPIFs deeper than
    /// [`FRAME_TREE_MAX_OOPIF_DEPTH`] are cut and set `truncated`.
    pub fn frame_tree(&self, tab: &str) -> Value {
        let Some(top) = self.top_frame(tab) else {
            return json!({"top": null, "children": [], "truncated": false});
        };
        let mut children_of: HashMap<&str, Vec<&Frame>> = HashMap::new();
        for f in self.frames.values().filter(|f| f.tab_id == tab) {
            if let Some(p) = &f.parent_frame_id {
                children_of.entry(p.as_str()).or_default().push(f);
            }
        }
        for v in children_of.values_mut() {
            v.sort_by(|a, b| a.frame_id.cmp(&b.frame_id));
        }
        let mut out = Vec::new();
        let mut truncated = false;
        let mut queue: VecDeque<(&Frame, usize)> = VecDeque::new();
        for c in children_of.get(top.frame_id.as_str()).into_iter().flatten() {
            queue.push_back((c, if c.is_oopif { 1 } else { 0 }));
        }
        while let Some((f, oopif_depth)) = queue.pop_front() {
            if out.len() >= FRAME_TREE_MAX {
                truncated = true;
                break;
            }
            if f.is_oopif && oopif_depth > FRAME_TREE_MAX_OOPIF_DEPTH {
                truncated = true;
                continue;
            }
            out.push(f.to_json());
            for c in children_of.get(f.frame_id.as_str()).into_iter().flatten() {
                queue.push_back((c, oopif_depth + usize::from(c.is_oopif)));
            }
        }
        json!({"top": top.to_json(), "children": out, "truncated": truncated})
    }
}

/// Seconds since the Unix epoch.
pub fn now_epoch() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
