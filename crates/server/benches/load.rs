//! Load check for `tabgate serve`: N sessions × M tool calls in parallel over HTTP against
//! one gateway and one Chromium, then every session deleted and the gateway stopped.
//! Prints p50/p99 latency per tool, and fails (exit 1) on any error, any tab left open or
//! any browser process left running.
//!
//! ```sh
//! cargo bench -p tabgate-server --bench load                      # 20 sessions × 50 calls
//! cargo bench -p tabgate-server --bench load -- --sessions 5 --calls 20
//! ```
//!
//! Each session repeats a 10-call cycle on the fixture form page: navigate, snapshot,
//! type, click, press, scroll, console, tabs, screenshot, snapshot.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tabgate_cdp::LaunchOptions;
use tabgate_config::Config;
use tabgate_server::{Limits, Prepared, ServeOptions};
use tabgate_supervisor::Browser;
use tabgate_testkit::Site;

const KEY: &str = "load-check-key";

struct Opts {
    sessions: usize,
    calls: usize,
}

fn opts() -> Opts {
    let mut o = Opts {
        sessions: 20,
        calls: 50,
    };
    let args: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i < args.len() {
        let next = args.get(i + 1).and_then(|v| v.parse().ok());
        match (args[i].as_str(), next) {
            ("--sessions", Some(n)) => {
                o.sessions = n;
                i += 1;
            }
            ("--calls", Some(n)) => {
                o.calls = n;
                i += 1;
            }
            _ => {} // `cargo bench` adds `--bench`
        }
        i += 1;
    }
    o
}

/// One finished call: tool, latency, and the error when it failed.
type Sample = (&'static str, Duration, Option<String>);

struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    async fn post(&self, path: &str, body: Value) -> Result<Value, String> {
        let r = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(KEY)
            .json(&body)
            .send()
            .await
            .map_err(|e| format!("{path}: {e}"))?;
        let st = r.status();
        let v: Value = r.json().await.map_err(|e| format!("{path}: {e}"))?;
        if st.is_success() {
            Ok(v)
        } else {
            Err(format!("{path}: {st} {}", v["error"]))
        }
    }

    async fn tool(&self, sid: &str, tool: &'static str, args: Value, out: &mut Vec<Sample>) -> Option<Value> {
        let t = Instant::now();
        let r = self.post(&format!("/v1/sessions/{sid}/tools/{tool}"), args).await;
        let dt = t.elapsed();
        match r {
            Ok(v) => {
                out.push((tool, dt, None));
                Some(v)
            }
            Err(e) => {
                out.push((tool, dt, Some(e)));
                None
            }
        }
    }
}

fn find_ref(snap: &str, role: &str, name: &str) -> Option<String> {
    let prefix = format!("- {role} \"{name}\"");
    snap.lines()
        .map(str::trim_start)
        .find(|l| l.starts_with(&prefix))
        .and_then(|l| l.split("[ref=").nth(1))
        .map(|r| r.trim_end_matches(']').to_string())
}

/// One session's work: `calls` tool calls in cycles of ten.
async fn session(c: Arc<Client>, form: String, calls: usize, n: usize) -> Vec<Sample> {
    let mut out = Vec::with_capacity(calls);
    let sid = match c.post("/v1/sessions", json!({"name": format!("load-{n}")})).await {
        Ok(v) => v["session_id"].as_str().unwrap_or_default().to_string(),
        Err(e) => {
            out.push(("create_session", Duration::ZERO, Some(e)));
            return out;
        }
    };
    let (mut name_ref, mut button_ref) = (String::new(), String::new());
    for i in 0..calls {
        match i % 10 {
            0 => {
                c.tool(&sid, "browser_navigate", json!({"url": form}), &mut out).await;
            }
            1 | 9 => {
                if let Some(v) = c.tool(&sid, "browser_snapshot", json!({}), &mut out).await {
                    let text = v["text"].as_str().unwrap_or_default();
                    name_ref = find_ref(text, "textbox", "Full name").unwrap_or_default();
                    button_ref = find_ref(text, "button", "Echo values").unwrap_or_default();
                }
            }
            2 => {
                let text = format!("session {n} call {i}");
                c.tool(&sid, "browser_type", json!({"ref": name_ref, "text": text}), &mut out)
                    .await;
            }
            3 => {
                c.tool(&sid, "browser_click", json!({"ref": button_ref}), &mut out)
                    .await;
            }
            4 => {
                c.tool(&sid, "browser_press", json!({"key": "End"}), &mut out).await;
            }
            5 => {
                c.tool(&sid, "browser_scroll", json!({"direction": "down"}), &mut out)
                    .await;
            }
            6 => {
                let e = json!({"expression": "document.getElementById('name').value"});
                c.tool(&sid, "browser_console", e, &mut out).await;
            }
            7 => {
                c.tool(&sid, "browser_tabs", json!({}), &mut out).await;
            }
            _ => {
                c.tool(&sid, "browser_screenshot", json!({}), &mut out).await;
            }
        }
    }
    let r = c
        .http
        .delete(format!("{}/v1/sessions/{sid}", c.base))
        .bearer_auth(KEY)
        .send()
        .await;
    if !r.as_ref().is_ok_and(|r| r.status().is_success()) {
        out.push(("delete_session", Duration::ZERO, Some(format!("{r:?}"))));
    }
    out
}

async fn page_targets(b: &Browser) -> usize {
    match b.conn().call(None, "Target.getTargets", json!({}), 5_000).await {
        Ok(r) => r["targetInfos"]
            .as_array()
            .map(|a| a.iter().filter(|t| t["type"] == "page").count())
            .unwrap_or(0),
        Err(_) => usize::MAX,
    }
}

fn browser_pids(profile: &str) -> usize {
    let needle = format!("--user-data-dir={profile}");
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_str().is_some_and(|s| s.parse::<u32>().is_ok()))
                .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
                .filter(|c| String::from_utf8_lossy(c).replace('\0', " ").contains(&needle))
                .count()
        })
        .unwrap_or(0)
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[i.clamp(1, sorted.len()) - 1].as_secs_f64() * 1000.0
}

fn main() {
    let o = opts();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let code = rt.block_on(run(o));
    std::process::exit(code);
}

async fn run(o: Opts) -> i32 {
    let profile = format!("/tmp/tgload-{}", std::process::id());
    let _ = std::fs::remove_dir_all(&profile);
    let state = tempfile::tempdir().expect("state dir");
    let site = Site::start().await;
    let browser = Browser::launch(&LaunchOptions {
        browser: Some(tabgate_testkit::chromium()),
        headless: true,
        user_data_dir: Some(profile.clone().into()),
        extra_args: vec!["--disable-gpu".into(), "--disable-dev-shm-usage".into()],
        startup_timeout_ms: 20_000,
    })
    .await
    .expect("launch chromium");
    let baseline_tabs = page_targets(&browser).await;
    let config = Config::default();
    let limits = Limits {
        max_open_sessions: o.sessions.max(1),
        ..Limits::from_config(&config)
    };
    let prepared = Prepared::bind(ServeOptions {
        bind: "127.0.0.1:0".parse().unwrap(),
        state_dir: state.path().to_path_buf(),
        config,
        env_api_key: Some(KEY.into()),
        limits: Some(limits),
    })
    .await
    .expect("bind");
    let server = prepared.start(browser.clone());
    let client = Arc::new(Client {
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(180))
            .build()
            .unwrap(),
        base: server.url(),
    });
    println!(
        "load check: {} sessions × {} tool calls in parallel against {} (one Chromium, {} cores)",
        o.sessions,
        o.calls,
        server.url(),
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    );
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..o.sessions)
        .map(|n| tokio::spawn(session(client.clone(), site.a("form.html"), o.calls, n)))
        .collect();
    let mut samples: Vec<Sample> = Vec::new();
    for t in tasks {
        samples.extend(t.await.expect("session task"));
    }
    let wall = t0.elapsed();
    // DELETE answers once the session's tabs are gone: count right away
    let tabs_after = page_targets(&browser).await;
    server.shutdown(Duration::from_secs(10)).await;
    browser.close().await;
    drop(browser);
    let mut procs = browser_pids(&profile);
    for _ in 0..30 {
        if procs == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        procs = browser_pids(&profile);
    }
    let _ = std::fs::remove_dir_all(&profile);

    let mut by_tool: BTreeMap<&str, Vec<Duration>> = BTreeMap::new();
    let mut errors = Vec::new();
    for (tool, dt, err) in &samples {
        match err {
            None => by_tool.entry(tool).or_default().push(*dt),
            Some(e) => errors.push(format!("{tool}: {e}")),
        }
    }
    println!();
    println!("| tool | calls | p50 ms | p99 ms | max ms |");
    println!("|---|---:|---:|---:|---:|");
    let mut all: Vec<Duration> = Vec::new();
    for (tool, v) in by_tool.iter_mut() {
        v.sort();
        all.extend(v.iter().copied());
        println!(
            "| {tool} | {} | {:.1} | {:.1} | {:.1} |",
            v.len(),
            pct(v, 50.0),
            pct(v, 99.0),
            v.last().map(|d| d.as_secs_f64() * 1000.0).unwrap_or(0.0)
        );
    }
    all.sort();
    println!(
        "| **all** | {} | {:.1} | {:.1} | {:.1} |",
        all.len(),
        pct(&all, 50.0),
        pct(&all, 99.0),
        all.last().map(|d| d.as_secs_f64() * 1000.0).unwrap_or(0.0)
    );
    println!();
    let calls = samples.iter().filter(|(t, ..)| t.starts_with("browser_")).count();
    println!(
        "wall {:.1} s, {:.1} calls/s; errors: {}; page tabs before {baseline_tabs}, after deleting every session {tabs_after}; browser processes left after shutdown: {procs}",
        wall.as_secs_f64(),
        calls as f64 / wall.as_secs_f64(),
        errors.len()
    );
    for e in errors.iter().take(20) {
        println!("  error: {e}");
    }
    let ok = errors.is_empty() && tabs_after == baseline_tabs && procs == 0 && calls == o.sessions * o.calls;
    println!("{}", if ok { "load check passed" } else { "load check FAILED" });
    i32::from(!ok)
}
