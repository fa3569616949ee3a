//! End-to-end: the built `tabgate` binary speaking MCP over stdio with a real Chromium,
//! and never leaving that Chromium behind.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_tabgate");
const CHROMIUM: &str = "/usr/bin/chromium";

struct Mcp {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    profile: String,
}

impl Mcp {
    /// Starts `tabgate mcp` with its own short profile directory under /tmp.
    fn start(tag: &str) -> Mcp {
        let profile = format!("/tmp/tgt-{tag}-{}", std::process::id());
        let _ = std::fs::remove_dir_all(&profile);
        let mut child = Command::new(BIN)
            .args(["mcp", "--headless", "--browser", CHROMIUM, "--user-data-dir", &profile])
            .arg("--browser-arg=--disable-gpu")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn tabgate");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Mcp {
            child,
            stdin,
            lines: rx,
            profile,
        }
    }

    fn send(&mut self, msg: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
    }

    /// The reply with `id` (notifications and other replies are skipped); every line
    /// on stdout must be JSON-RPC.
    fn reply(&mut self, id: u64) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no reply {id}: {e}"));
            let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout not JSON ({e}): {line}"));
            assert_eq!(v["jsonrpc"], "2.0", "{line}");
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.reply(id)
    }

    fn handshake(&mut self) {
        let init = self.request(
            1,
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "tabgate-test", "version": "0"}
            }),
        );
        let r = &init["result"];
        assert_eq!(r["protocolVersion"], "2025-06-18", "{init}");
        assert_eq!(r["serverInfo"]["name"], "tabgate", "{init}");
        assert_eq!(r["serverInfo"]["version"], env!("CARGO_PKG_VERSION"), "{init}");
        assert!(r["capabilities"]["tools"].is_object(), "{init}");
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    /// Waits up to `limit` for tabgate to exit.
    fn wait_exit(&mut self, limit: Duration) -> std::process::ExitStatus {
        let t0 = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            if t0.elapsed() > limit {
                let _ = self.child.kill();
                panic!("tabgate did not exit within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Pids of live processes whose command line mentions this test's profile.
    fn browser_pids(&self) -> Vec<u32> {
        browser_pids(&self.profile)
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for pid in self.browser_pids() {
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

fn browser_pids(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let me = std::process::id();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(&format!("--user-data-dir={needle}")) {
            out.push(pid);
        }
    }
    out
}

/// Live browser pids for `profile`, polled briefly (process teardown is asynchronous).
fn survivors(profile: &str) -> Vec<u32> {
    let t0 = Instant::now();
    loop {
        let p = browser_pids(profile);
        if p.is_empty() || t0.elapsed() > Duration::from_secs(2) {
            return p;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn version_flag() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("tabgate {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn mcp_stdio_handshake_then_stdin_close_ends_browser() {
    let mut m = Mcp::start("eof");
    m.handshake();
    // the browser is really running under this profile
    assert!(
        !m.browser_pids().is_empty(),
        "no chromium with --user-data-dir={}",
        m.profile
    );

    let list = m.request(2, "tools/list", json!({}));
    let tools = list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools/list: {list}"));
    for t in tools {
        assert!(t["name"].is_string(), "{t}");
        assert!(t["inputSchema"].is_object(), "{t}");
    }

    // an unknown tool is a tool result with isError, naming the known tools
    let call = m.request(3, "tools/call", json!({"name": "no_such_tool", "arguments": {}}));
    assert_eq!(call["result"]["isError"], true, "{call}");
    let text = call["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("no_such_tool") && text.contains("known tools"), "{text}");

    drop(m.stdin.take()); // the client goes away
    let st = m.wait_exit(Duration::from_secs(10));
    assert!(st.success(), "exit status {st}");
    let left = survivors(&m.profile);
    assert!(left.is_empty(), "chromium outlived tabgate: {left:?}");
}

#[test]
fn sigterm_ends_browser() {
    let mut m = Mcp::start("term");
    m.handshake();
    let list = m.request(2, "tools/list", json!({}));
    assert!(list["result"]["tools"].is_array(), "{list}");
    assert!(!m.browser_pids().is_empty());
    unsafe { libc::kill(m.child.id() as i32, libc::SIGTERM) };
    let st = m.wait_exit(Duration::from_secs(10));
    assert!(
        st.code().is_some(),
        "tabgate died of a signal instead of shutting down: {st}"
    );
    let left = survivors(&m.profile);
    assert!(left.is_empty(), "chromium outlived tabgate: {left:?}");
}

#[test]
fn launch_failure_is_one_line_and_exit_1() {
    let out = Command::new(BIN)
        .args(["mcp", "--browser", "/nonexistent/chromium"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "stdout must stay clean");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("tabgate: "), "{err}");
    assert!(err.contains("/nonexistent/chromium"), "{err}");
}
