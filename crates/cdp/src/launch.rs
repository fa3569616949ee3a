//! Finding, starting and stopping Chromium, and resolving `http://host:port` endpoints.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::error::CdpError;

/// Flags every launch gets (DEVELOPERS.md): headless-safe, no background traffic.
pub const BASE_FLAGS: &[&str] = &[
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    // every session's tab is "in the background" for the others: keep them all running
    "--disable-renderer-backgrounding",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-ipc-flooding-protection",
    "--disable-features=Translate,MediaRouter,OptimizationHints",
    "--password-store=basic",
    "--use-mock-keychain",
];

/// How to start a browser.
#[derive(Debug, Clone, Default)]
pub struct LaunchOptions {
    /// Browser binary; `None` → [`discover_browser`].
    pub browser: Option<PathBuf>,
    /// `--headless` when true (default for tabgate), a window otherwise.
    pub headless: bool,
    /// Profile directory; `None` → a fresh temporary one under `/tmp`, removed on exit.
    pub user_data_dir: Option<PathBuf>,
    /// Extra flags, appended last (`--browser-arg`).
    pub extra_args: Vec<String>,
    /// How long to wait for `DevTools listening on ws://…`, ms.
    pub startup_timeout_ms: u64,
}

/// A Chromium process tabgate started. Dropping it kills the browser (SIGKILL to its
/// process group) and removes a temporary profile. The browser also dies with tabgate
/// itself (`PR_SET_PDEATHSIG`), so it never outlives the gateway.
pub struct BrowserProcess {
    child: Child,
    ws_url: String,
    pid: u32,
    _tmp: Option<tempfile::TempDir>,
}

impl BrowserProcess {
    /// The browser-level WebSocket URL (`ws://127.0.0.1:<port>/devtools/browser/<id>`).
    pub fn ws_url(&self) -> &str {
        &self.ws_url
    }

    /// The browser's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// True while the process has not exited.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Ends the browser: SIGTERM to the process group, then SIGKILL after `grace_ms`.
    pub async fn shutdown(&mut self, grace_ms: u64) {
        signal_group(self.pid, libc::SIGTERM);
        if tokio::time::timeout(Duration::from_millis(grace_ms), self.child.wait())
            .await
            .is_err()
        {
            signal_group(self.pid, libc::SIGKILL);
            let _ = self.child.wait().await;
        }
        signal_group(self.pid, libc::SIGKILL); // stragglers (zygote, utility processes)
    }
}

impl Drop for BrowserProcess {
    fn drop(&mut self) {
        signal_group(self.pid, libc::SIGKILL);
        let _ = self.child.start_kill();
    }
}

fn signal_group(pid: u32, sig: i32) {
    // SAFETY: kill(2) with a negative pid signals the process group we created at spawn.
    unsafe {
        libc::kill(-(pid as i32), sig);
    }
}

/// Finds a browser: `explicit`, then `$TABGATE_BROWSER`, then `chromium`,
/// `chromium-browser`, `google-chrome` on `PATH`.
pub fn discover_browser(explicit: Option<&Path>) -> Result<PathBuf, CdpError> {
    if let Some(p) = explicit {
        return if p.is_file() {
            Ok(p.to_path_buf())
        } else {
            Err(CdpError::Connect(format!(
                "--browser {} does not exist; pass the path of a Chromium binary",
                p.display()
            )))
        };
    }
    if let Some(p) = std::env::var_os("TABGATE_BROWSER").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(CdpError::Connect(format!(
                "TABGATE_BROWSER={} does not exist; unset it or point it at a Chromium binary",
                p.display()
            )))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::split_paths(&path) {
            let cand = dir.join(name);
            if cand.is_file() {
                return Ok(cand);
            }
        }
    }
    Err(CdpError::Connect(
        "no browser found: install Chromium (Debian: apt-get install chromium), or pass --browser PATH, or set TABGATE_BROWSER".into(),
    ))
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Starts Chromium with a DevTools WebSocket on a free loopback port and waits for the
/// `DevTools listening on ws://…` line on its stderr.
///
/// Errors: binary missing; a profile path too long for Chromium's lock socket (over ~100
/// bytes); the browser exiting or staying silent past `startup_timeout_ms`.
pub async fn launch(opts: &LaunchOptions) -> Result<BrowserProcess, CdpError> {
    let bin = discover_browser(opts.browser.as_deref())?;
    let (tmp, profile) = match &opts.user_data_dir {
        Some(d) => {
            std::fs::create_dir_all(d)
                .map_err(|e| CdpError::Connect(format!("cannot create --user-data-dir {}: {e}", d.display())))?;
            (None, d.clone())
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("tabgate-")
                .tempdir_in("/tmp")
                .map_err(|e| CdpError::Connect(format!("cannot create a temporary profile: {e}")))?;
            let p = t.path().to_path_buf();
            (Some(t), p)
        }
    };
    let abs = std::path::absolute(&profile).unwrap_or(profile.clone());
    if abs.as_os_str().len() > 90 {
        return Err(CdpError::Connect(format!(
            "profile path {} is {} bytes; Chromium's profile lock socket fails beyond ~100 bytes: use a shorter --user-data-dir",
            abs.display(),
            abs.as_os_str().len()
        )));
    }
    let mut cmd = Command::new(&bin);
    cmd.arg("--remote-debugging-port=0")
        .arg("--remote-debugging-address=127.0.0.1")
        .arg(format!("--user-data-dir={}", abs.display()))
        .args(BASE_FLAGS);
    if opts.headless {
        cmd.arg("--headless");
    }
    if is_root() && !opts.extra_args.iter().any(|a| a == "--no-sandbox") {
        cmd.arg("--no-sandbox");
    }
    cmd.args(&opts.extra_args).arg("about:blank");
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    cmd.kill_on_drop(true);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::setpgid(0, 0);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| CdpError::Connect(format!("cannot start {}: {e}", bin.display())))?;
    let pid = child.id().unwrap_or(0);
    let stderr = child.stderr.take().expect("stderr piped");
    let mut lines = BufReader::new(stderr).lines();
    let timeout = Duration::from_millis(opts.startup_timeout_ms.max(1000));
    let mut tail: Vec<String> = Vec::new();
    let found = tokio::time::timeout(timeout, async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(i) = line.find("ws://") {
                return Some(line[i..].trim().to_string());
            }
            tail.push(line);
            if tail.len() > 8 {
                tail.remove(0);
            }
        }
        None
    })
    .await;
    let ws_url = match found {
        Ok(Some(u)) => u,
        other => {
            signal_group(pid, libc::SIGKILL);
            let _ = child.kill().await;
            let why = if other.is_err() {
                "did not announce its DevTools endpoint in time"
            } else {
                "exited at start"
            };
            return Err(CdpError::Connect(format!(
                "{} {why}; last stderr lines: {}",
                bin.display(),
                tail.join(" | ")
            )));
        }
    };
    // keep draining stderr so the browser never blocks on a full pipe
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::trace!(target: "chromium", "{line}");
        }
    });
    Ok(BrowserProcess {
        child,
        ws_url,
        pid,
        _tmp: tmp,
    })
}

/// Resolves a user-given endpoint to a browser WebSocket URL: `ws://`/`wss://` URLs are
/// returned as they are; `http://host:port` is asked for `/json/version`'s
/// `webSocketDebuggerUrl` (CDP HTTP endpoint) within `timeout_ms`.
pub async fn resolve_endpoint(url: &str, timeout_ms: u64) -> Result<String, CdpError> {
    if url.starts_with("ws://") || url.starts_with("wss://") {
        return Ok(url.to_string());
    }
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(CdpError::Connect(format!(
            "--cdp-url {} is neither ws://…/devtools/browser/… nor http://host:port",
            crate::redact_url(url)
        )));
    }
    let base = url.trim_end_matches('/');
    let version = format!("{base}/json/version");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(timeout_ms))
        .no_proxy()
        .build()
        .map_err(|e| CdpError::Connect(e.to_string()))?;
    let v: serde_json::Value = client
        .get(&version)
        .send()
        .await
        .and_then(|r| r.error_for_status())
        .map_err(|e| CdpError::Connect(format!("cannot read {}: {e}", crate::redact_url(&version))))?
        .json()
        .await
        .map_err(|e| CdpError::Connect(format!("bad /json/version reply: {e}")))?;
    v.get("webSocketDebuggerUrl")
        .and_then(|u| u.as_str())
        .map(str::to_string)
        .ok_or_else(|| CdpError::Connect("/json/version has no webSocketDebuggerUrl".into()))
}
