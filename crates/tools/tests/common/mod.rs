//! Shared test harness: one headless Chromium per test binary on a runtime that outlives
//! every test, a fresh two-site fixture server and a fresh session (its own tab) per test.
#![allow(dead_code)]

use std::future::Future;
use std::sync::{Arc, OnceLock};

use serde_json::{json, Value};
use tabgate_cdp::LaunchOptions;
use tabgate_supervisor::{Browser, SupervisorConfig};
use tabgate_testkit::Site;
use tabgate_tools::{Session, SessionConfig, ToolOutput};
use tokio::runtime::Runtime;

pub fn rt() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime")
    })
}

/// Runs a test body on the shared runtime.
pub fn run<F: Future>(f: F) -> F::Output {
    rt().block_on(f)
}

pub async fn browser() -> Arc<Browser> {
    static B: tokio::sync::OnceCell<Arc<Browser>> = tokio::sync::OnceCell::const_new();
    B.get_or_init(|| async {
        let opts = LaunchOptions {
            browser: Some(tabgate_testkit::chromium()),
            headless: true,
            user_data_dir: None,
            extra_args: vec![],
            startup_timeout_ms: 20_000,
        };
        // launch from a runtime worker (it lives as long as the process), so the browser's
        // parent-death signal fires only when the test binary exits
        tokio::spawn(async move { Browser::launch(&opts).await.expect("launch chromium") })
            .await
            .expect("launch task")
    })
    .await
    .clone()
}

/// A fixture site and a session with its own tab.
pub struct T {
    pub site: Site,
    pub s: Session,
}

impl T {
    pub async fn new() -> T {
        T::with(SupervisorConfig::default()).await
    }

    pub async fn with(cfg: SupervisorConfig) -> T {
        let site = Site::start().await;
        let s = Session::open(
            browser().await,
            SessionConfig {
                supervisor: cfg,
                adopt_target: None,
            },
        )
        .await
        .expect("open session");
        T { site, s }
    }

    /// Calls a tool and returns its output, whatever it is.
    pub async fn raw(&self, name: &str, args: Value) -> ToolOutput {
        self.s.call(name, args).await
    }

    /// Calls a tool that must succeed; returns its text.
    pub async fn ok(&self, name: &str, args: Value) -> String {
        let o = self.s.call(name, args.clone()).await;
        assert!(o.error.is_none(), "{name} {args} failed: {}", o.text);
        o.text
    }

    /// Calls a tool that must succeed; returns its structured result.
    pub async fn json(&self, name: &str, args: Value) -> Value {
        let o = self.s.call(name, args.clone()).await;
        assert!(o.error.is_none(), "{name} {args} failed: {}", o.text);
        o.structured.unwrap_or(Value::Null)
    }

    /// Calls a tool that must fail with `code`; returns the message.
    pub async fn err(&self, name: &str, args: Value, code: &str) -> String {
        let o = self.s.call(name, args.clone()).await;
        let e = o
            .error
            .unwrap_or_else(|| panic!("{name} {args} should fail with {code}, got: {}", o.text));
        assert_eq!(e.code, code, "{name} {args}: {}", e.message);
        e.message
    }

    pub async fn goto(&self, url: &str) -> Value {
        self.json("browser_navigate", json!({"url": url})).await
    }

    pub async fn snapshot(&self) -> String {
        self.ok("browser_snapshot", json!({})).await
    }

    /// The ref of the first node with `role` and `name` in a fresh snapshot.
    pub async fn find(&self, role: &str, name: &str) -> String {
        let snap = self.snapshot().await;
        find_ref(&snap, role, name).unwrap_or_else(|| panic!("no {role} {name:?} with a ref in:\n{snap}"))
    }

    pub async fn click(&self, role: &str, name: &str) -> Value {
        let r = self.find(role, name).await;
        self.json("browser_click", json!({"ref": r})).await
    }

    /// Evaluates in the page's main world (test-side check, not an action).
    pub async fn eval(&self, expr: &str) -> Value {
        self.json("browser_console", json!({"expression": expr})).await["result"].clone()
    }

    pub async fn log(&self, key: &str, expected: &str) -> bool {
        self.site.wait_log(key, expected, 5_000).await
    }
}

/// Finds `- role "name" ... [ref=eN]` in snapshot text.
pub fn find_ref(snap: &str, role: &str, name: &str) -> Option<String> {
    let prefix = format!("- {role} \"{}\"", name.replace('"', "\\\""));
    snap.lines()
        .map(str::trim_start)
        .find(|l| l.starts_with(&prefix) && l[prefix.len()..].starts_with([' ', '\n']) || l.trim_end() == prefix)
        .and_then(|l| l.split("[ref=").nth(1))
        .map(|r| r.trim_end_matches(']').to_string())
}

/// Like [`find_ref`] but only after the first line containing `anchor` (e.g. an iframe's name).
pub fn find_ref_after(snap: &str, anchor: &str, role: &str, name: &str) -> Option<String> {
    let i = snap.find(anchor)?;
    find_ref(&snap[i..], role, name)
}
