//! Shared harness: one headless Chromium per test binary on a runtime that outlives every
//! test; each test runs its own gateway (fresh state dir, 127.0.0.1:0) on that browser and
//! talks to it over real HTTP.
#![allow(dead_code)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use tabgate_cdp::LaunchOptions;
use tabgate_config::Config;
use tabgate_server::{Limits, Prepared, ServeOptions, Server};
use tabgate_supervisor::Browser;
use tokio::runtime::Runtime;

pub const KEY: &str = "test-key-0123456789";

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
            extra_args: vec!["--disable-gpu".into()],
            startup_timeout_ms: 20_000,
        };
        // launched from a runtime worker (it lives as long as the process), so the browser's
        // parent-death signal fires only when the test binary exits
        tokio::spawn(async move { Browser::launch(&opts).await.expect("launch chromium") })
            .await
            .expect("launch task")
    })
    .await
    .clone()
}

/// A running gateway and an HTTP client for it.
pub struct Gw {
    pub server: Option<Server>,
    pub url: String,
    pub http: reqwest::Client,
    pub state: PathBuf,
    _tmp: Option<tempfile::TempDir>,
}

pub fn options(state: &Path, config: Config) -> ServeOptions {
    ServeOptions {
        bind: "127.0.0.1:0".parse().unwrap(),
        state_dir: state.to_path_buf(),
        config,
        env_api_key: Some(KEY.into()),
        limits: None,
    }
}

impl Gw {
    /// A gateway with default config in a fresh state dir.
    pub async fn new() -> Gw {
        Gw::with_config(Config::default()).await
    }

    pub async fn with_config(config: Config) -> Gw {
        Gw::with(config, None).await
    }

    /// A gateway with `limits` (else the defaults for `config`).
    pub async fn with(config: Config, limits: Option<Limits>) -> Gw {
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().to_path_buf();
        let mut g = Gw::start_with(&state, config, limits).await;
        g._tmp = Some(tmp);
        g
    }

    /// A gateway on an existing state dir (restart tests).
    pub async fn start_in(state: &Path, config: Config) -> Gw {
        Gw::start_with(state, config, None).await
    }

    async fn start_with(state: &Path, config: Config, limits: Option<Limits>) -> Gw {
        let mut opts = options(state, config);
        opts.limits = limits;
        let p = Prepared::bind(opts).await.expect("bind");
        let server = p.start(browser().await);
        Gw {
            url: server.url(),
            server: Some(server),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
            state: state.to_path_buf(),
            _tmp: None,
        }
    }

    /// A gateway on the browser pool `config` describes (`browser.endpoints`), without the
    /// shared test browser (`launched` serves an endpoint of kind launch, if any).
    pub async fn with_pool(config: Config, launched: Option<Arc<Browser>>) -> Gw {
        let tmp = tempfile::tempdir().unwrap();
        let p = Prepared::bind(options(tmp.path(), config)).await.expect("bind");
        let server = p.start_endpoints(launched);
        Gw {
            url: server.url(),
            server: Some(server),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
            state: tmp.path().to_path_buf(),
            _tmp: Some(tmp),
        }
    }

    /// Shuts the gateway down, keeping its state dir; returns the dir's owner.
    pub async fn stop(&mut self) -> Option<tempfile::TempDir> {
        if let Some(s) = self.server.take() {
            s.shutdown(Duration::from_secs(5)).await;
        }
        self._tmp.take()
    }

    /// A request with the right key.
    pub async fn req(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let mut r = self
            .http
            .request(method, format!("{}{}", self.url, path))
            .bearer_auth(KEY);
        if let Some(b) = body {
            r = r.json(&b);
        }
        let resp = r.send().await.expect("request");
        let status = resp.status();
        let text = resp.text().await.unwrap();
        let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {text}"));
        (status, v)
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.req(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.req(Method::POST, path, Some(body)).await
    }

    /// Creates a session; returns its id.
    pub async fn session(&self, settings: Value) -> String {
        let (st, v) = self.post("/v1/sessions", settings).await;
        assert_eq!(st, StatusCode::CREATED, "{v}");
        v["session_id"].as_str().unwrap().to_string()
    }

    /// Calls a tool; returns status and body.
    pub async fn call(&self, sid: &str, tool: &str, args: Value) -> (StatusCode, Value) {
        self.post(&format!("/v1/sessions/{sid}/tools/{tool}"), args).await
    }

    /// Calls a tool that must succeed; returns its `result`.
    pub async fn ok(&self, sid: &str, tool: &str, args: Value) -> Value {
        let (st, v) = self.call(sid, tool, args.clone()).await;
        assert_eq!(st, StatusCode::OK, "{tool} {args}: {v}");
        assert_eq!(v["ok"], true, "{v}");
        v["result"].clone()
    }

    /// Evaluates in the session's page (test-side check).
    pub async fn eval(&self, sid: &str, expr: &str) -> Value {
        self.ok(sid, "browser_console", json!({"expression": expr})).await["result"].clone()
    }
}

impl Drop for Gw {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            // close the session tabs on the shared browser even when a test fails
            let h = rt().handle().clone();
            std::thread::spawn(move || h.block_on(s.shutdown(Duration::from_secs(2))))
                .join()
                .ok();
        }
    }
}

/// Finds `- role "name" ... [ref=eN]` in snapshot text.
pub fn find_ref(snap: &str, role: &str, name: &str) -> Option<String> {
    let prefix = format!("- {role} \"{name}\"");
    snap.lines()
        .map(str::trim_start)
        .find(|l| l.starts_with(&prefix))
        .and_then(|l| l.split("[ref=").nth(1))
        .map(|r| r.trim_end_matches(']').to_string())
}

/// The page targets the browser has now (tabs of every session, plus its first one).
pub async fn page_targets() -> Vec<String> {
    let r = browser()
        .await
        .conn()
        .call(None, "Target.getTargets", json!({}), 5_000)
        .await
        .unwrap();
    r["targetInfos"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["type"] == "page")
        .map(|t| t["targetId"].as_str().unwrap().to_string())
        .collect()
}
