//! The `/v1` API over real HTTP with real Chromium: auth, sessions, tool calls, errors,
//! parallel sessions, restarts and idle tabs.

mod common;

use std::time::Duration;

use common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use tabgate_config::Config;
use tabgate_testkit::Site;

/// Sends `method path` with an optional key and extra header; returns status, the
/// WWW-Authenticate header and the JSON body.
async fn raw(
    g: &Gw,
    method: Method,
    path: &str,
    key: Option<&str>,
    host: Option<&str>,
) -> (StatusCode, Option<String>, Value) {
    let mut r = g.http.request(method, format!("{}{}", g.url, path));
    if let Some(k) = key {
        r = r.bearer_auth(k);
    }
    if let Some(h) = host {
        r = r.header("Host", h);
    }
    let resp = r.send().await.unwrap();
    let st = resp.status();
    let www = resp
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_string());
    let text = resp.text().await.unwrap();
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {text:?}"));
    (st, www, v)
}

fn assert_error(v: &Value, code: &str) {
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["error"]["code"], code, "{v}");
    assert!(v["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    assert!(v["error"]["type"].is_string(), "{v}");
}

#[test]
fn auth_matrix() {
    run(async {
        let mut g = Gw::new().await;
        // health needs no key
        let (st, _, v) = raw(&g, Method::GET, "/v1/health", None, None).await;
        assert_eq!(st, StatusCode::OK, "{v}");
        assert_eq!(v["ok"], true);
        assert_eq!(v["browser"]["connected"], true);
        for path in ["/v1/sessions", "/v1/tools", "/v1/nothing-here"] {
            // no key
            let (st, www, v) = raw(&g, Method::GET, path, None, None).await;
            assert_eq!(st, StatusCode::UNAUTHORIZED, "{path}: {v}");
            assert_eq!(www.as_deref(), Some("Bearer"));
            assert_error(&v, "unauthorized");
            assert_eq!(v["error"]["type"], "authentication_error");
            // wrong key, including a prefix of the right one
            for wrong in ["nope", &KEY[..KEY.len() - 1], ""] {
                let (st, _, v) = raw(&g, Method::GET, path, Some(wrong), None).await;
                assert_eq!(st, StatusCode::UNAUTHORIZED, "{path} {wrong:?}: {v}");
            }
        }
        // right key
        let (st, _, v) = raw(&g, Method::GET, "/v1/sessions", Some(KEY), None).await;
        assert_eq!(st, StatusCode::OK, "{v}");
        assert_eq!(v["sessions"], json!([]));
        let (st, _, v) = raw(&g, Method::GET, "/v1/tools", Some(KEY), None).await;
        assert_eq!(st, StatusCode::OK);
        let names: Vec<&str> = v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"browser_navigate") && names.contains(&"browser_dialog"),
            "{names:?}"
        );
        assert_eq!(v["tools"][0]["input_schema"]["type"], "object");
        // /mcp is behind the key too
        let (st, _, v) = raw(&g, Method::POST, "/mcp", None, None).await;
        assert_eq!(st, StatusCode::UNAUTHORIZED, "{v}");
        // DNS rebinding: a foreign Host is refused even with the key, health included
        for path in ["/v1/sessions", "/v1/health"] {
            let (st, _, v) = raw(&g, Method::GET, path, Some(KEY), Some("evil.example:7878")).await;
            assert_eq!(st, StatusCode::FORBIDDEN, "{v}");
            assert_error(&v, "host_not_allowed");
        }
        let (st, _, _) = raw(&g, Method::GET, "/v1/sessions", Some(KEY), Some("localhost:1234")).await;
        assert_eq!(st, StatusCode::OK);
        g.stop().await;
    })
}

#[test]
fn session_crud_and_a_tool_call() {
    run(async {
        let mut g = Gw::new().await;
        let site = Site::start().await;
        let (st, v) = g
            .post("/v1/sessions", json!({"name": "crud", "dialog_policy": "auto_dismiss"}))
            .await;
        assert_eq!(st, StatusCode::CREATED, "{v}");
        let sid = v["session_id"].as_str().unwrap().to_string();
        assert_eq!(v["status"], "idle", "no tab before the first call: {v}");
        assert_eq!(v["settings"]["dialog_policy"], "auto_dismiss");
        let before = page_targets().await;

        let nav = g
            .ok(&sid, "browser_navigate", json!({"url": site.a("form.html")}))
            .await;
        assert_eq!(nav["status"], "complete", "{nav}");
        let (_, snap) = g.call(&sid, "browser_snapshot", json!({})).await;
        let text = snap["text"].as_str().unwrap();
        let r = find_ref(text, "textbox", "Full name").unwrap_or_else(|| panic!("{text}"));
        g.ok(&sid, "browser_type", json!({"ref": r, "text": "Ada Lovelace"}))
            .await;
        let b = find_ref(text, "button", "Echo values").unwrap();
        g.ok(&sid, "browser_click", json!({"ref": b})).await;
        assert!(site
            .wait_key("form", 5_000)
            .await
            .is_some_and(|f| f.contains("Ada Lovelace")));
        let shot = g.call(&sid, "browser_screenshot", json!({})).await.1;
        assert!(
            shot["image_png"].as_str().is_some_and(|p| p.starts_with("iVBOR")),
            "{shot}"
        );

        let (st, v) = g.get(&format!("/v1/sessions/{sid}")).await;
        assert_eq!(st, StatusCode::OK);
        assert_eq!(v["status"], "open", "{v}");
        assert_eq!(v["name"], "crud");
        assert!(v["current_tab"]["url"].as_str().unwrap().ends_with("form.html"), "{v}");
        assert_eq!(v["pending_dialogs"], json!([]));
        let tab = v["current_tab"]["tab_id"].as_str().unwrap().to_string();
        assert!(page_targets().await.contains(&tab));
        assert!(!before.contains(&tab));

        let (_, list) = g.get("/v1/sessions").await;
        assert!(list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["session_id"] == sid));

        let (st, v) = g.req(Method::DELETE, &format!("/v1/sessions/{sid}"), None).await;
        assert_eq!(st, StatusCode::OK, "{v}");
        assert_eq!(v["deleted"], true);
        assert!(!page_targets().await.contains(&tab), "the session's tab outlived it");
        let (st, v) = g.get(&format!("/v1/sessions/{sid}")).await;
        assert_eq!(st, StatusCode::NOT_FOUND);
        assert_error(&v, "unknown_session");
        let (st, _) = g.req(Method::DELETE, &format!("/v1/sessions/{sid}"), None).await;
        assert_eq!(st, StatusCode::NOT_FOUND);
        let (st, v) = g.call(&sid, "browser_snapshot", json!({})).await;
        assert_eq!(st, StatusCode::NOT_FOUND);
        assert_error(&v, "unknown_session");
        g.stop().await;
    })
}

#[test]
fn bad_input_gets_its_status_and_message() {
    run(async {
        let mut g = Gw::new().await;
        let sid = g.session(json!({})).await;
        let url = format!("{}/v1/sessions/{sid}/tools/browser_navigate", g.url);
        let send = |body: Vec<u8>| {
            let (http, url) = (g.http.clone(), url.clone());
            async move {
                let r = http.post(url).bearer_auth(KEY).body(body).send().await.unwrap();
                (r.status(), r.json::<Value>().await.unwrap())
            }
        };
        // malformed JSON
        let (st, v) = send(b"{\"url\": ".to_vec()).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{v}");
        assert_error(&v, "invalid_json");
        // wrong type, missing field, unknown field
        for (args, what) in [
            (json!({"url": 5}), "must be string"),
            (json!({}), "needs `url`"),
            (json!({"url": "about:blank", "colour": 1}), "no argument `colour`"),
            (json!([1, 2]), "JSON object"),
        ] {
            let (st, v) = g.call(&sid, "browser_navigate", args.clone()).await;
            assert_eq!(st, StatusCode::BAD_REQUEST, "{args}: {v}");
            assert_error(&v, "invalid_argument");
            assert!(v["error"]["message"].as_str().unwrap().contains(what), "{v}");
        }
        // bad arguments never opened a tab
        let (_, s) = g.get(&format!("/v1/sessions/{sid}")).await;
        assert_eq!(s["status"], "idle", "{s}");
        // unknown tool, unknown session
        let (st, v) = g.call(&sid, "browser_teleport", json!({})).await;
        assert_eq!(st, StatusCode::NOT_FOUND, "{v}");
        assert_error(&v, "unknown_tool");
        assert!(v["error"]["message"].as_str().unwrap().contains("browser_navigate"));
        let (st, v) = g.call("ses_nope", "browser_snapshot", json!({})).await;
        assert_eq!(st, StatusCode::NOT_FOUND);
        assert_error(&v, "unknown_session");
        // oversized body
        let big = format!("{{\"url\": \"{}\"}}", "x".repeat(tabgate_server::MAX_BODY_BYTES + 10));
        let (st, v) = send(big.into_bytes()).await;
        assert_eq!(st, StatusCode::PAYLOAD_TOO_LARGE, "{v}");
        assert_error(&v, "body_too_large");
        // bad session settings
        let (st, v) = g.post("/v1/sessions", json!({"dialog_policy": "whenever"})).await;
        assert_eq!(st, StatusCode::BAD_REQUEST);
        assert_error(&v, "invalid_settings");
        // unknown route and method
        let (st, v) = g.get("/v1/sessions/x/y/z").await;
        assert_eq!(st, StatusCode::NOT_FOUND);
        assert_error(&v, "not_found");
        let (st, v) = g.req(Method::PUT, "/v1/sessions", None).await;
        assert_eq!(st, StatusCode::METHOD_NOT_ALLOWED);
        assert_error(&v, "method_not_allowed");
        // a tool failure: a stale or unknown ref is a conflict with the page's state
        let (st, v) = g.call(&sid, "browser_click", json!({"ref": "e404"})).await;
        assert_eq!(st, StatusCode::CONFLICT, "{v}");
        assert_eq!(v["error"]["type"], "tool_error");
        assert!(
            v["error"]["code"] == "unknown_ref" || v["error"]["code"] == "stale_ref",
            "{v}"
        );
        g.stop().await;
    })
}

#[test]
fn two_sessions_in_parallel_do_not_touch_each_other() {
    run(async {
        let mut g = Gw::new().await;
        let site = Site::start().await;
        let (s1, s2) = (g.session(json!({})).await, g.session(json!({})).await);
        let work = |sid: String, text: &'static str| {
            let g = &g;
            let url = site.a("form.html");
            async move {
                g.ok(&sid, "browser_navigate", json!({"url": url})).await;
                let (_, snap) = g.call(&sid, "browser_snapshot", json!({})).await;
                let r = find_ref(snap["text"].as_str().unwrap(), "textbox", "Full name").unwrap();
                g.ok(&sid, "browser_type", json!({"ref": r, "text": text})).await;
                g.ok(&sid, "browser_press", json!({"key": "End"})).await;
                g.eval(&sid, "document.getElementById('name').value").await
            }
        };
        let (v1, v2) = tokio::join!(work(s1.clone(), "first session"), work(s2.clone(), "second session"));
        assert_eq!(v1, "first session");
        assert_eq!(v2, "second session");
        // each sees only its own tab
        let t1 = g.ok(&s1, "browser_tabs", json!({})).await["tabs"].clone();
        let t2 = g.ok(&s2, "browser_tabs", json!({})).await["tabs"].clone();
        assert_eq!(t1.as_array().unwrap().len(), 1, "{t1}");
        assert_eq!(t2.as_array().unwrap().len(), 1, "{t2}");
        assert_ne!(t1[0]["tab_id"], t2[0]["tab_id"]);
        // navigating one leaves the other where it was
        g.ok(&s1, "browser_navigate", json!({"url": site.a("hello.html")}))
            .await;
        assert_eq!(
            g.eval(&s2, "document.getElementById('name').value").await,
            "second session"
        );
        g.stop().await;
    })
}

#[test]
fn sessions_survive_a_restart() {
    run(async {
        let site = Site::start().await;
        let mut g = Gw::new().await;
        let sid = g
            .session(json!({"name": "keeper", "dialog_policy": "auto_accept"}))
            .await;
        g.ok(&sid, "browser_navigate", json!({"url": site.a("hello.html")}))
            .await;
        let (_, before) = g.get(&format!("/v1/sessions/{sid}")).await;
        let tab = before["current_tab"]["tab_id"].as_str().unwrap().to_string();
        let tmp = g.stop().await;
        assert!(
            !page_targets().await.contains(&tab),
            "shutdown left the session's tab open"
        );

        let mut g = Gw::start_in(&g.state.clone(), Config::default()).await;
        let (st, v) = g.get(&format!("/v1/sessions/{sid}")).await;
        assert_eq!(st, StatusCode::OK, "{v}");
        assert_eq!(v["name"], "keeper");
        assert_eq!(v["status"], "idle");
        assert_eq!(v["settings"]["dialog_policy"], "auto_accept");
        assert!(v["last_url"].as_str().unwrap().ends_with("hello.html"), "{v}");
        // usable again: a new tab is created on first use
        g.ok(&sid, "browser_navigate", json!({"url": site.a("form.html")}))
            .await;
        let (_, v) = g.get(&format!("/v1/sessions/{sid}")).await;
        assert_eq!(v["status"], "open");
        assert_ne!(v["current_tab"]["tab_id"], json!(tab));
        // and its stored dialog policy still applies
        g.ok(
            &sid,
            "browser_console",
            json!({"expression": "setTimeout(() => confirm('sure?'), 0); 1"}),
        )
        .await;
        let mut audited = Value::Null;
        for _ in 0..50 {
            audited = g.get(&format!("/v1/sessions/{sid}/dialogs")).await.1;
            if audited["dialogs"]
                .as_array()
                .is_some_and(|d| !d.is_empty() && d[0]["closed_by"].is_string())
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(audited["dialogs"][0]["closed_by"], "auto_policy", "{audited}");
        assert_eq!(audited["dialogs"][0]["action"], "accept", "{audited}");
        g.stop().await;
        drop(tmp);
    })
}

#[test]
fn idle_tabs_are_closed_and_come_back() {
    run(async {
        let site = Site::start().await;
        let config = Config::parse("browser:\n  inactivity_timeout: 1\n").unwrap();
        let mut g = Gw::with_config(config).await;
        let sid = g.session(json!({})).await;
        g.ok(&sid, "browser_navigate", json!({"url": site.a("hello.html")}))
            .await;
        let (_, v) = g.get(&format!("/v1/sessions/{sid}")).await;
        let tab = v["current_tab"]["tab_id"].as_str().unwrap().to_string();
        let mut idle = Value::Null;
        for _ in 0..40 {
            tokio::time::sleep(Duration::from_millis(250)).await;
            idle = g.get(&format!("/v1/sessions/{sid}")).await.1;
            if idle["status"] == "idle" {
                break;
            }
        }
        assert_eq!(idle["status"], "idle", "{idle}");
        assert!(idle["last_url"].as_str().unwrap().ends_with("hello.html"), "{idle}");
        assert!(!page_targets().await.contains(&tab), "the idle tab is still open");
        // the record stayed and the session works again
        let snap = g.ok(&sid, "browser_snapshot", json!({})).await;
        assert!(snap["url"].is_string(), "{snap}");
        g.stop().await;
    })
}

#[test]
fn shutdown_lets_calls_finish_within_the_grace_and_cancels_the_rest() {
    run(async {
        let site = Site::start().await;
        let slow_call = |g: &Gw, sid: &str, ms: u64| {
            let (http, url) = (
                g.http.clone(),
                format!("{}/v1/sessions/{sid}/tools/browser_navigate", g.url),
            );
            let page = site.a(&format!("slow?ms={ms}&page=hello.html"));
            tokio::spawn(async move {
                let r = http.post(url).bearer_auth(KEY).json(&json!({"url": page})).send().await;
                match r {
                    Ok(r) => Ok(r.status()),
                    Err(e) => Err(e.to_string()),
                }
            })
        };
        // a call that fits in the grace finishes with its result
        let mut g = Gw::new().await;
        let sid = g.session(json!({})).await;
        g.ok(&sid, "browser_tabs", json!({})).await;
        let call = slow_call(&g, &sid, 1_500);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let server = g.server.take().unwrap();
        server.shutdown(Duration::from_secs(10)).await;
        assert_eq!(call.await.unwrap(), Ok(StatusCode::OK));

        // deleting a session cancels its call in flight
        let mut g = Gw::new().await;
        let sid = g.session(json!({})).await;
        g.ok(&sid, "browser_tabs", json!({})).await;
        let call = slow_call(&g, &sid, 20_000);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (st, _) = g.req(Method::DELETE, &format!("/v1/sessions/{sid}"), None).await;
        assert_eq!(st, StatusCode::OK);
        let r = tokio::time::timeout(Duration::from_secs(5), call)
            .await
            .expect("the call hung")
            .unwrap();
        assert_eq!(r, Ok(StatusCode::GONE), "the call was not cancelled by the delete");
        g.stop().await;

        // one that does not fit is cancelled when the grace ends, and shutdown still completes
        let mut g = Gw::new().await;
        let sid = g.session(json!({})).await;
        let (_, v) = g
            .post(&format!("/v1/sessions/{sid}/tools/browser_tabs"), json!({}))
            .await;
        let tab = v["result"]["tabs"][0]["tab_id"].as_str().unwrap().to_string();
        let call = slow_call(&g, &sid, 20_000);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let t = std::time::Instant::now();
        let server = g.server.take().unwrap();
        server.shutdown(Duration::from_millis(500)).await;
        assert!(t.elapsed() < Duration::from_secs(8), "shutdown took {:?}", t.elapsed());
        let r = tokio::time::timeout(Duration::from_secs(10), call)
            .await
            .expect("the call hung")
            .unwrap();
        assert_ne!(r, Ok(StatusCode::OK), "{r:?}");
        assert!(
            !page_targets().await.contains(&tab),
            "the session's tab outlived shutdown"
        );
        g.stop().await;
    })
}
