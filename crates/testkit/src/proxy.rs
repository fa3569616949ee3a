//! A CDP WebSocket proxy for fault injection: tabgate connects to the proxy, the proxy to
//! the real browser. Tests drop every connection, refuse new ones, or delay the browser's
//! messages. Mocks are for faults only: the browser behind it is real.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpListener;
use tokio::sync::broadcast;

/// A running proxy; dropping it stops accepting (live connections end with the browser's).
pub struct CdpProxy {
    url: String,
    refuse: Arc<AtomicBool>,
    delay_ms: Arc<AtomicU64>,
    kill: broadcast::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl CdpProxy {
    /// Starts a proxy on `127.0.0.1:0` forwarding every WebSocket to `upstream`
    /// (a browser's `ws://…/devtools/browser/…` URL).
    pub async fn start(upstream: &str) -> CdpProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().expect("addr").port();
        let path = upstream.splitn(4, '/').nth(3).unwrap_or("devtools/browser").to_string();
        let refuse = Arc::new(AtomicBool::new(false));
        let delay_ms = Arc::new(AtomicU64::new(0));
        let (kill, _) = broadcast::channel(4);
        let up = upstream.to_string();
        let (r, d, k) = (refuse.clone(), delay_ms.clone(), kill.clone());
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                if r.load(Ordering::SeqCst) {
                    drop(stream);
                    continue;
                }
                let (up, d, mut killed) = (up.clone(), d.clone(), k.subscribe());
                tokio::spawn(async move {
                    let Ok(client) = tokio_tungstenite::accept_async(stream).await else {
                        return;
                    };
                    let Ok((browser, _)) = tokio_tungstenite::connect_async(up.as_str()).await else {
                        return;
                    };
                    let (mut ctx, mut crx) = client.split();
                    let (mut btx, mut brx) = browser.split();
                    let down = async {
                        while let Some(Ok(m)) = brx.next().await {
                            let ms = d.load(Ordering::SeqCst);
                            if ms > 0 {
                                tokio::time::sleep(Duration::from_millis(ms)).await;
                            }
                            if ctx.send(m).await.is_err() {
                                break;
                            }
                        }
                    };
                    let upward = async {
                        while let Some(Ok(m)) = crx.next().await {
                            if btx.send(m).await.is_err() {
                                break;
                            }
                        }
                    };
                    tokio::select! {
                        _ = down => {}
                        _ = upward => {}
                        _ = killed.recv() => {}
                    }
                });
            }
        });
        CdpProxy {
            url: format!("ws://127.0.0.1:{port}/{path}"),
            refuse,
            delay_ms,
            kill,
            task,
        }
    }

    /// The URL to give tabgate (`--cdp-url`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Drops every live connection (both directions, without a close handshake).
    pub fn drop_all(&self) {
        let _ = self.kill.send(());
    }

    /// Refuses (closes at once) new connections while `on`.
    pub fn refuse(&self, on: bool) {
        self.refuse.store(on, Ordering::SeqCst);
    }

    /// Delays every message from the browser by `ms`.
    pub fn delay(&self, ms: u64) {
        self.delay_ms.store(ms, Ordering::SeqCst);
    }
}

impl Drop for CdpProxy {
    fn drop(&mut self) {
        self.task.abort();
        let _ = self.kill.send(());
    }
}
