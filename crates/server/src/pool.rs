//! The browser pool (DESIGN.md section 7): the endpoints sessions are placed on, their
//! capacity and health.
//!
//! - A session is placed when it is created: on the endpoint it names (it is then
//!   *pinned*), else on the endpoint with the most free capacity that is not down. When
//!   none has room, creation waits up to `browser.placement_timeout_s` and then fails with
//!   `pool_exhausted` (503, `Retry-After`). A session keeps its endpoint until it is
//!   deleted, or until its browser is lost and `browser_navigate` places it again.
//! - A monitor task per endpoint keeps its health: `cdp` endpoints through their shared
//!   connection (reconnected when it drops), `browserless` endpoints by connecting to their
//!   port, the launched browser by its connection. An endpoint that goes down bumps its
//!   *loss epoch*: every tab opened on it before is lost (`browser_lost`).
//! - Placement lives in memory. After a restart no session has a tab, and stored sessions
//!   are placed again at start (pinned ones on their endpoint).
//!
//! Endpoint URLs may carry tokens: only [`Endpoint::shown_url`] is ever logged or shown,
//! and error texts from below are scrubbed of the token before they are kept.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use serde_json::{json, Value};
use tabgate_cdp::redact_url;
use tabgate_config::{Config, EndpointConfig, EndpointKind};
use tabgate_supervisor::{now_epoch, Browser, SupervisorConfig};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::error::{gateway_error, ApiError};
use crate::store::SessionRecord;

/// Name of the one endpoint of a gateway without `browser.endpoints`.
pub const DEFAULT_ENDPOINT: &str = "default";

/// How often a monitor looks at its endpoint.
const TICK: Duration = Duration::from_millis(500);
/// A down endpoint (or a Browserless port) is probed over the network every this many ticks.
const PROBE_EVERY_TICKS: u32 = 4;
/// Consecutive failed reconnects/probes before an endpoint is declared down.
const DOWN_AFTER: u32 = 2;

/// Flags every browser Browserless starts for tabgate gets (as for the launched one): each
/// session's tab is in its own window, and none may be throttled as a background tab.
const BROWSERLESS_ARGS: &[&str] = &[
    "--disable-renderer-backgrounding",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-dev-shm-usage",
];

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

struct Runtime {
    /// Sessions placed here.
    placed: BTreeSet<String>,
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
    name: String,
    kind: EndpointKind,
    /// The URL to connect to, token included. Never shown.
    connect_url: Option<String>,
    /// The URL for messages (credentials redacted).
    shown: Option<String>,
    /// Secrets to scrub from error texts.
    secrets: Vec<String>,
    /// `None` = unlimited (the default endpoint).
    capacity: Option<usize>,
    /// The browser shared by every session here (`launch`, `cdp`).
    shared: Mutex<Option<Arc<Browser>>>,
    rt: Mutex<Runtime>,
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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Endpoint {
    fn new(
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

    fn from_config(c: &EndpointConfig, launched: Option<Arc<Browser>>, changed: Arc<watch::Sender<u64>>) -> Endpoint {
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
    fn eligible(&self) -> bool {
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

    fn shared_browser(&self) -> Option<Arc<Browser>> {
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

    fn placed_count(&self) -> usize {
        lock(&self.rt).placed.len()
    }

    /// Whether session `id` is placed here.
    pub fn holds(&self, id: &str) -> bool {
        lock(&self.rt).placed.contains(id)
    }

    /// Free places for session `id` (its own place counts as free for it).
    fn free_for(&self, id: &str) -> usize {
        let rt = lock(&self.rt);
        let taken = rt.placed.len() - usize::from(rt.placed.contains(id));
        match self.capacity {
            None => usize::MAX,
            Some(c) => c.saturating_sub(taken),
        }
    }

    fn set_health(&self, h: Health, error: Option<String>) {
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
    async fn probe(&self, tick: u32) {
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

/// The pool of endpoints and the placement of sessions on them.
pub struct Pool {
    endpoints: Vec<Arc<Endpoint>>,
    placement_timeout: Duration,
    /// Serialises placement decisions (count free places, then take one).
    placing: Mutex<()>,
    /// Ticks when a place is freed or an endpoint's health changes.
    changed: Arc<watch::Sender<u64>>,
    monitors: Mutex<Vec<JoinHandle<()>>>,
}

impl Pool {
    /// The pool `config` describes. Without `browser.endpoints` it is one unlimited
    /// endpoint, [`DEFAULT_ENDPOINT`], on `browser` (launched, or attached with
    /// `--cdp-url`). With endpoints, `browser` serves the `launch` one (if any).
    pub fn new(config: &Config, browser: Option<Arc<Browser>>) -> Arc<Pool> {
        let changed = Arc::new(watch::channel(0u64).0);
        let endpoints: Vec<Arc<Endpoint>> = if config.endpoints.is_empty() {
            let kind = match &browser {
                Some(b) if !b.launched() => EndpointKind::Cdp,
                _ => EndpointKind::Launch,
            };
            let shown = browser.as_ref().filter(|b| !b.launched()).map(|b| b.describe());
            vec![Arc::new(Endpoint {
                shown,
                ..Endpoint::new(DEFAULT_ENDPOINT.into(), kind, None, browser, changed.clone())
            })]
        } else {
            if browser.is_some() && !config.endpoints.iter().any(|e| e.kind == EndpointKind::Launch) {
                tracing::warn!(
                    "browser.endpoints has no endpoint of kind launch: the browser given to the gateway is not used"
                );
            }
            config
                .endpoints
                .iter()
                .map(|c| Arc::new(Endpoint::from_config(c, browser.clone(), changed.clone())))
                .collect()
        };
        // an attached default browser is connected already: it is up from the start
        for e in &endpoints {
            if let Some(b) = e.shared_browser() {
                if b.conn().closed_reason().is_none() {
                    e.set_health(Health::Up, None);
                }
            }
        }
        Arc::new(Pool {
            endpoints,
            placement_timeout: Duration::from_secs_f64(config.placement_timeout_s.max(0.0)),
            placing: Mutex::new(()),
            changed,
            monitors: Mutex::new(vec![]),
        })
    }

    /// Starts one monitor task per endpoint (they end with the pool or [`Pool::stop`]).
    pub fn start_monitors(self: &Arc<Self>) {
        let mut m = lock(&self.monitors);
        for e in &self.endpoints {
            let weak: Weak<Endpoint> = Arc::downgrade(e);
            m.push(tokio::spawn(async move {
                let mut tick: u32 = 0;
                loop {
                    let Some(e) = weak.upgrade() else { return };
                    e.probe(tick).await;
                    drop(e);
                    tick = tick.wrapping_add(1);
                    tokio::time::sleep(TICK).await;
                }
            }));
        }
    }

    /// Stops the monitors.
    pub fn stop(&self) {
        for h in lock(&self.monitors).drain(..) {
            h.abort();
        }
    }

    /// Every endpoint, in configuration order.
    pub fn endpoints(&self) -> &[Arc<Endpoint>] {
        &self.endpoints
    }

    /// The endpoint named `name`.
    pub fn endpoint(&self, name: &str) -> Option<Arc<Endpoint>> {
        self.endpoints.iter().find(|e| e.name == name).cloned()
    }

    /// The endpoint session `id` is placed on.
    pub fn placement(&self, id: &str) -> Option<Arc<Endpoint>> {
        self.endpoints.iter().find(|e| e.holds(id)).cloned()
    }

    /// How long placement waits for a free place.
    pub fn placement_timeout(&self) -> Duration {
        self.placement_timeout
    }

    /// The shared browser of the first endpoint that has one (the launched browser, or
    /// the `--cdp-url` one), for callers that need "the" browser of a one-browser gateway.
    pub fn shared_browser(&self) -> Option<Arc<Browser>> {
        self.endpoints.iter().find_map(|e| e.shared_browser())
    }

    /// Places the stored sessions after a start: pinned ones on their endpoint (whatever
    /// its room), the others where there is room; the rest are placed on first use.
    pub fn load(&self, records: &[SessionRecord]) {
        for r in records {
            match pinned(r) {
                Some(name) => match self.endpoint(&name) {
                    Some(e) => {
                        lock(&e.rt).placed.insert(r.session_id.clone());
                    }
                    None => tracing::warn!(
                        session = %r.session_id,
                        "session is pinned to endpoint {name:?}, which is not in browser.endpoints any more; its calls fail until it is deleted"
                    ),
                },
                None => {
                    let _ = self.try_place(&r.session_id, None);
                }
            }
        }
    }

    /// Takes a place for session `id` now, or returns `None`. `want` restricts it to one
    /// endpoint (whatever its health: a pinned session asked for it). A session already
    /// placed may move; its old place is freed.
    fn try_place(&self, id: &str, want: Option<&str>) -> Option<Arc<Endpoint>> {
        let _g = lock(&self.placing);
        let mut best: Option<(&Arc<Endpoint>, usize)> = None;
        for e in &self.endpoints {
            let ok = match want {
                Some(w) => e.name == w,
                None => e.eligible(),
            };
            if !ok {
                continue;
            }
            let free = e.free_for(id);
            if free > 0 && best.is_none_or(|(_, f)| free > f) {
                best = Some((e, free));
            }
        }
        let (chosen, _) = best?;
        let mut moved = false;
        for e in &self.endpoints {
            if !Arc::ptr_eq(e, chosen) {
                moved |= lock(&e.rt).placed.remove(id);
            }
        }
        lock(&chosen.rt).placed.insert(id.to_string());
        if moved {
            self.changed.send_modify(|v| *v += 1);
        }
        Some(chosen.clone())
    }

    /// Places session `id` (see the module docs): on `want` if given, else on the
    /// eligible endpoint with the most free places, waiting up to the placement timeout
    /// for one. Errors: 400 `invalid_settings` for an unknown `want`; 503
    /// `pool_exhausted` (with `Retry-After`) when no place freed in time.
    pub async fn place(&self, id: &str, want: Option<&str>) -> Result<Arc<Endpoint>, ApiError> {
        if let Some(w) = want {
            if self.endpoint(w).is_none() {
                return Err(ApiError::bad_request(
                    "invalid_settings",
                    format!("no endpoint named {w:?}; endpoints: {}", self.names().join(", ")),
                ));
            }
        }
        let deadline = Instant::now() + self.placement_timeout;
        let mut rx = self.changed.subscribe();
        loop {
            let _ = rx.borrow_and_update();
            if let Some(e) = self.try_place(id, want) {
                return Ok(e);
            }
            tokio::select! {
                r = rx.changed() => if r.is_err() { break },
                _ = tokio::time::sleep_until(deadline) => break,
            }
        }
        self.try_place(id, want)
            .ok_or_else(|| self.exhausted(want, self.placement_timeout))
    }

    /// [`Pool::place`] without waiting: `pool_exhausted` at once when there is no room.
    pub fn place_now(&self, id: &str, want: Option<&str>) -> Result<Arc<Endpoint>, ApiError> {
        if let Some(w) = want {
            if self.endpoint(w).is_none() {
                return Err(ApiError::bad_request(
                    "invalid_settings",
                    format!("no endpoint named {w:?}; endpoints: {}", self.names().join(", ")),
                ));
            }
        }
        self.try_place(id, want)
            .ok_or_else(|| self.exhausted(want, Duration::ZERO))
    }

    fn names(&self) -> Vec<String> {
        self.endpoints.iter().map(|e| e.name.clone()).collect()
    }

    fn exhausted(&self, want: Option<&str>, waited: Duration) -> ApiError {
        let secs = waited.as_secs_f64();
        let state = |e: &Endpoint| match (e.health(), e.capacity) {
            (Health::Down, _) if want.is_none() => format!(
                "{:?} is down ({})",
                e.name,
                e.error().unwrap_or_else(|| "unreachable".into())
            ),
            (_, Some(c)) => format!("{:?} holds {}/{c} sessions", e.name, e.placed_count()),
            (_, None) => format!("{:?} has room", e.name),
        };
        let shown: Vec<String> = self
            .endpoints
            .iter()
            .filter(|e| want.is_none_or(|w| e.name == w))
            .map(|e| state(e))
            .collect();
        let all_down = want.is_none() && !self.endpoints.iter().any(|e| e.eligible());
        let (code, what) = match want {
            Some(w) => (
                "pool_exhausted",
                format!("endpoint {w:?} has no room for another session"),
            ),
            None if all_down => ("browser_unavailable", "every browser endpoint is down".to_string()),
            None => (
                "pool_exhausted",
                "no browser endpoint has room for another session".to_string(),
            ),
        };
        gateway_error(
            code,
            format!(
                "{what} after waiting {secs} s ({}); {}",
                shown.join("; "),
                if all_down {
                    "check the endpoints (GET /v1/endpoints) and retry"
                } else {
                    "delete sessions you no longer need (DELETE /v1/sessions/{id}), retry later, or add capacity in browser.endpoints"
                }
            ),
        )
        .with(json!({"endpoints": self.endpoints.iter().map(|e| json!({
            "name": e.name, "health": e.health().as_str(), "placed": e.placed_count(), "capacity": e.capacity,
        })).collect::<Vec<_>>()}))
        .retry_after(self.placement_timeout.as_secs().clamp(1, 30))
    }

    /// Frees the place of session `id` (deleted).
    pub fn release(&self, id: &str) {
        let mut freed = false;
        for e in &self.endpoints {
            freed |= lock(&e.rt).placed.remove(id);
        }
        if freed {
            self.changed.send_modify(|v| *v += 1);
        }
    }

    /// `GET /v1/endpoints`.
    pub fn view(&self) -> Value {
        json!({
            "endpoints": self.endpoints.iter().map(|e| e.view()).collect::<Vec<_>>(),
            "placement_timeout_s": self.placement_timeout.as_secs_f64(),
        })
    }

    /// `(endpoints up, endpoints, why the first is not up)` for `GET /v1/health`.
    pub fn health_summary(&self) -> (usize, usize, Option<String>) {
        let up = self.endpoints.iter().filter(|e| e.health() == Health::Up).count();
        let why = self
            .endpoints
            .iter()
            .find(|e| e.health() != Health::Up)
            .and_then(|e| e.error());
        (up, self.endpoints.len(), why)
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The endpoint a session record is pinned to (`settings.endpoint`).
pub fn pinned(r: &SessionRecord) -> Option<String> {
    r.settings.get("endpoint").and_then(Value::as_str).map(str::to_string)
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

/// Host and port of a `ws`/`wss`/`http`/`https` URL (default ports filled in).
fn host_port(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let hp = authority.rsplit_once('@').map(|(_, h)| h).unwrap_or(authority);
    let default = if matches!(scheme, "wss" | "https") { 443 } else { 80 };
    if let Some(v6) = hp.strip_prefix('[') {
        let (h, rest) = v6.split_once(']')?;
        let port = rest.strip_prefix(':').and_then(|p| p.parse().ok()).unwrap_or(default);
        return Some((h.to_string(), port));
    }
    match hp.rsplit_once(':') {
        Some((h, p)) => Some((h.to_string(), p.parse().ok()?)),
        None => Some((hp.to_string(), default)),
    }
}

/// The password of `user:pass@` and every query value of a URL (secrets to scrub).
fn url_secrets(url: &str) -> Vec<String> {
    let mut out = vec![];
    if let Some((_, rest)) = url.split_once("://") {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        if let Some((cred, _)) = authority.rsplit_once('@') {
            out.push(cred.to_string());
            if let Some((_, pass)) = cred.split_once(':') {
                out.push(pass.to_string());
            }
        }
    }
    if let Some((_, q)) = url.split_once('?') {
        out.extend(
            q.split('&')
                .filter_map(|p| p.split_once('='))
                .map(|(_, v)| v.to_string()),
        );
    }
    out.retain(|s| !s.is_empty());
    out
}

/// Adds query parameters (those with a value) to `url`.
fn with_query(url: &str, params: &[(&str, Option<&str>)]) -> String {
    let mut out = url.to_string();
    for (k, v) in params {
        let Some(v) = v else { continue };
        out.push(if out.contains('?') { '&' } else { '?' });
        out.push_str(k);
        out.push('=');
        out.push_str(&percent_encode(v));
    }
    out
}

/// The WebSocket URL of a Browserless v2 endpoint: `http(s)` becomes `ws(s)`, an empty
/// path becomes `/chromium`, and `token` and `launch` (JSON: tabgate's flags plus the
/// endpoint's own launch options) are added as query parameters.
pub fn browserless_url(url: &str, token: Option<&str>, launch: Option<&Value>) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("ws", url));
    let scheme = match scheme {
        "http" => "ws",
        "https" => "wss",
        s => s,
    };
    let (before_query, query) = match rest.split_once('?') {
        Some((a, q)) => (a, Some(q)),
        None => (rest, None),
    };
    let (authority, path) = match before_query.split_once('/') {
        Some((a, p)) => (a, format!("/{p}")),
        None => (before_query, String::new()),
    };
    let path = if path.is_empty() || path == "/" {
        "/chromium".to_string()
    } else {
        path
    };
    let mut base = format!("{scheme}://{authority}{path}");
    if let Some(q) = query.filter(|q| !q.is_empty()) {
        base.push('?');
        base.push_str(q);
    }
    let mut opts = launch.cloned().unwrap_or_else(|| json!({}));
    if let Some(o) = opts.as_object_mut() {
        let mut args: Vec<Value> = BROWSERLESS_ARGS.iter().map(|a| json!(a)).collect();
        if let Some(Value::Array(extra)) = o.get("args") {
            args.extend(extra.iter().cloned());
        }
        o.insert("args".into(), Value::Array(args));
    }
    with_query(&base, &[("token", token), ("launch", Some(&opts.to_string()))])
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A `browser_lost` error (503) for session `id` on `endpoint`, saying what the next
/// `browser_navigate` does.
pub fn lost_error(id: &str, endpoint: &Endpoint, reason: &str, pinned: bool) -> ApiError {
    let next = match (pinned, endpoint.health() == Health::Down) {
        (true, true) => format!(
            "The session is pinned to {:?}: browser_navigate opens a new tab there once the endpoint is back",
            endpoint.name
        ),
        (true, false) => format!(
            "The session is pinned to {:?}: browser_navigate opens a new tab there (its dialog and console history are kept; the page itself is gone)",
            endpoint.name
        ),
        (false, _) => "browser_navigate continues the session in a new tab on an endpoint with room (same session id; its dialog and console history are kept; the page itself is gone)".to_string(),
    };
    gateway_error(
        "browser_lost",
        format!(
            "session {id} lost its browser on {}: {}. {next}",
            endpoint.describe(),
            endpoint.scrub(reason)
        ),
    )
    .with(json!({"session_id": id, "endpoint": endpoint.name, "pinned": pinned}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browserless_urls() {
        let u = browserless_url("ws://127.0.0.1:3000", Some("t/k=n"), None);
        assert!(
            u.starts_with("ws://127.0.0.1:3000/chromium?token=t%2Fk%3Dn&launch="),
            "{u}"
        );
        assert!(u.contains("disable-renderer-backgrounding"), "{u}");
        let u = browserless_url(
            "https://bl.example/chromium?stealth=true",
            None,
            Some(&json!({"args": ["--lang=de"], "headless": "shell"})),
        );
        assert!(u.starts_with("wss://bl.example/chromium?stealth=true&launch="), "{u}");
        assert!(u.contains("lang%3Dde") && u.contains("headless"), "{u}");
        assert!(!u.contains("token="), "{u}");
    }

    #[test]
    fn host_ports_and_secrets() {
        assert_eq!(host_port("ws://h:3000/x?y"), Some(("h".into(), 3000)));
        assert_eq!(host_port("wss://u:p@h/x"), Some(("h".into(), 443)));
        assert_eq!(host_port("http://[::1]:9/"), Some(("::1".into(), 9)));
        let s = url_secrets("ws://u:pw@h:1/x?token=abc&launch=q");
        assert!(s.contains(&"pw".to_string()) && s.contains(&"abc".to_string()), "{s:?}");
    }

    fn cfg(yaml: &str) -> Config {
        Config::parse(yaml).unwrap()
    }

    #[tokio::test]
    async fn placement_prefers_most_free_and_waits_then_fails() {
        let c = cfg("browser:\n  placement_timeout_s: 0.3\n  endpoints:\n    - {name: a, kind: cdp, url: 'ws://127.0.0.1:9/x', capacity: 2}\n    - {name: b, kind: browserless, url: 'ws://127.0.0.1:9', token: sekrit-tok, capacity: 1}\n");
        let p = Pool::new(&c, None);
        assert_eq!(p.place("s1", None).await.unwrap().name(), "a");
        assert_eq!(p.place("s2", None).await.unwrap().name(), "a"); // tie: first
        assert_eq!(p.place("s3", None).await.unwrap().name(), "b");
        let t = std::time::Instant::now();
        let e = p.place("s4", None).await.unwrap_err();
        assert!(t.elapsed() >= Duration::from_millis(290));
        assert_eq!(e.code, "pool_exhausted");
        assert_eq!(e.status.as_u16(), 503);
        assert!(e.retry_after.is_some());
        assert!(e.message.contains("\"a\" holds 2/2"), "{}", e.message);
        // a place freed while waiting is taken
        let p2 = p.clone();
        let waiter = tokio::spawn(async move { p2.place("s5", Some("b")).await.map(|e| e.name().to_string()) });
        tokio::time::sleep(Duration::from_millis(50)).await;
        p.release("s3");
        assert_eq!(waiter.await.unwrap().unwrap(), "b");
        // down endpoints take no unpinned sessions; pinned ones still name them
        p.endpoints()[0].mark_down("connection refused");
        p.release("s1");
        let e = p.place("s6", None).await.unwrap_err();
        assert!(
            e.message.contains("\"a\" is down (connection refused)"),
            "{}",
            e.message
        );
        assert_eq!(p.place("s6", Some("a")).await.unwrap().name(), "a");
        let e = p.place("s7", Some("zz")).await.unwrap_err();
        assert_eq!(e.code, "invalid_settings");
        assert!(!p.view().to_string().contains("sekrit"));
        assert_eq!(p.endpoints()[0].loss_epoch(), 1);
    }

    #[tokio::test]
    async fn scrubs_tokens_from_errors() {
        let c = cfg("browser:\n  endpoints:\n    - {name: b, kind: browserless, url: 'ws://127.0.0.1:9', token: sekrit-tok, capacity: 1}\n");
        let p = Pool::new(&c, None);
        let Err(e) = p.endpoints()[0].browser_for_session().await else {
            panic!("connected to nothing")
        };
        assert!(!e.contains("sekrit") && e.contains("\"b\""), "{e}");
        assert_eq!(p.endpoints()[0].health(), Health::Down);
        assert!(!p.endpoints()[0].error().unwrap().contains("sekrit"));
    }
}
