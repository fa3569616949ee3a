//! `tabgate serve`: the gateway over HTTP (`/v1/*`, `/mcp`) until SIGINT/SIGTERM.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use tabgate_server::{Prepared, ServeOptions};

use crate::args::BrowserArgs;
use crate::signals::shutdown_signal;

/// Options of `tabgate serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on. A non-loopback address needs a configured API key
    /// (server.api_key or TABGATE_API_KEY).
    #[arg(long, value_name = "HOST:PORT", default_value = tabgate_server::DEFAULT_BIND, env = "TABGATE_BIND")]
    pub bind: String,

    /// config.yaml (default: <config dir>/tabgate/config.yaml when it exists).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Where the session database and a generated API key live
    /// (default: ~/.local/state/tabgate).
    #[arg(long, value_name = "DIR", env = "TABGATE_STATE_DIR")]
    pub state_dir: Option<PathBuf>,

    /// At most this many sessions have a tab open at once (more get 429 too_many_tabs).
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub max_open_sessions: usize,

    /// Seconds a tool call without its own timeout_ms may run before it is cancelled (504).
    #[arg(long, value_name = "SECONDS", default_value_t = 120)]
    pub call_timeout: u64,

    /// Seconds calls in flight get to finish on SIGINT/SIGTERM before they are cancelled.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub shutdown_grace: u64,

    #[command(flatten)]
    pub browser: BrowserArgs,
}

fn parse_bind(s: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = s.parse() {
        return Ok(a);
    }
    let mut addrs = s
        .to_socket_addrs()
        .map_err(|e| format!("--bind {s:?} is not HOST:PORT ({e})"))?;
    addrs
        .next()
        .ok_or_else(|| format!("--bind {s:?} resolves to no address"))
}

/// Runs the gateway; returns the process exit code.
pub async fn run(a: ServeArgs) -> i32 {
    let config = match tabgate_config::Config::load(a.config.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tabgate: bad configuration: {e}");
            return 2;
        }
    };
    let bind = match parse_bind(&a.bind) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("tabgate: {e}");
            return 2;
        }
    };
    let pooled = !config.endpoints.is_empty();
    if pooled && a.browser.cdp_url.is_some() {
        eprintln!("tabgate: --cdp-url cannot be combined with browser.endpoints in the config; list that browser as an endpoint of kind cdp");
        return 2;
    }
    // the browser tabgate launches (or attaches to): the only one without endpoints, else
    // the one of the `launch` endpoint, if there is one
    let needs_browser = !pooled
        || config
            .endpoints
            .iter()
            .any(|e| e.kind == tabgate_config::EndpointKind::Launch);
    let mut limits = tabgate_server::Limits::from_config(&config);
    limits.max_open_sessions = a.max_open_sessions.max(1);
    limits.call_timeout = Duration::from_secs(a.call_timeout.max(1));
    let opts = ServeOptions {
        bind,
        state_dir: a.state_dir.clone().unwrap_or_else(tabgate_server::default_state_dir),
        config,
        env_api_key: std::env::var("TABGATE_API_KEY").ok(),
        limits: Some(limits),
    };
    let state_dir = opts.state_dir.clone();
    let prepared = match Prepared::bind(opts).await {
        Ok(p) => p,
        Err(e) => {
            eprintln!("tabgate: {e}");
            return 2;
        }
    };
    let browser = if needs_browser {
        match a.browser.start().await {
            Ok(b) => Some(b),
            Err(e) => {
                eprintln!("tabgate: {e}");
                return 1;
            }
        }
    } else {
        None
    };
    let key_source = prepared.api_key().source.clone();
    let db = prepared.store().path().to_path_buf();
    let mut server = prepared.start_endpoints(browser.clone());
    let url = server.url();
    // The banner goes to stdout (logs go to stderr); tests and scripts read the URL here.
    println!("tabgate serve listening on {url}");
    println!("  HTTP API: {url}/v1/  (health: {url}/v1/health, tools: {url}/v1/tools)");
    println!("  MCP (streamable HTTP): {url}/mcp");
    println!("  API key: {key_source}  — send `Authorization: Bearer <key>`");
    println!("  sessions: {}  (state dir {})", db.display(), state_dir.display());
    if pooled {
        for e in server.gateway().pool().endpoints() {
            let cap = e.capacity().map_or("unlimited".to_string(), |c| c.to_string());
            println!("  browser endpoint: {}, capacity {cap}", e.describe());
        }
    }
    let code = tokio::select! {
        sig = shutdown_signal() => {
            tracing::info!("{sig}: shutting down");
            eprintln!("tabgate: {sig}, shutting down");
            0
        }
        r = server.wait() => match r {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("tabgate: {e}");
                1
            }
        },
    };
    server.shutdown(Duration::from_secs(a.shutdown_grace)).await;
    if let Some(b) = &browser {
        crate::close_browser(b).await;
    }
    code
}
