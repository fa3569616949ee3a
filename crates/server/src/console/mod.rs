//! The in-page agent console's server side (DESIGN.md section 6): its state, the
//! per-session capability tokens it works with, and its static files.
//!
//! The console page (`/`, files under `/web/`) is static and needs no key. A person
//! connects it once with the API key (`POST /v1/console/token`); it then holds only a
//! console token (`tgc_…`) bound to one session, which grants that session's tools (not
//! `browser_cdp`), the model forwarding (`/v1/chat/completions`), the fetch proxy
//! (`/v1/proxy`) and the session's conversations — and nothing else. Those endpoints also
//! accept the API key (with `X-Tabgate-Session` naming the session where one is needed).

pub mod assets;
pub mod db;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tabgate_config::Config;
use tabgate_supervisor::now_epoch;

use crate::auth::ApiKey;
use crate::error::ApiError;
use crate::gateway::Gateway;
use crate::proxy::{Proxy, ProxyPolicy, SystemResolver};
use db::ConsoleDb;

/// How long a console token stays valid: 7 days.
pub const TOKEN_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// Largest request body on the console's endpoints (conversations, model requests,
/// proxied POST bodies): 8 MiB.
pub const CONSOLE_MAX_BODY: usize = 8 * 1024 * 1024;

/// The header a key holder uses to name the session.
pub const SESSION_HEADER: &str = "x-tabgate-session";

/// The OpenAI-compatible upstream (`llm.*`).
#[derive(Debug, Clone, Default)]
pub struct LlmConfig {
    /// `llm.base_url`, e.g. `https://api.openai.com/v1`, `http://127.0.0.1:11434/v1`.
    pub base_url: Option<String>,
    /// `llm.api_key`: sent upstream as a bearer token; never shown to the page.
    pub api_key: Option<String>,
    /// `llm.model`: used when a request names none.
    pub model: Option<String>,
}

impl LlmConfig {
    /// Reads `llm.base_url`, `llm.api_key`, `llm.model`.
    pub fn from_config(config: &Config) -> LlmConfig {
        let s = |k: &str| {
            config.raw["llm"][k]
                .as_str()
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        LlmConfig {
            base_url: s("base_url").map(|u| u.trim_end_matches('/').to_string()),
            api_key: s("api_key"),
            model: s("model"),
        }
    }
}

/// Checks the console's part of the configuration (`proxy.*`, `llm.base_url`), so a
/// mistake stops startup instead of surfacing on the first request.
pub fn check_config(config: &Config) -> Result<(), String> {
    ProxyPolicy::from_config(config)?;
    if let Some(u) = LlmConfig::from_config(config).base_url {
        let ok = url::Url::parse(&u).is_ok_and(|p| matches!(p.scheme(), "http" | "https"));
        if !ok {
            return Err(format!("llm.base_url: {u:?} is not an http(s) URL"));
        }
    }
    Ok(())
}

/// Who is calling a console endpoint.
#[derive(Debug, Clone)]
pub enum Caller {
    /// The API key; `session` from `X-Tabgate-Session` when sent.
    Key {
        /// The session named by the header.
        session: Option<String>,
    },
    /// A console token, bound to one session.
    Token {
        /// The token's session.
        session: String,
        /// The token itself (for revocation).
        token: String,
    },
}

impl Caller {
    /// The session the call acts for, if any.
    pub fn session(&self) -> Option<&str> {
        match self {
            Caller::Key { session } => session.as_deref(),
            Caller::Token { session, .. } => Some(session),
        }
    }

    /// The session, or 400 `no_session` naming the header.
    pub fn require_session(&self) -> Result<&str, ApiError> {
        self.session().ok_or_else(|| {
            ApiError::bad_request(
                "no_session",
                "no session: use a console token (POST /v1/console/token), or send `X-Tabgate-Session: <session id>` with the API key",
            )
        })
    }
}

/// The console's shared state.
pub struct Console {
    /// The gateway (sessions and tool calls).
    pub gw: Arc<Gateway>,
    key: ApiKey,
    /// Tokens, conversations and the proxy log.
    pub db: ConsoleDb,
    /// The fetch proxy.
    pub proxy: Proxy,
    /// The model upstream.
    pub llm: LlmConfig,
    /// The client for the model upstream (trusted, operator-configured: no SSRF rules).
    pub llm_client: reqwest::Client,
}

impl Console {
    /// The console over `gw`, accepting `key`, configured from `config` (an invalid
    /// `proxy.*` section was refused at startup by [`check_config`]; here it falls back
    /// to an empty allow-list).
    pub fn new(gw: Arc<Gateway>, key: ApiKey, config: &Config) -> Arc<Console> {
        let policy = ProxyPolicy::from_config(config).unwrap_or_else(|e| {
            tracing::error!("{e}; the proxy allows no internal hosts");
            ProxyPolicy::default()
        });
        let llm_client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(Duration::from_secs(300))
            .build()
            .unwrap_or_default();
        Arc::new(Console {
            db: ConsoleDb::new(gw.store().path()),
            gw,
            key,
            proxy: Proxy::new(policy, Arc::new(SystemResolver)),
            llm: LlmConfig::from_config(config),
            llm_client,
        })
    }

    /// True when `presented` is the API key.
    pub fn is_api_key(&self, presented: &str) -> bool {
        self.key.matches(presented)
    }
}

fn bearer(h: &HeaderMap) -> Option<String> {
    let v = h.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, rest) = v.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim().to_string())
}

fn unauthorized(code: &str, message: &str) -> Response {
    ApiError::new(StatusCode::UNAUTHORIZED, code, message).into_response()
}

/// Layer: the API key or a console token (`Authorization: Bearer …`); puts a [`Caller`]
/// into the request's extensions. 401 `unauthorized` when missing, `invalid_token` for
/// an unknown, expired or revoked token (or one whose session was deleted),
/// `invalid_api_key` otherwise.
pub async fn authenticate(State(c): State<Arc<Console>>, mut req: Request, next: Next) -> Response {
    let refuse = |req: &Request, code: &str, message: &str| {
        // a proxy request refused for its credentials is logged like any other
        if req.uri().path() == "/v1/proxy" {
            crate::routes::log_proxy_refusal(&c, None, req.method(), req.uri().query(), code, "auth");
        }
        unauthorized(code, message)
    };
    let Some(presented) = bearer(req.headers()) else {
        return refuse(
            &req,
            "unauthorized",
            "missing credentials: send `Authorization: Bearer <console token or API key>`; open the console at / to connect it",
        );
    };
    let caller = if c.is_api_key(&presented) {
        let session = req
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        Caller::Key { session }
    } else if presented.starts_with("tgc_") {
        let found = match c.db.token_session(&presented, now_epoch()) {
            Ok(s) => s,
            Err(e) => {
                tracing::error!("{e}");
                return ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "storage_error", e.0).into_response();
            }
        };
        match found {
            Some(session) if c.gw.record(&session).is_ok() => Caller::Token {
                session,
                token: presented,
            },
            _ => {
                return refuse(
                    &req,
                    "invalid_token",
                    "the console token is unknown, expired or revoked, or its session was deleted; reconnect the console with the API key",
                )
            }
        }
    } else {
        return refuse(
            &req,
            "invalid_api_key",
            "the API key is wrong; tabgate serve printed where its key is at startup",
        );
    };
    req.extensions_mut().insert(caller);
    next.run(req).await
}

/// Layer: `Access-Control-Allow-Origin` only for the gateway's own origin (the console),
/// never for another site; any such header from elsewhere is removed.
pub async fn own_origin_only(req: Request, next: Next) -> Response {
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.remove(header::ACCESS_CONTROL_ALLOW_ORIGIN);
    h.remove(header::ACCESS_CONTROL_ALLOW_CREDENTIALS);
    if let (Some(o), Some(host)) = (origin, host) {
        let own = [format!("http://{host}"), format!("https://{host}")];
        if own.iter().any(|x| x.eq_ignore_ascii_case(&o)) {
            if let Ok(v) = HeaderValue::from_str(&o) {
                h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, v);
            }
        }
    }
    h.append(header::VARY, HeaderValue::from_static("Origin"));
    resp
}

/// A JSON object body, or 400 `invalid_json` naming what was expected.
pub fn object(body: &Value, what: &str) -> Result<serde_json::Map<String, Value>, ApiError> {
    match body {
        Value::Object(o) => Ok(o.clone()),
        Value::Null => Ok(Default::default()),
        other => Err(ApiError::bad_request(
            "invalid_json",
            format!("{what}: the body must be a JSON object, got {other}"),
        )),
    }
}
