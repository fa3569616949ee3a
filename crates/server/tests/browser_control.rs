//! The browser-extension control endpoints over real HTTP and WebSockets (study 9.5):
//! capabilities, the registration ladder, the ticket handshake, and frames between a
//! scripted controller and the broker.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{run, Gw, KEY};
use futures_util::{SinkExt, StreamExt};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tabgate_config::Config;
use tabgate_controller::{Broker, BrokerError, BrokerOptions, ManualClock, Scope};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

const ALL: [&str; 11] = [
    "controller.noop",
    "browser_back",
    "browser_click",
    "browser_navigate",
    "browser_press",
    "browser_screenshot",
    "browser_scroll",
    "browser_snapshot",
    "browser_tab_activate",
    "browser_tabs",
    "browser_type",
];

fn enabled() -> Config {
    Config::parse("browser:\n  extension_control:\n    enabled: true\n").unwrap()
}

fn broker(gw: &Gw) -> Arc<Broker> {
    gw.server.as_ref().unwrap().gateway().broker().clone()
}

async fn post_raw(gw: &Gw, path: &str, key: Option<&str>, body: &str) -> (StatusCode, Value) {
    let mut r = gw
        .http
        .post(format!("{}{path}", gw.url))
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(k) = key {
        r = r.bearer_auth(k);
    }
    let resp = r.send().await.unwrap();
    let st = resp.status();
    (st, resp.json().await.unwrap_or(Value::Null))
}

fn registration(sid: &str, controller: &str) -> Value {
    json!({"protocol_version": 1, "session_id": sid, "controller_id": controller,
           "browser_profile_id": "chrome-profile-1", "capabilities": ALL})
}

async fn register(gw: &Gw, body: Value) -> Value {
    let (st, v) = gw.post("/v1/browser-control/register", body).await;
    assert_eq!(st, StatusCode::CREATED, "{v}");
    v
}

/// Opens the controller socket offering `protocols` (comma-joined) at `path`;
/// the HTTP status when refused.
async fn connect_with(gw: &Gw, path: &str, protocols: Option<&str>) -> Result<Ws, u16> {
    let url = format!("{}{path}", gw.url.replacen("http://", "ws://", 1));
    let mut req = url.into_client_request().unwrap();
    if let Some(p) = protocols {
        req.headers_mut().insert("sec-websocket-protocol", p.parse().unwrap());
    }
    match tokio_tungstenite::connect_async(req).await {
        Ok((ws, resp)) => {
            assert_eq!(
                resp.headers().get("sec-websocket-protocol").unwrap(),
                "hermes-browser-control-v1"
            );
            Ok(ws)
        }
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => Err(r.status().as_u16()),
        Err(e) => panic!("connect: {e}"),
    }
}

async fn connect(gw: &Gw, ticket: &str) -> Result<Ws, u16> {
    let p = format!("hermes-browser-control-v1, hermes-browser-control-ticket.{ticket}");
    connect_with(gw, "/v1/browser-control/ws", Some(&p)).await
}

/// The next frame that is not a server keepalive.
async fn next(ws: &mut Ws) -> Value {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("a frame within 10 s")
            .expect("socket open")
            .expect("frame");
        if let Message::Text(t) = m {
            let v: Value = serde_json::from_str(t.as_str()).unwrap();
            if v["params"]["nonce"]
                .as_str()
                .is_some_and(|n| n.starts_with("server-keepalive-"))
            {
                continue;
            }
            return v;
        }
    }
}

async fn send(ws: &mut Ws, v: Value) {
    ws.send(Message::Text(v.to_string().into())).await.unwrap();
}

/// Sends to a socket the server may already have closed.
async fn send_maybe(ws: &mut Ws, v: Value) {
    let _ = ws.send(Message::Text(v.to_string().into())).await;
}

/// The server closes the socket within 5 s (frames before the close are not commands).
async fn closed(ws: &mut Ws) {
    loop {
        match tokio::time::timeout(Duration::from_secs(5), ws.next())
            .await
            .expect("closed within 5 s")
        {
            None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
            Some(Ok(Message::Text(t))) => assert!(!t.as_str().contains("browser.controller.command"), "{t}"),
            Some(Ok(_)) => {}
        }
    }
}

fn dispatch(
    b: &Arc<Broker>,
    scope: &Scope,
    action: &str,
    args: Value,
    call: &str,
) -> tokio::task::JoinHandle<Result<Value, BrokerError>> {
    let (b, id, action, call) = (b.clone(), scope.identity(), action.to_string(), call.to_string());
    tokio::spawn(async move { b.dispatch(&id, &action, args, &call).await })
}

async fn wait_connected(b: &Broker, scope: &Scope) {
    for _ in 0..500 {
        if b.is_connected(&scope.identity()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("controller never attached");
}

#[test]
fn capabilities_are_truthful_and_off_by_default() {
    run(async {
        let gw = Gw::new().await;
        let r = gw.http.get(format!("{}/v1/capabilities", gw.url)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        let (st, v) = gw.get("/v1/capabilities").await;
        assert_eq!(st, StatusCode::OK);
        let f = &v["features"]["browser_extension_control"];
        assert_eq!(f["enabled"], false);
        assert_eq!(f["protocol_version"], 1);
        let mut sorted = ALL.to_vec();
        sorted.sort();
        assert_eq!(f["capabilities"], json!(sorted));
        assert_eq!(f["developer_capabilities"], json!(["browser_cdp", "browser_evaluate"]));
        assert_eq!(f["developer_mode"], false);
        assert_eq!(f["transports"]["local_vps"], "websocket-subprotocol-ticket");
        assert_eq!(
            v["endpoints"]["browser_control_register"],
            json!({"method": "POST", "path": "/v1/browser-control/register"})
        );
        assert_eq!(
            v["endpoints"]["browser_control_ws"],
            json!({"method": "GET", "path": "/v1/browser-control/ws"})
        );
        // off: registration and the socket are 404 (before auth)
        let (st, v) = post_raw(&gw, "/v1/browser-control/register", None, "{}").await;
        assert_eq!(
            (st, v["error"]["code"].as_str()),
            (StatusCode::NOT_FOUND, Some("browser_control_disabled"))
        );
        assert_eq!(connect(&gw, &"A".repeat(43)).await.err(), Some(404));
        // existing routes are still there
        assert_eq!(gw.get("/v1/sessions").await.0, StatusCode::OK);
        let on = Gw::with_config(enabled()).await;
        assert_eq!(
            on.get("/v1/capabilities").await.1["features"]["browser_extension_control"]["enabled"],
            true
        );
    })
}

#[test]
fn registration_follows_the_decision_ladder() {
    run(async {
        let gw = Gw::with_config(enabled()).await;
        let sid = gw.session(json!({})).await;
        let path = "/v1/browser-control/register";
        let ok = registration(&sid, "ctrl-1").to_string();
        let code = |v: &Value| v["error"]["code"].as_str().unwrap_or("").to_string();
        let (st, _) = post_raw(&gw, path, None, &ok).await;
        assert_eq!(st, StatusCode::UNAUTHORIZED);
        let (st, _) = post_raw(&gw, path, Some("wrong"), &ok).await;
        assert_eq!(st, StatusCode::UNAUTHORIZED);
        let (st, _) = post_raw(&gw, path, Some(KEY), "not json").await;
        assert_eq!(st, StatusCode::BAD_REQUEST);
        let (st, _) = post_raw(&gw, path, Some(KEY), "[1]").await;
        assert_eq!(st, StatusCode::BAD_REQUEST);
        for pv in [json!(2), json!(true), json!("1"), json!(1.5), Value::Null] {
            let mut b = registration(&sid, "ctrl-1");
            b["protocol_version"] = pv.clone();
            let (st, v) = gw.post(path, b).await;
            assert_eq!(
                (st, code(&v)),
                (StatusCode::BAD_REQUEST, "browser_control_protocol_unsupported".into()),
                "{pv}"
            );
        }
        for field in ["session_id", "controller_id", "browser_profile_id"] {
            for bad in [Value::Null, json!(""), json!(7)] {
                let mut b = registration(&sid, "ctrl-1");
                b[field] = bad;
                let (st, v) = gw.post(path, b).await;
                assert_eq!(
                    (st, code(&v)),
                    (StatusCode::BAD_REQUEST, "browser_control_invalid_registration".into())
                );
            }
        }
        let (st, v) = gw.post(path, registration("ses_nope", "ctrl-1")).await;
        assert_eq!(
            (st, code(&v)),
            (StatusCode::FORBIDDEN, "browser_control_session_forbidden".into())
        );
        for caps in [
            json!([]),
            json!(["run_js", "browser_console", 3]),
            json!("browser_click"),
        ] {
            let mut b = registration(&sid, "ctrl-1");
            b["capabilities"] = caps;
            let (st, v) = gw.post(path, b).await;
            assert_eq!(
                (st, code(&v)),
                (StatusCode::BAD_REQUEST, "browser_control_no_capabilities".into())
            );
        }
        let mut b = registration(&sid, "ctrl-1");
        b["capabilities"] = json!(["browser_click", "browser_cdp"]);
        let (st, v) = gw.post(path, b).await;
        assert_eq!(
            (st, code(&v)),
            (StatusCode::FORBIDDEN, "browser_control_developer_mode_required".into())
        );

        // success: exactly the allow-list, server-derived principal, local-api
        let mut b = registration(&sid, "ctrl-1");
        b["capabilities"] = json!(ALL
            .iter()
            .copied()
            .chain(["browser_artifact_upload", "run_js", "browser_console"])
            .collect::<Vec<_>>());
        b["principal_id"] = json!("principal:spoofed");
        let v = register(&gw, b).await;
        assert_eq!(v["protocol_version"], 1);
        assert_eq!(v["ws_path"], "/v1/browser-control/ws");
        let t = v["ticket"].as_str().unwrap();
        assert_eq!(t.len(), 43);
        assert!(t.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'));
        let secs = v["ticket_expires_in_seconds"].as_u64().unwrap();
        assert!(secs > 0 && secs <= 30);
        let now = tabgate_supervisor::now_epoch();
        let at = v["ticket_expires_at"].as_f64().unwrap();
        assert!(at > now && at <= now + 31.0);
        let s = &v["scope"];
        assert_eq!(s["principal_id"], tabgate_controller::principal_for("default", KEY));
        assert_eq!(s["profile_id"], "default");
        assert_eq!(s["session_id"], sid.as_str());
        assert_eq!(s["controller_id"], "ctrl-1");
        assert_eq!(s["browser_profile_id"], "chrome-profile-1");
        assert_eq!(s["transport_family"], "local-api");
        let mut sorted = ALL.to_vec();
        sorted.sort();
        assert_eq!(s["capabilities"], json!(sorted));
    })
}

#[test]
fn developer_mode_admits_developer_capabilities() {
    run(async {
        let cfg = "browser:\n  extension_control:\n    enabled: true\n    developer_mode: true\n";
        let gw = Gw::with_config(Config::parse(cfg).unwrap()).await;
        let sid = gw.session(json!({})).await;
        let mut b = registration(&sid, "ctrl-1");
        b["capabilities"] = json!(["browser_cdp", "browser_evaluate", "browser_click"]);
        let v = register(&gw, b).await;
        assert_eq!(
            v["scope"]["capabilities"],
            json!(["browser_cdp", "browser_click", "browser_evaluate"])
        );
    })
}

#[test]
fn the_socket_handshake_refuses_bad_tickets_before_the_upgrade() {
    run(async {
        let gw = Gw::with_config(enabled()).await;
        let b = broker(&gw);
        let sid = gw.session(json!({})).await;
        let v = register(&gw, registration(&sid, "ctrl-1")).await;
        let t = v["ticket"].as_str().unwrap().to_string();
        let ws = "/v1/browser-control/ws";
        let both = format!("hermes-browser-control-v1, hermes-browser-control-ticket.{t}");

        // feature switched off: 404, ticket kept
        b.set_enabled(false);
        assert_eq!(connect(&gw, &t).await.err(), Some(404));
        b.set_enabled(true);
        // ticket in the query string: 401, ticket kept
        assert_eq!(
            connect_with(&gw, &format!("{ws}?ticket={t}"), Some(&both)).await.err(),
            Some(401)
        );
        // subprotocols missing, or the version alone, or the ticket alone: 401, kept
        assert_eq!(connect_with(&gw, ws, None).await.err(), Some(401));
        assert_eq!(
            connect_with(&gw, ws, Some("hermes-browser-control-v1")).await.err(),
            Some(401)
        );
        let alone = format!("hermes-browser-control-ticket.{t}");
        assert_eq!(connect_with(&gw, ws, Some(&alone)).await.err(), Some(401));
        // two tickets: 401
        let other = register(&gw, registration(&sid, "ctrl-1")).await["ticket"]
            .as_str()
            .unwrap()
            .to_string();
        let doubled = format!("{both}, hermes-browser-control-ticket.{other}");
        assert_eq!(connect_with(&gw, ws, Some(&doubled)).await.err(), Some(401));
        // malformed and unknown: 401
        assert_eq!(connect(&gw, "not/a=ticket").await.err(), Some(401));
        assert_eq!(connect(&gw, &"A".repeat(43)).await.err(), Some(401));
        // the original ticket still works once, then never again
        let mut sock = connect(&gw, &t).await.expect("connect");
        assert_eq!(connect(&gw, &t).await.err(), Some(401));
        send(
            &mut sock,
            json!({"method": "browser.controller.heartbeat", "params": {"nonce": "n-1"}}),
        )
        .await;
        assert_eq!(
            next(&mut sock).await,
            json!({"method": "browser.controller.heartbeat", "params": {"nonce": "n-1", "ok": true}})
        );
        // the doubled-up second ticket was not consumed by the refused attempt
        assert!(connect(&gw, &other).await.is_ok());
    })
}

#[test]
fn an_expired_ticket_is_refused() {
    run(async {
        let gw = Gw::with_config(enabled()).await;
        let clock = ManualClock::new();
        let b = Arc::new(Broker::new(BrokerOptions {
            enabled: true,
            clock: Arc::new(clock.clone()),
            ..BrokerOptions::default()
        }));
        assert!(gw.server.as_ref().unwrap().gateway().set_broker(b));
        let sid = gw.session(json!({})).await;
        let t1 = register(&gw, registration(&sid, "ctrl-1")).await["ticket"]
            .as_str()
            .unwrap()
            .to_string();
        let t2 = register(&gw, registration(&sid, "ctrl-1")).await["ticket"]
            .as_str()
            .unwrap()
            .to_string();
        clock.advance(Duration::from_secs(29));
        assert!(connect(&gw, &t1).await.is_ok());
        clock.advance(Duration::from_secs(1));
        assert_eq!(connect(&gw, &t2).await.err(), Some(401));
    })
}

#[test]
fn commands_and_results_round_trip_over_the_socket() {
    run(async {
        let gw = Gw::with_config(enabled()).await;
        let b = broker(&gw);
        let sid = gw.session(json!({})).await;
        let v = register(&gw, registration(&sid, "ctrl-1")).await;
        let scope: Scope = serde_json::from_value(v["scope"].clone()).unwrap();
        let mut ws = connect(&gw, v["ticket"].as_str().unwrap()).await.unwrap();
        wait_connected(&b, &scope).await;
        assert_eq!(
            b.scope_for_session(&sid, &scope.principal_id, "local-api"),
            Some(scope.clone())
        );

        let task = dispatch(&b, &scope, "controller.noop", json!({"k": [1, 2]}), "call-1");
        let cmd = next(&mut ws).await;
        assert_eq!(cmd["method"], "browser.controller.command");
        let p = &cmd["params"];
        assert_eq!(
            (p["action"].as_str(), p["tool_call_id"].as_str()),
            (Some("controller.noop"), Some("call-1"))
        );
        assert_eq!(p["arguments"], json!({"k": [1, 2]}));
        assert_eq!(
            (p["controller_id"].as_str(), p["browser_profile_id"].as_str()),
            (Some("ctrl-1"), Some("chrome-profile-1"))
        );
        let id = p["command_id"].as_str().unwrap().to_string();
        assert_eq!(id.len(), 32);
        // junk, foreign and unknown results are ignored
        ws.send(Message::Text("not json".into())).await.unwrap();
        send(
            &mut ws,
            json!({"method": "browser.controller.result", "params": {"command_id": "ffff", "ok": true}}),
        )
        .await;
        send(&mut ws, json!({"method": "browser.controller.result", "params": {"command_id": id, "ok": true, "result": {"pong": 1}}})).await;
        assert_eq!(task.await.unwrap(), Ok(json!({"pong": 1})));
        // a duplicate result changes nothing
        send(
            &mut ws,
            json!({"method": "browser.controller.result", "params": {"command_id": id, "ok": true}}),
        )
        .await;

        // ok must be exactly true
        let task = dispatch(&b, &scope, "browser_click", json!({"ref": "e1"}), "call-2");
        let id = next(&mut ws).await["params"]["command_id"]
            .as_str()
            .unwrap()
            .to_string();
        send(&mut ws, json!({"method": "browser.controller.result",
            "params": {"command_id": id, "ok": "false", "result": "looks fine", "error": {"code": "no_such_ref", "message": "e1?"}}})).await;
        match task.await.unwrap() {
            Err(BrokerError::Rejected { error, .. }) => assert_eq!(error["code"], "no_such_ref"),
            r => panic!("{r:?}"),
        }
        assert_eq!(b.pending_count(), 0);
    })
}

#[test]
fn a_reconnect_on_a_new_socket_completes_work_started_on_the_old_one() {
    run(async {
        let gw = Gw::with_config(enabled()).await;
        let b = broker(&gw);
        let sid = gw.session(json!({})).await;
        let v = register(&gw, registration(&sid, "ctrl-1")).await;
        let scope: Scope = serde_json::from_value(v["scope"].clone()).unwrap();
        let mut old = connect(&gw, v["ticket"].as_str().unwrap()).await.unwrap();
        wait_connected(&b, &scope).await;
        let task = dispatch(&b, &scope, "browser_snapshot", json!({}), "call-1");
        let id = next(&mut old).await["params"]["command_id"]
            .as_str()
            .unwrap()
            .to_string();
        old.close(None).await.unwrap();
        drop(old);
        for _ in 0..500 {
            if !b.is_connected(&scope.identity()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(
            !b.is_connected(&scope.identity()),
            "a closed socket leaves the controller offline"
        );
        assert!(matches!(
            b.dispatch(&scope.identity(), "browser_snapshot", json!({}), "call-2")
                .await,
            Err(BrokerError::Unavailable(_))
        ));
        let v = register(&gw, registration(&sid, "ctrl-1")).await;
        let mut new = connect(&gw, v["ticket"].as_str().unwrap()).await.unwrap();
        wait_connected(&b, &scope).await;
        send(
            &mut new,
            json!({"method": "browser.controller.result", "params": {"command_id": id, "ok": true, "result": "tree"}}),
        )
        .await;
        assert_eq!(task.await.unwrap(), Ok(json!("tree")));
    })
}

#[test]
fn detach_is_hard_and_only_the_owner_may_detach() {
    run(async {
        let gw = Gw::with_config(enabled()).await;
        let b = broker(&gw);
        let sid = gw.session(json!({})).await;
        let v = register(&gw, registration(&sid, "ctrl-1")).await;
        let scope: Scope = serde_json::from_value(v["scope"].clone()).unwrap();
        let mut stale = connect(&gw, v["ticket"].as_str().unwrap()).await.unwrap();
        wait_connected(&b, &scope).await;
        // the same identity reconnects: the first socket is now stale
        let v = register(&gw, registration(&sid, "ctrl-1")).await;
        let mut live = connect(&gw, v["ticket"].as_str().unwrap()).await.unwrap();
        // the superseded socket is closed once the new one owns the controller
        closed(&mut stale).await;
        wait_connected(&b, &scope).await;
        let task = dispatch(
            &b,
            &scope,
            "browser_navigate",
            json!({"url": "https://example.com/"}),
            "call-1",
        );
        let _cmd = next(&mut live).await;
        // a detach from the superseded socket changes nothing
        send_maybe(&mut stale, json!({"method": "browser.controller.detach", "params": {}})).await;
        assert!(b.is_connected(&scope.identity()));
        send(&mut live, json!({"method": "browser.controller.detach", "params": {}})).await;
        assert_eq!(
            next(&mut live).await,
            json!({"method": "browser.controller.detach", "params": {"ok": true}})
        );
        assert!(matches!(task.await.unwrap(), Err(BrokerError::Cancelled(_))));
        assert!(!b.lane_registered(&sid, &scope.principal_id, "local-api"));
    })
}

#[test]
fn a_second_controller_id_replaces_the_first() {
    run(async {
        let gw = Gw::with_config(enabled()).await;
        let b = broker(&gw);
        let sid = gw.session(json!({})).await;
        let v1 = register(&gw, registration(&sid, "ctrl-1")).await;
        let s1: Scope = serde_json::from_value(v1["scope"].clone()).unwrap();
        let mut ws1 = connect(&gw, v1["ticket"].as_str().unwrap()).await.unwrap();
        wait_connected(&b, &s1).await;
        let task = dispatch(&b, &s1, "browser_click", json!({"ref": "e2"}), "call-1");
        let id = next(&mut ws1).await["params"]["command_id"]
            .as_str()
            .unwrap()
            .to_string();
        let v2 = register(&gw, registration(&sid, "ctrl-2")).await;
        let s2: Scope = serde_json::from_value(v2["scope"].clone()).unwrap();
        let mut ws2 = connect(&gw, v2["ticket"].as_str().unwrap()).await.unwrap();
        wait_connected(&b, &s2).await;
        assert!(matches!(task.await.unwrap(), Err(BrokerError::Cancelled(_))));
        // the replaced controller's socket is closed; a late result it may still get out is ignored
        send_maybe(
            &mut ws1,
            json!({"method": "browser.controller.result", "params": {"command_id": id, "ok": true}}),
        )
        .await;
        closed(&mut ws1).await;
        assert_eq!(
            b.scope_for_session(&sid, &s2.principal_id, "local-api"),
            Some(s2.clone())
        );
        let task = dispatch(&b, &s2, "browser_click", json!({"ref": "e2"}), "call-2");
        let id = next(&mut ws2).await["params"]["command_id"]
            .as_str()
            .unwrap()
            .to_string();
        send(&mut ws2, json!({"method": "browser.controller.result", "params": {"command_id": id, "ok": true, "result": "clicked"}})).await;
        assert_eq!(task.await.unwrap(), Ok(json!("clicked")));
    })
}
