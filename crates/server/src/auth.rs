//! Authentication and `Host` checks, as axum middleware layers.
//!
//! - The API key comes from `server.api_key`, else `TABGATE_API_KEY`, else the file
//!   `<state dir>/api_key` (generated on first start, mode 0600). A non-loopback bind
//!   needs one of the first two ([`check_bind`]).
//! - Every request but `GET /v1/health` needs `Authorization: Bearer <key>`; the
//!   comparison is constant-time.
//! - On loopback binds the `Host` header must name a loopback host or one of
//!   `server.allowed_hosts` (DNS rebinding); elsewhere only when that list is set.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::error::ApiError;

/// Where the API key came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// `server.api_key` in this config file (`None`: config given in memory).
    Config(Option<PathBuf>),
    /// The `TABGATE_API_KEY` environment variable.
    Env,
    /// A key file in the state dir; `generated` when this start created it.
    File {
        /// The key file.
        path: PathBuf,
        /// True when this start generated it.
        generated: bool,
    },
}

impl KeySource {
    /// True for a key the operator configured (config or environment), which is what a
    /// non-loopback bind requires.
    pub fn is_configured(&self) -> bool {
        !matches!(self, KeySource::File { .. })
    }
}

impl std::fmt::Display for KeySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeySource::Config(Some(p)) => write!(f, "server.api_key in {}", p.display()),
            KeySource::Config(None) => f.write_str("server.api_key in the configuration"),
            KeySource::Env => f.write_str("the TABGATE_API_KEY environment variable"),
            KeySource::File { path, generated: true } => {
                write!(f, "{} (generated now, mode 0600)", path.display())
            }
            KeySource::File { path, .. } => write!(f, "{}", path.display()),
        }
    }
}

/// The bearer key and where it came from.
#[derive(Clone)]
pub struct ApiKey {
    key: Arc<str>,
    /// Where it came from (shown at startup; the key itself never is).
    pub source: KeySource,
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKey")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl ApiKey {
    /// A key given directly (tests, embedding).
    pub fn new(key: &str, source: KeySource) -> ApiKey {
        ApiKey {
            key: key.into(),
            source,
        }
    }

    /// The key's value.
    pub fn value(&self) -> &str {
        &self.key
    }

    /// Constant-time check of a presented key.
    pub fn matches(&self, presented: &str) -> bool {
        bool::from(self.key.as_bytes().ct_eq(presented.as_bytes()))
    }

    /// Resolves the key: config, else `env_key` (the value of `TABGATE_API_KEY`), else
    /// `<state_dir>/api_key`, created with a fresh random key (mode 0600) when missing.
    ///
    /// Errors: an empty configured key, or the key file cannot be read or written.
    pub fn resolve(
        config_key: Option<&str>,
        config_path: Option<&Path>,
        env_key: Option<&str>,
        state_dir: &Path,
    ) -> Result<ApiKey, String> {
        if let Some(k) = config_key {
            let k = k.trim();
            if k.is_empty() {
                return Err("server.api_key is empty; set a key or remove the entry".into());
            }
            return Ok(ApiKey::new(k, KeySource::Config(config_path.map(Path::to_path_buf))));
        }
        if let Some(k) = env_key.map(str::trim).filter(|k| !k.is_empty()) {
            return Ok(ApiKey::new(k, KeySource::Env));
        }
        let path = state_dir.join("api_key");
        match std::fs::read_to_string(&path) {
            Ok(s) if !s.trim().is_empty() => {
                return Ok(ApiKey::new(s.trim(), KeySource::File { path, generated: false }))
            }
            Ok(_) => {
                return Err(format!(
                    "API key file {} is empty; delete it to generate a new key",
                    path.display()
                ))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("cannot read API key file {}: {e}", path.display())),
        }
        let key = generate_key()?;
        write_private(&path, &key).map_err(|e| format!("cannot write API key file {}: {e}", path.display()))?;
        Ok(ApiKey::new(&key, KeySource::File { path, generated: true }))
    }
}

/// A fresh key: `tg_` and 32 random bytes, base64url.
pub fn generate_key() -> Result<String, String> {
    use base64::Engine;
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).map_err(|e| format!("no system randomness: {e}"))?;
    Ok(format!(
        "tg_{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
    ))
}

/// A random id with `prefix` (`ses_` + 24 hex digits).
pub fn random_id(prefix: &str) -> String {
    let mut b = [0u8; 12];
    if getrandom::fill(&mut b).is_err() {
        // fall back to time-based uniqueness; ids are not secrets
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        b.copy_from_slice(&n.to_le_bytes()[..12]);
    }
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{prefix}{hex}")
}

fn write_private(path: &Path, key: &str) -> std::io::Result<()> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    let mut f = o.open(path)?;
    writeln!(f, "{key}")?;
    f.sync_all()
}

/// Refuses a non-loopback bind without a configured key (config or environment).
pub fn check_bind(addr: &SocketAddr, key: &ApiKey) -> Result<(), String> {
    if addr.ip().is_loopback() || key.source.is_configured() {
        return Ok(());
    }
    Err(format!(
        "refusing to listen on {addr} (not loopback) without a configured API key: set server.api_key in the config or TABGATE_API_KEY, or bind 127.0.0.1"
    ))
}

/// Which `Host` header values are accepted.
#[derive(Debug, Clone)]
pub struct HostPolicy {
    /// `None`: any host.
    allowed: Option<Vec<String>>,
}

impl HostPolicy {
    /// Loopback binds accept `localhost`, `127.0.0.1`, `[::1]` and `allowed_hosts`;
    /// other binds accept anything unless `allowed_hosts` is set, then those (plus the
    /// loopback names).
    pub fn new(bind: &SocketAddr, allowed_hosts: &[String]) -> HostPolicy {
        if !bind.ip().is_loopback() && allowed_hosts.is_empty() {
            return HostPolicy { allowed: None };
        }
        let mut allowed: Vec<String> = ["localhost", "127.0.0.1", "[::1]", "::1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        allowed.extend(allowed_hosts.iter().map(|h| h.to_ascii_lowercase()));
        HostPolicy { allowed: Some(allowed) }
    }

    /// True when `authority` (`host[:port]`) is accepted. An entry with a port must
    /// match exactly; an entry without one matches the host on any port.
    pub fn allows(&self, authority: &str) -> bool {
        let Some(list) = &self.allowed else { return true };
        let a = authority.trim().to_ascii_lowercase();
        let host = split_host(&a);
        list.iter().any(|e| *e == a || *e == host)
    }
}

/// The host part of `host[:port]` (IPv6 literals keep their brackets).
fn split_host(a: &str) -> &str {
    if a.starts_with('[') {
        return match a.find(']') {
            Some(i) => &a[..=i],
            None => a,
        };
    }
    match a.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => h,
        _ => a,
    }
}

/// What the auth layers need.
#[derive(Clone)]
pub struct AuthState {
    /// The bearer key.
    pub key: ApiKey,
    /// Accepted `Host` values.
    pub hosts: HostPolicy,
}

/// Layer: rejects a request whose `Host` is not allowed (403 `host_not_allowed`).
pub async fn check_host(State(a): State<Arc<AuthState>>, req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
        .or_else(|| req.uri().authority().map(|a| a.to_string()));
    match host {
        Some(h) if a.hosts.allows(&h) => next.run(req).await,
        Some(h) => ApiError::new(
            StatusCode::FORBIDDEN,
            "host_not_allowed",
            format!("Host {h:?} is not allowed; use http://127.0.0.1:PORT or add the name to server.allowed_hosts"),
        )
        .into_response(),
        None => ApiError::new(
            StatusCode::FORBIDDEN,
            "host_not_allowed",
            "the request has no Host header",
        )
        .into_response(),
    }
}

/// Layer: requires `Authorization: Bearer <key>` on everything except `GET /v1/health`
/// (401 `unauthorized` when missing, 401 `invalid_api_key` when wrong).
pub async fn require_key(State(a): State<Arc<AuthState>>, req: Request, next: Next) -> Response {
    if req.method() == Method::GET && req.uri().path() == "/v1/health" {
        return next.run(req).await;
    }
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| {
            let (scheme, rest) = h.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim().to_string())
        });
    match presented {
        Some(k) if a.key.matches(&k) => next.run(req).await,
        Some(_) => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_api_key",
            "the API key is wrong; tabgate serve printed where its key is at startup",
        )
        .into_response(),
        None => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing API key: send `Authorization: Bearer <key>` (tabgate serve printed where its key is at startup)",
        )
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_policy() {
        let lo: SocketAddr = "127.0.0.1:7878".parse().unwrap();
        let p = HostPolicy::new(&lo, &["gw.internal:7878".into()]);
        assert!(p.allows("127.0.0.1:7878"));
        assert!(p.allows("localhost"));
        assert!(p.allows("[::1]:7878"));
        assert!(p.allows("gw.internal:7878"));
        assert!(!p.allows("gw.internal:80"));
        assert!(!p.allows("evil.example:7878"));
        assert!(!p.allows("localhost.evil.example"));
        let any: SocketAddr = "0.0.0.0:7878".parse().unwrap();
        assert!(HostPolicy::new(&any, &[]).allows("anything:1"));
        assert!(!HostPolicy::new(&any, &["gw".into()]).allows("other"));
    }

    #[test]
    fn key_file_is_generated_once_with_mode_0600() {
        let dir = tempfile::tempdir().unwrap();
        let k1 = ApiKey::resolve(None, None, None, dir.path()).unwrap();
        assert!(matches!(k1.source, KeySource::File { generated: true, .. }));
        assert!(k1.value().starts_with("tg_") && k1.value().len() > 40);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let m = std::fs::metadata(dir.path().join("api_key"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(m & 0o777, 0o600);
        }
        let k2 = ApiKey::resolve(None, None, None, dir.path()).unwrap();
        assert_eq!(k1.value(), k2.value());
        assert!(matches!(k2.source, KeySource::File { generated: false, .. }));
        let k3 = ApiKey::resolve(None, None, Some("envkey"), dir.path()).unwrap();
        assert_eq!((k3.value(), &k3.source), ("envkey", &KeySource::Env));
        let k4 = ApiKey::resolve(Some("cfg"), None, Some("envkey"), dir.path()).unwrap();
        assert_eq!(k4.value(), "cfg");
        assert!(k4.matches("cfg") && !k4.matches("cfg2") && !k4.matches(""));
    }

    #[test]
    fn non_loopback_bind_needs_configured_key() {
        let any: SocketAddr = "0.0.0.0:7878".parse().unwrap();
        let lo: SocketAddr = "127.0.0.1:7878".parse().unwrap();
        let file = ApiKey::new(
            "k",
            KeySource::File {
                path: "/x".into(),
                generated: true,
            },
        );
        assert!(check_bind(&any, &file).is_err());
        assert!(check_bind(&lo, &file).is_ok());
        assert!(check_bind(&any, &ApiKey::new("k", KeySource::Env)).is_ok());
    }
}
