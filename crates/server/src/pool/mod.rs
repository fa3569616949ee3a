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

mod endpoint;
mod url;

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::{json, Value};
use tabgate_config::{Config, EndpointKind};
use tabgate_supervisor::Browser;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

pub use endpoint::{Endpoint, Health};
pub use url::browserless_url;

use crate::error::{gateway_error, ApiError};
use crate::store::SessionRecord;
use endpoint::{lock, TICK};

/// Name of the one endpoint of a gateway without `browser.endpoints`.
pub const DEFAULT_ENDPOINT: &str = "default";

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
            vec![Arc::new(Endpoint::unlimited(
                DEFAULT_ENDPOINT.into(),
                kind,
                shown,
                browser,
                changed.clone(),
            ))]
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
