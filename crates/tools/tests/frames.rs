//! Frames: same-origin (case 7), cross-site OOPIFs nested A → B → A (case 8), a page whose
//! OOPIF and service worker must be resumed (case 12), shadow roots in frames (case 13).

mod common;

use std::time::{Duration, Instant};

use common::{find_ref, find_ref_after, run, T};
use serde_json::json;

#[test]
fn case7_same_origin_iframe_content_is_in_the_snapshot_and_actionable() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("iframe-same.html")).await;
        let snap = t.snapshot().await;
        let frame_line = snap
            .lines()
            .position(|l| l.contains("iframe \"Payment\""))
            .expect("iframe node");
        let card_line = snap
            .lines()
            .position(|l| l.contains("textbox \"Card number\""))
            .expect("card input");
        assert!(
            card_line > frame_line,
            "frame content must be nested under the iframe:\n{snap}"
        );
        let card = find_ref(&snap, "textbox", "Card number").unwrap();
        let pay = find_ref(&snap, "button", "Pay").unwrap();
        t.ok("browser_type", json!({"ref": card, "text": "4242"})).await;
        t.ok("browser_click", json!({"ref": pay})).await;
        assert!(t.log("pay", "4242").await, "click inside the frame did not land");
        let snap = t.snapshot().await;
        assert!(snap.contains("4242"), "{snap}");
    })
}

#[test]
fn case8_cross_site_frames_two_hops_click_and_type() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("oopif.html")).await;
        let s = t.json("browser_snapshot", json!({})).await;
        let snap = s["snapshot"].as_str().unwrap().to_string();
        let agree = find_ref(&snap, "checkbox", "I agree").expect(&snap);
        let cont = find_ref(&snap, "button", "Continue").expect(&snap);
        let inner = find_ref(&snap, "button", "Inner OK").expect(&snap);
        // both hops are OOPIFs with their own sessions in frame_tree
        let children = s["frame_tree"]["children"].as_array().unwrap();
        assert_eq!(
            children
                .iter()
                .filter(|c| c["is_oopif"] == true && c["session_id"].is_string())
                .count(),
            2,
            "{}",
            s["frame_tree"]
        );
        t.ok("browser_click", json!({"ref": agree})).await;
        assert!(t.log("agree", "true").await, "checkbox click in the OOPIF did not land");
        t.ok("browser_click", json!({"ref": cont})).await;
        assert!(t.log("continue", "continued:true").await);
        t.ok("browser_click", json!({"ref": inner})).await;
        assert!(t.log("inner", "ok").await, "click two OOPIF hops down did not land");
        let note = find_ref(&snap, "textbox", "Inner note").expect(&snap);
        let typed = t.json("browser_type", json!({"ref": note, "text": "two hops"})).await;
        assert_eq!(typed["value"], "two hops");
        assert!(
            t.log("inner-note", "two hops").await,
            "typing two OOPIF hops down did not land"
        );
    })
}

#[test]
fn case12_page_with_oopif_and_service_worker_finishes_loading() {
    run(async {
        let t = T::new().await;
        let start = Instant::now();
        let n = t.goto(&t.site.a("oopif-basic.html")).await;
        assert_eq!(n["status"], "complete", "{n}");
        assert!(start.elapsed() < Duration::from_secs(5), "took {:?}", start.elapsed());
        assert!(t.log("loaded", "yes").await);
        assert!(t.site.wait_log("hello", "loaded", 5_000).await);
        let snap = t.snapshot().await;
        assert!(snap.contains("iframe \"Hello\""), "{snap}");
    })
}

#[test]
fn case13_open_and_closed_shadow_roots_top_and_in_frame() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("shadow.html")).await;
        let snap = t.snapshot().await;
        let user = find_ref(&snap, "textbox", "User").expect(&snap);
        let signin = find_ref(&snap, "button", "Sign in").expect(&snap);
        let pay = find_ref(&snap, "button", "Pay now").expect(&snap);
        let fuser = find_ref_after(&snap, "Shadow frame", "textbox", "User").expect(&snap);
        let fsignin = find_ref_after(&snap, "Shadow frame", "button", "Sign in").expect(&snap);
        let fpay = find_ref_after(&snap, "Shadow frame", "button", "Pay now").expect(&snap);
        assert!(find_ref(&snap, "textbox", "Plain input").is_some());
        t.ok("browser_type", json!({"ref": user, "text": "ada"})).await;
        t.ok("browser_click", json!({"ref": signin})).await;
        assert!(t.log("top-signin", "ada").await);
        t.ok("browser_click", json!({"ref": pay})).await;
        assert!(
            t.log("top-pay", "paid").await,
            "click in a closed shadow root did not land"
        );
        t.ok("browser_type", json!({"ref": fuser, "text": "bob"})).await;
        t.ok("browser_click", json!({"ref": fsignin})).await;
        assert!(t.log("frame-signin", "bob").await);
        t.ok("browser_click", json!({"ref": fpay})).await;
        assert!(t.log("frame-pay", "paid").await);
    })
}

#[test]
fn browser_cdp_runs_on_an_oopif_session_and_refuses_same_origin_frames() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("frame-dialogs.html")).await;
        let s = t.json("browser_snapshot", json!({})).await;
        let children = s["frame_tree"]["children"].as_array().unwrap().clone();
        let oopif = children.iter().find(|c| c["is_oopif"] == true).expect("an oopif");
        let same = children
            .iter()
            .find(|c| c["is_oopif"] == false)
            .expect("a same-origin frame");
        let r = t
            .json("browser_cdp", json!({"method": "Runtime.evaluate", "params": {"expression": "location.origin", "returnByValue": true}, "frame_id": oopif["frame_id"]}))
            .await;
        assert_eq!(r["result"]["result"]["value"], t.site.origin_b());
        let m = t
            .err(
                "browser_cdp",
                json!({"method": "Runtime.evaluate", "frame_id": same["frame_id"]}),
                "not_oopif",
            )
            .await;
        assert!(m.contains("contentWindow"), "{m}");
        t.err(
            "browser_cdp",
            json!({"method": "Runtime.evaluate", "frame_id": "nope"}),
            "frame_not_found",
        )
        .await;
    })
}
