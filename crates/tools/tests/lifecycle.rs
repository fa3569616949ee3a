//! Lifecycle faults (issue 3): a dropped CDP socket is survived with pending dialogs kept,
//! repeated failure ends the session with a clear error, slow replies never hang a call,
//! and a dead launched browser is relaunched once.

mod common;

use std::time::{Duration, Instant};

use common::{browser, run};
use serde_json::json;
use tabgate_cdp::LaunchOptions;
use tabgate_supervisor::{Browser, SupervisorConfig};
use tabgate_testkit::{CdpProxy, Site};
use tabgate_tools::{Session, SessionConfig};

fn quick() -> SupervisorConfig {
    SupervisorConfig {
        reconnect_attempts: 3,
        reconnect_backoff_ms: 50,
        ..SupervisorConfig::default()
    }
}

async fn via_proxy() -> (CdpProxy, Session, Site) {
    let proxy = CdpProxy::start(browser().await.conn().url()).await;
    let b = Browser::attach(proxy.url()).await.expect("attach through the proxy");
    let s = Session::open(
        b,
        SessionConfig {
            supervisor: quick(),
            adopt_target: None,
        },
    )
    .await
    .expect("session");
    (proxy, s, Site::start().await)
}

fn find(snap: &str, name: &str) -> String {
    common::find_ref(snap, "button", name).unwrap_or_else(|| panic!("{name} in {snap}"))
}

#[test]
fn dropped_socket_reconnects_and_keeps_the_pending_dialog() {
    run(async {
        let (proxy, s, site) = via_proxy().await;
        s.call("browser_navigate", json!({"url": site.a("dialogs.html")})).await;
        let snap = s.call("browser_snapshot", json!({})).await.text;
        let c = s
            .call("browser_click", json!({"ref": find(&snap, "Show confirm")}))
            .await;
        assert!(c.text.contains("confirm"), "{}", c.text);
        proxy.drop_all();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let snap = s.call("browser_snapshot", json!({})).await;
        assert!(snap.error.is_none(), "{}", snap.text);
        assert!(
            snap.text.contains("Pending confirm dialog d-1") || snap.text.contains("paused by a confirm dialog"),
            "{}",
            snap.text
        );
        // Chromium lets only the connection that saw a native dialog answer it: say so
        let d = s.call("browser_dialog", json!({"action": "accept"})).await;
        let e = d.error.expect("stale dialog cannot be answered");
        assert_eq!(e.code, "dialog_unanswerable", "{}", e.message);
        assert!(e.message.contains("browser_navigate"), "{}", e.message);
        let n = s.call("browser_navigate", json!({"url": site.a("other.html")})).await;
        assert!(n.error.is_none(), "{}", n.text);
        assert!(
            site.wait_log("other", "loaded", 5_000).await,
            "navigating dismisses the stale dialog: {}",
            n.text
        );
        let st = s.call("browser_snapshot", json!({})).await;
        assert_eq!(
            st.structured.clone().unwrap()["pending_dialogs"],
            json!([]),
            "{}",
            st.text
        );
        s.close().await;
    })
}

#[test]
fn repeated_reconnect_failure_ends_the_session_with_a_clear_error() {
    run(async {
        let (proxy, s, site) = via_proxy().await;
        s.call("browser_navigate", json!({"url": site.a("v1.html")})).await;
        proxy.refuse(true);
        proxy.drop_all();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let o = s.call("browser_snapshot", json!({})).await;
        let e = o.error.expect("must fail once reconnects are exhausted");
        assert_eq!(e.code, "session_stopped", "{}", e.message);
        assert!(e.message.contains("reconnect attempts failed"), "{}", e.message);
    })
}

#[test]
fn slow_replies_hit_the_callers_deadline_not_a_hang() {
    run(async {
        let (proxy, s, site) = via_proxy().await;
        s.call("browser_navigate", json!({"url": site.a("v1.html")})).await;
        proxy.delay(3_000);
        let start = Instant::now();
        let o = s
            .call(
                "browser_navigate",
                json!({"url": site.a("v2.html"), "timeout_ms": 1000}),
            )
            .await;
        assert!(
            start.elapsed() < Duration::from_millis(2_500),
            "took {:?}",
            start.elapsed()
        );
        let e = o.error.expect("deadline error");
        assert_eq!(e.code, "navigation_timeout", "{}", e.message);
        proxy.delay(0);
    })
}

#[test]
fn dead_launched_browser_is_relaunched_once() {
    run(async {
        let opts = LaunchOptions {
            browser: Some(tabgate_testkit::chromium()),
            headless: true,
            startup_timeout_ms: 20_000,
            ..LaunchOptions::default()
        };
        let b = tokio::spawn(async move { Browser::launch(&opts).await.expect("launch") })
            .await
            .unwrap();
        let s = Session::open(
            b.clone(),
            SessionConfig {
                supervisor: quick(),
                adopt_target: None,
            },
        )
        .await
        .unwrap();
        let site = Site::start().await;
        s.call("browser_navigate", json!({"url": site.a("v1.html")})).await;
        let kill = |pid: u32| unsafe { libc_kill(pid as i32, 9) };
        kill(b.pid().await.unwrap());
        tokio::time::sleep(Duration::from_millis(300)).await;
        let n = s.call("browser_navigate", json!({"url": site.a("v2.html")})).await;
        assert!(
            n.error.is_none(),
            "after one relaunch the session works again: {}",
            n.text
        );
        assert!(
            site.wait_log("delete", "", 100).await
                || s.call("browser_snapshot", json!({})).await.text.contains("Version 2")
        );
        // a second death is reported, not relaunched again
        kill(b.pid().await.unwrap());
        tokio::time::sleep(Duration::from_millis(300)).await;
        let o = s.call("browser_snapshot", json!({})).await;
        let e = o.error.expect("second death is final");
        assert_eq!(e.code, "session_stopped", "{}", e.message);
        assert!(e.message.contains("reconnect attempts failed"), "{}", e.message);
        b.close().await;
    })
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}
