//! The browser a session runs in: a launched Chromium or an attached endpoint.

use std::sync::Arc;

use tabgate_cdp::{BrowserProcess, CdpError, Connection, LaunchOptions};
use tokio::sync::Mutex;

/// One browser and its CDP connection. Shared by every session placed on it.
pub struct Browser {
    conn: Connection,
    process: Mutex<Option<BrowserProcess>>,
    launched: bool,
}

impl Browser {
    /// Starts Chromium ([`tabgate_cdp::launch`]) and connects to it.
    pub async fn launch(opts: &LaunchOptions) -> Result<Arc<Browser>, CdpError> {
        let mut proc = tabgate_cdp::launch(opts).await?;
        let conn = match Connection::connect(proc.ws_url(), 10_000).await {
            Ok(c) => c,
            Err(e) => {
                proc.shutdown(500).await;
                return Err(e);
            }
        };
        Ok(Arc::new(Browser {
            conn,
            process: Mutex::new(Some(proc)),
            launched: true,
        }))
    }

    /// Attaches to a running browser: `ws://…/devtools/browser/…` or `http://host:port`.
    pub async fn attach(url: &str) -> Result<Arc<Browser>, CdpError> {
        let ws = tabgate_cdp::resolve_endpoint(url, 10_000).await?;
        let conn = Connection::connect(&ws, 10_000).await?;
        Ok(Arc::new(Browser {
            conn,
            process: Mutex::new(None),
            launched: false,
        }))
    }

    /// The CDP connection.
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// True when tabgate started this browser (and so may relaunch or kill it).
    pub fn launched(&self) -> bool {
        self.launched
    }

    /// For a browser tabgate launched: its first page target (the `about:blank` it opened
    /// with), which the first session adopts instead of leaving an empty tab behind.
    pub async fn initial_page(&self) -> Option<String> {
        if !self.launched {
            return None;
        }
        let r = self
            .conn
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

    /// Closes a launched browser (`Browser.close`, then signals); detaches from an
    /// attached one without closing it.
    pub async fn close(&self) {
        let mut p = self.process.lock().await;
        if let Some(mut proc) = p.take() {
            let _ = self
                .conn
                .call(None, "Browser.close", serde_json::json!({}), 2_000)
                .await;
            proc.shutdown(2_000).await;
        }
    }
}
