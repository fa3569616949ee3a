//! `tabgate serve`: the gateway over HTTP (DESIGN.md sections 1 and 7).
//!
//! - `/v1/*` JSON API: health, the tool catalogue, sessions (stored in SQLite in the
//!   state dir), tool calls per session, and the browser endpoints sessions are placed on
//!   ([`pool`]);
//! - `/mcp`: MCP over streamable HTTP, each MCP session mapped to a tabgate session;
//! - a bearer API key on everything but `GET /v1/health`, and `Host` checks on loopback
//!   binds against DNS rebinding.
//!
//! Start in two steps so problems surface before a browser is launched:
//! [`Prepared::bind`] (state dir, API key, database, listening socket), then
//! [`Prepared::start`] with the browser. [`Server::shutdown`] finishes or cancels calls in
//! flight, closes every session's tabs and checkpoints the database.

#![warn(missing_docs)]

mod audit;
pub mod auth;
mod body;
mod console;
pub mod error;
mod gateway;
pub mod mcp;
pub mod pool;
pub mod proxy;
mod routes;
pub mod settings;
mod slot;
pub mod store;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tabgate_config::Config;
use tabgate_supervisor::Browser;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use auth::{ApiKey, KeySource};
pub use body::MAX_BODY_BYTES;
pub use error::ApiError;
pub use gateway::{Gateway, Limits};
pub use pool::Pool;
pub use routes::app;
pub use store::{Store, StoreError, SCHEMA_VERSION};

/// The default listening address.
pub const DEFAULT_BIND: &str = "127.0.0.1:7878";

/// The default state dir: `$XDG_STATE_HOME/tabgate` (`~/.local/state/tabgate`), else the
/// platform's local data dir, else `./.tabgate`.
pub fn default_state_dir() -> PathBuf {
    dirs::state_dir()
        .or_else(dirs::data_local_dir)
        .map(|d| d.join("tabgate"))
        .unwrap_or_else(|| PathBuf::from(".tabgate"))
}

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Where to listen (port 0 picks one).
    pub bind: SocketAddr,
    /// Where the database and a generated API key live.
    pub state_dir: PathBuf,
    /// The loaded configuration.
    pub config: Config,
    /// The value of `TABGATE_API_KEY`, if set.
    pub env_api_key: Option<String>,
    /// Limits; `None` takes [`Limits::from_config`].
    pub limits: Option<Limits>,
}

/// A startup failure, with what to do about it.
#[derive(Debug, Clone)]
pub struct ServeError(pub String);

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ServeError {}

/// Everything but the browser: state dir, key, database and the bound socket.
pub struct Prepared {
    opts: ServeOptions,
    key: ApiKey,
    store: Arc<Store>,
    listener: tokio::net::TcpListener,
}

fn ensure_dir(dir: &Path) -> Result<(), ServeError> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
        .map_err(|e| ServeError(format!("cannot create state dir {}: {e}", dir.display())))
}

impl Prepared {
    /// Creates the state dir (mode 0700), resolves the API key, refuses a non-loopback
    /// bind without a configured key, opens and migrates the database, and binds.
    pub async fn bind(opts: ServeOptions) -> Result<Prepared, ServeError> {
        ensure_dir(&opts.state_dir)?;
        let key = ApiKey::resolve(
            opts.config.api_key.as_deref(),
            opts.config.source.as_deref(),
            opts.env_api_key.as_deref(),
            &opts.state_dir,
        )
        .map_err(ServeError)?;
        auth::check_bind(&opts.bind, &key).map_err(ServeError)?;
        console::check_config(&opts.config).map_err(ServeError)?;
        let store = Store::open(&opts.state_dir.join("tabgate.db")).map_err(|e| ServeError(e.0))?;
        let listener = tokio::net::TcpListener::bind(opts.bind)
            .await
            .map_err(|e| ServeError(format!("cannot listen on {}: {e}", opts.bind)))?;
        Ok(Prepared {
            opts,
            key,
            store: Arc::new(store),
            listener,
        })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().unwrap_or(self.opts.bind)
    }

    /// The API key in force.
    pub fn api_key(&self) -> &ApiKey {
        &self.key
    }

    /// The session database.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Starts serving with `browser`: the one browser sessions run in, or, when the
    /// config lists `browser.endpoints`, the browser of its `launch` endpoint.
    pub fn start(self, browser: Arc<Browser>) -> Server {
        self.start_endpoints(Some(browser))
    }

    /// Starts serving on the browser pool the config describes (`browser.endpoints`);
    /// `launched` is the browser of its `launch` endpoint, if it has one (an endpoint of
    /// kind launch without it reads as down). Without `browser.endpoints`, `launched` is
    /// the one browser (`None`: no session can open a tab).
    pub fn start_endpoints(self, launched: Option<Arc<Browser>>) -> Server {
        let addr = self.local_addr();
        let limits = self
            .opts
            .limits
            .clone()
            .unwrap_or_else(|| Limits::from_config(&self.opts.config));
        let pool = Pool::new(&self.opts.config, launched);
        pool.start_monitors();
        let gw = Gateway::new(pool, self.store.clone(), self.opts.config.clone(), limits);
        let reaper = gw.spawn_reaper();
        let cancel = CancellationToken::new();
        let auth = auth::AuthState {
            key: self.key.clone(),
            hosts: auth::HostPolicy::new(&self.opts.bind, &self.opts.config.allowed_hosts),
        };
        let router = app(gw.clone(), auth, cancel.clone(), &self.opts.config);
        let stop = cancel.clone();
        let task = tokio::spawn(async move {
            axum::serve(
                self.listener,
                router.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await
        });
        Server {
            addr,
            key: self.key,
            gw,
            cancel,
            task,
            reaper,
        }
    }
}

/// A running gateway.
pub struct Server {
    addr: SocketAddr,
    key: ApiKey,
    gw: Arc<Gateway>,
    cancel: CancellationToken,
    task: JoinHandle<std::io::Result<()>>,
    reaper: JoinHandle<()>,
}

impl Server {
    /// The listening address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The API key in force.
    pub fn api_key(&self) -> &ApiKey {
        &self.key
    }

    /// The gateway.
    pub fn gateway(&self) -> &Arc<Gateway> {
        &self.gw
    }

    /// Waits until the HTTP server stops by itself (it only does on an I/O error).
    pub async fn wait(&mut self) -> Result<(), String> {
        match (&mut self.task).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("the HTTP server failed: {e}")),
            Err(e) => Err(format!("the HTTP server task failed: {e}")),
        }
    }

    /// Stops: no new connections; `/mcp` sessions end; calls in flight get `grace` to
    /// finish and are cancelled after it; then every session's tabs are closed, the
    /// sessions `/mcp` created are removed and the database is checkpointed. Stored
    /// sessions stay for the next start. The browser is the caller's to close.
    pub async fn shutdown(self, grace: Duration) {
        let Server {
            gw,
            cancel,
            mut task,
            reaper,
            ..
        } = self;
        cancel.cancel();
        if tokio::time::timeout(grace, &mut task).await.is_err() {
            tracing::warn!("calls still running after {grace:?}; cancelling them");
            task.abort();
            let _ = task.await;
        }
        reaper.abort();
        gw.shutdown().await;
        tracing::info!("gateway stopped");
    }
}
