//! Sessions on a real Browserless v2 server (issue 8's outside-CI check). Ignored by
//! default: `scripts/browserless.sh` installs and starts Browserless (`CONCURRENT=2`,
//! `QUEUED=1`, `TIMEOUT=0`, a token, on 127.0.0.1) and runs this with
//!
//! - `TABGATE_BROWSERLESS_URL` — `ws://127.0.0.1:PORT`,
//! - `TABGATE_BROWSERLESS_TOKEN` — its token,
//! - `TABGATE_BROWSERLESS_RESTART` — a shell command that restarts it and returns once it
//!   listens again.
//!
//! Every step prints what it saw, so the script's output is the record of the run.

mod common;

use std::time::{Duration, Instant};

use common::*;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tabgate_config::Config;
use tabgate_testkit::Site;

fn env(k: &str) -> String {
    std::env::var(k).unwrap_or_else(|_| panic!("{k} is not set; run scripts/browserless.sh"))
}

fn text(v: &Value) -> String {
    v["snapshot"].as_str().unwrap_or_default().to_string()
}

async fn create(g: &Gw, body: Value) -> (StatusCode, Value, Duration) {
    let t = Instant::now();
    let (st, v) = g.post("/v1/sessions", body).await;
    (st, v, t.elapsed())
}

async fn wait_status(g: &Gw, sid: &str, want: &str, secs: u64) -> Value {
    let mut v = Value::Null;
    for _ in 0..secs * 10 {
        v = g.get(&format!("/v1/sessions/{sid}")).await.1;
        if v["status"] == want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    v
}

fn step(what: &str) {
    println!("\n== {what}");
}

#[test]
#[ignore = "needs a Browserless server: run scripts/browserless.sh"]
fn sessions_on_browserless() {
    run(async {
        let url = env("TABGATE_BROWSERLESS_URL");
        let token = env("TABGATE_BROWSERLESS_TOKEN");
        let restart = env("TABGATE_BROWSERLESS_RESTART");
        let config = Config::parse(&format!(
            "browser:\n  placement_timeout_s: 3\n  endpoints:\n\
             \x20   - {{name: bl, kind: browserless, url: '{url}', token: '{token}', capacity: 2}}\n\
             \x20   - {{name: bl-short, kind: browserless, url: '{url}/chromium?timeout=4000', token: '{token}', capacity: 1}}\n"
        ))
        .unwrap();
        let g = Gw::with_pool(config, None).await;
        let site = Site::start().await;
        let (_, eps) = g.get("/v1/endpoints").await;
        for e in eps["endpoints"].as_array().unwrap() {
            println!(
                "endpoint {} {} {} capacity {}",
                e["name"], e["kind"], e["url"], e["capacity"]
            );
        }
        assert!(!eps.to_string().contains(&token), "the token is shown: {eps}");

        step("two sessions pinned to bl, each gets its own Browserless browser");
        let mut ids = vec![];
        for i in 0..2 {
            let (st, v, t) = create(&g, json!({"endpoint": "bl", "name": format!("s{i}")})).await;
            assert_eq!(st, StatusCode::CREATED, "{v}");
            let sid = v["session_id"].as_str().unwrap().to_string();
            let t2 = Instant::now();
            let nav = g
                .ok(&sid, "browser_navigate", json!({"url": site.a("hello.html")}))
                .await;
            println!(
                "{sid}: created in {t:?} on {}, navigate {} in {:?}",
                v["placement"]["endpoint"],
                nav["status"],
                t2.elapsed()
            );
            ids.push(sid);
        }
        let bl = g.get("/v1/endpoints").await.1["endpoints"][0].clone();
        println!(
            "bl: placed {} open {} free {} health {}",
            bl["placed"], bl["open"], bl["free"], bl["health"]
        );
        assert_eq!((bl["placed"].as_u64(), bl["open"].as_u64()), (Some(2), Some(2)), "{bl}");

        step("a third session on bl: the pool rules say wait placement_timeout_s (3 s), then pool_exhausted");
        let (st, v, t) = create(&g, json!({"endpoint": "bl"})).await;
        println!(
            "{} {} after {t:?}: {}",
            st.as_u16(),
            v["error"]["code"],
            v["error"]["message"]
        );
        assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE, "{v}");
        assert_eq!(v["error"]["code"], "pool_exhausted");
        assert!(t >= Duration::from_millis(2900));

        step("alert through Browserless");
        let s = ids[0].clone();
        g.ok(&s, "browser_navigate", json!({"url": site.a("dialogs.html")}))
            .await;
        let snap = text(&g.ok(&s, "browser_snapshot", json!({})).await);
        let click = g
            .ok(
                &s,
                "browser_click",
                json!({"ref": find_ref(&snap, "button", "Show alert").unwrap()}),
            )
            .await;
        println!("click: {}", click["dialog"]);
        let (_, st) = g.get(&format!("/v1/sessions/{s}")).await;
        println!("pending: {}", st["pending_dialogs"]);
        assert_eq!(st["pending_dialogs"][0]["message"], "hello alert", "{st}");
        g.ok(&s, "browser_dialog", json!({"action": "accept"})).await;
        assert!(site.wait_log("alert", "closed", 5_000).await);
        println!("the page saw its alert closed");

        step("a click inside a cross-site OOPIF (A → B → A) through Browserless");
        g.ok(&s, "browser_navigate", json!({"url": site.a("oopif.html")})).await;
        let snap = g.ok(&s, "browser_snapshot", json!({})).await;
        let oopifs: Vec<&Value> = snap["frame_tree"]["children"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["is_oopif"] == true)
            .collect();
        println!(
            "frame_tree: {} OOPIFs: {:?}",
            oopifs.len(),
            oopifs.iter().map(|c| c["url"].as_str().unwrap()).collect::<Vec<_>>()
        );
        assert_eq!(oopifs.len(), 2, "{}", snap["frame_tree"]);
        let t = text(&snap);
        g.ok(
            &s,
            "browser_click",
            json!({"ref": find_ref(&t, "checkbox", "I agree").unwrap()}),
        )
        .await;
        assert!(
            site.wait_log("agree", "true", 5_000).await,
            "the OOPIF click did not land"
        );
        g.ok(
            &s,
            "browser_click",
            json!({"ref": find_ref(&t, "button", "Inner OK").unwrap()}),
        )
        .await;
        assert!(
            site.wait_log("inner", "ok", 5_000).await,
            "the click two hops down did not land"
        );
        println!("the OOPIF pages logged agree=true and inner=ok");

        step("restart Browserless: every session reads browser_lost, then recovers");
        let t0 = Instant::now();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&restart)
            .output()
            .unwrap();
        println!(
            "restart took {:?}: {}",
            t0.elapsed(),
            String::from_utf8_lossy(&out.stdout).trim()
        );
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        for sid in &ids {
            let v = wait_status(&g, sid, "lost", 20).await;
            println!("{sid}: status {}: {}", v["status"], v["lost_reason"]);
            assert_eq!(v["status"], "lost", "{v}");
            let (st, v) = g.call(sid, "browser_click", json!({"ref": "e1"})).await;
            println!(
                "{sid}: browser_click → {} {}: {}",
                st.as_u16(),
                v["error"]["code"],
                v["error"]["message"]
            );
            assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE, "{v}");
            assert_eq!(v["error"]["code"], "browser_lost", "{v}");
            assert!(v["error"]["message"].as_str().unwrap().contains("\"bl\""), "{v}");
        }
        for sid in &ids {
            let t0 = Instant::now();
            let nav = g
                .ok(sid, "browser_navigate", json!({"url": site.a("dialogs.html")}))
                .await;
            println!("{sid}: browser_navigate → {} in {:?}", nav["status"], t0.elapsed());
        }
        let snap = g.ok(&s, "browser_snapshot", json!({})).await;
        let recent: Vec<&str> = snap["recent_dialogs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["message"].as_str().unwrap())
            .collect();
        println!("{s}: recent_dialogs kept: {recent:?}");
        assert!(recent.contains(&"hello alert"));
        site.clear_logs();
        let t = text(&snap);
        g.ok(
            &s,
            "browser_click",
            json!({"ref": find_ref(&t, "button", "Show confirm").unwrap()}),
        )
        .await;
        let d = g.ok(&s, "browser_dialog", json!({"action": "accept"})).await;
        assert!(site.wait_log("confirm", "confirmed", 5_000).await);
        println!(
            "{s}: a confirm after the restart: {} answered, the page logged confirmed",
            d["dialog"]["id"]
        );

        step("deleting a session frees its place at once");
        let (st, _) = g
            .req(reqwest::Method::DELETE, &format!("/v1/sessions/{}", ids[1]), None)
            .await;
        assert_eq!(st, StatusCode::OK);
        let (st, v, t) = create(&g, json!({"endpoint": "bl"})).await;
        println!("{} in {t:?}, placed on {}", st.as_u16(), v["placement"]["endpoint"]);
        assert_eq!(st, StatusCode::CREATED, "{v}");
        let sid = v["session_id"].as_str().unwrap();
        let nav = g
            .ok(sid, "browser_navigate", json!({"url": site.a("hello.html")}))
            .await;
        println!("its tab: {}", nav["status"]);
        let (st, _) = g
            .req(reqwest::Method::DELETE, &format!("/v1/sessions/{sid}"), None)
            .await;
        assert_eq!(st, StatusCode::OK);

        step("Browserless ends a session at its timeout (bl-short: ?timeout=4000)");
        let (st, v, _) = create(&g, json!({"endpoint": "bl-short"})).await;
        assert_eq!(st, StatusCode::CREATED, "{v}");
        let short = v["session_id"].as_str().unwrap().to_string();
        g.ok(&short, "browser_navigate", json!({"url": site.a("hello.html")}))
            .await;
        let t0 = Instant::now();
        let v = wait_status(&g, &short, "lost", 20).await;
        println!("status {} after {:?}: {}", v["status"], t0.elapsed(), v["lost_reason"]);
        assert_eq!(v["status"], "lost", "{v}");
        let (st, v) = g.call(&short, "browser_snapshot", json!({})).await;
        println!(
            "browser_snapshot → {} {}: {}",
            st.as_u16(),
            v["error"]["code"],
            v["error"]["message"]
        );
        assert_eq!(v["error"]["code"], "browser_lost", "{v}");
        let t0 = Instant::now();
        let nav = g
            .ok(&short, "browser_navigate", json!({"url": site.a("hello.html")}))
            .await;
        println!(
            "browser_navigate → {} in {:?} (a new browser for the same session)",
            nav["status"],
            t0.elapsed()
        );

        let (_, eps) = g.get("/v1/endpoints").await;
        assert!(!eps.to_string().contains(&token));
        println!("\nall Browserless checks passed");
    })
}
