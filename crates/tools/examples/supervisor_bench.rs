//! Supervisor benches for issue 9 (run by `bench/perf.sh`, or on their own):
//!
//! ```sh
//! cargo run --release -p tabgate-tools --example supervisor_bench -- [--out FILE] [--dialogs N]
//!     [--flood N] [--flood-levels log,error,burn] [--only dialog,flood,budget]
//! ```
//!
//! One real headless Chromium (`$TABGATE_BROWSER` or `/usr/bin/chromium`), pages served on
//! loopback by `tabgate_testkit::Site`, `tabgate_tools::Session`s as the gateway opens them:
//!
//! 1. **dialog detection**: `bench-dialog.html` opens `alert()` over and over; each alert's
//!    message carries the page clock (`performance.timeOrigin + performance.now()`) taken just
//!    before the call. Per dialog: page clock → the supervisor's `opened_at` (event handled),
//!    and → the moment a `wait_for` on `pending_dialogs` sees it (what a tool call would see).
//!    Both clocks are the machine's wall clock.
//! 2. **console flood**: `browser_snapshot` of a small page (`form.html`, site A) in one
//!    session, quiet, then while another session's page (`console-flood.html`, site B, its own
//!    renderer) logs N console messages, then quiet again. The flood window runs from the
//!    page's `flood: started` until the supervisor has handled the page's final
//!    `console.error` marker (every message before it has crossed the CDP connection).
//!    Levels `log` and `error` (100,000 messages each), then the control `burn`: the flood page
//!    kept as busy for as long as the `log` flood took, with no console output, to tell the
//!    supervisor's share from plain CPU contention on a small machine.
//! 3. **case-28 budget**: `browser_snapshot{}` of `huge.html` when the testkit has it, else
//!    `bench-rows.html` (20,000 rows × 5 cells, an "Edit row N" button each): size, time and
//!    whether a truncation marker is present. The text is written next to `--out` for token
//!    counting (`bench/perf.sh` counts o200k tokens; the JSON carries chars/3.6 as a fallback).
//!
//! Prints a summary and writes everything as JSON to `--out` (default
//! `/tmp/tabgate-bench/supervisor.json`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tabgate_cdp::LaunchOptions;
use tabgate_supervisor::{now_epoch, Browser, SupervisorConfig};
use tabgate_testkit::Site;
use tabgate_tools::{Session, SessionConfig};

struct Opts {
    out: PathBuf,
    dialogs: usize,
    flood: usize,
    flood_levels: Vec<String>,
    only: Vec<String>,
}

fn opts() -> Opts {
    let mut o = Opts {
        out: PathBuf::from("/tmp/tabgate-bench/supervisor.json"),
        dialogs: 50,
        flood: 100_000,
        flood_levels: vec!["log".into(), "error".into(), "burn".into()],
        only: vec!["dialog".into(), "flood".into(), "budget".into()],
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        let list = |v: String| {
            v.split(',')
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .map(String::from)
                .collect()
        };
        match a.as_str() {
            "--out" => o.out = PathBuf::from(val()),
            "--dialogs" => o.dialogs = val().parse().expect("--dialogs N"),
            "--flood" => o.flood = val().parse().expect("--flood N"),
            "--flood-levels" => o.flood_levels = list(val()),
            "--only" => o.only = list(val()),
            "-h" | "--help" => {
                println!("supervisor_bench [--out FILE] [--dialogs N] [--flood N] [--flood-levels log,error,burn] [--only dialog,flood,budget]");
                std::process::exit(0);
            }
            // `cargo bench`/libtest-style flags are ignored
            x if x.starts_with("--") => {}
            x => panic!("unknown argument {x:?}"),
        }
    }
    o
}

fn main() {
    let o = opts();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let report = rt.block_on(run(&o));
    if let Some(dir) = o.out.parent() {
        std::fs::create_dir_all(dir).expect("create output directory");
    }
    std::fs::write(&o.out, serde_json::to_string_pretty(&report).unwrap()).expect("write --out");
    println!("wrote {}", o.out.display());
}

fn loadavg() -> Value {
    let s = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let v: Vec<f64> = s.split_whitespace().take(3).filter_map(|x| x.parse().ok()).collect();
    json!(v)
}

async fn run(o: &Opts) -> Value {
    let launch = LaunchOptions {
        browser: Some(tabgate_testkit::chromium()),
        headless: true,
        user_data_dir: None,
        extra_args: vec![],
        startup_timeout_ms: 20_000,
    };
    let browser = tokio::spawn(async move { Browser::launch(&launch).await.expect("launch chromium") })
        .await
        .expect("launch task");
    let site = Site::start().await;
    let mut report = json!({
        "browser": browser.describe(),
        "loadavg_before": loadavg(),
        "started_epoch": now_epoch(),
    });
    if o.only.iter().any(|x| x == "dialog") {
        report["dialog"] = dialog_bench(&browser, &site, o.dialogs).await;
    }
    if o.only.iter().any(|x| x == "flood") {
        let mut floods = serde_json::Map::new();
        // `burn` (the control) keeps the page as busy as the `log` flood was, without console output
        let mut busy_ms = 6_000.0;
        for level in &o.flood_levels {
            let r = flood_bench(&browser, &site, o.flood, level, busy_ms).await;
            if level == "log" {
                busy_ms = r["page_flood_ms"].as_f64().unwrap_or(busy_ms);
            }
            floods.insert(level.clone(), r);
        }
        report["flood"] = Value::Object(floods);
    }
    if o.only.iter().any(|x| x == "budget") {
        report["budget"] = budget_bench(&browser, &site, &o.out).await;
    }
    report["loadavg_after"] = loadavg();
    browser.close().await;
    report
}

async fn session(browser: &Arc<Browser>) -> Session {
    Session::open(
        browser.clone(),
        SessionConfig {
            supervisor: SupervisorConfig::default(),
            adopt_target: None,
        },
    )
    .await
    .expect("open session")
}

fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

fn pct(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    s[((s.len() - 1) as f64 * p).round() as usize]
}

fn stats(v: &[f64]) -> Value {
    let r = |x: f64| (x * 1000.0).round() / 1000.0;
    json!({
        "n": v.len(),
        "median": r(median(v)),
        "p90": r(pct(v, 0.9)),
        "min": r(pct(v, 0.0)),
        "max": r(pct(v, 1.0)),
    })
}

/// Page clock before `alert()` → `opened_at` and → seen in `pending_dialogs`, ms.
async fn dialog_bench(browser: &Arc<Browser>, site: &Site, samples: usize) -> Value {
    const WARMUP: usize = 3;
    let s = session(browser).await;
    let nav = s
        .call("browser_navigate", json!({"url": site.a("bench-dialog.html")}))
        .await;
    if let Some(e) = &nav.error {
        // an alert may already be open when navigate returns; anything else is fatal
        assert_eq!(e.code, "blocked_by_dialog", "navigate bench-dialog.html: {}", nav.text);
    }
    let sup = s.supervisor();
    let (mut to_opened, mut to_seen) = (Vec::new(), Vec::new());
    let mut last_id = String::new();
    let mut missed = 0;
    while to_seen.len() < samples + WARMUP {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        let got = sup
            .wait_for(deadline, |st| {
                st.pending
                    .iter()
                    .find(|d| d.id != last_id)
                    .map(|d| (now_epoch(), d.id.clone(), d.message.clone(), d.opened_at))
            })
            .await;
        let Some((seen, id, message, opened_at)) = got else {
            missed += 1;
            assert!(missed < 3, "no dialog within 5 s, {} samples so far", to_seen.len());
            continue;
        };
        let t_page: f64 = message
            .strip_prefix("t=")
            .and_then(|m| m.split_whitespace().next())
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("unexpected dialog message {message:?}"));
        to_opened.push(opened_at * 1000.0 - t_page);
        to_seen.push(seen * 1000.0 - t_page);
        sup.respond_dialog("dismiss", None, Some(&id)).await.expect("dismiss");
        last_id = id;
    }
    s.close().await;
    let (to_opened, to_seen) = (&to_opened[WARMUP..], &to_seen[WARMUP..]);
    let out = json!({
        "samples": to_seen.len(),
        "warmup_dropped": WARMUP,
        "alert_to_pending_ms": stats(to_seen),
        "alert_to_opened_at_ms": stats(to_opened),
        "all_alert_to_pending_ms": to_seen.iter().map(|x| (x * 1000.0).round() / 1000.0).collect::<Vec<_>>(),
    });
    println!(
        "dialog detection: alert() -> pending_dialogs median {:.2} ms (p90 {:.2}, max {:.2}; -> opened_at median {:.2}) over {} dialogs",
        median(to_seen),
        pct(to_seen, 0.9),
        pct(to_seen, 1.0),
        median(to_opened),
        to_seen.len()
    );
    out
}

async fn snapshot_s(s: &Session) -> f64 {
    let t = Instant::now();
    let o = s.call("browser_snapshot", json!({})).await;
    let el = t.elapsed().as_secs_f64();
    assert!(o.error.is_none(), "snapshot failed: {}", o.text);
    el
}

/// `browser_snapshot` of a small page, quiet vs while another session's page floods the console.
async fn flood_bench(browser: &Arc<Browser>, site: &Site, n: usize, level: &str, busy_ms: f64) -> Value {
    const QUIET: usize = 50;
    let small = session(browser).await;
    let nav = small
        .call("browser_navigate", json!({"url": site.a("form.html")}))
        .await;
    assert!(nav.error.is_none(), "navigate form.html: {}", nav.text);
    for _ in 0..10 {
        snapshot_s(&small).await;
    }
    let mut quiet_before = Vec::new();
    for _ in 0..QUIET {
        quiet_before.push(snapshot_s(&small).await);
    }

    site.clear_logs();
    let flood = session(browser).await;
    let url = site.b(&format!(
        "console-flood.html?n={n}&chunk=1000&level={level}&delay=300&ms={}",
        busy_ms.round()
    ));
    let nav = flood.call("browser_navigate", json!({"url": url})).await;
    assert!(nav.error.is_none(), "navigate console-flood.html: {}", nav.text);
    assert!(site.wait_log("flood", "started", 10_000).await, "flood did not start");
    let started = Instant::now();
    let fsup = flood.supervisor();
    let drained = || fsup.state().console.iter().any(|c| c.text.contains("flood end marker"));
    let mut during = Vec::new();
    let mut page_done: Option<f64> = None;
    let deadline = started + Duration::from_secs(300);
    while !drained() {
        assert!(Instant::now() < deadline, "flood not drained after 300 s");
        during.push(snapshot_s(&small).await);
        if page_done.is_none() && site.last("flood").is_some_and(|v| v.starts_with("done")) {
            page_done = Some(started.elapsed().as_secs_f64());
        }
    }
    let drained_s = started.elapsed().as_secs_f64();
    // the page's own `flood: done N MS` report may arrive after the marker was handled
    let until = Instant::now() + Duration::from_secs(10);
    while !site.last("flood").is_some_and(|v| v.starts_with("done")) && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let page_ms: Option<f64> = site
        .last("flood")
        .and_then(|v| v.split_whitespace().nth(2).and_then(|x| x.parse().ok()));
    flood.close().await;

    let mut quiet_after = Vec::new();
    for _ in 0..QUIET {
        quiet_after.push(snapshot_s(&small).await);
    }
    small.close().await;

    let ms = |v: &[f64]| v.iter().map(|x| x * 1000.0).collect::<Vec<_>>();
    let (qb, qa, du) = (ms(&quiet_before), ms(&quiet_after), ms(&during));
    let quiet_all: Vec<f64> = qb.iter().chain(qa.iter()).copied().collect();
    let ratio = median(&du) / median(&quiet_all);
    println!(
        "console flood ({level}{}): snapshot median quiet {:.1} ms (before {:.1}, after {:.1}), during flood {:.1} ms over {} snapshots (max {:.1}) -> {:.2}x; page logged in {} ms, supervisor drained after {:.2} s",
        if level == "burn" { format!(", {} ms", busy_ms.round()) } else { format!(" x {n}") },
        median(&quiet_all),
        median(&qb),
        median(&qa),
        median(&du),
        du.len(),
        pct(&du, 1.0),
        ratio,
        page_ms.map(|x| x.to_string()).unwrap_or("?".into()),
        drained_s
    );
    json!({
        "level": level,
        "messages": if level == "burn" { 0 } else { n },
        "busy_ms": if level == "burn" { Some(busy_ms.round()) } else { None },
        "small_page": "form.html",
        "quiet_ms": stats(&quiet_all),
        "quiet_before_ms": stats(&qb),
        "quiet_after_ms": stats(&qa),
        "during_ms": stats(&du),
        "ratio": (ratio * 1000.0).round() / 1000.0,
        "page_flood_ms": page_ms,
        "page_done_seen_after_s": page_done,
        "supervisor_drained_after_s": (drained_s * 1000.0).round() / 1000.0,
    })
}

/// Case 28: one default `browser_snapshot` of a 20,000-row page.
async fn budget_bench(browser: &Arc<Browser>, site: &Site, out: &std::path::Path) -> Value {
    let page = if Site::page_names().contains(&"huge.html") {
        "huge.html"
    } else {
        "bench-rows.html"
    };
    let s = session(browser).await;
    let nav = s
        .call("browser_navigate", json!({"url": site.a(page), "timeout_ms": 60_000}))
        .await;
    assert!(nav.error.is_none(), "navigate {page}: {}", nav.text);
    let rows = s
        .call(
            "browser_console",
            json!({"expression": "document.querySelectorAll('tbody tr').length || document.querySelectorAll('tr').length"}),
        )
        .await;
    let rows = rows.structured.as_ref().and_then(|v| v["result"].as_i64());
    let mut times = Vec::new();
    let mut text = String::new();
    let mut error = None;
    for _ in 0..3 {
        let t = Instant::now();
        let o = s.call("browser_snapshot", json!({})).await;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        if let Some(e) = &o.error {
            error = Some(format!("[{}] {}", e.code, e.message));
        }
        text = o.text;
    }
    s.close().await;
    let file = out.with_file_name("budget-snapshot.txt");
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).expect("create output directory");
    }
    std::fs::write(&file, &text).expect("write snapshot text");
    let chars = text.chars().count();
    let refs = text.matches("[ref=").count();
    let marker_re = [
        "truncat",
        "omitted",
        "left out",
        "not shown",
        "more nodes",
        "nodes hidden",
    ];
    let lower = text.to_lowercase();
    let marker_line = lower
        .lines()
        .zip(text.lines())
        .find(|(l, _)| marker_re.iter().any(|m| l.contains(m)))
        .map(|(_, orig)| orig.trim().chars().take(300).collect::<String>());
    println!(
        "case 28 ({page}, {} rows): snapshot {} chars (~{} tokens at chars/3.6), {} refs, median {:.0} ms; truncation marker: {}",
        rows.map(|r| r.to_string()).unwrap_or("?".into()),
        chars,
        (chars as f64 / 3.6).round(),
        refs,
        median(&times),
        marker_line.as_deref().unwrap_or("none")
    );
    json!({
        "page": page,
        "table_rows": rows,
        "chars": chars,
        "lines": text.lines().count(),
        "refs": refs,
        "tokens_estimate_chars_3_6": (chars as f64 / 3.6).round(),
        "snapshot_ms": stats(&times),
        "error": error,
        "truncation_marker": marker_line,
        "text_file": file.display().to_string(),
    })
}
