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

#[allow(dead_code)]
fn unused(_: &str) -> Option<String> {
    find_ref("", "", "")
}
