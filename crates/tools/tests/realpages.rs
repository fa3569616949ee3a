//! Real pages: the interaction classes agents trip on (cases 10, 17, 18, 23, 24, 25, 28),
//! each driven in real Chromium and checked against what the page itself reports.

mod common;

use std::time::{Duration, Instant};

use common::{find_ref, run, T};
use serde_json::{json, Value};

fn elapsed_ms(t0: Instant) -> u64 {
    t0.elapsed().as_millis() as u64
}

#[test]
fn case23_downloads_are_reported_with_name_bytes_state_and_path() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("download.html")).await;
        let dir = t.s.download_dir();

        // a link to an attachment response
        let r = t.click("link", "Get report").await;
        let d = &r["downloads"][0];
        assert_eq!(d["suggested_filename"], "report.csv", "{r}");
        assert_eq!(d["state"], "completed", "{r}");
        assert_eq!(d["bytes"], 5_000_000, "{r}");
        let path = std::path::PathBuf::from(d["path"].as_str().expect("path"));
        assert_eq!(
            path.parent(),
            Some(dir.as_path()),
            "saved in the session's directory: {r}"
        );
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 5_000_000);

        // a blob: URL through a temporary <a download>
        let r = t.click("button", "Download blob").await;
        assert!(t.log("blob", "clicked").await);
        let d = &r["downloads"][0];
        assert_eq!(d["suggested_filename"], "blob-report.csv", "{r}");
        assert_eq!(d["state"], "completed", "{r}");
        assert_eq!(
            std::fs::read_to_string(d["path"].as_str().unwrap()).unwrap(),
            "a,b\n1,2\n"
        );

        // navigating to an attachment is a download, not a failed navigation; names are sanitised
        let r = t
            .json(
                "browser_navigate",
                json!({"url": t.site.a("attachment?name=..%2F..%2Fnotes.txt&size=1234")}),
            )
            .await;
        assert_eq!(r["status"], "download", "{r}");
        let name = r["download"]["suggested_filename"].as_str().unwrap();
        assert!(!name.contains('/') && !name.starts_with('.'), "{r}");
        assert_eq!(r["download"]["bytes"], 1234);
        assert!(
            r["url"].as_str().unwrap().ends_with("download.html"),
            "the tab stays: {r}"
        );

        // the same name again gets its own file
        let r2 = t.click("link", "Get report").await;
        assert_ne!(r2["downloads"][0]["path"], json!(path.to_string_lossy()), "{r2}");

        // the tab survived and lists the downloads
        let tabs = t.json("browser_tabs", json!({})).await;
        assert_eq!(tabs["downloads"].as_array().unwrap().len(), 4, "{tabs}");
        let snap = t.snapshot().await;
        assert!(snap.contains("heading \"Downloads\""), "{snap}");
    })
}

#[test]
fn case25_never_loading_page_returns_partial_with_outstanding_requests() {
    run(async {
        let t = T::new().await;
        let url = t.site.a("never-load.html");
        let t0 = Instant::now();
        let r = t
            .json(
                "browser_navigate",
                json!({"url": url, "wait_until": "load", "timeout_ms": 3000}),
            )
            .await;
        let ms = elapsed_ms(t0);
        assert!((2_900..4_500).contains(&ms), "explicit timeout honoured: {ms} ms");
        assert_eq!(r["status"], "partial", "{r}");
        let lc: Vec<&str> = r["lifecycle"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(lc.contains(&"DOMContentLoaded") && !lc.contains(&"load"), "{r}");
        let out = r["outstanding_requests"].as_array().unwrap();
        assert!(
            out.iter().any(|q| q["url"].as_str().unwrap().ends_with("/hang")),
            "the request holding load is named: {r}"
        );
        // the page is usable
        t.click("button", "Go").await;
        assert!(t.log("never-load", "clicked").await);

        // defaults: DOMContentLoaded, then load capped
        let t0 = Instant::now();
        let r = t.goto(&url).await;
        assert_eq!(r["status"], "partial", "{r}");
        assert!(elapsed_ms(t0) < 8_000);

        // domcontentloaded only
        let r = t
            .json(
                "browser_navigate",
                json!({"url": url, "wait_until": "domcontentloaded"}),
            )
            .await;
        assert_eq!(r["status"], "complete", "{r}");

        // a slow document within the deadline is complete
        let slow = t.site.a("slow?ms=1500&page=hello.html");
        let r = t
            .json("browser_navigate", json!({"url": slow, "timeout_ms": 20_000}))
            .await;
        assert_eq!(r["status"], "complete", "{r}");

        // a document slower than the deadline: the deadline is kept and the error says why
        let slower = t.site.a("slow?ms=5000&page=hello.html");
        let t0 = Instant::now();
        let o = t
            .raw("browser_navigate", json!({"url": slower, "timeout_ms": 1000}))
            .await;
        let ms = elapsed_ms(t0);
        let e = o.error.expect("timeout error");
        assert_eq!(e.code, "navigation_timeout");
        assert!((950..2_500).contains(&ms), "explicit timeout honoured: {ms} ms");
        assert!(o.text.contains("/slow"), "{}", o.text);
        tokio::time::sleep(Duration::from_millis(10)).await;
    })
}

/// Case 10 on one page: find, wait_for and snapshot{search} reach the heading inside the
/// iframe, and its ref acts there.
async fn locate_inner_text(t: &T, page: &str) -> Value {
    t.goto(&t.site.a(page)).await;
    let f = t.json("browser_find", json!({"text": "Inner text"})).await;
    assert_eq!(f["total"], 1, "{f}");
    let m = &f["matches"][0];
    assert_eq!(m["role"], "heading", "{f}");
    assert_eq!(m["frames"], json!(["Inner"]), "{f}");
    assert_ne!(
        m["frame_id"],
        json!(t.s.supervisor().state().current.clone()),
        "in the child frame: {f}"
    );
    let r = m["ref"].as_str().unwrap().to_string();
    // the ref acts in the frame: a screenshot of it, and a subtree snapshot of it
    let shot = t.raw("browser_screenshot", json!({"ref": r})).await;
    assert!(shot.error.is_none() && shot.image_png.is_some(), "{}", shot.text);
    let sub = t.ok("browser_snapshot", json!({"ref": r})).await;
    assert!(sub.contains("heading \"Inner text\""), "{sub}");
    let w = t
        .json("browser_wait_for", json!({"text": "Inner text", "timeout_ms": 2000}))
        .await;
    assert_eq!(w["matches"][0]["ref"], m["ref"], "{w}");
    let s = t.ok("browser_snapshot", json!({"search": "Inner"})).await;
    assert!(s.contains("heading \"Inner text\""), "{s}");
    assert!(s.contains("iframe \"Inner\""), "{s}");
    assert!(
        !s.contains("Outer text"),
        "search shows matches and their ancestors only: {s}"
    );
    // gone: Outer text stays, so waiting for it to go times out
    let e = t
        .err(
            "browser_wait_for",
            json!({"gone": "Outer text", "timeout_ms": 300}),
            "wait_timeout",
        )
        .await;
    assert!(e.contains("Outer text"), "{e}");
    json!({"role": m["role"], "name": m["name"], "frames": m["frames"], "total": f["total"]})
}

#[test]
fn case10_find_and_wait_walk_the_same_frames_as_the_snapshot() {
    run(async {
        let t = T::new().await;
        let same = locate_inner_text(&t, "iframe-text.html").await;
        let xsite = locate_inner_text(&t, "iframe-text-xsite.html").await;
        assert_eq!(same, xsite, "same-origin and OOPIF results are identical");
        // wait_for sees text that appears later, in a frame
        t.goto(&t.site.a("iframe-text.html")).await;
        t.eval("setTimeout(function(){ var d = document.querySelector('iframe').contentDocument; var p = d.createElement('p'); p.textContent = 'Late arrival'; d.body.appendChild(p); }, 400)")
            .await;
        let w = t
            .json("browser_wait_for", json!({"text": "Late arrival", "timeout_ms": 5000}))
            .await;
        assert_eq!(w["matches"][0]["frames"], json!(["Inner"]), "{w}");
        let f = t
            .json("browser_find", json!({"role": "heading", "name": "outer"}))
            .await;
        assert_eq!(f["total"], 1, "{f}");
        assert_eq!(f["matches"][0]["frames"], json!([]), "{f}");
    })
}

#[test]
fn case17_native_and_custom_selects_are_read_back() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("selects.html")).await;
        let snap = t.snapshot().await;
        let native = find_ref(&snap, "combobox", "Program").expect("native select");
        let r = t
            .json("browser_select_option", json!({"ref": native, "values": ["Nutrition"]}))
            .await;
        assert_eq!(r["selected"], json!(["Nutrition"]), "{r}");
        assert!(
            t.log("native", "Nutrition").await,
            "the framework kept it: {:?}",
            t.site.logs()
        );
        // a framework that always puts the old value back
        let locked = find_ref(&snap, "combobox", "Plan").expect("locked select");
        let m = t
            .err(
                "browser_select_option",
                json!({"ref": locked, "values": ["Premium"]}),
                "selection_reverted",
            )
            .await;
        assert!(m.contains("Basic"), "{m}");
        // an ARIA combobox whose listbox is mounted at the end of <body> when opened
        let combo = find_ref(&snap, "combobox", "Service").expect("custom combobox");
        let r = t
            .json("browser_select_option", json!({"ref": combo, "values": ["Coaching"]}))
            .await;
        assert_eq!(r["selected"], json!(["Coaching"]), "{r}");
        assert!(t.log("combo", "Coaching").await);
        let m = t
            .err(
                "browser_select_option",
                json!({"ref": combo, "values": ["Nonexistent"]}),
                "missing_option",
            )
            .await;
        assert!(
            m.contains("Nutrition") && m.contains("Coaching") && m.contains("Therapy"),
            "lists the options: {m}"
        );
    })
}

#[test]
fn case18_hover_opens_a_css_hover_menu_and_the_click_lands() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("hover-menu.html")).await;
        let before = t.snapshot().await;
        assert!(!before.contains("Laptops"), "hidden until hovered: {before}");
        let f = t.json("browser_find", json!({"text": "Products"})).await;
        let products = f["matches"][0]["ref"].as_str().expect("a ref for Products").to_string();
        t.ok("browser_hover", json!({"ref": products})).await;
        let laptops = t.find("link", "Laptops").await;
        t.ok("browser_click", json!({"ref": laptops})).await;
        assert!(t.log("menu", "laptops").await, "{:?}", t.site.logs());
    })
}

#[test]
fn case24_upload_through_the_chooser_or_the_input() {
    run(async {
        let t = T::new().await;
        let dir = tempfile_dir("upload");
        let a = dir.join("a.txt");
        let b = dir.join("b.png");
        std::fs::write(&a, "hello").unwrap();
        std::fs::write(&b, [0x89u8, b'P', b'N', b'G', 0, 0, 0, 0]).unwrap();
        let paths = json!([a.to_string_lossy(), b.to_string_lossy()]);
        t.goto(&t.site.a("upload.html")).await;
        // a styled button that forwards to a hidden <input type=file>
        let button = t.find("button", "Upload files").await;
        let r = t.json("browser_upload", json!({"ref": button, "paths": paths})).await;
        assert_eq!(r["via"], "file_chooser", "{r}");
        assert!(
            t.log("files", r#"[["a.txt",5],["b.png",8]]"#).await,
            "{:?}",
            t.site.logs()
        );
        // a drop zone that opens the chooser
        let zone = t.find("button", "Drop zone").await;
        t.json("browser_upload", json!({"ref": zone, "paths": [a.to_string_lossy()]}))
            .await;
        assert!(t.log("files", r#"[["a.txt",5]]"#).await);
        // the file input itself (visually hidden, reached through its label)
        let doc = t.find("button", "Attach a document").await;
        let r = t
            .json("browser_upload", json!({"ref": doc, "paths": [b.to_string_lossy()]}))
            .await;
        assert_eq!(r["via"], "input", "{r}");
        assert!(t.log("doc", r#"[["b.png",8]]"#).await);
        // a chooser opened by a plain click is one pending state, answered or cancelled
        t.ok("browser_click", json!({"ref": button})).await;
        let c = t.raw("browser_click", json!({"ref": button})).await;
        assert!(c.text.contains("file chooser"), "the click says so: {}", c.text);
        let r = t.json("browser_upload", json!({"paths": []})).await;
        assert_eq!(r["cancelled"], true, "{r}");
        t.err("browser_upload", json!({"paths": []}), "no_file_chooser").await;
        // paths outside the allowed roots are refused
        let m = t
            .err(
                "browser_upload",
                json!({"ref": button, "paths": ["/etc/hostname"]}),
                "path_not_allowed",
            )
            .await;
        assert!(m.contains("/etc/hostname"), "{m}");
        t.err(
            "browser_upload",
            json!({"ref": button, "paths": ["relative.txt"]}),
            "invalid_argument",
        )
        .await;
        // the tab is alive
        assert!(t.snapshot().await.contains("heading \"Upload\""));
        let _ = std::fs::remove_dir_all(&dir);
    })
}

fn tempfile_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("tabgate-test-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn case28_huge_page_fits_the_budget_and_every_part_is_reachable() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("huge.html")).await;
        // default: under the budget, with a marker, and the footer is still there
        let o = t.raw("browser_snapshot", json!({})).await;
        let s = o.text.clone();
        let v = o.structured.unwrap();
        assert!(s.chars().count() < 80_000, "{} chars", s.chars().count());
        assert!(s.contains("[Snapshot limited to ~24,000 tokens"), "{}", &s[..400]);
        assert!(
            v["truncated"]["total_nodes"].as_u64().unwrap() > 40_000,
            "{}",
            v["truncated"]
        );
        assert!(s.contains("link \"Section 50\""), "short lists are whole");
        assert!(s.contains("button \"Subscribe\""), "the footer is kept");
        let marker = s
            .lines()
            .find(|l| l.contains("more not shown"))
            .expect("a cut list says so");
        assert!(marker.contains("browser_snapshot{\"ref\": \"e"), "{marker}");
        // a smaller budget
        let small = t.ok("browser_snapshot", json!({"max_tokens": 4000})).await;
        assert!(small.chars().count() < 4000 * 3 + 2000, "{}", small.chars().count());
        // only what can be acted on
        let io = t.ok("browser_snapshot", json!({"interactive_only": true})).await;
        assert!(!io.contains("row \""), "no rows in interactive_only");
        // a window of the table
        let table = find_ref(&s, "table", "Endpoints").expect("the cut table has a ref");
        let page = t
            .ok("browser_snapshot", json!({"ref": table, "offset": 10000, "limit": 50}))
            .await;
        assert!(
            page.contains("row \"10000 | endpoint-10000"),
            "{}",
            &page[..page.len().min(800)]
        );
        assert!(page.contains("row \"10049 | endpoint-10049"));
        assert!(!page.contains("endpoint-10050 "), "limit honoured");
        assert!(page.contains("earlier items not shown") && page.contains("more items not shown"));
        // the footer form by find, without paging
        let f = t.json("browser_find", json!({"text": "Subscribe"})).await;
        let sub = f["matches"][0]["ref"].as_str().unwrap().to_string();
        let f = t
            .json("browser_find", json!({"role": "textbox", "name": "Email"}))
            .await;
        let email = f["matches"][0]["ref"].as_str().unwrap().to_string();
        t.ok("browser_type", json!({"ref": email, "text": "a@b.example"})).await;
        t.ok("browser_click", json!({"ref": sub})).await;
        assert!(t.log("subscribe", "a@b.example").await);
        // Edit of row 3, found by its row
        let f = t
            .json("browser_find", json!({"role": "button", "name": "Edit", "limit": 5}))
            .await;
        assert_eq!(f["total"], 20_000, "{}", f["total"]);
        let third = f["matches"][2].clone();
        assert!(third["context"].as_str().unwrap().starts_with("row \"3 |"), "{third}");
        t.ok("browser_click", json!({"ref": third["ref"]})).await;
        assert!(t.log("edit", "3").await);
    })
}

#[test]
fn clickable_spans_icon_buttons_and_text_areas_are_told_apart() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("clickables.html")).await;
        let s = t.snapshot().await;
        // a span with a pointer cursor, a span with an onclick attribute
        for (role, name, log) in [
            ("generic", "terms", "terms"),
            ("generic", "policy", "policy"),
            ("button", "trash can", "delete"),
            ("button", "gear", "settings"),
            ("link", "home", "home"),
        ] {
            let r = find_ref(&s, role, name).unwrap_or_else(|| panic!("{role} {name:?} in:\n{s}"));
            t.ok("browser_click", json!({"ref": r})).await;
            assert!(t.log("click", log).await, "{role} {name}: {:?}", t.site.logs());
        }
        assert!(s.contains("textbox \"Many lines\" [multiline]"), "{s}");
        assert!(s.contains("textbox \"Single line\" [ref="), "{s}");
        // a tree of clickable list items: the folder and each file are targets
        let docs = find_ref(&s, "listitem", "Documents").unwrap_or_else(|| panic!("folder item: {s}"));
        t.ok("browser_click", json!({"ref": docs})).await;
        assert!(t.log("tree", "Documents").await);
        let s = t.snapshot().await;
        let notes = find_ref(&s, "listitem", "notes.txt").unwrap_or_else(|| panic!("{s}"));
        t.ok("browser_click", json!({"ref": notes})).await;
        assert!(t.log("tree", "notes.txt").await);
    })
}

#[test]
fn date_and_time_inputs_take_their_value_whatever_the_locale() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("dates.html")).await;
        let s = t.snapshot().await;
        let d = find_ref(&s, "textbox", "Departure").unwrap_or_else(|| panic!("{s}"));
        let r = t.json("browser_type", json!({"ref": d, "text": "03/27/2024"})).await;
        assert_eq!(r["value"], "2024-03-27", "{r}");
        assert!(t.log("date", "2024-03-27").await);
        t.json("browser_type", json!({"ref": d, "text": "2025-01-02"})).await;
        assert!(t.log("date", "2025-01-02").await);
        let tm = find_ref(&s, "textbox", "At").unwrap_or_else(|| panic!("{s}"));
        t.json("browser_type", json!({"ref": tm, "text": "2:30 PM"})).await;
        assert!(t.log("time", "14:30").await);
        let m = t
            .err(
                "browser_type",
                json!({"ref": d, "text": "next tuesday"}),
                "invalid_argument",
            )
            .await;
        assert!(m.contains("2024-03-27"), "says the format: {m}");
    })
}

#[test]
fn upload_inside_a_cross_site_frame_and_snapshot_diff() {
    run(async {
        let t = T::new().await;
        let dir = tempfile_dir("upload-frame");
        let a = dir.join("c.txt");
        std::fs::write(&a, "frame").unwrap();
        t.goto(&t.site.a("upload-frame.html")).await;
        let first = t.snapshot().await;
        let button = find_ref(&first, "button", "Upload files").unwrap_or_else(|| panic!("{first}"));
        let r = t
            .json("browser_upload", json!({"ref": button, "paths": [a.to_string_lossy()]}))
            .await;
        assert_eq!(r["via"], "file_chooser", "{r}");
        assert!(t.log("files", r#"[["c.txt",5]]"#).await, "{:?}", t.site.logs());
        // diff: only what changed since the previous snapshot
        let d = t.ok("browser_snapshot", json!({"diff": true})).await;
        assert!(d.contains("changes since the previous snapshot"), "{d}");
        assert!(d.contains("+ text \"c.txt (5 bytes)"), "{d}");
        assert!(!d.contains("Upload files"), "unchanged lines are left out: {d}");
        let _ = std::fs::remove_dir_all(&dir);
    })
}
