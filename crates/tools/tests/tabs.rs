//! Tabs: popups reported in the click result (case 22), crashes and self-closing popups
//! (case 27), and sessions that never touch each other's tabs.

mod common;

use std::time::Duration;

use common::{run, T};
use serde_json::json;
use tokio::time::Instant;

#[test]
fn case22_clicks_report_the_tabs_they_open() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("popups.html")).await;
        let me = t.s.supervisor().state().current.clone().unwrap();
        let c = t.click("link", "Report").await;
        let opened = c["opened_tabs"]
            .as_array()
            .unwrap_or_else(|| panic!("no opened_tabs in {c}"));
        assert_eq!(opened.len(), 1, "{c}");
        assert_eq!(opened[0]["opener_tab"], me.as_str());
        assert_eq!(opened[0]["cause"], "click");
        assert!(t.log("opened", "report").await);
        let c = t.click("button", "Preview").await;
        assert_eq!(c["opened_tabs"].as_array().map(Vec::len), Some(1), "{c}");
        assert!(
            c["opened_tabs"][0]["url"].as_str().unwrap().contains("preview.html"),
            "{c}"
        );
        assert!(t.log("opened", "preview").await);
        let tabs = t.json("browser_tabs", json!({})).await["tabs"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(tabs.len(), 3, "{tabs:?}");
        let preview = tabs
            .iter()
            .find(|x| x["url"].as_str().unwrap().contains("preview.html"))
            .unwrap_or_else(|| panic!("preview tab missing: {tabs:?}"));
        assert_eq!(preview["kind"], "popup");
        assert_eq!(preview["current"], false, "default follow policy is stay");
        t.ok("browser_tab_activate", json!({"tab_id": preview["tab_id"]})).await;
        let snap = t.snapshot().await;
        assert!(snap.contains("preview.html"), "{snap}");
    })
}

#[test]
fn case27_crashed_tab_is_reported_and_navigate_recovers() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("crash.html")).await;
        let _ = t.raw("browser_cdp", json!({"method": "Page.crash"})).await;
        let crashed =
            t.s.supervisor()
                .wait_for(Instant::now() + Duration::from_secs(5), |st| {
                    st.tabs.iter().any(|x| x.state == "crashed").then_some(())
                })
                .await;
        assert!(crashed.is_some(), "crash not noticed");
        let m = t.err("browser_snapshot", json!({}), "tab_crashed").await;
        assert!(m.contains("browser_navigate"), "{m}");
        let tabs = t.json("browser_tabs", json!({})).await;
        assert!(tabs["tabs"].as_array().is_some());
        let n = t.goto(&t.site.a("other.html")).await;
        assert_eq!(n["status"], "complete", "{n}");
        assert!(n["recovered"].is_string());
        assert!(t.log("other", "loaded").await);
        assert!(t.snapshot().await.contains("Other"));
    })
}

#[test]
fn case27_self_closing_popup_leaves_the_session_usable() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("crash.html")).await;
        let c = t.click("button", "Open self-closing popup").await;
        let popup = c["opened_tabs"][0]["tab_id"]
            .as_str()
            .expect("popup reported")
            .to_string();
        t.ok("browser_tab_activate", json!({"tab_id": popup})).await;
        assert!(t.site.wait_log("selfclose", "closing", 5_000).await);
        let gone =
            t.s.supervisor()
                .wait_for(Instant::now() + Duration::from_secs(5), |st| {
                    st.tab(&popup).filter(|x| x.state == "closed").map(|_| ())
                })
                .await;
        assert!(gone.is_some(), "popup close not noticed");
        // the session fell back to the opener and every tool works
        let tabs = t.json("browser_tabs", json!({})).await;
        assert_eq!(tabs["tabs"].as_array().unwrap().len(), 1, "{tabs}");
        assert!(t.snapshot().await.contains("Crash test"));
        t.goto(&t.site.a("other.html")).await;
    })
}

#[test]
fn two_sessions_on_one_browser_never_touch_each_other() {
    run(async {
        let a = T::new().await;
        let b = T::new().await;
        a.goto(&a.site.a("v1.html")).await;
        b.goto(&b.site.a("v2.html")).await;
        let ta = a.json("browser_tabs", json!({})).await;
        let tb = b.json("browser_tabs", json!({})).await;
        assert_eq!(ta["tabs"].as_array().unwrap().len(), 1);
        assert_eq!(tb["tabs"].as_array().unwrap().len(), 1);
        assert_ne!(ta["tabs"][0]["tab_id"], tb["tabs"][0]["tab_id"]);
        assert!(a.snapshot().await.contains("Version 1"));
        assert!(b.snapshot().await.contains("Version 2"));
        // a dialog in A's tab does not block B
        a.goto(&a.site.a("dialogs.html")).await;
        a.click("button", "Show alert").await;
        assert!(b.snapshot().await.contains("Version 2"));
        let e = b.err("browser_dialog", json!({"action": "accept"}), "no_dialog").await;
        assert!(e.contains("no dialog"));
        // B cannot activate A's tab
        b.err(
            "browser_tab_activate",
            json!({"tab_id": ta["tabs"][0]["tab_id"]}),
            "unknown_tab",
        )
        .await;
        a.ok("browser_dialog", json!({"action": "accept"})).await;
        assert!(a.log("alert", "closed").await);
    })
}
