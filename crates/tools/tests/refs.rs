//! Refs are bound to node identity (case 14) and bad refs are clear errors.

mod common;

use common::{find_ref, run, T};
use serde_json::json;

#[test]
fn case14_ref_from_replaced_document_is_stale_not_silently_applied() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("v1.html")).await;
        let snap = t.snapshot().await;
        let del = find_ref(&snap, "button", "Delete").unwrap();
        // same-document navigation keeps refs valid
        let push = find_ref(&snap, "button", "Push state").unwrap();
        t.ok("browser_click", json!({"ref": push})).await;
        assert!(t.log("pushstate", "?x=1").await);
        let snap2 = t.snapshot().await;
        assert_eq!(
            find_ref(&snap2, "button", "Delete").as_deref(),
            Some(del.as_str()),
            "same node keeps its ref"
        );
        // a click-triggered navigation replaces the document
        let link = find_ref(&snap2, "link", "Go to v2").unwrap();
        t.ok("browser_click", json!({"ref": link})).await;
        assert!(t
            .s
            .supervisor()
            .wait_for(tokio::time::Instant::now() + std::time::Duration::from_secs(5), |st| {
                st.tabs.iter().any(|x| x.url.ends_with("v2.html")).then_some(())
            })
            .await
            .is_some());
        let m = t.err("browser_click", json!({"ref": del}), "stale_ref").await;
        assert!(
            m.contains("document replaced by navigation (loaderId changed)") && m.contains("take a new snapshot"),
            "{m}"
        );
        assert_eq!(t.site.last("delete"), None, "the stale click must not land on v2");
        // the new page's Delete has a new ref, never the old one
        let snap3 = t.snapshot().await;
        let del2 = find_ref(&snap3, "button", "Delete").unwrap();
        assert_ne!(del2, del);
        t.ok("browser_click", json!({"ref": del2})).await;
        assert!(t.log("delete", "deleted-v2").await);
    })
}

#[test]
fn unknown_refs_and_bad_arguments_are_clear_errors() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("v1.html")).await;
        t.err("browser_click", json!({"ref": "e999999"}), "unknown_ref").await;
        t.err("browser_click", json!({}), "invalid_argument").await;
        t.err("browser_click", json!({"ref": 5}), "invalid_argument").await;
        t.err("browser_click", json!({"ref": "e1", "force": true}), "invalid_argument")
            .await;
        t.err("browser_scroll", json!({"direction": "sideways"}), "invalid_argument")
            .await;
        t.err("browser_nope", json!({}), "unknown_tool").await;
        t.err("browser_press", json!({"key": "Hyper+Q"}), "invalid_argument")
            .await;
        // still usable afterwards
        let snap = t.snapshot().await;
        assert!(snap.contains("Version 1"), "{snap}");
        // a failed navigation is an error naming the cause; the tab stays usable
        let m = t
            .err(
                "browser_navigate",
                json!({"url": "http://127.0.0.1:1/", "timeout_ms": 5000}),
                "navigation_failed",
            )
            .await;
        assert!(m.contains("ERR_"), "{m}");
        t.goto(&t.site.a("v2.html")).await;
        assert!(t.snapshot().await.contains("Version 2"));
    })
}
