//! Gateway limits over HTTP: a call past its deadline is cut off (504), a session with
//! too many calls waiting and a gateway with too many open tabs say so (429).

mod common;

use std::time::{Duration, Instant};

use common::*;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tabgate_config::Config;
use tabgate_server::Limits;

/// A `browser_cdp` call that keeps the page busy for `ms` without any dialog.
fn sleeper(ms: u64) -> Value {
    json!({"method": "Runtime.evaluate", "params": {
        "expression": format!("new Promise(r => setTimeout(() => r(1), {ms}))"), "awaitPromise": true}})
}

#[test]
fn deadlines_and_queues() {
    run(async {
        let limits = Limits {
            max_open_sessions: 1,
            max_queued_per_session: 1,
            call_timeout: Duration::from_secs(2),
            ..Limits::from_config(&Config::default())
        };
        let mut g = Gw::with(Config::default(), Some(limits)).await;
        let sid = g.session(json!({})).await;
        g.ok(&sid, "browser_navigate", json!({"url": "data:text/html,<h1>busy</h1>"}))
            .await;

        // 504: the gateway cuts a call off at its deadline
        let t = Instant::now();
        let (st, v) = g.call(&sid, "browser_cdp", sleeper(6_000)).await;
        assert_eq!(st, StatusCode::GATEWAY_TIMEOUT, "{v}");
        assert_eq!(v["error"]["code"], "tool_timeout", "{v}");
        assert_eq!(v["error"]["type"], "timeout_error");
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());

        // 429: one call may wait or run per session here; browser_dialog is never queued
        let busy = {
            let (http, url) = (g.http.clone(), format!("{}/v1/sessions/{sid}/tools/browser_cdp", g.url));
            tokio::spawn(async move {
                http.post(url)
                    .bearer_auth(KEY)
                    .json(&sleeper(800))
                    .send()
                    .await
                    .unwrap()
                    .status()
            })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        let r = g
            .http
            .post(format!("{}/v1/sessions/{sid}/tools/browser_snapshot", g.url))
            .bearer_auth(KEY)
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert!(r.headers().get("retry-after").is_some());
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], "session_busy", "{v}");
        let (st, v) = g.call(&sid, "browser_dialog", json!({"action": "accept"})).await;
        assert_eq!(st, StatusCode::CONFLICT, "{v}");
        assert_eq!(v["error"]["code"], "no_dialog", "{v}");
        assert_eq!(busy.await.unwrap(), StatusCode::OK);

        // 429: the one open tab is taken, a second session cannot open one
        let other = g.session(json!({})).await;
        let (st, v) = g.call(&other, "browser_snapshot", json!({})).await;
        assert_eq!(st, StatusCode::TOO_MANY_REQUESTS, "{v}");
        assert_eq!(v["error"]["code"], "too_many_tabs", "{v}");
        // deleting the first frees it
        let (st, _) = g
            .req(reqwest::Method::DELETE, &format!("/v1/sessions/{sid}"), None)
            .await;
        assert_eq!(st, StatusCode::OK);
        g.ok(
            &other,
            "browser_navigate",
            json!({"url": "data:text/html,<h1>free</h1>"}),
        )
        .await;
        g.stop().await;
    })
}
