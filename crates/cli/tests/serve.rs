//! End-to-end: the built `tabgate serve` process with a real Chromium — the startup banner
//! and generated key, a session that survives a restart of the process, SIGTERM that leaves
//! no browser behind, and the startup errors (non-loopback bind without a key, a corrupt
//! database).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_tabgate");
const CHROMIUM: &str = "/usr/bin/chromium";

fn command(state: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.arg("serve")
        .arg("--state-dir")
        .arg(state)
        .env_remove("TABGATE_API_KEY")
        .env_remove("TABGATE_BIND")
        .env_remove("TABGATE_STATE_DIR")
        .env_remove("TABGATE_CDP_URL")
        .env("XDG_CONFIG_HOME", state.join("no-config"));
    c
}

struct Serve {
    child: Child,
    url: String,
    profile: String,
    banner: Vec<String>,
}

impl Serve {
    fn start(state: &Path, tag: &str) -> Serve {
        let profile = format!("/tmp/tgsv-{tag}-{}", std::process::id());
        let _ = std::fs::remove_dir_all(&profile);
        let mut child = command(state)
            .args([
                "--bind",
                "127.0.0.1:0",
                "--headless",
                "--browser",
                CHROMIUM,
                "--user-data-dir",
                &profile,
            ])
            .arg("--browser-arg=--disable-gpu")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn tabgate serve");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut banner = Vec::new();
        while banner.len() < 5 {
            match lines.next() {
                Some(Ok(l)) => banner.push(l),
                _ => panic!("tabgate serve ended before its banner: {banner:?}"),
            }
        }
        let url = banner[0]
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in {banner:?}"))
            .to_string();
        Serve {
            child,
            url,
            profile,
            banner,
        }
    }

    fn stop(&mut self) -> std::process::ExitStatus {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let t0 = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(t0.elapsed() < Duration::from_secs(20), "tabgate serve ignored SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for pid in browser_pids(&self.profile) {
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

fn browser_pids(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmd)
            .replace('\0', " ")
            .contains(&format!("--user-data-dir={needle}"))
        {
            out.push(pid);
        }
    }
    out
}

fn survivors(profile: &str) -> Vec<u32> {
    let t0 = Instant::now();
    loop {
        let p = browser_pids(profile);
        if p.is_empty() || t0.elapsed() > Duration::from_secs(3) {
            return p;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn req(method: reqwest::Method, url: String, key: &str, body: Option<Value>) -> (u16, Value) {
    let mut r = reqwest::Client::new().request(method, url).bearer_auth(key);
    if let Some(b) = body {
        r = r.json(&b);
    }
    let resp = r.send().await.expect("request");
    let st = resp.status().as_u16();
    (st, resp.json().await.expect("JSON body"))
}

fn state_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tgsv-state-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn serve_generates_a_key_keeps_sessions_across_restarts_and_stops_on_sigterm() {
    let state = state_dir("life");
    let mut s = Serve::start(&state, "life");
    let key_file = state.join("api_key");
    assert!(
        s.banner
            .iter()
            .any(|l| l.contains(&key_file.display().to_string()) && l.contains("generated")),
        "{:?}",
        s.banner
    );
    assert!(
        s.banner.iter().any(|l| l.contains(&format!("{}/mcp", s.url))),
        "{:?}",
        s.banner
    );
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let key = std::fs::read_to_string(&key_file).unwrap().trim().to_string();
    let rt = rt();
    let sid = rt.block_on(async {
        let h = reqwest::get(format!("{}/v1/health", s.url)).await.unwrap();
        assert_eq!(h.status().as_u16(), 200);
        let (st, v) = req(
            reqwest::Method::POST,
            format!("{}/v1/sessions", s.url),
            &key,
            Some(json!({"name": "kept"})),
        )
        .await;
        assert_eq!(st, 201, "{v}");
        let sid = v["session_id"].as_str().unwrap().to_string();
        let url = format!("{}/v1/sessions/{sid}/tools/browser_navigate", s.url);
        let (st, v) = req(
            reqwest::Method::POST,
            url,
            &key,
            Some(json!({"url": "data:text/html,<title>kept</title><h1>kept</h1>"})),
        )
        .await;
        assert_eq!(st, 200, "{v}");
        sid
    });
    let status = s.stop();
    assert!(status.success(), "exit status {status:?}");
    assert!(survivors(&s.profile).is_empty(), "the browser outlived tabgate serve");

    // a second process on the same state dir: same key, the session is there and usable
    let mut s2 = Serve::start(&state, "life2");
    assert!(s2
        .banner
        .iter()
        .any(|l| l.contains(&key_file.display().to_string()) && !l.contains("generated")));
    rt.block_on(async {
        let (st, v) = req(
            reqwest::Method::GET,
            format!("{}/v1/sessions/{sid}", s2.url),
            &key,
            None,
        )
        .await;
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["name"], "kept");
        assert_eq!(v["status"], "idle");
        assert!(v["last_url"].as_str().unwrap().contains("kept"), "{v}");
        let url = format!("{}/v1/sessions/{sid}/tools/browser_snapshot", s2.url);
        let (st, v) = req(reqwest::Method::POST, url, &key, Some(json!({}))).await;
        assert_eq!(st, 200, "{v}");
    });
    assert!(s2.stop().success());
    assert!(survivors(&s2.profile).is_empty());
    let _ = std::fs::remove_dir_all(&state);
}

#[test]
fn non_loopback_bind_without_a_configured_key_is_refused() {
    let state = state_dir("bind");
    let out = command(&state)
        .args(["--bind", "0.0.0.0:0", "--browser", "/nonexistent/chromium"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("without a configured API key") && err.contains("TABGATE_API_KEY"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&state);
}

#[test]
fn corrupt_database_is_a_startup_error_and_is_left_alone() {
    let state = state_dir("corrupt");
    std::fs::create_dir_all(&state).unwrap();
    let db = state.join("tabgate.db");
    let junk = vec![b'#'; 4096];
    std::fs::write(&db, &junk).unwrap();
    let out = command(&state)
        .args(["--bind", "127.0.0.1:0", "--browser", "/nonexistent/chromium"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("tabgate.db") && err.contains("not a usable SQLite database"),
        "{err}"
    );
    assert_eq!(std::fs::read(&db).unwrap(), junk, "the database was modified");
    let _ = std::fs::remove_dir_all(&state);
}
