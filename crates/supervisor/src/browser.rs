//! The browser a session runs in: a launched Chromium or an attached endpoint, and the
//! one CDP connection to it, which can be re-established after a drop.

use std::sync::{Arc, RwLock};

use tabgate_cdp::{redact_url, BrowserProcess, CdpError, Connection, LaunchOptions};
use tokio::sync::Mutex;

/// One browser and its CDP connection. Shared by every session placed on it.
pub struct Browser {
    conn: RwLock<Connection>,
    /// What the user gave: the endpoint URL (attached) — re-resolved on reconnect.
    endpoint: Option<String>,
    /// How it was launched (launched browsers only): used for the one relaunch.
    launch: Option<LaunchOptions>,
    process: Mutex<Option<BrowserProcess>>,
    /// Serialises reconnects: the first supervisor to notice a drop reconnects for all.
    reconnecting: Mutex<u32>,
}

impl Browser {
    /// Starts Chromium ([`tabgate_cdp::launch`]) and connects to it.
    pub async fn launch(opts: &LaunchOptions) -> Result<Arc<Browser>, CdpError> {
        let (proc, conn) = start(opts).await?;
        Ok(Arc::new(Browser {
            conn: RwLock::new(conn),
            endpoint: None,
            launch: Some(opts.clone()),
            process: Mutex::new(Some(proc)),
            reconnecting: Mutex::new(0),
        }))
    }

    /// Attaches to a running browser: `ws://…/devtools/browser/…` or `http://host:port`.
    pub async fn attach(url: &str) -> Result<Arc<Browser>, CdpError> {
        let ws = tabgate_cdp::resolve_endpoint(url, 10_000).await?;
        let conn = Connection::connect(&ws, 10_000).await?;
        Ok(Arc::new(Browser {
            conn: RwLock::new(conn),
            endpoint: Some(url.to_string()),
            launch: None,
            process: Mutex::new(None),
            reconnecting: Mutex::new(0),
        }))
    }

    /// The current CDP connection (cheap clone; all clones share one socket).
    pub fn conn(&self) -> Connection {
        self.conn.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// True when tabgate started this browser (and so may relaunch or kill it).
    pub fn launched(&self) -> bool {
        self.launch.is_some()
    }

    /// The endpoint for messages (credentials redacted).
    pub fn describe(&self) -> String {
        match &self.endpoint {
            Some(u) => redact_url(u),
            None => "the Chromium tabgate launched".into(),
        }
    }

    /// Re-establishes the connection after it dropped and returns the new one, or the
    /// current one if another caller already did. A launched browser whose process died is
    /// relaunched once (its tabs are gone: callers re-create them); an attached endpoint is
    /// re-resolved and reconnected. Errors name the endpoint.
    pub async fn reconnect(&self) -> Result<(Connection, bool), CdpError> {
        let mut relaunches = self.reconnecting.lock().await;
        let cur = self.conn();
        if cur.closed_reason().is_none() {
            return Ok((cur, false));
        }
        let mut relaunched = false;
        let conn = match (&self.launch, &self.endpoint) {
            (Some(opts), _) => {
                let mut p = self.process.lock().await;
                let alive = p.as_mut().is_some_and(|p| p.is_running());
                match (alive, p.as_ref()) {
                    (true, Some(proc)) => Connection::connect(proc.ws_url(), 5_000).await?,
                    _ if *relaunches == 0 => {
                        *relaunches += 1;
                        tracing::warn!("the browser process exited; relaunching it once");
                        let (proc, conn) = start(opts).await?;
                        *p = Some(proc);
                        relaunched = true;
                        conn
                    }
                    _ => {
                        return Err(CdpError::Connect(
                            "the browser tabgate launched exited again after one relaunch; restart tabgate".into(),
                        ))
                    }
                }
            }
            (None, Some(url)) => {
                let ws = tabgate_cdp::resolve_endpoint(url, 5_000).await?;
                Connection::connect(&ws, 5_000).await?
            }
            (None, None) => return Err(CdpError::Connect("no endpoint to reconnect to".into())),
        };
        *self.conn.write().unwrap_or_else(|p| p.into_inner()) = conn.clone();
        Ok((conn, relaunched))
    }

    /// For a browser tabgate launched: its first page target (the `about:blank` it opened
    /// with), which the first session adopts instead of leaving an empty tab behind.
    pub async fn initial_page(&self) -> Option<String> {
        if !self.launched() {
            return None;
        }
        let r = self
            .conn()
            .call(None, "Target.getTargets", serde_json::json!({}), 5_000)
            .await
            .ok()?;
        r["targetInfos"]
            .as_array()?
            .iter()
            .find(|t| t["type"] == "page" && !t["attached"].as_bool().unwrap_or(false))
            .and_then(|t| t["targetId"].as_str())
            .map(str::to_string)
    }

    /// The launched browser's process id, if any (tests kill it to check the relaunch).
    pub async fn pid(&self) -> Option<u32> {
        self.process.lock().await.as_ref().map(|p| p.pid())
    }

    /// Closes a launched browser (`Browser.close`, then signals); detaches from an
    /// attached one without closing it.
    pub async fn close(&self) {
        let mut p = self.process.lock().await;
        if let Some(mut proc) = p.take() {
            let _ = self
                .conn()
                .call(None, "Browser.close", serde_json::json!({}), 2_000)
                .await;
            proc.shutdown(2_000).await;
        }
    }
}

async fn start(opts: &LaunchOptions) -> Result<(BrowserProcess, Connection), CdpError> {
    let mut proc = tabgate_cdp::launch(opts).await?;
    match Connection::connect(proc.ws_url(), 10_000).await {
        Ok(c) => Ok((proc, c)),
        Err(e) => {
            proc.shutdown(500).await;
            Err(e)
        }
    }
}
