//! MiniWoB++ benchmark: runs the scripted agent of `driver.rs` (tabgate's tools only) on
//! MiniWoB++ tasks in headless Chromium and prints a task × seed table.
//!
//! ```sh
//! cargo run --release -p tabgate-tools --example miniwob                 # 22 tasks, seeds 1-10
//! cargo run --release -p tabgate-tools --example miniwob -- --tasks click-menu,enter-date --seeds 1-3
//! cargo run --release -p tabgate-tools --example miniwob -- --dir /path/to/miniwob/html --out table.md
//! ```
//!
//! Without `--dir` it uses `target/miniwob/miniwob/html`, installing the PyPI package there
//! first (`pip install --no-deps --target target/miniwob miniwob==1.1.0`) when missing.
//! The site is served on a random loopback port. `--verbose` prints each episode.

mod driver;
mod server;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use tabgate_cdp::LaunchOptions;
use tabgate_supervisor::{Browser, SupervisorConfig};
use tabgate_tools::{Session, SessionConfig};

struct Args {
    dir: Option<PathBuf>,
    tasks: Vec<String>,
    seeds: Vec<u64>,
    out: Option<PathBuf>,
    verbose: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        dir: None,
        tasks: driver::TASKS.iter().map(|t| t.to_string()).collect(),
        seeds: (1..=10).collect(),
        out: None,
        verbose: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{k} needs a value"));
        match k.as_str() {
            "--dir" => a.dir = Some(PathBuf::from(val()?)),
            "--tasks" => a.tasks = val()?.split(',').map(str::to_string).collect(),
            "--seeds" => {
                let v = val()?;
                a.seeds = match v.split_once('-') {
                    Some((x, y)) => {
                        let (x, y): (u64, u64) = (
                            x.parse().map_err(|_| "bad --seeds")?,
                            y.parse().map_err(|_| "bad --seeds")?,
                        );
                        (x..=y).collect()
                    }
                    None => v
                        .split(',')
                        .map(|s| s.parse().map_err(|_| "bad --seeds".to_string()))
                        .collect::<Result<_, _>>()?,
                }
            }
            "--out" => a.out = Some(PathBuf::from(val()?)),
            "--verbose" | "-v" => a.verbose = true,
            "--help" | "-h" => {
                return Err(
                    "usage: miniwob [--dir HTML_DIR] [--tasks a,b] [--seeds 1-10] [--out FILE.md] [--verbose]".into(),
                )
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

/// `target/miniwob/miniwob/html`, installed with pip when missing.
fn default_dir() -> Result<PathBuf, String> {
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/miniwob");
    let html = target.join("miniwob/html");
    if !html.join("core/core.js").exists() {
        eprintln!("installing miniwob==1.1.0 into {}", target.display());
        let st = std::process::Command::new("pip")
            .args(["install", "--quiet", "--no-deps", "--target"])
            .arg(&target)
            .arg("miniwob==1.1.0")
            .status()
            .map_err(|e| format!("cannot run pip: {e}; pass --dir"))?;
        if !st.success() {
            return Err("pip install miniwob==1.1.0 failed; pass --dir".into());
        }
    }
    Ok(html)
}

#[tokio::main]
async fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let dir = match args.dir.clone().map(Ok).unwrap_or_else(default_dir) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let base = server::serve(dir).await.expect("serve the MiniWoB++ pages");
    let opts = LaunchOptions {
        browser: None,
        headless: true,
        user_data_dir: None,
        extra_args: vec![],
        startup_timeout_ms: 20_000,
    };
    let browser: Arc<Browser> = Browser::launch(&opts).await.expect("launch Chromium");
    let session = Session::open(
        browser.clone(),
        SessionConfig {
            supervisor: SupervisorConfig::default(),
            adopt_target: None,
        },
    )
    .await
    .expect("open a session");

    let t0 = Instant::now();
    let mut rows = vec![];
    for task in &args.tasks {
        let mut marks = vec![];
        let mut steps = 0;
        for &seed in &args.seeds {
            let o = driver::episode(&session, &base, task, seed).await;
            steps += o.steps;
            if args.verbose || !o.ok {
                eprintln!(
                    "{task} seed {seed}: {} (reward {:.2}, {} calls) {:?}{}",
                    if o.ok { "ok" } else { "FAIL" },
                    o.reward,
                    o.steps,
                    o.utterance,
                    o.error.map(|e| format!(" — {e}")).unwrap_or_default()
                );
            }
            marks.push(o.ok);
        }
        let n = marks.iter().filter(|m| **m).count();
        eprintln!("{task}: {n}/{}", marks.len());
        rows.push((task.clone(), marks, steps));
    }
    let secs = t0.elapsed().as_secs_f64();
    session.close().await;
    browser.close().await;

    let mut table = String::new();
    table.push_str("| task |");
    for s in &args.seeds {
        table.push_str(&format!(" {s} |"));
    }
    table.push_str(" success | tool calls / episode |\n|---|");
    for _ in &args.seeds {
        table.push_str(":-:|");
    }
    table.push_str("--:|--:|\n");
    let (mut total, mut perfect) = (0, 0);
    for (task, marks, steps) in &rows {
        let n = marks.iter().filter(|m| **m).count();
        total += n;
        if n == marks.len() {
            perfect += 1;
        }
        table.push_str(&format!("| {task} |"));
        for m in marks {
            table.push_str(if *m { " ✓ |" } else { " ✗ |" });
        }
        table.push_str(&format!(
            " {n}/{} | {:.1} |\n",
            marks.len(),
            *steps as f64 / marks.len().max(1) as f64
        ));
    }
    let episodes = rows.len() * args.seeds.len();
    table.push_str(&format!(
        "\n{perfect} of {} tasks at {}/{}; {total} of {episodes} episodes succeeded; {secs:.0} s.\n",
        rows.len(),
        args.seeds.len(),
        args.seeds.len()
    ));
    println!("{table}");
    if let Some(p) = args.out {
        std::fs::write(&p, &table).expect("write --out");
    }
}
