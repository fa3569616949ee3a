//! Command-line options shared by the subcommands that start or attach to a browser
//! (`tabgate mcp`, and later `tabgate serve`).

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use tabgate_cdp::{CdpError, LaunchOptions};
use tabgate_supervisor::Browser;

/// Which browser tabgate drives: one it launches (default) or one it attaches to.
#[derive(Debug, Clone, Args)]
pub struct BrowserArgs {
    /// Chromium binary to launch (default: $TABGATE_BROWSER, then chromium,
    /// chromium-browser, google-chrome on PATH).
    #[arg(long, value_name = "PATH")]
    pub browser: Option<PathBuf>,

    /// Run the launched browser headless (the default).
    #[arg(long, overrides_with = "headed")]
    pub headless: bool,

    /// Show the launched browser's window instead of running headless.
    #[arg(long, overrides_with = "headless")]
    pub headed: bool,

    /// Extra Chromium flag, repeatable: `--browser-arg=--disable-gpu`.
    #[arg(long = "browser-arg", value_name = "FLAG", allow_hyphen_values = true, action = clap::ArgAction::Append)]
    pub browser_args: Vec<String>,

    /// Profile directory for the launched browser (default: a fresh temporary one,
    /// removed on exit). Keep it short: Chromium fails beyond ~100 bytes.
    #[arg(long, value_name = "DIR")]
    pub user_data_dir: Option<PathBuf>,

    /// Attach to a running browser instead of launching one:
    /// `ws://host:port/devtools/browser/<id>` or `http://host:port`.
    /// An attached browser is left running when tabgate exits.
    #[arg(long, value_name = "URL", env = "TABGATE_CDP_URL",
          conflicts_with_all = ["browser_args", "user_data_dir", "headed"])]
    pub cdp_url: Option<String>,

    /// How long to wait for a launched browser to announce its DevTools endpoint, ms.
    #[arg(long, value_name = "MS", default_value_t = 20_000)]
    pub startup_timeout_ms: u64,
}

impl BrowserArgs {
    /// Headless unless `--headed` was given last.
    pub fn is_headless(&self) -> bool {
        !self.headed
    }

    /// The launch options these arguments describe.
    pub fn launch_options(&self) -> LaunchOptions {
        LaunchOptions {
            browser: self.browser.clone(),
            headless: self.is_headless(),
            user_data_dir: self.user_data_dir.clone(),
            extra_args: self.browser_args.clone(),
            startup_timeout_ms: self.startup_timeout_ms,
        }
    }

    /// Launches the browser, or attaches with `--cdp-url`.
    pub async fn start(&self) -> Result<Arc<Browser>, CdpError> {
        match &self.cdp_url {
            Some(url) => {
                tracing::info!(url = %tabgate_cdp::redact_url(url), "attaching to browser");
                Browser::attach(url).await
            }
            None => {
                let opts = self.launch_options();
                tracing::info!(?opts, "launching browser");
                Browser::launch(&opts).await
            }
        }
    }
}
