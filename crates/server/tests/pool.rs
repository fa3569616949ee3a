//! Scale-out: sessions placed on a pool of browser endpoints (DESIGN.md section 7).
//!
//! Each test starts its own plain Chromium processes with `--remote-debugging-port=0`
//! (`tabgate_cdp::launch` reads the DevTools URL from stderr) and runs a gateway whose
//! `browser.endpoints` lists them as `kind: cdp` — the gateway launches nothing itself.
//! What a page did is read from the page server's log or from the browsers' own target
//! lists, never from a tool's claim.

mod common;

use std::time::{Duration, Instant};

use common::*;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tabgate_cdp::{BrowserProcess, Connection, LaunchOptions};
use tabgate_config::Config;
use tabgate_testkit::Site;

/// A Chromium started by the test, reachable over CDP.
struct Remote {
    proc: Option<BrowserProcess>,
    /// `ws://127.0.0.1:PORT/devtools/browser/…`
    ws: String,
    /// `http://127.0.0.1:PORT`
    http: String,
}

impl Remote {
    async fn start() -> Remote {
        let opts = LaunchOptions {
            browser: Some(tabgate_testkit::chromium()),
            headless: true,
            user_data_dir: None,
            extra_args: vec!["--disable-gpu".into()],
            startup_timeout_ms: 20_000,
        };
        let proc = tabgate_cdp::launch(&opts).await.expect("launch chromium");
        let ws = proc.ws_url().to_string();
        let port = ws
            .trim_start_matches("ws://127.0.0.1:")
            .split('/')
            .next()
            .unwrap()
            .to_string();
        Remote {
            proc: Some(proc),
            http: format!("http://127.0.0.1:{port}"),
            ws,
        }
    }

    /// SIGKILL to the browser's process group.
    fn kill(&mut self) {
        drop(self.proc.take());
    }

    /// The page targets this browser has now.
    async fn pages(&self) -> Vec<String> {
        let c = Connection::connect(&self.ws, 5_000).await.unwrap();
        let r = c.call(None, "Target.getTargets", json!({}), 5_000).await.unwrap();
        r["targetInfos"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["type"] == "page")
            .map(|t| t["targetId"].as_str().unwrap().to_string())
            .collect()
    }
}

fn pool_config(timeout_s: f64, endpoints: &[(&str, &str, usize)]) -> Config {
    let mut y = format!("browser:\n  placement_timeout_s: {timeout_s}\n  endpoints:\n");
    for (name, url, cap) in endpoints {
        y.push_str(&format!(
            "    - {{name: {name}, kind: cdp, url: '{url}', capacity: {cap}}}\n"
        ));
    }
    Config::parse(&y).unwrap()
}

/// Creates a session and returns (status, body, Retry-After, how long it took).
async fn create(g: &Gw, body: Value) -> (StatusCode, Value, Option<String>, Duration) {
    let t = Instant::now();
    let r = g
        .http
        .post(format!("{}/v1/sessions", g.url))
        .bearer_auth(KEY)
        .json(&body)
        .send()
        .await
        .unwrap();
    let st = r.status();
    let retry = r.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
    (st, r.json().await.unwrap(), retry, t.elapsed())
}

async fn current_tab(g: &Gw, sid: &str) -> String {
    let (_, v) = g.get(&format!("/v1/sessions/{sid}")).await;
    v["current_tab"]["tab_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no current tab: {v}"))
        .to_string()
}

async fn endpoint(g: &Gw, name: &str) -> Value {
    let (st, v) = g.get("/v1/endpoints").await;
    assert_eq!(st, StatusCode::OK, "{v}");
    v["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no endpoint {name}: {v}"))
}

fn snapshot_text(v: &Value) -> String {
    v["snapshot"]
        .as_str()
        .or(v["text"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn sessions_spread_over_two_browsers_and_a_full_pool_is_pool_exhausted() {
    run(async {
        let (ra, rb) = tokio::join!(Remote::start(), Remote::start());
        let site = Site::start().await;
        let g = Gw::with_pool(pool_config(1.5, &[("a", &ra.http, 2), ("b", &rb.ws, 1)]), None).await;

        // most free capacity first, ties in config order: a (2 free), a (1 vs 1), b
        let mut ids = vec![];
        for want in ["a", "a", "b"] {
            let (st, v, _, _) = create(&g, json!({})).await;
            assert_eq!(st, StatusCode::CREATED, "{v}");
            assert_eq!(v["placement"]["endpoint"], want, "{v}");
            assert_eq!(v["placement"]["pinned"], false, "{v}");
            ids.push(v["session_id"].as_str().unwrap().to_string());
        }
        // each session's tab is in its endpoint's browser, and only there
        g.ok(&ids[0], "browser_navigate", json!({"url": site.a("hello.html")}))
            .await;
        g.ok(&ids[2], "browser_navigate", json!({"url": site.a("other.html")}))
            .await;
        assert!(site.wait_log("other", "loaded", 5_000).await);
        let (ta, tb) = (current_tab(&g, &ids[0]).await, current_tab(&g, &ids[2]).await);
        let (pa, pb) = (ra.pages().await, rb.pages().await);
        assert!(pa.contains(&ta) && !pb.contains(&ta), "{ta} {pa:?} {pb:?}");
        assert!(pb.contains(&tb) && !pa.contains(&tb), "{tb} {pa:?} {pb:?}");

        let a = endpoint(&g, "a").await;
        assert_eq!((a["placed"].as_u64(), a["free"].as_u64()), (Some(2), Some(0)), "{a}");
        assert_eq!(a["health"], "up", "{a}");
        assert_eq!(a["open"], 1, "{a}");
        assert_eq!(a["kind"], "cdp");
        let b = endpoint(&g, "b").await;
        assert_eq!(b["sessions"], json!([ids[2]]), "{b}");
        let (_, s) = g.get(&format!("/v1/sessions/{}", ids[2])).await;
        assert_eq!(s["placement"]["endpoint"], "b", "{s}");
        assert_eq!(s["placement"]["health"], "up", "{s}");

        // full: creation waits for the placement timeout, then 503 with Retry-After
        let (st, v, retry, took) = create(&g, json!({})).await;
        assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE, "{v}");
        assert_eq!(v["error"]["code"], "pool_exhausted", "{v}");
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains("\"a\" holds 2/2") && msg.contains("\"b\" holds 1/1"),
            "{msg}"
        );
        assert!(retry.is_some(), "no Retry-After");
        assert!(took >= Duration::from_millis(1400), "{took:?}");
        // pinned to a full endpoint: the same, naming it
        let (st, v, _, _) = create(&g, json!({"endpoint": "b"})).await;
        assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE, "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("endpoint \"b\" has no room"),
            "{v}"
        );
        // an endpoint that does not exist
        let (st, v, _, _) = create(&g, json!({"endpoint": "zz"})).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{v}");
        assert_eq!(v["error"]["code"], "invalid_settings", "{v}");

        // a place freed while a creation waits is taken by it
        let waiting = {
            let (http, url) = (g.http.clone(), format!("{}/v1/sessions", g.url));
            tokio::spawn(async move {
                let r = http.post(url).bearer_auth(KEY).json(&json!({})).send().await.unwrap();
                (r.status(), r.json::<Value>().await.unwrap())
            })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (st, _) = g
            .req(reqwest::Method::DELETE, &format!("/v1/sessions/{}", ids[2]), None)
            .await;
        assert_eq!(st, StatusCode::OK);
        let (st, v) = waiting.await.unwrap();
        assert_eq!(st, StatusCode::CREATED, "{v}");
        assert_eq!(v["placement"]["endpoint"], "b", "{v}");
        assert!(
            !rb.pages().await.contains(&tb),
            "the deleted session's tab is still open"
        );

        let (st, h) = g.get("/v1/health").await;
        assert_eq!(st, StatusCode::OK, "{h}");
        assert_eq!(h["endpoints"], json!({"up": 2, "total": 2}), "{h}");
    })
}

#[test]
fn a_killed_endpoint_reads_browser_lost_and_navigate_moves_the_session() {
    run(async {
        let (mut ra, rb) = tokio::join!(Remote::start(), Remote::start());
        let site = Site::start().await;
        let g = Gw::with_pool(pool_config(2.0, &[("a", &ra.ws, 2), ("b", &rb.http, 2)]), None).await;
        let s = g.session(json!({})).await;
        let pinned = g.session(json!({"endpoint": "a"})).await;
        let (_, v) = g.get(&format!("/v1/sessions/{pinned}")).await;
        let mut placement = v["placement"].clone();
        assert!(
            ["up", "unknown"].contains(&placement["health"].as_str().unwrap()),
            "{v}"
        );
        placement["health"] = json!("-");
        assert_eq!(
            placement,
            json!({"endpoint": "a", "kind": "cdp", "url": ra.ws, "health": "-", "pinned": true})
        );

        // history on a: a console error and an answered alert
        g.ok(&s, "browser_navigate", json!({"url": site.a("console.html")}))
            .await;
        let snap = snapshot_text(&g.ok(&s, "browser_snapshot", json!({})).await);
        g.ok(
            &s,
            "browser_click",
            json!({"ref": find_ref(&snap, "button", "Console error").unwrap()}),
        )
        .await;
        assert!(site.wait_log("console", "error 1", 5_000).await);
        g.ok(&s, "browser_navigate", json!({"url": site.a("dialogs.html")}))
            .await;
        let snap = snapshot_text(&g.ok(&s, "browser_snapshot", json!({})).await);
        g.ok(
            &s,
            "browser_click",
            json!({"ref": find_ref(&snap, "button", "Show alert").unwrap()}),
        )
        .await;
        let d = g.ok(&s, "browser_dialog", json!({"action": "accept"})).await;
        assert_eq!(d["dialog"]["id"], "d-1", "{d}");
        assert!(site.wait_log("alert", "closed", 5_000).await);
        let old_tab = current_tab(&g, &s).await;

        // a call in flight on a when it dies
        g.ok(&pinned, "browser_navigate", json!({"url": site.a("hello.html")}))
            .await;
        let in_flight = {
            let (http, url, hang) = (
                g.http.clone(),
                format!("{}/v1/sessions/{pinned}/tools/browser_navigate", g.url),
                site.a("hang"),
            );
            tokio::spawn(async move {
                let r = http
                    .post(url)
                    .bearer_auth(KEY)
                    .json(&json!({"url": hang, "timeout_ms": 60000}))
                    .send()
                    .await
                    .unwrap();
                (r.status(), r.json::<Value>().await.unwrap(), Instant::now())
            })
        };
        tokio::time::sleep(Duration::from_millis(500)).await;
        let killed = Instant::now();
        ra.kill();

        let (st, v, done) = in_flight.await.unwrap();
        assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE, "{v}");
        assert_eq!(v["error"]["code"], "browser_lost", "{v}");
        assert!(
            done - killed < Duration::from_secs(8),
            "the call took {:?} to fail",
            done - killed
        );

        // the unpinned session reads as lost, naming the endpoint
        let mut status = Value::Null;
        for _ in 0..100 {
            status = g.get(&format!("/v1/sessions/{s}")).await.1;
            if status["status"] == "lost" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(status["status"], "lost", "{status}");
        assert_eq!(status["placement"]["health"], "down", "{status}");
        let (st, v) = g.call(&s, "browser_snapshot", json!({})).await;
        assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE, "{v}");
        assert_eq!(v["error"]["code"], "browser_lost", "{v}");
        assert_eq!(v["error"]["endpoint"], "a", "{v}");
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains("endpoint \"a\"") && msg.contains("browser_navigate"),
            "{msg}"
        );
        let a = endpoint(&g, "a").await;
        assert_eq!(a["health"], "down", "{a}");
        assert!(a["error"].is_string(), "{a}");
        let (st, h) = g.get("/v1/health").await;
        assert_eq!(st, StatusCode::OK, "{h}");
        assert_eq!(h["endpoints"], json!({"up": 1, "total": 2}), "{h}");

        // browser_navigate places it again: same id, a new tab on b, history kept
        let nav = g
            .ok(&s, "browser_navigate", json!({"url": site.a("dialogs.html")}))
            .await;
        assert_eq!(nav["status"], "complete", "{nav}");
        let (_, v) = g.get(&format!("/v1/sessions/{s}")).await;
        assert_eq!(v["status"], "open", "{v}");
        assert_eq!(v["placement"]["endpoint"], "b", "{v}");
        let new_tab = current_tab(&g, &s).await;
        assert_ne!(new_tab, old_tab);
        assert!(rb.pages().await.contains(&new_tab));
        let console = g.ok(&s, "browser_console", json!({})).await;
        assert!(
            console.to_string().contains("boom 1"),
            "console history lost: {console}"
        );
        let snap = g.ok(&s, "browser_snapshot", json!({})).await;
        let recent = snap["recent_dialogs"].as_array().unwrap();
        assert!(
            recent.iter().any(|r| r["message"] == "hello alert" && r["id"] == "d-1"),
            "dialog history lost: {snap}"
        );
        // the page on b works, and new dialogs get new ids
        let text = snapshot_text(&snap);
        g.ok(
            &s,
            "browser_click",
            json!({"ref": find_ref(&text, "button", "Show alert").unwrap()}),
        )
        .await;
        let d = g.ok(&s, "browser_dialog", json!({"action": "dismiss"})).await;
        assert_eq!(d["dialog"]["id"], "d-2", "{d}");
        let (_, audit) = g.get(&format!("/v1/sessions/{s}/dialogs")).await;
        let rows: Vec<(&str, &str)> = audit["dialogs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["dialog_id"].as_str().unwrap(), r["closed_by"].as_str().unwrap_or("-")))
            .collect();
        assert_eq!(rows, vec![("d-1", "agent"), ("d-2", "agent")], "{audit}");
        assert_eq!(endpoint(&g, "a").await["sessions"], json!([pinned]));

        // the pinned session stays lost: it is never moved
        for (tool, args) in [
            ("browser_navigate", json!({"url": site.a("hello.html")})),
            ("browser_snapshot", json!({})),
        ] {
            let (st, v) = g.call(&pinned, tool, args).await;
            assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE, "{tool}: {v}");
            assert_eq!(v["error"]["code"], "browser_lost", "{v}");
            assert_eq!(v["error"]["pinned"], true, "{v}");
            assert!(v["error"]["message"].as_str().unwrap().contains("pinned"), "{v}");
        }
        // new sessions go where the browsers are
        let (st, v, _, _) = create(&g, json!({})).await;
        assert_eq!(st, StatusCode::CREATED, "{v}");
        assert_eq!(v["placement"]["endpoint"], "b", "{v}");
    })
}

#[test]
fn dialogs_and_cross_site_frames_work_on_a_remote_endpoint() {
    run(async {
        let r = Remote::start().await;
        let site = Site::start().await;
        let g = Gw::with_pool(pool_config(1.0, &[("remote", &r.http, 4)]), None).await;
        let s = g.session(json!({})).await;

        // OOPIFs two hops deep (A → B → A), each with its own session, clickable
        g.ok(&s, "browser_navigate", json!({"url": site.a("oopif.html")})).await;
        let snap = g.ok(&s, "browser_snapshot", json!({})).await;
        let oopifs = snap["frame_tree"]["children"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["is_oopif"] == true && c["session_id"].is_string())
            .count();
        assert_eq!(oopifs, 2, "{}", snap["frame_tree"]);
        let text = snapshot_text(&snap);
        g.ok(
            &s,
            "browser_click",
            json!({"ref": find_ref(&text, "checkbox", "I agree").expect(&text)}),
        )
        .await;
        assert!(
            site.wait_log("agree", "true", 5_000).await,
            "click in the OOPIF did not land"
        );
        g.ok(
            &s,
            "browser_click",
            json!({"ref": find_ref(&text, "button", "Inner OK").expect(&text)}),
        )
        .await;
        assert!(
            site.wait_log("inner", "ok", 5_000).await,
            "click two OOPIF hops down did not land"
        );
        assert!(r.pages().await.contains(&current_tab(&g, &s).await));

        // an alert inside the cross-site frame
        g.ok(&s, "browser_navigate", json!({"url": site.a("frame-dialogs.html")}))
            .await;
        let text = snapshot_text(&g.ok(&s, "browser_snapshot", json!({})).await);
        let buttons: Vec<&str> = text.lines().filter(|l| l.contains("button \"Frame alert\"")).collect();
        assert_eq!(buttons.len(), 2, "{text}");
        let xsite = buttons[1].split("[ref=").nth(1).unwrap().trim_end_matches(']');
        let click = g.ok(&s, "browser_click", json!({"ref": xsite})).await;
        assert!(click.to_string().contains("alert from xsite frame"), "{click}");
        let (_, v) = g.get(&format!("/v1/sessions/{s}")).await;
        assert_eq!(v["pending_dialogs"][0]["message"], "alert from xsite frame", "{v}");
        g.ok(&s, "browser_dialog", json!({"action": "accept"})).await;
        assert!(site.wait_log("xsite-alert", "closed", 5_000).await);

        // confirm dismissed, prompt answered with text
        g.ok(&s, "browser_navigate", json!({"url": site.a("dialogs.html")}))
            .await;
        let text = snapshot_text(&g.ok(&s, "browser_snapshot", json!({})).await);
        g.ok(
            &s,
            "browser_click",
            json!({"ref": find_ref(&text, "button", "Show confirm").unwrap()}),
        )
        .await;
        g.ok(&s, "browser_dialog", json!({"action": "dismiss"})).await;
        assert!(site.wait_log("confirm", "cancelled", 5_000).await);
        g.ok(
            &s,
            "browser_click",
            json!({"ref": find_ref(&text, "button", "Show prompt").unwrap()}),
        )
        .await;
        g.ok(&s, "browser_dialog", json!({"action": "accept", "prompt_text": "Ada"}))
            .await;
        assert!(site.wait_log("prompt", "Ada", 5_000).await);
        let (_, audit) = g.get(&format!("/v1/sessions/{s}/dialogs")).await;
        assert_eq!(audit["dialogs"].as_array().unwrap().len(), 3, "{audit}");
    })
}

#[test]
fn endpoint_tokens_never_show_and_an_unreachable_endpoint_reads_browser_lost() {
    run(async {
        let config = Config::parse(
            "browser:\n  placement_timeout_s: 0.5\n  endpoints:\n    - {name: bl, kind: browserless, url: 'ws://127.0.0.1:1', token: sekrit-tok-42, capacity: 1}\n",
        )
        .unwrap();
        let g = Gw::with_pool(config, None).await;
        let s = g.session(json!({})).await;
        // opening its tab fails; the endpoint is down (a navigate that finds it already
        // down tries to place the session elsewhere and finds every endpoint down)
        let (st, v) = g.call(&s, "browser_navigate", json!({"url": "about:blank"})).await;
        assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE, "{v}");
        let code = v["error"]["code"].as_str().unwrap();
        assert!(code == "browser_lost" || code == "browser_unavailable", "{v}");
        assert!(v["error"]["message"].as_str().unwrap().contains("\"bl\""), "{v}");
        let (st, v) = g.call(&s, "browser_snapshot", json!({})).await;
        assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE, "{v}");
        assert_eq!(v["error"]["code"], "browser_lost", "{v}");
        let mut seen = v.to_string();
        for path in [
            "/v1/endpoints".to_string(),
            format!("/v1/sessions/{s}"),
            "/v1/sessions".into(),
        ] {
            seen.push_str(&g.get(&path).await.1.to_string());
        }
        assert!(!seen.contains("sekrit"), "{seen}");
        assert!(seen.contains("ws://127.0.0.1:1/chromium?<redacted>"), "{seen}");
        let (st, h) = g.get("/v1/health").await;
        assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE, "{h}");
        assert!(!h.to_string().contains("127.0.0.1"), "{h}");
    })
}
