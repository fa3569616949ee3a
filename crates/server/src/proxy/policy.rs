//! The proxy's policy (`proxy.*` in the config) and the checks made on each URL before
//! anything is resolved or sent.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use serde_json::{json, Value};
use tabgate_config::Config;
use url::{Host, Url};

use super::addr::{Blocked, METADATA_HOSTS};
use super::Refusal;

/// Default `proxy.max_bytes`: 10 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 10 * 1024 * 1024;
/// Default `proxy.timeout_s`: 30 s for the whole request, redirects included.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Redirect hops followed at most.
pub const MAX_REDIRECTS: usize = 5;

/// One `proxy.allow_hosts` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// `example.com`, `10.0.0.5`, `[fd00::1]`: the host on any port.
    Host(String),
    /// `example.com:8080`: only that port.
    HostPort(String, u16),
    /// `*.corp.example`: any subdomain (not the bare domain).
    Suffix(String),
}

/// The hosts the proxy may reach even when they resolve to a refused address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList(Vec<Entry>);

/// A host as the URL parser prints it, lower-case, without a trailing dot; IP addresses
/// in canonical form (IPv6 in brackets).
fn norm_host(h: &str) -> String {
    let h = h.trim().trim_end_matches('.').to_ascii_lowercase();
    let bare = h.trim_start_matches('[').trim_end_matches(']');
    if let Ok(v6) = bare.parse::<Ipv6Addr>() {
        return format!("[{v6}]");
    }
    if let Ok(v4) = bare.parse::<Ipv4Addr>() {
        return v4.to_string();
    }
    h
}

impl AllowList {
    /// Parses entries: `host`, `host:port`, `[v6]`, `[v6]:port`, `*.domain`.
    pub fn parse(entries: &[String]) -> Result<AllowList, String> {
        let mut out = vec![];
        for raw in entries {
            let e = raw.trim();
            if e.is_empty() || e.contains('/') || e.contains('@') {
                return Err(format!(
                    "proxy.allow_hosts: {raw:?} is not a host; write `host`, `host:port` or `*.domain`"
                ));
            }
            if let Some(d) = e.strip_prefix("*.") {
                out.push(Entry::Suffix(format!(".{}", norm_host(d))));
                continue;
            }
            // `[v6]:port`, `host:port` (a bare IPv6 address has several colons)
            let (host, port) = if let Some(rest) = e.strip_prefix('[') {
                match rest.split_once(']') {
                    Some((h, "")) => (format!("[{h}]"), None),
                    Some((h, p)) => (format!("[{h}]"), Some(p.trim_start_matches(':'))),
                    None => return Err(format!("proxy.allow_hosts: {raw:?}: unclosed `[`")),
                }
            } else if e.matches(':').count() == 1 {
                let (h, p) = e.split_once(':').unwrap_or((e, ""));
                (h.to_string(), Some(p))
            } else {
                (e.to_string(), None)
            };
            match port {
                None => out.push(Entry::Host(norm_host(&host))),
                Some(p) => {
                    let p: u16 = p
                        .parse()
                        .map_err(|_| format!("proxy.allow_hosts: {raw:?}: bad port {p:?}"))?;
                    out.push(Entry::HostPort(norm_host(&host), p));
                }
            }
        }
        Ok(AllowList(out))
    }

    /// True when `host` (as the URL parser prints it) on `port` is listed.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        let h = norm_host(host);
        self.0.iter().any(|e| match e {
            Entry::Host(x) => *x == h,
            Entry::HostPort(x, p) => *x == h && *p == port,
            Entry::Suffix(s) => h.ends_with(s.as_str()),
        })
    }

    /// True when nothing is listed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The proxy's limits and allow-list.
#[derive(Debug, Clone)]
pub struct ProxyPolicy {
    /// `proxy.allow_hosts`.
    pub allow: AllowList,
    /// `proxy.max_bytes` (default 10 MiB): the largest response body relayed.
    pub max_bytes: u64,
    /// `proxy.timeout_s` (default 30): the whole request, redirects included.
    pub timeout: Duration,
    /// Redirect hops followed at most (5).
    pub max_redirects: usize,
}

impl Default for ProxyPolicy {
    fn default() -> Self {
        ProxyPolicy {
            allow: AllowList::default(),
            max_bytes: DEFAULT_MAX_BYTES,
            timeout: DEFAULT_TIMEOUT,
            max_redirects: MAX_REDIRECTS,
        }
    }
}

impl ProxyPolicy {
    /// Reads `proxy.allow_hosts`, `proxy.max_bytes` and `proxy.timeout_s`.
    pub fn from_config(config: &Config) -> Result<ProxyPolicy, String> {
        let p = &config.raw["proxy"];
        let hosts: Vec<String> = p["allow_hosts"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default();
        let mut out = ProxyPolicy {
            allow: AllowList::parse(&hosts)?,
            ..ProxyPolicy::default()
        };
        if let Some(n) = p["max_bytes"].as_f64() {
            out.max_bytes = n as u64;
        }
        if let Some(t) = p["timeout_s"].as_f64() {
            out.timeout = Duration::from_secs_f64(t);
        }
        Ok(out)
    }
}

/// A URL that passed the checks that need no DNS.
#[derive(Debug, Clone)]
pub struct Target {
    /// The parsed URL.
    pub url: Url,
    /// The host as the parser prints it (`example.com`, `127.0.0.1`, `[::1]`).
    pub host: String,
    /// The port (explicit or the scheme's default).
    pub port: u16,
    /// The address when the host is an IP literal.
    pub literal: Option<IpAddr>,
    /// True when `proxy.allow_hosts` lists the host: address rules do not apply.
    pub allowed: bool,
}

/// The host exactly as written in an absolute URL (`0177.0.0.1`, `2130706433`), so
/// numeric forms the parser silently normalises can be told apart. `None` for a URL
/// without an authority.
pub fn raw_host(input: &str) -> Option<String> {
    let s = input.trim();
    let colon = s.find(':')?;
    let scheme = &s[..colon];
    if scheme.is_empty() || !scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) {
        return None;
    }
    // WHATWG parsers accept any run of `/` and `\\` (even none) after a special scheme
    let rest = s[colon + 1..].trim_start_matches(['/', '\\']);
    let end = rest.find(['/', '?', '#', '\\']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let hostport = authority.rsplit_once('@').map(|(_, h)| h).unwrap_or(authority);
    if hostport.starts_with('[') {
        return Some(hostport.split_inclusive(']').next().unwrap_or(hostport).to_string());
    }
    Some(match hostport.rsplit_once(':') {
        Some((h, _)) => h.to_string(),
        None => hostport.to_string(),
    })
}

/// Refusal of `url` by `rule` (403 `proxy_refused`).
pub fn refused(rule: &'static str, url: &str, hop: usize, message: String, extra: Value) -> Refusal {
    let mut details = json!({"rule": rule, "url": url, "hop": hop});
    if let (Some(o), Some(x)) = (details.as_object_mut(), extra.as_object()) {
        for (k, v) in x {
            o.insert(k.clone(), v.clone());
        }
    }
    Refusal {
        status: 403,
        code: "proxy_refused",
        rule,
        message,
        details,
    }
}

fn hop_note(hop: usize) -> String {
    if hop == 0 {
        String::new()
    } else {
        format!(" (redirect hop {hop})")
    }
}

/// The refusal for an address that failed [`super::addr::check_ip`].
pub fn address_refusal(b: &Blocked, t: &Target, hop: usize) -> Refusal {
    let via = if t.literal.is_some() {
        String::new()
    } else {
        format!(" ({} resolves to it)", t.host)
    };
    refused(
        b.rule(),
        t.url.as_str(),
        hop,
        format!(
            "refused {}{}: {}{via}; the proxy does not reach internal addresses — add \"{}\" to proxy.allow_hosts if this host is meant to be reachable",
            t.url,
            hop_note(hop),
            b.describe(),
            t.host
        ),
        json!({"host": t.host, "address": b.addr.to_string(), "address_class": b.class.map(|c| c.rule())}),
    )
}

/// Parses `input` (relative to `base` for redirects) and applies the checks that need no
/// DNS: scheme, credentials, host present, metadata host names, numeric host notation.
pub fn check_url(input: &str, base: Option<&Url>, policy: &ProxyPolicy, hop: usize) -> Result<Target, Refusal> {
    let parsed = match base {
        Some(b) => b.join(input),
        None => Url::parse(input),
    };
    let url = parsed.map_err(|e| Refusal {
        status: if hop == 0 { 400 } else { 502 },
        code: "invalid_url",
        rule: "invalid_url",
        message: format!("{input:?}{} is not an absolute http(s) URL: {e}", hop_note(hop)),
        details: json!({"rule": "invalid_url", "url": input, "hop": hop}),
    })?;
    let shown = url.as_str().to_string();
    if !matches!(url.scheme(), "http" | "https") {
        return Err(refused(
            "scheme",
            &shown,
            hop,
            format!(
                "refused {shown}{}: scheme {:?} is not allowed; only http and https are proxied",
                hop_note(hop),
                url.scheme()
            ),
            json!({"scheme": url.scheme()}),
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refused(
            "credentials_in_url",
            &shown,
            hop,
            format!(
                "refused the URL{}: it carries credentials (user:password@); the proxy never forwards credentials",
                hop_note(hop)
            ),
            json!({}),
        ));
    }
    let (host, literal) = match url.host() {
        Some(Host::Domain(d)) => (d.to_ascii_lowercase(), None),
        Some(Host::Ipv4(a)) => (a.to_string(), Some(IpAddr::V4(a))),
        Some(Host::Ipv6(a)) => (format!("[{a}]"), Some(IpAddr::V6(a))),
        None => {
            return Err(refused(
                "invalid_url",
                &shown,
                hop,
                format!("refused {shown}: no host"),
                json!({}),
            ))
        }
    };
    let port = url.port_or_known_default().unwrap_or(80);
    let allowed = policy.allow.allows(&host, port);
    let t = Target {
        url,
        host,
        port,
        literal,
        allowed,
    };
    if allowed {
        return Ok(t);
    }
    let bare = t.host.trim_end_matches('.');
    if METADATA_HOSTS.contains(&bare) {
        return Err(refused(
            "metadata",
            &shown,
            hop,
            format!(
                "refused {shown}{}: {} is a cloud metadata host name",
                hop_note(hop),
                t.host
            ),
            json!({"host": t.host}),
        ));
    }
    // An IPv4 host written in decimal, octal, hex or short form (`2130706433`,
    // `0177.0.0.1`, `0x7f.1`): refused whatever it denotes, so the address the caller
    // meant and the one a parser sees can never differ.
    if let Some(IpAddr::V4(a)) = t.literal {
        let trimmed = input.trim_start();
        let mut cs = trimmed.chars();
        let scheme_relative = matches!((cs.next(), cs.next()), (Some('/' | '\\'), Some('/' | '\\')));
        let raw = if scheme_relative {
            raw_host(&format!("http://{}", &trimmed[2..]))
        } else if base.is_some() && Url::parse(input).is_err() {
            None // a relative redirect keeps the host already checked
        } else {
            raw_host(input)
        };
        if let Some(raw) = raw {
            if raw.to_ascii_lowercase().trim() != a.to_string() {
                return Err(refused(
                    "obfuscated_ip",
                    &shown,
                    hop,
                    format!(
                        "refused {input:?}{}: host {raw:?} is an IPv4 address ({a}) written in a non-standard form (decimal, octal, hex or shortened); write it as {a}",
                        hop_note(hop)
                    ),
                    json!({"host": raw, "address": a.to_string()}),
                ));
            }
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allow: &[&str]) -> ProxyPolicy {
        ProxyPolicy {
            allow: AllowList::parse(&allow.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap(),
            ..ProxyPolicy::default()
        }
    }

    fn rule(u: &str) -> &'static str {
        check_url(u, None, &policy(&[]), 0)
            .err()
            .map(|r| r.rule)
            .unwrap_or("ok")
    }

    #[test]
    fn allow_list_entries() {
        let a = AllowList::parse(&[
            "Example.COM".into(),
            "127.0.0.1:8080".into(),
            "*.corp.example".into(),
            "[::1]".into(),
            "::2".into(),
        ])
        .unwrap();
        assert!(a.allows("example.com", 443));
        assert!(a.allows("example.com.", 80));
        assert!(!a.allows("www.example.com", 443));
        assert!(a.allows("127.0.0.1", 8080));
        assert!(!a.allows("127.0.0.1", 8081));
        assert!(a.allows("git.corp.example", 80));
        assert!(!a.allows("corp.example", 80));
        assert!(a.allows("[::1]", 1));
        assert!(a.allows("[::2]", 1));
        assert!(AllowList::parse(&["http://x/".into()]).is_err());
        assert!(AllowList::parse(&["x:notaport".into()]).is_err());
    }

    #[test]
    fn raw_hosts() {
        assert_eq!(raw_host("http://0177.0.0.1/x").as_deref(), Some("0177.0.0.1"));
        assert_eq!(raw_host("http://u:p@2130706433:80/").as_deref(), Some("2130706433"));
        assert_eq!(raw_host("http://[::1]:8/").as_deref(), Some("[::1]"));
        assert_eq!(raw_host("https://a.b\\c").as_deref(), Some("a.b"));
        assert_eq!(raw_host("/relative"), None);
        assert_eq!(raw_host("http:\\\\0x7f.1/").as_deref(), Some("0x7f.1"));
    }

    #[test]
    fn url_rules() {
        assert_eq!(rule("ftp://example.com/"), "scheme");
        assert_eq!(rule("file:///etc/passwd"), "scheme");
        assert_eq!(rule("javascript:alert(1)"), "scheme");
        assert_eq!(rule("not a url"), "invalid_url");
        assert_eq!(rule("http://user:pw@example.com/"), "credentials_in_url");
        assert_eq!(rule("http://metadata.google.internal/computeMetadata/v1/"), "metadata");
        assert_eq!(rule("http://2130706433/"), "obfuscated_ip");
        assert_eq!(rule("http://0177.0.0.1/"), "obfuscated_ip");
        assert_eq!(rule("http://0x7f.0.0.1/"), "obfuscated_ip");
        assert_eq!(rule("http://127.1/"), "obfuscated_ip");
        assert_eq!(rule("http://134744072/"), "obfuscated_ip"); // 8.8.8.8, refused all the same
        assert_eq!(rule("http://%31%32%37.0.0.1/"), "obfuscated_ip");
        assert_eq!(rule("http:/\\0177.0.0.1/"), "obfuscated_ip");
        assert_eq!(rule("http://127.0.0.1/"), "ok"); // the address check comes later
        assert_eq!(rule("https://example.com/a?b#c"), "ok");
        // an allow-listed host skips the host-name rules
        let p = policy(&["127.0.0.1:9"]);
        assert!(check_url("http://2130706433:9/", None, &p, 0).unwrap().allowed);
        // relative redirects keep the base's host
        let base = Url::parse("http://example.com/a/b").unwrap();
        let t = check_url("../c", Some(&base), &policy(&[]), 1).unwrap();
        assert_eq!(t.url.as_str(), "http://example.com/c");
        let r = check_url("//2130706433/", Some(&base), &policy(&[]), 1).unwrap_err();
        assert_eq!(r.rule, "obfuscated_ip");
    }
}
