//! The supervisor to the full spec (issue 3): policies, watchdog, remote closes, the dialog
//! bridge against an auto-closing CDP client, frame-tree caps, console, dialog errors.

mod common;

use std::time::{Duration, Instant};

use common::{browser, run, T};
use serde_json::{json, Value};
use tabgate_cdp::{Connection, Event};
use tabgate_supervisor::{DialogAction, DialogPolicy, SupervisorConfig};

fn cfg(policy: DialogPolicy, timeout_ms: u64, bridge: bool) -> SupervisorConfig {
    SupervisorConfig {
        dialog_policy: policy,
        dialog_timeout_ms: timeout_ms,
        dialog_bridge: bridge,
        ..SupervisorConfig::default()
    }
}

#[test]
fn auto_dismiss_is_recorded_as_auto_policy_and_reported_by_the_action() {
    run(async {
        let t = T::with(cfg(DialogPolicy::all(DialogAction::AutoDismiss), 300_000, false)).await;
        t.goto(&t.site.a("dialogs.html")).await;
        let r = t.find("button", "Show confirm").await;
        let o = t.raw("browser_click", json!({"ref": r})).await;
        assert!(o.error.is_none(), "{}", o.text);
        assert!(o.text.contains("dismissed automatically"), "{}", o.text);
        let auto = &o.structured.as_ref().unwrap()["auto_handled_dialogs"];
        assert_eq!(auto[0]["closed_by"], "auto_policy", "{auto}");
        assert!(t.log("confirm", "cancelled").await);
        let s = t.json("browser_snapshot", json!({})).await;
        assert_eq!(s["pending_dialogs"], json!([]));
        assert_eq!(s["recent_dialogs"][0]["closed_by"], "auto_policy");
    })
}

#[test]
fn case4_auto_accepted_confirm_from_a_script_leaves_no_stale_state() {
    run(async {
        let t = T::with(cfg(DialogPolicy::all(DialogAction::AutoAccept), 300_000, false)).await;
        t.goto(&t.site.a("blank-log.html")).await;
        let o = t
            .raw(
                "browser_console",
                json!({"expression": "(() => { const r = confirm('proceed?'); document.getElementById('log').textContent = String(r); return 'done'; })()"}),
            )
            .await;
        assert!(o.error.is_none(), "{}", o.text);
        assert!(
            o.text.starts_with("done") && o.text.contains("accepted automatically"),
            "{}",
            o.text
        );
        let snap = t.snapshot().await;
        assert!(snap.contains("true"), "{snap}");
        assert!(!snap.contains("paused"), "{snap}");
    })
}

#[test]
fn case6_confirm_is_not_auto_accepted_by_default_and_per_type_policy_dismisses() {
    run(async {
        // default: surfaced to the agent, nothing destructive happens on its own
        let t = T::new().await;
        t.goto(&t.site.a("danger-confirm.html")).await;
        let c = t.click("button", "Close account").await;
        assert_eq!(c["dialog"]["message"], "Permanently close this account?");
        t.ok("browser_dialog", json!({"action": "dismiss"})).await;
        assert!(t.log("danger", "kept").await);
        assert!(!t.site.was_requested("/api/close"));
        // per type: alerts accepted, confirms dismissed, every decision reported
        let policy = DialogPolicy {
            alert: DialogAction::AutoAccept,
            confirm: DialogAction::AutoDismiss,
            ..DialogPolicy::default()
        };
        let t = T::with(cfg(policy, 300_000, false)).await;
        t.goto(&t.site.a("danger-confirm.html")).await;
        let r = t.find("button", "Close account").await;
        let o = t.raw("browser_click", json!({"ref": r})).await;
        assert!(o.text.contains("dismissed automatically"), "{}", o.text);
        assert!(t.log("danger", "kept").await);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !t.site.was_requested("/api/close"),
            "a confirm must never be accepted by this policy"
        );
    })
}

#[test]
fn must_respond_watchdog_dismisses_after_the_timeout() {
    run(async {
        let t = T::with(cfg(DialogPolicy::default(), 2_000, false)).await;
        t.goto(&t.site.a("dialogs.html")).await;
        let start = Instant::now();
        t.click("button", "Show confirm").await;
        assert!(
            t.site.wait_log("confirm", "cancelled", 6_000).await,
            "watchdog did not dismiss"
        );
        let waited = start.elapsed();
        assert!(
            waited >= Duration::from_millis(1_800),
            "dismissed too early: {waited:?}"
        );
        let s = t.json("browser_snapshot", json!({})).await;
        assert_eq!(s["recent_dialogs"][0]["closed_by"], "watchdog", "{s}");
        assert_eq!(s["pending_dialogs"], json!([]));
    })
}

#[test]
fn dialog_tool_errors_list_what_is_pending() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("dialogs.html")).await;
        let m = t.err("browser_dialog", json!({"action": "accept"}), "no_dialog").await;
        assert!(m.contains("no dialog"));
        t.click("button", "Show alert").await;
        t.json("browser_tabs", json!({"action": "new", "url": "about:blank"}))
            .await;
        t.goto(&t.site.a("alert-on-load.html")).await;
        let second = t.s.supervisor().state().current.clone().unwrap();
        // a third tab without a dialog: which of the two elsewhere is meant is ambiguous
        t.json("browser_tabs", json!({"action": "new", "url": "about:blank"}))
            .await;
        let m = t
            .err("browser_dialog", json!({"action": "accept"}), "ambiguous_dialog")
            .await;
        assert!(m.contains("d-1") && m.contains("d-2"), "{m}");
        let m = t
            .err(
                "browser_dialog",
                json!({"action": "accept", "dialog_id": "d-9"}),
                "unknown_dialog",
            )
            .await;
        assert!(m.contains("d-1"), "{m}");
        t.err("browser_dialog", json!({"action": "maybe"}), "invalid_argument")
            .await;
        t.ok("browser_dialog", json!({"action": "accept", "dialog_id": "d-1"}))
            .await;
        assert!(t.log("alert", "closed").await);
        // without an id, the dialog of the current tab is the one answered
        t.ok("browser_tab_activate", json!({"tab_id": second})).await;
        t.ok("browser_dialog", json!({"action": "accept"})).await;
        assert!(t.log("loaded", "yes").await);
    })
}

#[test]
fn frame_tree_is_capped_at_30_with_truncated() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("many-frames.html")).await;
        let s = t.json("browser_snapshot", json!({})).await;
        let tree = &s["frame_tree"];
        assert_eq!(tree["children"].as_array().unwrap().len(), 30, "{tree}");
        assert_eq!(tree["truncated"], true);
        // the snapshot itself still shows every frame's content
        assert!(
            s["snapshot"].as_str().unwrap().contains("Frame 39"),
            "{}",
            s["snapshot"]
        );
    })
}

#[test]
fn console_ring_reports_errors_and_exceptions_and_clears() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("console.html")).await;
        t.click("button", "Console error").await;
        t.click("button", "Throw exception").await;
        t.click("button", "Console log").await;
        assert!(t.log("console", "log 2").await);
        let c = t.json("browser_console", json!({})).await;
        let m = c["messages"].as_array().unwrap();
        assert!(m.iter().any(|e| e["level"] == "error" && e["text"] == "boom 1"), "{c}");
        assert!(
            m.iter()
                .any(|e| e["level"] == "exception" && e["text"].as_str().unwrap().contains("uncaught kaboom")),
            "{c}"
        );
        assert!(m.iter().all(|e| e["time"].as_f64().unwrap() > 0.0));
        assert!(
            !m.iter().any(|e| e["text"].as_str().unwrap().contains("hello log")),
            "plain logs are not errors"
        );
        t.json("browser_console", json!({"clear": true})).await;
        assert_eq!(t.json("browser_console", json!({})).await["messages"], json!([]));
    })
}

/// A second CDP client on the same browser that dismisses every native dialog of `tab`
/// within milliseconds, like a hosted browser's proxy does.
async fn auto_closer(tab: &str) -> tokio::task::JoinHandle<()> {
    let url = browser().await.conn().url().to_string();
    let conn = Connection::connect(&url, 5_000).await.expect("second client");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let sink = conn.subscribe(tx);
    let sid = conn.attach_to_target(tab, sink, 5_000).await.expect("attach");
    conn.call(Some(&sid), "Page.enable", json!({}), 5_000)
        .await
        .expect("Page.enable");
    tokio::spawn(async move {
        while let Some(ev) = rx.recv().await {
            let Event::Cdp { session_id, method, .. } = ev else {
                break;
            };
            if method == "Page.javascriptDialogOpening" {
                let c = conn.clone();
                tokio::spawn(async move {
                    let _ = c
                        .call(
                            session_id.as_deref(),
                            "Page.handleJavaScriptDialog",
                            json!({"accept": false}),
                            5_000,
                        )
                        .await;
                });
            }
        }
    })
}

fn tab_of(t: &T) -> String {
    t.s.supervisor().state().current.clone().unwrap()
}

#[test]
fn dialog_bridge_round_trips_values_despite_an_auto_closing_client() {
    run(async {
        // without the bridge, the agent still learns of each dialog: closed_by remote
        let t = T::new().await;
        let closer = auto_closer(&tab_of(&t)).await;
        t.goto(&t.site.a("dialogs.html")).await;
        let r = t.find("button", "Show confirm").await;
        t.raw("browser_click", json!({"ref": r})).await;
        assert!(
            t.log("confirm", "cancelled").await,
            "the auto-closer should have dismissed it"
        );
        let remote =
            t.s.supervisor()
                .wait_for(tokio::time::Instant::now() + Duration::from_secs(3), |st| {
                    st.recent.iter().find(|r| r.closed_by == "remote").cloned()
                })
                .await;
        assert!(
            remote.is_some_and(|r| r.kind == "confirm"),
            "dialog closed by another client must read as remote"
        );

        // with the bridge, values reach page JS: alert, confirm accept, confirm dismiss, prompt
        let t = T::with(cfg(DialogPolicy::default(), 300_000, true)).await;
        let closer2 = auto_closer(&tab_of(&t)).await;
        t.goto(&t.site.a("dialogs.html")).await;
        let mut ok = 0;
        let cases: [(&str, Value, &str, &str); 4] = [
            ("Show alert", json!({"action": "accept"}), "alert", "closed"),
            ("Show confirm", json!({"action": "accept"}), "confirm", "confirmed"),
            ("Show confirm", json!({"action": "dismiss"}), "confirm", "cancelled"),
            (
                "Show prompt",
                json!({"action": "accept", "prompt_text": "bridged"}),
                "prompt",
                "bridged",
            ),
        ];
        for (button, answer, key, expect) in cases {
            t.site.clear_logs();
            let c = t.click("button", button).await;
            assert!(c["dialog"].is_object(), "{button}: {c}");
            t.ok("browser_dialog", answer).await;
            if t.log(key, expect).await {
                ok += 1;
            }
        }
        assert_eq!(ok, 4, "bridge round trips");
        closer.abort();
        closer2.abort();
    })
}
