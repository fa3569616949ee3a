//! One endpoint of the pool: what it is, its health (kept by a monitor task), and the
//! browsers sessions get from it.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Value};
use tabgate_cdp::redact_url;
use tabgate_config::{EndpointConfig, EndpointKind};
use tabgate_supervisor::{now_epoch, Browser, SupervisorConfig};
use tokio::sync::watch;

use super::url::{browserless_url, host_port, url_secrets, with_query};

/// How often a monitor looks at its endpoint.
pub(super) const TICK: Duration = Duration::from_millis(500);
/// A down endpoint (or a Browserless port) is probed over the network every this many ticks.
const PROBE_EVERY_TICKS: u32 = 4;
/// Consecutive failed reconnects/probes before an endpoint is declared down.
const DOWN_AFTER: u32 = 2;

/// An endpoint's health.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// Not probed yet.
    Unknown,
    /// Reachable.
    Up,
    /// Unreachable: new sessions are not placed here, tabs opened here are lost.
    Down,
}

impl Health {
    /// `unknown` | `up` | `down`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Health::Unknown => "unknown",
            Health::Up => "up",
            Health::Down => "down",
        }
    }
}

pub(super) struct Runtime {
    /// Sessions placed here.
    pub(super) placed: BTreeSet<String>,
    /// Sessions with a tab open here now.
    open: usize,
    health: Health,
    /// Why it is down (scrubbed), or the last probe failure.
    error: Option<String>,
    /// Epoch seconds of the last health change.
    since: f64,
    /// Failed reconnects/probes in a row.
    failures: u32,
}

/// One browser endpoint of the pool.
pub struct Endpoint {
    pub(super) name: String,
    kind: EndpointKind,
    /// The URL to connect to, token included. Never shown.
    connect_url: Option<String>,
    /// The URL for messages (credentials redacted).
    pub(super) shown: Option<String>,
    /// Secrets to scrub from error texts.
    secrets: Vec<String>,
    /// `None` = unlimited (the default endpoint).
    pub(super) capacity: Option<usize>,
    /// The browser shared by every session here (`launch`, `cdp`).
    shared: Mutex<Option<Arc<Browser>>>,
    pub(super) rt: Mutex<Runtime>,
    /// Bumped every time the endpoint goes down.
    loss: watch::Sender<u64>,
    /// The pool's change signal (capacity freed, health changed).
    changed: Arc<watch::Sender<u64>>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Endpoint {
    pub(super) fn new(
        name: String,
        kind: EndpointKind,
        capacity: Option<usize>,
        shared: Option<Arc<Browser>>,
        changed: Arc<watch::Sender<u64>>,
    ) -> Endpoint {
        Endpoint {
            name,
            kind,
            connect_url: None,
            shown: None,
            secrets: vec![],
            capacity,
            shared: Mutex::new(shared),
            rt: Mutex::new(Runtime {
                placed: BTreeSet::new(),
                open: 0,
                health: Health::Unknown,
                error: None,
                since: now_epoch(),
                failures: 0,
            }),
            loss: watch::channel(0).0,
            changed,
        }
    }

    /// An endpoint without a capacity limit on `shared` (the default endpoint).
    pub(super) fn unlimited(
        name: String,
        kind: EndpointKind,
        shown: Option<String>,
        shared: Option<Arc<Browser>>,
        changed: Arc<watch::Sender<u64>>,
    ) -> Endpoint {
        Endpoint {
            shown,
            ..Endpoint::new(name, kind, None, shared, changed)
        }
    }

    pub(super) fn from_config(
        c: &EndpointConfig,
        launched: Option<Arc<Browser>>,
        changed: Arc<watch::Sender<u64>>,
    ) -> Endpoint {
        let connect_url = match c.kind {
            EndpointKind::Launch => None,
            EndpointKind::Cdp => c
                .url
                .as_deref()
                .map(|u| with_query(u, &[("token", c.token.as_deref())])),
            EndpointKind::Browserless => c
                .url
                .as_deref()
                .map(|u| browserless_url(u, c.token.as_deref(), c.launch.as_ref())),
        };
        let mut secrets: Vec<String> = c.token.iter().cloned().collect();
        if let Some(u) = &c.url {
            secrets.extend(url_secrets(u));
        }
        let shared = if c.kind == EndpointKind::Launch { launched } else { None };
        Endpoint {
            connect_url,
            shown: c.shown_url(),
            secrets,
            ..Endpoint::new(c.name.clone(), c.kind, Some(c.capacity), shared, changed)
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its kind.
    pub fn kind(&self) -> EndpointKind {
        self.kind
    }

    /// At most this many sessions are placed here (`None`: unlimited).
    pub fn capacity(&self) -> Option<usize> {
        self.capacity
    }

    /// Its URL with credentials redacted (`None` for the launched browser).
    pub fn shown_url(&self) -> Option<&str> {
        self.shown.as_deref()
    }

    /// `endpoint "a" (cdp, http://10.0.0.5:9222)` for messages.
    pub fn describe(&self) -> String {
        match &self.shown {
            Some(u) => format!("endpoint {:?} ({}, {u})", self.name, self.kind.as_str()),
            None => format!("endpoint {:?} (the Chromium tabgate launched)", self.name),
        }
    }

    /// Removes tokens and credentials from a message about this endpoint.
    pub fn scrub(&self, msg: &str) -> String {
        let mut m = msg.to_string();
        if let Some(u) = &self.connect_url {
            m = m.replace(u.as_str(), &redact_url(u));
        }
        for s in self.secrets.iter().filter(|s| s.len() >= 3) {
            m = m.replace(s.as_str(), "<redacted>");
        }
        m
    }

    /// Its health now. The launched browser is `up` while connected.
    pub fn health(&self) -> Health {
        if self.kind == EndpointKind::Launch {
            return match self.shared_browser() {
                Some(b) if b.conn().closed_reason().is_none() => Health::Up,
                _ => Health::Down,
            };
        }
        lock(&self.rt).health
    }

    /// Why it is down, or the last probe failure.
    pub fn error(&self) -> Option<String> {
        if self.kind == EndpointKind::Launch {
            return match self.shared_browser() {
                None => Some("no browser was launched for it".into()),
                Some(b) => b
                    .conn()
                    .closed_reason()
                    .map(|r| format!("the CDP connection closed ({r})")),
            };
        }
        lock(&self.rt).error.clone()
    }

    /// True when new sessions may be placed here.
    pub(super) fn eligible(&self) -> bool {
        // the launched browser is relaunched on use, so it takes sessions while reconnecting
        (self.kind == EndpointKind::Launch && self.shared_browser().is_some()) || self.health() != Health::Down
    }

    /// The loss epoch: a tab opened at an older epoch is lost.
    pub fn loss_epoch(&self) -> u64 {
        *self.loss.borrow()
    }

    /// A receiver that changes when the endpoint is lost.
    pub fn subscribe_loss(&self) -> watch::Receiver<u64> {
        self.loss.subscribe()
    }

    pub(super) fn shared_browser(&self) -> Option<Arc<Browser>> {
        lock(&self.shared).clone()
    }

    /// Keeps `b` as the shared browser unless another caller connected one first (then
    /// that one is used and `b` dropped).
    fn adopt_shared(&self, b: Arc<Browser>) -> Arc<Browser> {
        let mut g = lock(&self.shared);
        match &*g {
            Some(existing) => existing.clone(),
            None => {
                *g = Some(b.clone());
                b
            }
        }
    }

    pub(super) fn placed_count(&self) -> usize {
        lock(&self.rt).placed.len()
    }

    /// Whether session `id` is placed here.
    pub fn holds(&self, id: &str) -> bool {
        lock(&self.rt).placed.contains(id)
    }

    /// Free places for session `id` (its own place counts as free for it).
    pub(super) fn free_for(&self, id: &str) -> usize {
        let rt = lock(&self.rt);
        let taken = rt.placed.len() - usize::from(rt.placed.contains(id));
        match self.capacity {
            None => usize::MAX,
            Some(c) => c.saturating_sub(taken),
        }
    }

    pub(super) fn set_health(&self, h: Health, error: Option<String>) {
        let error = error.map(|e| self.scrub(&e));
        let went_down = {
            let mut rt = lock(&self.rt);
            let was = rt.health;
            if h == Health::Up {
                rt.failures = 0;
            }
            rt.error = error.clone();
            if was == h {
                return;
            }
            rt.health = h;
            rt.since = now_epoch();
            h == Health::Down
        };
        if went_down {
            self.loss.send_modify(|e| *e += 1);
            tracing::warn!(endpoint = %self.name, "{} is down: {}", self.describe(), error.as_deref().unwrap_or("unreachable"));
        } else if h == Health::Up {
            tracing::info!(endpoint = %self.name, "{} is up", self.describe());
        }
        self.changed.send_modify(|v| *v += 1);
    }

    /// Counts a failed reconnect or probe; the endpoint goes down after [`DOWN_AFTER`].
    fn failed(&self, error: String) {
        let n = {
            let mut rt = lock(&self.rt);
            rt.failures += 1;
            rt.failures
        };
        if n >= DOWN_AFTER {
            self.set_health(Health::Down, Some(error));
        } else {
            lock(&self.rt).error = Some(self.scrub(&error));
        }
    }

    /// Marks it down at once (a connection to it failed where it should not).
    pub fn mark_down(&self, error: &str) {
        self.set_health(Health::Down, Some(error.to_string()));
    }

    /// The browser a new session on this endpoint opens its tab in: the shared one
    /// (connected or reconnected first), or for Browserless a browser of its own (a new
    /// WebSocket connection). Errors are scrubbed and name the endpoint.
    pub async fn browser_for_session(&self) -> Result<Arc<Browser>, String> {
        match self.kind {
            EndpointKind::Launch | EndpointKind::Cdp => {
                let b = match self.shared_browser() {
                    Some(b) => b,
                    None if self.kind == EndpointKind::Launch => {
                        return Err(format!("{}: no browser was launched for it", self.describe()))
                    }
                    None => {
                        let url = self.connect_url.as_deref().unwrap_or_default();
                        match Browser::attach(url).await {
                            Ok(b) => {
                                let b = self.adopt_shared(b);
                                self.set_health(Health::Up, None);
                                b
                            }
                            Err(e) => {
                                let e = self.scrub(&e.to_string());
                                self.mark_down(&e);
                                return Err(format!("{} is unreachable: {e}", self.describe()));
                            }
                        }
                    }
                };
                if b.conn().closed_reason().is_some() {
                    if let Err(e) = b.reconnect().await {
                        let e = self.scrub(&e.to_string());
                        if self.kind == EndpointKind::Cdp {
                            self.mark_down(&e);
                        }
                        return Err(format!("{} is unreachable: {e}", self.describe()));
                    }
                }
                Ok(b)
            }
            EndpointKind::Browserless => {
                let url = self.connect_url.as_deref().unwrap_or_default();
                match Browser::attach(url).await {
                    Ok(b) => {
                        self.set_health(Health::Up, None);
                        Ok(b)
                    }
                    Err(e) => {
                        let e = self.scrub(&e.to_string());
                        if !reachable(url).await {
                            self.mark_down(&e);
                        }
                        Err(format!("{} did not give tabgate a browser: {e}", self.describe()))
                    }
                }
            }
        }
    }

    /// The page target a new session adopts as its first tab: the blank page a
    /// Browserless browser starts with (the browser is the session's alone).
    pub async fn initial_page(&self, browser: &Browser) -> Option<String> {
        match self.kind {
            // a shared browser: an unattached page may be another session's tab that is
            // still being set up, so every session creates its own
            EndpointKind::Launch | EndpointKind::Cdp => None,
            EndpointKind::Browserless => {
                let r = browser
                    .conn()
                    .call(None, "Target.getTargets", json!({}), 5_000)
                    .await
                    .ok()?;
                r["targetInfos"]
                    .as_array()?
                    .iter()
                    .find(|t| t["type"] == "page" && !t["attached"].as_bool().unwrap_or(false))
                    .and_then(|t| t["targetId"].as_str())
                    .map(str::to_string)
            }
        }
    }

    /// The supervisor settings for a session here. A Browserless browser lives and dies
    /// with its connection, so a dropped one is never reconnected (that would be an empty
    /// new browser): it reads as lost at once.
    pub fn supervisor_config(&self, mut cfg: SupervisorConfig) -> SupervisorConfig {
        if self.kind == EndpointKind::Browserless {
            cfg.reconnect_attempts = 0;
        }
        cfg
    }

    /// Why a session's browser here is gone, in words that fit this kind of endpoint.
    pub fn loss_reason(&self, browser: &Browser, stopped: Option<&str>) -> String {
        if let Some(e) = self.error().filter(|_| self.health() == Health::Down) {
            return format!("the endpoint is down ({e})");
        }
        let closed = browser.conn().closed_reason();
        match (self.kind, closed) {
            (EndpointKind::Browserless, Some(r)) => format!(
                "its browser's connection closed ({r}); Browserless ends a session's browser when its connection drops, when the browser exits, and at its TIMEOUT"
            ),
            (_, closed) => {
                let s = stopped
                    .map(|s| s.split("; check the browser").next().unwrap_or(s).to_string())
                    .or_else(|| closed.map(|r| format!("the CDP connection closed ({r})")))
                    .unwrap_or_else(|| "the browser went away".into());
                self.scrub(&s)
            }
        }
    }

    /// Called when a session's tab here is closed: a Browserless browser is closed with it
    /// (that frees its place on the Browserless server at once).
    pub async fn session_closed(&self, browser: &Browser) {
        {
            let mut rt = lock(&self.rt);
            rt.open = rt.open.saturating_sub(1);
        }
        if self.kind == EndpointKind::Browserless && browser.conn().closed_reason().is_none() {
            let _ = browser.conn().call(None, "Browser.close", json!({}), 2_000).await;
        }
    }

    /// Called when a session opened a tab here.
    pub fn session_opened(&self) {
        lock(&self.rt).open += 1;
    }

    /// One look at the endpoint (the monitor's tick).
    pub(super) async fn probe(&self, tick: u32) {
        match self.kind {
            EndpointKind::Launch => {}
            EndpointKind::Cdp => {
                let down = lock(&self.rt).health == Health::Down;
                if down && !tick.is_multiple_of(PROBE_EVERY_TICKS) {
                    return;
                }
                match self.shared_browser() {
                    None => {
                        let url = self.connect_url.as_deref().unwrap_or_default();
                        match tokio::time::timeout(Duration::from_secs(10), Browser::attach(url)).await {
                            Ok(Ok(b)) => {
                                self.adopt_shared(b);
                                self.set_health(Health::Up, None);
                            }
                            Ok(Err(e)) => self.set_health(Health::Down, Some(e.to_string())),
                            Err(_) => self.set_health(Health::Down, Some("no answer within 10 s".into())),
                        }
                    }
                    Some(b) => {
                        let Some(reason) = b.conn().closed_reason() else {
                            return self.set_health(Health::Up, None);
                        };
                        match tokio::time::timeout(Duration::from_secs(10), b.reconnect()).await {
                            Ok(Ok(_)) => self.set_health(Health::Up, None),
                            Ok(Err(e)) => self.failed(format!(
                                "the CDP connection closed ({reason}) and reconnecting failed: {e}"
                            )),
                            Err(_) => self.failed(format!(
                                "the CDP connection closed ({reason}) and reconnecting got no answer within 10 s"
                            )),
                        }
                    }
                }
            }
            EndpointKind::Browserless => {
                if !tick.is_multiple_of(PROBE_EVERY_TICKS) {
                    return;
                }
                let url = self.connect_url.as_deref().unwrap_or_default();
                if reachable(url).await {
                    self.set_health(Health::Up, None);
                } else {
                    self.failed(format!("nothing accepts connections at {}", redact_url(url)));
                }
            }
        }
    }

    /// The endpoint as `GET /v1/endpoints` shows it.
    pub fn view(&self) -> Value {
        let (placed, open, since) = {
            let rt = lock(&self.rt);
            (rt.placed.iter().cloned().collect::<Vec<_>>(), rt.open, rt.since)
        };
        let health = self.health();
        json!({
            "name": self.name,
            "kind": self.kind.as_str(),
            "url": self.shown,
            "capacity": self.capacity,
            "placed": placed.len(),
            "free": self.capacity.map(|c| c.saturating_sub(placed.len())),
            "open": open,
            "health": health.as_str(),
            "error": if health == Health::Down { self.error() } else { None },
            "health_since": if self.kind == EndpointKind::Launch { None } else { Some(since) },
            "sessions": placed,
        })
    }
}

/// Whether something accepts TCP connections at the URL's host and port (2 s).
async fn reachable(url: &str) -> bool {
    let Some((host, port)) = host_port(url) else {
        return false;
    };
    matches!(
        tokio::time::timeout(
            Duration::from_secs(2),
            tokio::net::TcpStream::connect((host.as_str(), port))
        )
        .await,
        Ok(Ok(_))
    )
}
