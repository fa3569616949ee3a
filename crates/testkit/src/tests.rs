use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Minimal HTTP/1.1 client: one request per connection (`Connection: close`).
async fn http(port: u16, host: &str, method: &str, path: &str, body: Option<&str>) -> Resp {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n");
    if let Some(b) = body {
        req.push_str(&format!(
            "Content-Type: text/plain;charset=UTF-8\r\nContent-Length: {}\r\n",
            b.len()
        ));
    }
    req.push_str("\r\n");
    if let Some(b) = body {
        req.push_str(b);
    }
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("header end");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked"));
    if chunked {
        let mut out = Vec::new();
        let mut rest = &body[..];
        loop {
            let p = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let n = usize::from_str_radix(std::str::from_utf8(&rest[..p]).unwrap().trim(), 16).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&rest[p + 2..p + 2 + n]);
            rest = &rest[p + 2 + n + 2..];
        }
        body = out;
    }
    Resp { status, headers, body }
}

#[tokio::test]
async fn serves_pages_on_both_sites_with_substitution() {
    let site = Site::start().await;
    let (pa, pb) = (site.port_a(), site.port_b());
    assert_ne!(pa, pb);
    assert_eq!(site.a("/x.html"), format!("http://127.0.0.1:{pa}/x.html"));
    assert_eq!(site.b("x.html"), format!("http://localhost:{pb}/x.html"));

    // A page on A embedding B.
    let r = http(pa, "127.0.0.1", "GET", "/oopif.html", None).await;
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/html"));
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let t = r.text();
    assert!(t.contains(&format!("src=\"http://localhost:{pb}/widget.html\"")), "{t}");
    assert!(!t.contains("{{"));

    // A page on B embedding A.
    let r = http(pb, "localhost", "GET", "/widget.html", None).await;
    assert_eq!(r.status, 200);
    let t = r.text();
    assert!(t.contains(&format!("src=\"http://127.0.0.1:{pa}/inner.html\"")), "{t}");
    assert!(t.contains("<script src=\"/tlog.js\"></script>"));

    // Every html page has a #log and includes tlog.js (frame-child logs through its parent).
    for name in Site::page_names() {
        if !name.ends_with(".html") || name == "frame-child.html" {
            continue;
        }
        let r = http(pa, "127.0.0.1", "GET", &format!("/{name}"), None).await;
        assert_eq!(r.status, 200, "{name}");
        let t = r.text();
        assert!(t.contains("id=\"log\""), "{name} lacks #log");
        assert!(t.contains("/tlog.js"), "{name} lacks tlog.js");
        assert!(!t.contains("{{A}}") && !t.contains("{{B}}"), "{name}");
    }

    let r = http(pb, "localhost", "GET", "/tlog.js", None).await;
    assert!(r.header("content-type").unwrap().starts_with("text/javascript"));
    assert!(r.text().contains("/__log"));
    let r = http(pa, "127.0.0.1", "GET", "/sw.js", None).await;
    assert!(r.header("content-type").unwrap().starts_with("text/javascript"));
    let r = http(pa, "127.0.0.1", "GET", "/favicon.ico", None).await;
    assert_eq!(r.status, 204);
    let r = http(pa, "127.0.0.1", "GET", "/nope.html", None).await;
    assert_eq!(r.status, 404);
    let r = http(pa, "127.0.0.1", "GET", "/", None).await;
    assert!(r.text().contains("dialogs.html"));
}

#[tokio::test]
async fn log_channel_and_request_record() {
    let site = Site::start().await;
    let (pa, pb) = (site.port_a(), site.port_b());
    let r = http(
        pa,
        "127.0.0.1",
        "POST",
        "/__log",
        Some(r#"{"key":"confirm","value":"cancelled"}"#),
    )
    .await;
    assert_eq!(r.status, 204);
    let r = http(
        pb,
        "localhost",
        "POST",
        "/__log",
        Some(r#"{"key":"continue","value":"continued:true"}"#),
    )
    .await;
    assert_eq!(r.status, 204);
    http(
        pa,
        "127.0.0.1",
        "POST",
        "/__log",
        Some(r#"{"key":"confirm","value":"confirmed","t":5}"#),
    )
    .await;
    http(
        pa,
        "127.0.0.1",
        "POST",
        "/__log",
        Some(r#"{"key":"obj","value":{"a":1}}"#),
    )
    .await;
    assert_eq!(
        http(pa, "127.0.0.1", "POST", "/__log", Some("not json")).await.status,
        400
    );

    assert_eq!(
        site.logs(),
        vec![
            ("confirm".to_string(), "cancelled".to_string()),
            ("continue".to_string(), "continued:true".to_string()),
            ("confirm".to_string(), "confirmed".to_string()),
            ("obj".to_string(), r#"{"a":1}"#.to_string()),
        ]
    );
    assert_eq!(site.log_entries()[1].site, SiteId::B);
    assert_eq!(site.last("confirm").as_deref(), Some("confirmed"));
    assert_eq!(site.values("confirm"), vec!["cancelled", "confirmed"]);
    assert_eq!(site.last("missing"), None);
    assert!(site.wait_log("continue", "continued:true", 100).await);
    assert!(!site.wait_log("continue", "other", 100).await);

    // Out-of-order arrival is reordered by page clock.
    site.clear_logs();
    http(
        pa,
        "127.0.0.1",
        "POST",
        "/__log",
        Some(r#"{"key":"k","value":"second","t":20}"#),
    )
    .await;
    http(
        pa,
        "127.0.0.1",
        "POST",
        "/__log",
        Some(r#"{"key":"k","value":"first","t":10}"#),
    )
    .await;
    assert_eq!(site.last("k").as_deref(), Some("second"));

    // Logs arriving while waiting.
    site.clear_logs();
    let waiter = site.wait_log("late", "yes", 3000);
    let poster = async {
        tokio::time::sleep(Duration::from_millis(150)).await;
        http(
            pb,
            "localhost",
            "POST",
            "/__log",
            Some(r#"{"key":"late","value":"yes"}"#),
        )
        .await;
    };
    let (ok, ()) = tokio::join!(waiter, poster);
    assert!(ok);

    // Requests are recorded per site; /__log is not.
    assert!(!site.was_requested("/api/close"));
    let r = http(pb, "localhost", "POST", "/api/close", Some("")).await;
    assert_eq!(r.text(), "closed");
    http(pa, "127.0.0.1", "GET", "/dialogs.html?x=1", None).await;
    assert!(site.was_requested("/api/close"));
    assert_eq!(site.requests_on(SiteId::B), vec!["/api/close"]);
    assert_eq!(site.requests_on(SiteId::A), vec!["/dialogs.html"]);
    assert!(!site.requests().iter().any(|p| p == "/__log"));
    assert_eq!(site.request_records()[1].query, "x=1");
}

#[tokio::test]
async fn knobs() {
    let site = Site::start().await;
    let pa = site.port_a();

    let r = http(pa, "127.0.0.1", "GET", "/attachment?name=report.csv&size=5000", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body.len(), 5000);
    assert_eq!(
        r.header("content-disposition"),
        Some("attachment; filename=\"report.csv\"")
    );

    let t0 = Instant::now();
    let r = http(pa, "127.0.0.1", "GET", "/slow?ms=300&page=other.html", None).await;
    assert!(t0.elapsed() >= Duration::from_millis(300));
    assert!(r.text().contains("Other page"));
    let r = http(pa, "127.0.0.1", "GET", "/slow?ms=0&page=other", None).await;
    assert!(r.text().contains("Other page"));

    // /hang never answers while the site runs.
    let hung = tokio::time::timeout(Duration::from_millis(400), http(pa, "127.0.0.1", "GET", "/hang", None)).await;
    assert!(hung.is_err());
    // ...and is released when the site stops.
    let pending = tokio::spawn(http(pa, "127.0.0.1", "GET", "/hang", None));
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(site);
    let r = tokio::time::timeout(Duration::from_secs(3), pending)
        .await
        .expect("released")
        .unwrap();
    assert_eq!(r.status, 503);
}

#[test]
fn chromium_path_resolves_or_panics_with_hint() {
    match std::panic::catch_unwind(chromium) {
        Ok(p) => assert!(p.exists()),
        Err(e) => {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
            assert!(msg.unwrap_or_default().contains("apt-get install chromium"));
        }
    }
}
