//! Test fixtures for tabgate.
//!
//! [`Site`] serves the pages in `crates/testkit/pages/` on two loopback *sites*:
//! site A at `http://127.0.0.1:PORT_A` and site B at `http://localhost:PORT_B`. Chromium
//! isolates by site, so an iframe from B inside a page of A (and vice versa) is a real
//! out-of-process iframe. Pages report state through `tlog(key, value)` (see
//! `pages/tlog.js`), which POSTs to `/__log` on the page's own origin; both listeners feed
//! one shared log that tests read with [`Site::logs`], [`Site::last`] and [`Site::wait_log`]
//! instead of trusting a tool's own claim of success.
//!
//! Server knobs (on both sites):
//! - `/hang` never answers (the request is held until the `Site` is dropped);
//! - `/slow?ms=N&page=NAME` answers page NAME after N ms;
//! - `/attachment?name=X&size=N` answers N bytes with `Content-Disposition: attachment`;
//! - `/api/close` answers 200 `closed` (so tests can assert it was never requested);
//! - `/echo` answers 200 `echo` without CORS headers;
//! - `/favicon.ico` answers 204;
//! - `/` lists the pages.
//!
//! Placeholders `{{A}}` and `{{B}}` in text pages are replaced at serve time by the two
//! origins (no trailing slash).

use std::{
    collections::HashMap,
    net::SocketAddr,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{
    body::{Body, Bytes},
    extract::{Query, Request, State},
    http::{header, HeaderValue, StatusCode},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{any, get, post},
    Router,
};
use tokio::{net::TcpListener, sync::watch};

include!(concat!(env!("OUT_DIR"), "/pages.rs"));

/// Which of the two sites a request arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SiteId {
    /// `http://127.0.0.1:PORT_A`
    A,
    /// `http://localhost:PORT_B`
    B,
}

/// One entry of the shared page log.
#[derive(Debug, Clone, PartialEq)]
pub struct LogEntry {
    pub key: String,
    pub value: String,
    /// The site whose `/__log` received it (the origin of the logging document).
    pub site: SiteId,
    /// Page clock (`performance.timeOrigin + performance.now()`, ms) when available.
    pub t: Option<f64>,
}

/// One recorded HTTP request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    pub site: SiteId,
    pub method: String,
    /// Path without the query string, e.g. `/api/close`.
    pub path: String,
    /// Query string without `?`, empty when absent.
    pub query: String,
}

#[derive(Default)]
struct Shared {
    logs: Mutex<Vec<LogEntry>>,
    requests: Mutex<Vec<RequestRecord>>,
    origin_a: String,
    origin_b: String,
}

#[derive(Clone)]
struct Ctx {
    site: SiteId,
    shared: Arc<Shared>,
    stop: watch::Receiver<bool>,
}

/// The two-site loopback page server. Dropping it stops both listeners and releases
/// every held `/hang` request.
pub struct Site {
    shared: Arc<Shared>,
    port_a: u16,
    port_b: u16,
    stop: watch::Sender<bool>,
}

impl Site {
    /// Binds site A on `127.0.0.1:0` and site B on `127.0.0.1:0` (plus `[::1]` on the same
    /// port when available, since Chromium may resolve `localhost` to `::1` first) and
    /// starts serving. Must be called inside a tokio runtime.
    pub async fn start() -> Site {
        let la = TcpListener::bind("127.0.0.1:0").await.expect("bind site A");
        let lb = TcpListener::bind("127.0.0.1:0").await.expect("bind site B");
        let port_a = la.local_addr().unwrap().port();
        let port_b = lb.local_addr().unwrap().port();
        let lb6 = TcpListener::bind(SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, port_b)))
            .await
            .ok();
        let shared = Arc::new(Shared {
            origin_a: format!("http://127.0.0.1:{port_a}"),
            origin_b: format!("http://localhost:{port_b}"),
            ..Default::default()
        });
        let (stop, stop_rx) = watch::channel(false);
        let mut listeners = vec![(la, SiteId::A), (lb, SiteId::B)];
        if let Some(l) = lb6 {
            listeners.push((l, SiteId::B));
        }
        for (listener, site) in listeners {
            let ctx = Ctx {
                site,
                shared: shared.clone(),
                stop: stop_rx.clone(),
            };
            let app = router(ctx);
            let mut rx = stop_rx.clone();
            tokio::spawn(async move {
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async move {
                        let _ = rx.wait_for(|s| *s).await;
                    })
                    .await;
            });
        }
        Site {
            shared,
            port_a,
            port_b,
            stop,
        }
    }

    /// Full URL of `path` on site A (`http://127.0.0.1:PORT_A/path`).
    pub fn a(&self, path: &str) -> String {
        join(&self.shared.origin_a, path)
    }

    /// Full URL of `path` on site B (`http://localhost:PORT_B/path`).
    pub fn b(&self, path: &str) -> String {
        join(&self.shared.origin_b, path)
    }

    /// Origin of site A without trailing slash: `http://127.0.0.1:PORT_A`.
    pub fn origin_a(&self) -> &str {
        &self.shared.origin_a
    }

    /// Origin of site B without trailing slash: `http://localhost:PORT_B`.
    pub fn origin_b(&self) -> &str {
        &self.shared.origin_b
    }

    pub fn port_a(&self) -> u16 {
        self.port_a
    }

    pub fn port_b(&self) -> u16 {
        self.port_b
    }

    /// All `(key, value)` log entries from both sites, in order.
    pub fn logs(&self) -> Vec<(String, String)> {
        self.log_entries().into_iter().map(|e| (e.key, e.value)).collect()
    }

    /// All log entries with their site and page timestamp, in order.
    pub fn log_entries(&self) -> Vec<LogEntry> {
        self.shared.logs.lock().unwrap().clone()
    }

    /// Values logged under `key`, in order.
    pub fn values(&self, key: &str) -> Vec<String> {
        self.shared
            .logs
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.key == key)
            .map(|e| e.value.clone())
            .collect()
    }

    /// The latest value logged under `key`.
    pub fn last(&self, key: &str) -> Option<String> {
        self.shared
            .logs
            .lock()
            .unwrap()
            .iter()
            .rev()
            .find(|e| e.key == key)
            .map(|e| e.value.clone())
    }

    /// Polls until the latest value of `key` equals `expected`; false on timeout.
    pub async fn wait_log(&self, key: &str, expected: &str, timeout_ms: u64) -> bool {
        let deadline = Instant::now() + Duration::from_millis(timeout_ms);
        loop {
            if self.last(key).as_deref() == Some(expected) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Polls until anything is logged under `key`; returns the latest value, None on timeout.
    pub async fn wait_key(&self, key: &str, timeout_ms: u64) -> Option<String> {
        let deadline = Instant::now() + Duration::from_millis(timeout_ms);
        loop {
            if let Some(v) = self.last(key) {
                return Some(v);
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Forgets all log entries.
    pub fn clear_logs(&self) {
        self.shared.logs.lock().unwrap().clear();
    }

    /// Path (without query) of every request on both sites, in arrival order.
    /// `/__log` posts are not recorded.
    pub fn requests(&self) -> Vec<String> {
        self.request_records().into_iter().map(|r| r.path).collect()
    }

    /// Paths of the requests that arrived on one site.
    pub fn requests_on(&self, site: SiteId) -> Vec<String> {
        self.request_records()
            .into_iter()
            .filter(|r| r.site == site)
            .map(|r| r.path)
            .collect()
    }

    /// Every recorded request with site, method and query.
    pub fn request_records(&self) -> Vec<RequestRecord> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Whether `path` (without query) was requested on either site.
    pub fn was_requested(&self, path: &str) -> bool {
        self.shared.requests.lock().unwrap().iter().any(|r| r.path == path)
    }

    /// Forgets the recorded requests.
    pub fn clear_requests(&self) {
        self.shared.requests.lock().unwrap().clear();
    }

    /// Names of the embedded pages.
    pub fn page_names() -> Vec<&'static str> {
        PAGES.iter().map(|(n, _)| *n).collect()
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

fn join(origin: &str, path: &str) -> String {
    if path.is_empty() {
        format!("{origin}/")
    } else if path.starts_with('/') {
        format!("{origin}{path}")
    } else {
        format!("{origin}/{path}")
    }
}

/// Path to a Chromium binary: `$TABGATE_BROWSER`, else `/usr/bin/chromium`, else
/// `chromium` / `chromium-browser` on `PATH`. Panics when none exists.
pub fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("TABGATE_BROWSER").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        if p.exists() {
            return p;
        }
        panic!(
            "TABGATE_BROWSER={} does not exist; install Chromium: apt-get install chromium",
            p.display()
        );
    }
    let fixed = PathBuf::from("/usr/bin/chromium");
    if fixed.exists() {
        return fixed;
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            for name in ["chromium", "chromium-browser"] {
                let c = dir.join(name);
                if c.is_file() {
                    return c;
                }
            }
        }
    }
    panic!("install Chromium: apt-get install chromium");
}

fn router(ctx: Ctx) -> Router {
    Router::new()
        .route("/__log", post(log_post))
        .route("/hang", any(hang))
        .route("/slow", get(slow))
        .route("/attachment", get(attachment))
        .route("/api/close", any(api_close))
        .route("/echo", any(echo))
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .fallback(page)
        .layer(middleware::from_fn_with_state(ctx.clone(), record))
        .with_state(ctx)
}

async fn record(State(ctx): State<Ctx>, req: Request, next: Next) -> Response {
    if req.uri().path() != "/__log" {
        ctx.shared.requests.lock().unwrap().push(RequestRecord {
            site: ctx.site,
            method: req.method().to_string(),
            path: req.uri().path().to_string(),
            query: req.uri().query().unwrap_or("").to_string(),
        });
    }
    let mut resp = next.run(req).await;
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

async fn log_post(State(ctx): State<Ctx>, body: Bytes) -> StatusCode {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return StatusCode::BAD_REQUEST;
    };
    let key = match v.get("key") {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => return StatusCode::BAD_REQUEST,
    };
    let value = match v.get("value") {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Null) | None => "null".to_string(),
        Some(other) => other.to_string(),
    };
    let t = v.get("t").and_then(|t| t.as_f64());
    let entry = LogEntry {
        key,
        value,
        site: ctx.site,
        t,
    };
    let mut logs = ctx.shared.logs.lock().unwrap();
    // Requests may overtake each other on different connections: keep entries ordered by
    // page clock when both sides carry one.
    let mut pos = logs.len();
    if let Some(t) = t {
        while pos > 0 {
            match logs[pos - 1].t {
                Some(prev) if prev > t => pos -= 1,
                _ => break,
            }
        }
    }
    logs.insert(pos, entry);
    StatusCode::NO_CONTENT
}

async fn hang(State(mut ctx): State<Ctx>) -> Response {
    let _ = ctx.stop.wait_for(|s| *s).await;
    (StatusCode::SERVICE_UNAVAILABLE, "server stopped").into_response()
}

async fn slow(State(ctx): State<Ctx>, Query(q): Query<HashMap<String, String>>) -> Response {
    let ms: u64 = q.get("ms").and_then(|m| m.parse().ok()).unwrap_or(1000);
    let name = q.get("page").cloned().unwrap_or_else(|| "blank-log.html".into());
    let mut stop = ctx.stop.clone();
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_millis(ms)) => {}
        _ = stop.wait_for(|s| *s) => {}
    }
    serve_page(&ctx, &name)
}

async fn attachment(Query(q): Query<HashMap<String, String>>) -> Response {
    let name = q.get("name").cloned().unwrap_or_else(|| "file.bin".into());
    let name: String = name
        .chars()
        .filter(|c| *c != '"' && *c != '\\' && !c.is_control())
        .collect();
    let size: usize = q.get("size").and_then(|s| s.parse().ok()).unwrap_or(1024);
    let line = b"id,name,value\n";
    let body: Vec<u8> = line.iter().copied().cycle().take(size).collect();
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, content_type(&name))
        .header(header::CONTENT_DISPOSITION, format!("attachment; filename=\"{name}\""))
        .header(header::CONTENT_LENGTH, size)
        .body(Body::from(body))
        .unwrap()
}

async fn api_close() -> Response {
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], "closed").into_response()
}

async fn echo() -> Response {
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], "echo").into_response()
}

async fn page(State(ctx): State<Ctx>, req: Request) -> Response {
    let path = req.uri().path().trim_start_matches('/');
    if path.is_empty() {
        let mut html = String::from(
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>tabgate testkit</title></head><body><h1>Pages</h1><ul>\n",
        );
        for (n, _) in PAGES {
            html.push_str(&format!("<li><a href=\"/{n}\">{n}</a></li>\n"));
        }
        html.push_str("</ul></body></html>\n");
        return ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response();
    }
    serve_page(&ctx, path)
}

fn find_page(name: &str) -> Option<(&'static str, &'static str)> {
    let name = name.trim_start_matches('/');
    PAGES
        .iter()
        .find(|(n, _)| *n == name)
        .or_else(|| PAGES.iter().find(|(n, _)| n.strip_suffix(".html") == Some(name)))
        .copied()
}

fn serve_page(ctx: &Ctx, name: &str) -> Response {
    let Some((file, text)) = find_page(name) else {
        return (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "not found",
        )
            .into_response();
    };
    let body = text
        .replace("{{A}}", &ctx.shared.origin_a)
        .replace("{{B}}", &ctx.shared.origin_b);
    ([(header::CONTENT_TYPE, content_type(file))], body).into_response()
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).as_deref() {
        Some("html" | "htm") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("json") => "application/json",
        Some("txt") => "text/plain; charset=utf-8",
        Some("csv") => "text/csv",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("pdf") => "application/pdf",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests;

mod proxy;
pub use proxy::CdpProxy;
