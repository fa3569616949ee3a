//! Dialogs over HTTP: `browser_dialog` never waits behind another call of its session,
//! and every dialog lands in the audit with its outcome.

mod common;

use std::time::{Duration, Instant};

use common::*;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tabgate_testkit::Site;

/// Polls the session until a dialog is pending; returns it.
async fn pending(g: &Gw, sid: &str) -> Value {
    for _ in 0..100 {
        let (_, v) = g.get(&format!("/v1/sessions/{sid}")).await;
        if let Some(d) = v["pending_dialogs"].as_array().and_then(|a| a.first()) {
            return d.clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no dialog became pending in session {sid}");
}

#[test]
fn dialog_is_answered_while_a_navigate_of_the_same_session_is_still_running() {
    run(async {
        let mut g = Gw::new().await;
        let site = Site::start().await;
        let sid = g.session(json!({})).await;
        g.ok(&sid, "browser_navigate", json!({"url": site.a("hello.html")}))
            .await;
        let first = g.ok(&sid, "browser_tabs", json!({})).await["tabs"][0]["tab_id"].clone();
        // a second tab of this session that raises an alert a little later
        let page =
            "data:text/html,<title>late</title><script>setTimeout(() => alert('from the other tab'), 1200)</script>";
        g.ok(&sid, "browser_tabs", json!({"action": "new", "url": page})).await;
        g.ok(&sid, "browser_tab_activate", json!({"tab_id": first})).await;

        // a navigate that holds the session's call slot for ~6 s
        let slow = site.a("slow?ms=6000&page=other.html");
        let started = Instant::now();
        let nav = {
            let (http, url) = (
                g.http.clone(),
                format!("{}/v1/sessions/{sid}/tools/browser_navigate", g.url),
            );
            tokio::spawn(async move {
                let r = http
                    .post(url)
                    .bearer_auth(KEY)
                    .json(&json!({"url": slow}))
                    .send()
                    .await
                    .unwrap();
                (r.status(), r.json::<Value>().await.unwrap(), Instant::now())
            })
        };
        let d = pending(&g, &sid).await;
        assert_eq!(d["message"], "from the other tab", "{d}");
        assert!(
            !nav.is_finished(),
            "the navigate ended before the dialog could be answered"
        );
        let t = Instant::now();
        let (st, v) = g
            .call(
                &sid,
                "browser_dialog",
                json!({"action": "accept", "dialog_id": d["id"]}),
            )
            .await;
        let answered = Instant::now();
        assert_eq!(st, StatusCode::OK, "{v}");
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "browser_dialog waited {:?}",
            t.elapsed()
        );
        let (st, v, nav_done) = nav.await.unwrap();
        assert_eq!(st, StatusCode::OK, "{v}");
        assert_eq!(v["result"]["status"], "complete", "{v}");
        assert!(answered < nav_done, "browser_dialog queued behind the navigate");
        assert!(started.elapsed() >= Duration::from_secs(5));
        assert!(site.wait_log("other", "loaded", 5_000).await);
        g.stop().await;
    })
}

#[test]
fn navigate_blocked_by_a_dialog_returns_and_the_answer_is_audited() {
    run(async {
        let mut g = Gw::new().await;
        let site = Site::start().await;
        let sid = g.session(json!({})).await;
        let t = Instant::now();
        let nav = g
            .ok(&sid, "browser_navigate", json!({"url": site.a("alert-on-load.html")}))
            .await;
        assert!(t.elapsed() < Duration::from_secs(5));
        assert_eq!(nav["status"], "blocked_by_dialog", "{nav}");
        let (_, s) = g.get(&format!("/v1/sessions/{sid}")).await;
        assert_eq!(s["pending_dialogs"][0]["message"], "stored message 42", "{s}");
        g.ok(&sid, "browser_dialog", json!({"action": "accept"})).await;
        assert!(site.wait_log("loaded", "yes", 5_000).await);

        // a prompt answered with text
        g.ok(&sid, "browser_navigate", json!({"url": site.a("dialogs.html")}))
            .await;
        let snap = g.call(&sid, "browser_snapshot", json!({})).await.1["text"]
            .as_str()
            .unwrap()
            .to_string();
        let b = find_ref(&snap, "button", "Show prompt").unwrap();
        let click = g.ok(&sid, "browser_click", json!({"ref": b})).await;
        assert!(click.to_string().contains("prompt"), "{click}");
        g.ok(
            &sid,
            "browser_dialog",
            json!({"action": "accept", "prompt_text": "Ada"}),
        )
        .await;
        assert!(site.wait_log("prompt", "Ada", 5_000).await);

        let mut audit = Value::Null;
        for _ in 0..50 {
            audit = g.get(&format!("/v1/sessions/{sid}/dialogs")).await.1;
            let done = audit["dialogs"].as_array().is_some_and(|d| {
                d.len() == 2 && d.iter().all(|x| x["closed_by"].is_string()) && d[1]["prompt_text"].is_string()
            });
            if done {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let d = audit["dialogs"].as_array().unwrap_or_else(|| panic!("{audit}"));
        assert_eq!(d.len(), 2, "{audit}");
        assert_eq!(d[0]["type"], "alert");
        assert_eq!(d[0]["message"], "stored message 42");
        assert_eq!(d[0]["closed_by"], "agent");
        assert_eq!(d[0]["action"], "accept");
        assert_eq!(d[1]["type"], "prompt");
        assert_eq!(d[1]["default_prompt"], "default-name");
        assert_eq!(d[1]["prompt_text"], "Ada", "{audit}");
        assert!(d[1]["closed_at"].as_f64().unwrap() >= d[1]["opened_at"].as_f64().unwrap());
        g.stop().await;
    })
}

#[test]
fn policy_and_watchdog_closes_are_audited() {
    run(async {
        let mut g = Gw::new().await;
        let site = Site::start().await;
        let auto = g.session(json!({"dialog_policy": {"confirm": "auto_dismiss"}})).await;
        let watched = g.session(json!({"dialog_timeout_s": 0.5})).await;
        for sid in [&auto, &watched] {
            g.ok(sid, "browser_navigate", json!({"url": site.a("dialogs.html")}))
                .await;
            let snap = g.call(sid, "browser_snapshot", json!({})).await.1["text"]
                .as_str()
                .unwrap()
                .to_string();
            let b = find_ref(&snap, "button", "Show confirm").unwrap();
            g.ok(sid, "browser_click", json!({"ref": b})).await;
        }
        assert!(site.wait_log("confirm", "cancelled", 5_000).await);
        let closed_by = |sid: String| {
            let g = &g;
            async move {
                for _ in 0..60 {
                    let a = g.get(&format!("/v1/sessions/{sid}/dialogs")).await.1;
                    if let Some(c) = a["dialogs"][0]["closed_by"].as_str() {
                        return c.to_string();
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                panic!("dialog of {sid} never closed in the audit");
            }
        };
        assert_eq!(closed_by(auto.clone()).await, "auto_policy");
        assert_eq!(closed_by(watched.clone()).await, "watchdog");
        g.stop().await;
    })
}
