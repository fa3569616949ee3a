//! `tabgate`: the browser gateway binary.
//!
//! stdout belongs to the MCP channel in `tabgate mcp`: logs go to stderr only.

mod args;
mod mcp;
mod serve;
mod signals;

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use tabgate_tools::{Session, SessionConfig};

pub use args::BrowserArgs;

/// tabgate: a browser gateway for AI agents (MCP over stdio and HTTP, an HTTP API) over the Chrome DevTools Protocol.
#[derive(Debug, Parser)]
#[command(name = "tabgate", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the browser_* tools over MCP on stdin/stdout (for an MCP client to spawn).
    Mcp(McpArgs),
    /// Run the gateway: HTTP API (/v1), MCP over streamable HTTP (/mcp), sessions in SQLite.
    Serve(serve::ServeArgs),
}

#[derive(Debug, clap::Args)]
struct McpArgs {
    #[command(flatten)]
    browser: BrowserArgs,
    /// config.yaml (default: <config dir>/tabgate/config.yaml when it exists).
    #[arg(long, value_name = "FILE")]
    config: Option<std::path::PathBuf>,
}

/// How long session and browser shutdown may take before tabgate exits anyway
/// (a launched browser is still killed: its process group gets SIGKILL on drop and
/// `PR_SET_PDEATHSIG` when tabgate exits).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(6);

fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(filter)
        .init();
}

fn main() {
    let cli = Cli::parse();
    init_logging();
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tabgate: cannot start the async runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = rt.block_on(async {
        match cli.command {
            Command::Mcp(a) => run_mcp(a).await,
            Command::Serve(a) => serve::run(a).await,
        }
    });
    // Exit without waiting for the runtime: a blocking stdin read cannot be cancelled
    // and would otherwise keep tabgate (and so its browser) alive.
    rt.shutdown_timeout(Duration::from_millis(200));
    std::process::exit(code);
}

async fn run_mcp(a: McpArgs) -> i32 {
    let config = match tabgate_config::Config::load(a.config.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tabgate: bad configuration: {e}");
            return 2;
        }
    };
    let browser = match a.browser.start().await {
        Ok(b) => b,
        Err(e) => {
            eprintln!("tabgate: {e}");
            return 1;
        }
    };
    let session = match Session::open(
        browser.clone(),
        SessionConfig {
            adopt_target: browser.initial_page().await,
            supervisor: config.supervisor(),
        },
    )
    .await
    {
        Ok(s) => Arc::new(s),
        Err(e) => {
            eprintln!("tabgate: cannot open a browser session: {e}");
            close_browser(&browser).await;
            return 1;
        }
    };
    let ending = mcp::serve_stdio(session.clone()).await;
    tracing::info!(?ending, "shutting down");
    if tokio::time::timeout(CLOSE_TIMEOUT, session.close()).await.is_err() {
        tracing::warn!("session close timed out");
    }
    close_browser(&browser).await;
    tracing::debug!("browser closed");
    match ending {
        mcp::Ending::ClientGone => 0,
        mcp::Ending::Signal(_) => 0,
        mcp::Ending::Failed => 1,
    }
}

pub(crate) async fn close_browser(browser: &tabgate_supervisor::Browser) {
    if tokio::time::timeout(CLOSE_TIMEOUT, browser.close()).await.is_err() {
        tracing::warn!("browser close timed out");
    }
}
