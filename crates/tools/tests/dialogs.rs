//! Dialogs never hang a tool: cases 1, 2, 5 and the alert/confirm/prompt round trips,
//! from the top frame, a same-origin frame and a cross-site (OOPIF) frame.

mod common;

use std::time::{Duration, Instant};

use common::{find_ref_after, run, T};
use serde_json::json;

#[test]
fn case1_click_opening_confirm_returns_with_marker_and_dismiss_reaches_page() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("dialogs.html")).await;
        let r = t.find("button", "Show confirm").await;
        let start = Instant::now();
        let c = t.json("browser_click", json!({"ref": r})).await;
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "click waited {:?}",
            start.elapsed()
        );
        assert_eq!(c["dialog"]["type"], "confirm");
        assert_eq!(c["dialog"]["message"], "Delete item 7?");
        assert!(c["dialog"]["tab_id"].is_string() && c["dialog"]["frame_id"].is_string());
        // while pending: every response carries the banner; snapshot does not hang
        let snap = t.raw("browser_snapshot", json!({})).await;
        assert!(snap.error.is_none());
        assert!(snap.text.contains("paused by a confirm dialog"), "{}", snap.text);
        let tabs = t.raw("browser_tabs", json!({})).await;
        assert!(tabs.text.contains("Pending confirm dialog"), "{}", tabs.text);
        t.ok("browser_dialog", json!({"action": "dismiss"})).await;
        assert!(t.log("confirm", "cancelled").await, "page did not see the dismissal");
        let snap = t.snapshot().await;
        assert!(!snap.contains("paused"), "{snap}");
    })
}

#[test]
fn alert_confirm_prompt_values_reach_the_page() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("dialogs.html")).await;
        t.click("button", "Show alert").await;
        t.ok("browser_dialog", json!({"action": "accept"})).await;
        assert!(t.log("alert", "closed").await);
        t.click("button", "Show confirm").await;
        t.ok("browser_dialog", json!({"action": "accept"})).await;
        assert!(t.log("confirm", "confirmed").await);
        let c = t.click("button", "Show prompt").await;
        assert_eq!(c["dialog"]["default_prompt"], "default-name");
        t.ok(
            "browser_dialog",
            json!({"action": "accept", "prompt_text": "Ada from MCP"}),
        )
        .await;
        assert!(t.log("prompt", "Ada from MCP").await);
        t.click("button", "Show prompt").await;
        t.ok("browser_dialog", json!({"action": "dismiss"})).await;
        assert!(t.log("prompt", "null").await);
        // nothing pending now: a clear error, not a hang
        let m = t.err("browser_dialog", json!({"action": "accept"}), "no_dialog").await;
        assert!(m.contains("no dialog"), "{m}");
        let recent = t.json("browser_snapshot", json!({})).await["recent_dialogs"].clone();
        assert_eq!(recent.as_array().map(Vec::len), Some(4));
        assert!(recent.as_array().unwrap().iter().all(|r| r["closed_by"] == "agent"));
    })
}

#[test]
fn case2_alert_during_load_returns_blocked_by_dialog_then_loads() {
    run(async {
        let t = T::new().await;
        let start = Instant::now();
        let n = t.goto(&t.site.a("alert-on-load.html")).await;
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "navigate waited {:?}",
            start.elapsed()
        );
        assert_eq!(n["status"], "blocked_by_dialog", "{n}");
        assert_eq!(n["dialog"]["type"], "alert");
        assert_eq!(n["dialog"]["message"], "stored message 42");
        let lc: Vec<String> = serde_json::from_value(n["lifecycle"].clone()).unwrap_or_default();
        assert!(lc.iter().any(|e| e == "commit"), "{lc:?}");
        assert!(!lc.iter().any(|e| e == "DOMContentLoaded"), "{lc:?}");
        t.ok("browser_dialog", json!({"action": "accept"})).await;
        assert!(t.log("loaded", "yes").await);
        let snap = t.snapshot().await;
        assert!(snap.contains("heading \"Loaded\""), "{snap}");
    })
}

#[test]
fn case5_beforeunload_is_reported_and_answerable_on_navigate_back_and_close() {
    run(async {
        let t = T::new().await;
        // navigate away from a dirty form: dismiss stays, accept leaves
        t.goto(&t.site.a("dirty-form.html")).await;
        let r = t.find("textbox", "Draft").await;
        t.ok("browser_type", json!({"ref": r, "text": "draft"})).await;
        assert!(t.log("dirty", "yes").await);
        let start = Instant::now();
        let n = t.goto(&t.site.a("other.html")).await;
        assert!(start.elapsed() < Duration::from_secs(5));
        assert_eq!(n["status"], "blocked_by_dialog", "{n}");
        assert_eq!(n["dialog"]["type"], "beforeunload");
        t.ok("browser_dialog", json!({"action": "dismiss"})).await;
        assert!(t
            .eval("location.pathname")
            .await
            .as_str()
            .unwrap()
            .ends_with("dirty-form.html"));
        let n = t.goto(&t.site.a("other.html")).await;
        assert_eq!(n["status"], "blocked_by_dialog");
        t.ok("browser_dialog", json!({"action": "accept"})).await;
        assert!(
            t.log("other", "loaded").await,
            "accepting beforeunload did not navigate"
        );

        // back() to the dirty page and away again through history
        t.goto(&t.site.a("dirty-form.html")).await;
        let r = t.find("textbox", "Draft").await;
        t.ok("browser_type", json!({"ref": r, "text": "again"})).await;
        let b = t.json("browser_back", json!({})).await;
        assert_eq!(b["status"], "blocked_by_dialog", "{b}");
        t.ok("browser_dialog", json!({"action": "accept"})).await;
        assert!(t.site.wait_log("other", "loaded", 5_000).await);

        // closing a tab with a dirty page runs beforeunload too
        let tabs = t
            .json(
                "browser_tabs",
                json!({"action": "new", "url": t.site.a("dirty-form.html")}),
            )
            .await;
        let new = tabs["opened"].as_str().unwrap().to_string();
        let r = t.find("textbox", "Draft").await;
        t.ok("browser_type", json!({"ref": r, "text": "x"})).await;
        let c = t.json("browser_tabs", json!({"action": "close", "tab_id": new})).await;
        assert_eq!(c["status"], "blocked_by_dialog", "{c}");
        t.ok("browser_dialog", json!({"action": "accept"})).await;
        let closed =
            t.s.supervisor()
                .wait_for(tokio::time::Instant::now() + Duration::from_secs(5), |st| {
                    st.tab(&new).filter(|x| x.state == "closed").map(|_| ())
                })
                .await;
        assert!(closed.is_some(), "tab was not closed after accepting beforeunload");
    })
}

#[test]
fn dialogs_from_same_origin_and_cross_site_frames() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("frame-dialogs.html")).await;
        let snap = t.snapshot().await;
        let same = find_ref_after(&snap, "Same-origin frame", "button", "Frame confirm").expect("same-origin button");
        let xsite = find_ref_after(&snap, "Cross-site frame", "button", "Frame confirm").expect("oopif button");
        let xprompt = find_ref_after(&snap, "Cross-site frame", "button", "Frame prompt").expect("oopif prompt");

        let c = t.json("browser_click", json!({"ref": same})).await;
        assert_eq!(c["dialog"]["message"], "confirm from same frame?");
        t.ok("browser_dialog", json!({"action": "accept"})).await;
        assert!(t.log("same-confirm", "confirmed").await);

        let c = t.json("browser_click", json!({"ref": xsite})).await;
        assert_eq!(c["dialog"]["message"], "confirm from xsite frame?", "{c}");
        t.ok("browser_dialog", json!({"action": "dismiss"})).await;
        assert!(t.log("xsite-confirm", "cancelled").await);

        let c = t.json("browser_click", json!({"ref": xprompt})).await;
        assert_eq!(c["dialog"]["type"], "prompt");
        t.ok(
            "browser_dialog",
            json!({"action": "accept", "prompt_text": "from the agent"}),
        )
        .await;
        assert!(t.log("xsite-prompt", "from the agent").await);
    })
}
