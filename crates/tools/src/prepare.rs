//! Per-session browser setup for real pages, done once per page session on first use:
//! `Network.enable` (navigate reports outstanding requests), file-chooser interception
//! (`browser_upload`; a chooser a click opens becomes one pending state instead of a native
//! dialog) and download events into the session's own directory (case 23).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;

use crate::session::Session;

/// Environment variable naming the base download directory (each session gets a
/// subdirectory). Default: `<temp>/tabgate-downloads`.
pub const DOWNLOAD_DIR_ENV: &str = "TABGATE_DOWNLOAD_DIR";
/// Environment variable listing the directories uploads may come from (`:`-separated).
/// Default: the temporary directory and the download base directory.
pub const UPLOAD_ROOTS_ENV: &str = "TABGATE_UPLOAD_ROOTS";

fn download_base() -> PathBuf {
    std::env::var_os(DOWNLOAD_DIR_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("tabgate-downloads"))
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

impl Session {
    /// The session's download directory (created when missing): the configured one, or a
    /// fresh subdirectory of [`DOWNLOAD_DIR_ENV`] (default `<temp>/tabgate-downloads`).
    pub fn download_dir(&self) -> PathBuf {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = {
            let mut st = self.sup.state();
            match &st.files.download_dir {
                Some(d) => d.clone(),
                None => {
                    let d = download_base().join(format!(
                        "s{}-{}",
                        std::process::id(),
                        N.fetch_add(1, Ordering::Relaxed) + 1
                    ));
                    st.files.download_dir = Some(d.clone());
                    d
                }
            }
        };
        let _ = std::fs::create_dir_all(&dir);
        dir
    }

    /// Sets where this session's downloads go (applied on the next tool call).
    pub fn set_download_dir(&self, dir: impl Into<PathBuf>) {
        let mut st = self.sup.state();
        st.files.download_dir = Some(dir.into());
        st.prepared.clear();
    }

    /// Sets the directories `browser_upload` may read files from (replacing the default:
    /// [`UPLOAD_ROOTS_ENV`], else the temporary directory and the download directory).
    pub fn set_upload_roots(&self, roots: Vec<PathBuf>) {
        self.sup.state().files.upload_roots = roots.iter().map(|r| canonical(r)).collect();
    }

    /// The directories uploads may come from (canonical paths).
    pub fn upload_roots(&self) -> Vec<PathBuf> {
        let set = self.sup.state().files.upload_roots.clone();
        if !set.is_empty() {
            return set;
        }
        let roots: Vec<PathBuf> = match std::env::var_os(UPLOAD_ROOTS_ENV).filter(|v| !v.is_empty()) {
            Some(v) => std::env::split_paths(&v).collect(),
            None => vec![std::env::temp_dir(), download_base()],
        };
        roots.iter().map(|r| canonical(r)).collect()
    }

    /// Enables what the real-page tools need on the current tab's page session, once per
    /// session. Failures are ignored: the tools still work, with less to report.
    pub(crate) async fn prepare(&self) {
        let Ok((_, sid)) = self.current() else { return };
        if !self.sup.state().prepared.insert(sid.clone()) {
            return;
        }
        let dir = self.download_dir();
        // a browser tabgate launched saves downloads under their guid in the session's
        // directory (then named); one it attached to (someone's own) keeps its settings
        let behavior = if self.sup.browser().launched() {
            json!({"behavior": "allowAndName", "downloadPath": dir.to_string_lossy(), "eventsEnabled": true})
        } else {
            self.sup.state().files.leave_in_place = true;
            json!({"behavior": "default", "eventsEnabled": true})
        };
        let conn = self.sup.conn();
        let s = Some(sid.as_str());
        let _ = tokio::join!(
            conn.call(
                s,
                "Network.enable",
                json!({"maxTotalBufferSize": 1_000_000, "maxResourceBufferSize": 500_000}),
                5_000
            ),
            conn.call(s, "Page.setInterceptFileChooserDialog", json!({"enabled": true}), 5_000),
            conn.call(None, "Browser.setDownloadBehavior", behavior, 5_000),
        );
    }
}
