//! The gateway fetch proxy behind `/v1/proxy` (DESIGN.md section 6): fetches an http(s)
//! URL for the in-page agent, which the browser's same-origin policy would not let it read.
//!
//! It is an SSRF boundary. For every hop (the first URL and each redirect, followed by
//! hand):
//!
//! 1. the URL is parsed and checked without DNS ([`policy::check_url`]): http/https only,
//!    no `user:password@`, no metadata host names, no IPv4 host in decimal, octal, hex or
//!    short notation;
//! 2. the host is resolved here, every address is checked ([`addr::check_ip`]: metadata,
//!    loopback, private, link-local, CGNAT, unspecified, multicast, reserved, IPv4-mapped
//!    IPv6, …) unless `proxy.allow_hosts` lists the host, and the request is pinned to
//!    exactly those addresses (a fresh client whose only resolution is that override; any
//!    other lookup fails);
//! 3. only a few request headers are sent (`accept`, `accept-language`, `content-type`):
//!    never the caller's cookies or credentials, and no proxy from the environment;
//! 4. the body is read up to `proxy.max_bytes`, and the whole exchange, redirects
//!    included, must end within `proxy.timeout_s`.
//!
//! A refusal is a [`Refusal`] naming the rule, the URL and the address.

pub mod addr;
pub mod policy;

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use futures_util::StreamExt;
use serde_json::{json, Value};
use url::Url;

pub use policy::{AllowList, ProxyPolicy};

use crate::error::ApiError;

/// Why the proxy did not relay a response: a stable `code`, the `rule` that applied, a
/// message naming the URL and the way out, and details (`url`, `hop`, `address`, …).
#[derive(Debug, Clone)]
pub struct Refusal {
    /// HTTP status: 400 bad URL, 403 refused by a rule, 502 upstream failure or
    /// oversize body, 504 timeout.
    pub status: u16,
    /// `proxy_refused`, `invalid_url`, `proxy_response_too_large`, `proxy_timeout`,
    /// `proxy_dns_failed`, `proxy_upstream_error`, `proxy_too_many_redirects`.
    pub code: &'static str,
    /// The rule: `loopback`, `private`, `metadata`, `obfuscated_ip`, `ipv4_mapped`,
    /// `scheme`, `credentials_in_url`, `max_bytes`, `timeout`, …
    pub rule: &'static str,
    /// What was refused and why.
    pub message: String,
    /// `{rule, url, hop, …}`.
    pub details: Value,
}

impl Refusal {
    fn new(status: u16, code: &'static str, rule: &'static str, message: String, details: Value) -> Refusal {
        let mut d = json!({"rule": rule});
        if let (Some(o), Some(x)) = (d.as_object_mut(), details.as_object()) {
            for (k, v) in x {
                o.insert(k.clone(), v.clone());
            }
        }
        Refusal {
            status,
            code,
            rule,
            message,
            details: d,
        }
    }

    /// As the gateway's JSON error.
    pub fn to_api_error(&self) -> ApiError {
        ApiError::new(
            StatusCode::from_u16(self.status).unwrap_or(StatusCode::BAD_GATEWAY),
            self.code,
            self.message.clone(),
        )
        .with(self.details.clone())
    }
}

/// A boxed future, for [`Resolver`].
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Resolves host names for the proxy (the system resolver in production; tests
/// substitute their own).
pub trait Resolver: Send + Sync {
    /// Every address of `host`.
    fn lookup<'a>(&'a self, host: &'a str, port: u16) -> BoxFuture<'a, std::io::Result<Vec<IpAddr>>>;
}

/// The system resolver (`getaddrinfo`, as `tokio::net::lookup_host`).
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn lookup<'a>(&'a self, host: &'a str, port: u16) -> BoxFuture<'a, std::io::Result<Vec<IpAddr>>> {
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host, port)).await?;
            Ok(addrs.map(|a| a.ip()).collect())
        })
    }
}

/// Refuses every lookup: installed in each pinned client so nothing but the checked
/// addresses can ever be used.
struct NoLookups;

impl reqwest::dns::Resolve for NoLookups {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let n = name.as_str().to_string();
        Box::pin(async move { Err(format!("tabgate proxy: unpinned lookup of {n} refused").into()) })
    }
}

/// What to fetch.
#[derive(Debug, Clone)]
pub struct ProxyRequest {
    /// GET or POST.
    pub method: Method,
    /// The absolute URL.
    pub url: String,
    /// The body of a POST.
    pub body: Option<Bytes>,
    /// The caller's headers; only `accept`, `accept-language` and `content-type` are used.
    pub headers: HeaderMap,
}

/// A relayed response.
#[derive(Debug, Clone)]
pub struct ProxyResponse {
    /// The upstream status.
    pub status: u16,
    /// Upstream headers that are safe to relay (`content-type`, `content-language`,
    /// `last-modified`, `etag`).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The body (at most `max_bytes`).
    pub body: Bytes,
    /// The URL of the last hop.
    pub final_url: String,
    /// Redirects followed.
    pub redirects: usize,
}

/// Request headers passed on to the target.
const FORWARD_REQUEST: &[&str] = &["accept", "accept-language", "content-type"];
/// Response headers relayed back.
const RELAY_RESPONSE: &[&str] = &["content-type", "content-language", "last-modified", "etag"];

/// The proxy: a policy and a resolver.
pub struct Proxy {
    policy: ProxyPolicy,
    resolver: Arc<dyn Resolver>,
}

/// What one request left behind for the log, whether it succeeded or not.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// The last URL tried.
    pub final_url: Option<String>,
    /// Redirects followed.
    pub redirects: usize,
}

impl Proxy {
    /// A proxy with `policy`, resolving with `resolver`.
    pub fn new(policy: ProxyPolicy, resolver: Arc<dyn Resolver>) -> Proxy {
        Proxy { policy, resolver }
    }

    /// The policy in force.
    pub fn policy(&self) -> &ProxyPolicy {
        &self.policy
    }

    /// Fetches `req`, following redirects by hand and checking every hop. `trace` is
    /// filled in as it goes (for the log).
    pub async fn fetch(&self, req: ProxyRequest, trace: &mut Trace) -> Result<ProxyResponse, Refusal> {
        let timeout = self.policy.timeout;
        let url = req.url.clone();
        match tokio::time::timeout(timeout, self.fetch_hops(req, trace)).await {
            Ok(r) => r,
            Err(_) => Err(Refusal::new(
                504,
                "proxy_timeout",
                "timeout",
                format!("{url} did not answer within {timeout:?} (proxy.timeout_s); the request was abandoned"),
                json!({"url": url, "timeout_ms": timeout.as_millis() as u64}),
            )),
        }
    }

    async fn fetch_hops(&self, req: ProxyRequest, trace: &mut Trace) -> Result<ProxyResponse, Refusal> {
        let mut method = req.method.clone();
        let mut body = req.body.clone();
        let mut input = req.url.clone();
        let mut base: Option<Url> = None;
        let mut hop = 0usize;
        loop {
            let target = policy::check_url(&input, base.as_ref(), &self.policy, hop)?;
            trace.final_url = Some(target.url.to_string());
            let addrs = self.resolve(&target, hop).await?;
            let resp = self
                .send(&target, &addrs, &method, body.clone(), &req.headers, hop)
                .await?;
            let status = resp.status().as_u16();
            let location = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .map(str::to_string);
            if let (true, Some(loc)) = (matches!(status, 301 | 302 | 303 | 307 | 308), location) {
                if hop >= self.policy.max_redirects {
                    return Err(Refusal::new(
                        502,
                        "proxy_too_many_redirects",
                        "max_redirects",
                        format!(
                            "{} redirected more than {} times; stopped at {}",
                            req.url, self.policy.max_redirects, target.url
                        ),
                        json!({"url": req.url, "hop": hop}),
                    ));
                }
                // 303, and 301/302 after a POST, continue as GET without a body
                if status == 303 || (matches!(status, 301 | 302) && method == Method::POST) {
                    method = Method::GET;
                    body = None;
                }
                hop += 1;
                trace.redirects = hop;
                input = loc;
                base = Some(target.url);
                continue;
            }
            let body = self.read_body(resp, &target, hop).await?;
            let headers = RELAY_RESPONSE
                .iter()
                .filter_map(|h| {
                    let v = body.1.get(*h)?;
                    Some((HeaderName::from_static(h), v.clone()))
                })
                .collect();
            return Ok(ProxyResponse {
                status,
                headers,
                body: body.0,
                final_url: target.url.to_string(),
                redirects: hop,
            });
        }
    }

    /// The addresses to connect to: the literal, or the host's resolved addresses, each
    /// checked unless the host is allow-listed.
    async fn resolve(&self, t: &policy::Target, hop: usize) -> Result<Vec<SocketAddr>, Refusal> {
        let ips = match t.literal {
            Some(ip) => vec![ip],
            None => {
                let host = t.host.trim_end_matches('.');
                let found = self.resolver.lookup(host, t.port).await.map_err(|e| {
                    Refusal::new(
                        502,
                        "proxy_dns_failed",
                        "dns",
                        format!("cannot resolve {}: {e}", t.host),
                        json!({"url": t.url.as_str(), "host": t.host, "hop": hop}),
                    )
                })?;
                if found.is_empty() {
                    return Err(Refusal::new(
                        502,
                        "proxy_dns_failed",
                        "dns",
                        format!("{} has no addresses", t.host),
                        json!({"url": t.url.as_str(), "host": t.host, "hop": hop}),
                    ));
                }
                found
            }
        };
        if !t.allowed {
            // every address must pass: a name with one internal address among public ones
            // is refused, whichever the connection would have picked
            for ip in &ips {
                addr::check_ip(*ip).map_err(|b| policy::address_refusal(&b, t, hop))?;
            }
        }
        Ok(ips.into_iter().map(|ip| SocketAddr::new(ip, t.port)).collect())
    }

    async fn send(
        &self,
        t: &policy::Target,
        addrs: &[SocketAddr],
        method: &Method,
        body: Option<Bytes>,
        headers: &HeaderMap,
        hop: usize,
    ) -> Result<reqwest::Response, Refusal> {
        let mut b = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(Arc::new(NoLookups))
            .connect_timeout(Duration::from_secs(10).min(self.policy.timeout))
            .pool_max_idle_per_host(0)
            .user_agent(concat!("tabgate-proxy/", env!("CARGO_PKG_VERSION")));
        if t.literal.is_none() {
            b = b.resolve_to_addrs(t.host.trim_end_matches('.'), addrs);
            if t.host.ends_with('.') {
                b = b.resolve_to_addrs(&t.host, addrs);
            }
        }
        let client = b.build().map_err(|e| {
            Refusal::new(
                502,
                "proxy_upstream_error",
                "client",
                format!("cannot build the proxy client: {e}"),
                json!({}),
            )
        })?;
        let m = reqwest::Method::from_bytes(method.as_str().as_bytes()).unwrap_or(reqwest::Method::GET);
        let mut r = client.request(m, t.url.clone());
        for h in FORWARD_REQUEST {
            if let Some(v) = headers.get(*h).and_then(|v| v.to_str().ok()) {
                r = r.header(*h, v);
            }
        }
        if let Some(b) = body {
            r = r.body(b);
        }
        r.send().await.map_err(|e| {
            let what = if e.is_connect() {
                "cannot connect to"
            } else {
                "request failed for"
            };
            Refusal::new(
                502,
                "proxy_upstream_error",
                "upstream",
                format!("{what} {} ({}): {}", t.url, addr_list(addrs, t), error_chain(&e)),
                json!({"url": t.url.as_str(), "hop": hop}),
            )
        })
    }

    async fn read_body(
        &self,
        resp: reqwest::Response,
        t: &policy::Target,
        hop: usize,
    ) -> Result<(Bytes, reqwest::header::HeaderMap), Refusal> {
        let max = self.policy.max_bytes;
        let too_large = |n: String| {
            Refusal::new(
                502,
                "proxy_response_too_large",
                "max_bytes",
                format!(
                    "the response of {} is larger than proxy.max_bytes ({max} bytes; {n}); it was not relayed",
                    t.url
                ),
                json!({"url": t.url.as_str(), "hop": hop, "limit_bytes": max}),
            )
        };
        if let Some(n) = resp.content_length().filter(|n| *n > max) {
            return Err(too_large(format!("Content-Length {n}")));
        }
        let headers = resp.headers().clone();
        let mut out: Vec<u8> = Vec::new();
        let mut stream = resp.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| {
                Refusal::new(
                    502,
                    "proxy_upstream_error",
                    "upstream",
                    format!("reading the response of {} failed: {}", t.url, error_chain(&e)),
                    json!({"url": t.url.as_str(), "hop": hop}),
                )
            })?;
            if out.len() as u64 + chunk.len() as u64 > max {
                return Err(too_large("more was sent".into()));
            }
            out.extend_from_slice(&chunk);
        }
        Ok((Bytes::from(out), headers))
    }
}

fn addr_list(addrs: &[SocketAddr], t: &policy::Target) -> String {
    if t.literal.is_some() {
        return t.host.clone();
    }
    addrs.iter().map(|a| a.ip().to_string()).collect::<Vec<_>>().join(", ")
}

/// The error and its sources, joined: reqwest's top-level message alone hides the cause.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A resolver with a fixed table; never touches the network.
    struct Table(HashMap<&'static str, Vec<IpAddr>>);

    impl Resolver for Table {
        fn lookup<'a>(&'a self, host: &'a str, _port: u16) -> BoxFuture<'a, std::io::Result<Vec<IpAddr>>> {
            let r = self
                .0
                .get(host)
                .cloned()
                .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such host"));
            Box::pin(async move { r })
        }
    }

    fn proxy(allow: &[&str]) -> Proxy {
        let mut t = HashMap::new();
        t.insert("intranet.example", vec!["10.1.2.3".parse().unwrap()]);
        t.insert(
            "mixed.example",
            vec!["93.184.215.14".parse().unwrap(), "192.168.0.9".parse().unwrap()],
        );
        t.insert("meta.example", vec!["169.254.169.254".parse().unwrap()]);
        t.insert("v6.example", vec!["::ffff:127.0.0.1".parse().unwrap()]);
        let policy = ProxyPolicy {
            allow: AllowList::parse(&allow.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap(),
            ..ProxyPolicy::default()
        };
        Proxy::new(policy, Arc::new(Table(t)))
    }

    async fn refusal(p: &Proxy, url: &str) -> Refusal {
        let req = ProxyRequest {
            method: Method::GET,
            url: url.into(),
            body: None,
            headers: HeaderMap::new(),
        };
        p.fetch(req, &mut Trace::default()).await.expect_err(url)
    }

    #[tokio::test]
    async fn names_resolving_to_internal_addresses_are_refused() {
        let p = proxy(&[]);
        let r = refusal(&p, "http://intranet.example/wiki").await;
        assert_eq!((r.code, r.rule), ("proxy_refused", "private"));
        assert!(
            r.message.contains("10.1.2.3") && r.message.contains("intranet.example resolves to it"),
            "{}",
            r.message
        );
        assert_eq!(r.details["address"], "10.1.2.3");
        // one internal address among public ones is enough
        assert_eq!(refusal(&p, "https://mixed.example/").await.rule, "private");
        assert_eq!(
            refusal(&p, "http://meta.example/latest/meta-data").await.rule,
            "metadata"
        );
        assert_eq!(refusal(&p, "http://v6.example/").await.rule, "ipv4_mapped");
        let r = refusal(&p, "http://nowhere.example/").await;
        assert_eq!((r.code, r.status), ("proxy_dns_failed", 502));
    }

    #[tokio::test]
    async fn literals_are_refused_without_lookups() {
        let p = proxy(&[]);
        for (u, rule) in [
            ("http://169.254.169.254/latest/meta-data/", "metadata"),
            ("http://10.0.0.1/", "private"),
            ("http://172.16.5.4:8080/", "private"),
            ("http://192.168.1.1/", "private"),
            ("http://100.64.1.1/", "cgnat"),
            ("http://169.254.10.10/", "link_local"),
            ("http://127.0.0.1:1/", "loopback"),
            ("http://0.0.0.0/", "unspecified"),
            ("http://[::1]/", "loopback"),
            ("http://[::ffff:127.0.0.1]/", "ipv4_mapped"),
            ("http://[::ffff:a9fe:a9fe]/", "ipv4_mapped"),
            ("http://[fe80::1]/", "link_local"),
            ("http://[fd00::1]/", "private"),
            ("http://2130706433/", "obfuscated_ip"),
            ("http://0177.0.0.1/", "obfuscated_ip"),
            ("http://0xa9fea9fe/", "obfuscated_ip"),
        ] {
            let r = refusal(&p, u).await;
            assert_eq!(
                (r.code, r.rule, r.status),
                ("proxy_refused", rule, 403),
                "{u}: {}",
                r.message
            );
        }
    }

    #[tokio::test]
    async fn allow_listed_hosts_skip_address_rules_only() {
        // allow-listed: the address rules do not apply (this one then fails to connect:
        // nothing listens on port 1)
        let p = proxy(&["127.0.0.1:1"]);
        let r = refusal(&p, "http://127.0.0.1:1/").await;
        assert_eq!(r.code, "proxy_upstream_error", "{}", r.message);
        // another port of the same host is not listed
        assert_eq!(refusal(&p, "http://127.0.0.1:2/").await.rule, "loopback");
        // the scheme and credential rules still apply
        assert_eq!(refusal(&p, "http://u:p@127.0.0.1:1/").await.rule, "credentials_in_url");
    }
}
