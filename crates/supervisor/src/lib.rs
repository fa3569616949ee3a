//! Per-session CDP supervision (seed 000, DESIGN.md section 2).
//!
//! A [`CdpSupervisor`] owns one session's page targets (its tabs) on a shared
//! [`Browser`] connection. It attaches with `flatten: true`, auto-attaches every child
//! (`Target.setAutoAttach{waitForDebuggerOnStart: true}`) and resumes each one, and keeps
//! tabs, frames (OOPIFs included), pending and recent dialogs, isolated worlds and the
//! console ring in one [`State`]. Tools read that state without waiting on the page.

pub mod bridge;
mod browser;
mod events;
mod policy;
mod recover;
mod state;
mod supervisor;

pub use browser::Browser;
pub use events::sanitize_filename;
pub use policy::{DialogAction, DialogPolicy, SupervisorConfig};
pub use state::{
    now_epoch, ConsoleEntry, DialogRecord, Download, FileChooser, FilesConfig, Frame, NetRequest, PendingDialog,
    SessionInfo, SessionKind, State, Tab, CONSOLE_RING, DOWNLOADS_KEPT, FRAME_TREE_MAX, FRAME_TREE_MAX_OOPIF_DEPTH,
    RECENT_DIALOGS, REQUESTS_TRACKED,
};
pub use supervisor::{CdpSupervisor, SupervisorError, WORLD_NAME};
