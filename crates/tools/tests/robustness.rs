//! Hostile pages and bad input found by review: clipped nested frames, pages whose
//! JavaScript never yields, long text, URLs that are not URLs, selections a page reverts,
//! alert loops, dangerous raw CDP.

mod common;

use std::time::{Duration, Instant};

use common::{find_ref, run, T};
use serde_json::json;

#[test]
fn clicks_in_nested_frames_land_or_say_why_never_silently_miss() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("nest.html?d=8")).await;
        tokio::time::sleep(Duration::from_millis(300)).await; // frames created by script
        let snap = t.snapshot().await;
        for d in 0..=8 {
            let name = format!("depth {d}");
            let Some(r) = find_ref(&snap, "button", &name) else {
                panic!("{name} missing:\n{snap}")
            };
            t.site.clear_logs();
            let o = t.raw("browser_click", json!({"ref": r})).await;
            match &o.error {
                None => assert!(
                    t.log("nest", &d.to_string()).await,
                    "click on {name} reported success but did not land: {}",
                    o.text
                ),
                Some(e) => assert!(
                    matches!(e.code.as_str(), "not_visible" | "element_obscured"),
                    "{name}: {}",
                    o.text
                ),
            }
        }
    })
}

#[test]
fn a_page_that_never_yields_is_replaced_by_navigate() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("busy.html")).await;
        t.click("button", "Spin forever").await;
        assert!(t.log("spin", "start").await);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let start = Instant::now();
        let o = t.raw("browser_snapshot", json!({})).await;
        assert!(
            o.error.is_some(),
            "a snapshot of a page stuck in a loop cannot succeed: {}",
            o.text
        );
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "snapshot waited {:?}",
            start.elapsed()
        );
        let n = t.json("browser_navigate", json!({"url": t.site.a("other.html")})).await;
        assert!(
            n["recovered"].as_str().is_some_and(|r| r.contains("unresponsive")),
            "{n}"
        );
        assert!(t.log("other", "loaded").await);
        assert!(t.snapshot().await.contains("Other"));
    })
}

#[test]
fn bad_urls_long_text_reverted_selects_and_raw_cdp_limits() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("unicode.html")).await;
        t.err(
            "browser_navigate",
            json!({"url": "javascript:alert(1)"}),
            "invalid_argument",
        )
        .await;
        t.err("browser_navigate", json!({"url": "not a url"}), "invalid_argument")
            .await;
        assert!(
            t.s.supervisor().state().pending.is_empty(),
            "a refused javascript: URL must not run"
        );
        let notes = t.find("textbox", "Notes").await;
        let long = "lorem ipsum ".repeat(200);
        let start = Instant::now();
        let r = t.json("browser_type", json!({"ref": notes, "text": long})).await;
        assert_eq!(r["value"], long.as_str());
        assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
        t.err(
            "browser_type",
            json!({"ref": notes, "text": "x".repeat(100_001)}),
            "invalid_argument",
        )
        .await;
        t.err("browser_cdp", json!({"method": "Browser.close"}), "method_refused")
            .await;

        t.goto(&t.site.a("revert-select.html")).await;
        let sel = t.find("combobox", "Locked plan").await;
        let m = t
            .err(
                "browser_select_option",
                json!({"ref": sel, "values": ["Pro"]}),
                "selection_reverted",
            )
            .await;
        assert!(m.contains("Pro") && m.contains("Basic"), "{m}");
    })
}
