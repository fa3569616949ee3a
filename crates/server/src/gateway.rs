//! The gateway: the browser, the session store, and the sessions' run-time slots. One
//! dispatcher ([`Gateway::call`]) serves both the HTTP API and `/mcp`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tabgate_config::Config;
use tabgate_supervisor::now_epoch;
use tabgate_tools::{ToolError, ToolOutput};
use tokio::task::JoinSet;

use crate::error::{gateway_error, ApiError};
use crate::pool::{lost_error, pinned, Pool};
use crate::settings::{supervisor_config, NewSession};
use crate::slot::Slot;
use crate::store::{SessionRecord, Store};

/// Limits and timeouts of the gateway.
#[derive(Debug, Clone)]
pub struct Limits {
    /// An idle session's tab is closed after this (config `browser.inactivity_timeout`).
    pub inactivity_timeout: Duration,
    /// At most this many sessions have a tab open at once (`too_many_tabs`, 429).
    pub max_open_sessions: usize,
    /// At most this many calls wait or run per session (`session_busy`, 429).
    pub max_queued_per_session: usize,
    /// A tool call without `timeout_ms` is cut off after this (`tool_timeout`, 504); one
    /// with `timeout_ms` gets that plus [`Limits::call_grace`].
    pub call_timeout: Duration,
    /// Added to a call's own `timeout_ms` for the gateway's deadline.
    pub call_grace: Duration,
}

impl Limits {
    /// Defaults, with the inactivity timeout from `config`.
    pub fn from_config(config: &Config) -> Limits {
        Limits {
            inactivity_timeout: Duration::from_secs(config.inactivity_timeout_s.max(1)),
            max_open_sessions: 64,
            max_queued_per_session: 32,
            call_timeout: Duration::from_secs(120),
            call_grace: Duration::from_secs(15),
        }
    }
}

/// The gateway's shared state.
pub struct Gateway {
    pool: Arc<Pool>,
    store: Arc<Store>,
    config: Config,
    limits: Limits,
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    open_tabs: AtomicUsize,
    closing: AtomicBool,
    broker: std::sync::OnceLock<Arc<tabgate_controller::Broker>>,
}

/// Decrements a session's queue count when a call ends, however it ends.
struct Queued(Arc<Slot>);

impl Drop for Queued {
    fn drop(&mut self) {
        self.0.queued.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Gateway {
    /// A gateway over the browser `pool` and `store`. Sessions that `/mcp` created in an
    /// earlier run are removed (their MCP sessions did not survive it); the others are
    /// placed on the pool again.
    pub fn new(pool: Arc<Pool>, store: Arc<Store>, config: Config, limits: Limits) -> Arc<Gateway> {
        match store.delete_origin("mcp") {
            Ok(n) if n > 0 => tracing::info!("removed {n} MCP session(s) left from the previous run"),
            Ok(_) => {}
            Err(e) => tracing::warn!("{e}"),
        }
        match store.list_sessions() {
            Ok(all) => pool.load(&all),
            Err(e) => tracing::warn!("{e}"),
        }
        Arc::new(Gateway {
            pool,
            store,
            config,
            limits,
            slots: Mutex::new(HashMap::new()),
            open_tabs: AtomicUsize::new(0),
            closing: AtomicBool::new(false),
            broker: std::sync::OnceLock::new(),
        })
    }

    /// The browser endpoints sessions are placed on.
    pub fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    /// The session store.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The extension-controller broker (DESIGN.md section 4), created on first use with
    /// `browser.extension_control.enabled` and `.developer_mode` from the config.
    pub fn broker(&self) -> &Arc<tabgate_controller::Broker> {
        self.broker.get_or_init(|| {
            use tabgate_controller::caps;
            Arc::new(tabgate_controller::Broker::new(tabgate_controller::BrokerOptions {
                enabled: caps::extension_control_enabled(&self.config.raw),
                developer_mode: caps::developer_mode(&self.config.raw),
                ..Default::default()
            }))
        })
    }

    /// Uses `broker` instead of one built from the config (embedding, tests with an
    /// injected clock). False when a broker is already in use.
    pub fn set_broker(&self, broker: Arc<tabgate_controller::Broker>) -> bool {
        self.broker.set(broker).is_ok()
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// True once [`Gateway::shutdown`] started.
    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// How many sessions have a tab open now.
    pub fn open_sessions(&self) -> usize {
        self.open_tabs.load(Ordering::SeqCst)
    }

    pub(crate) fn reserve_tab(&self) -> Result<(), ApiError> {
        let max = self.limits.max_open_sessions;
        if self.open_tabs.fetch_add(1, Ordering::SeqCst) >= max {
            self.open_tabs.fetch_sub(1, Ordering::SeqCst);
            return Err(gateway_error(
                "too_many_tabs",
                format!("{max} sessions already have a tab open; delete sessions you no longer need or retry when idle ones are closed"),
            )
            .retry_after(5));
        }
        Ok(())
    }

    pub(crate) fn release_tab(&self) {
        self.open_tabs.fetch_sub(1, Ordering::SeqCst);
    }

    fn storage(e: crate::store::StoreError) -> ApiError {
        tracing::error!("{e}");
        gateway_error("storage_error", e.0)
    }

    /// Creates a session record (`origin` `http`, `mcp`, …) and places it on a browser
    /// endpoint: the one its settings name (`endpoint`, pinned), else the one with the
    /// most free capacity, waiting up to `browser.placement_timeout_s` for room. No tab is
    /// opened until the first tool call.
    ///
    /// Errors: 400 `invalid_settings` (unknown endpoint); 503 `pool_exhausted` when no
    /// endpoint had room in time (`browser_unavailable` when every endpoint is down),
    /// `shutting_down`.
    pub async fn create_session_waiting(&self, origin: &str, new: NewSession) -> Result<SessionRecord, ApiError> {
        if self.is_closing() {
            return Err(gateway_error("shutting_down", "tabgate is shutting down").retry_after(5));
        }
        let id = crate::auth::random_id("ses_");
        let want = new.settings.get("endpoint").and_then(Value::as_str);
        let ep = self.pool.place(&id, want).await?;
        self.insert_placed(id, ep.name(), origin, new)
    }

    /// [`Gateway::create_session_waiting`] without the wait: fails with `pool_exhausted`
    /// at once when no endpoint has room now.
    pub fn create_session(&self, origin: &str, new: NewSession) -> Result<SessionRecord, ApiError> {
        if self.is_closing() {
            return Err(gateway_error("shutting_down", "tabgate is shutting down").retry_after(5));
        }
        let id = crate::auth::random_id("ses_");
        let want = new.settings.get("endpoint").and_then(Value::as_str);
        let ep = self.pool.place_now(&id, want)?;
        self.insert_placed(id, ep.name(), origin, new)
    }

    fn insert_placed(
        &self,
        id: String,
        endpoint: &str,
        origin: &str,
        new: NewSession,
    ) -> Result<SessionRecord, ApiError> {
        if self.is_closing() {
            self.pool.release(&id);
            return Err(gateway_error("shutting_down", "tabgate is shutting down").retry_after(5));
        }
        let now = now_epoch();
        let r = SessionRecord {
            session_id: id,
            name: new.name,
            origin: origin.to_string(),
            settings: new.settings,
            created_at: now,
            last_used_at: now,
            last_url: None,
        };
        if let Err(e) = self.store.insert_session(&r) {
            self.pool.release(&r.session_id);
            return Err(Gateway::storage(e));
        }
        tracing::info!(session = %r.session_id, origin, endpoint, "session created");
        Ok(r)
    }

    /// The stored record of `id`. Errors: 404 `unknown_session`.
    pub fn record(&self, id: &str) -> Result<SessionRecord, ApiError> {
        self.store
            .get_session(id)
            .map_err(Gateway::storage)?
            .ok_or_else(|| ApiError::unknown_session(id))
    }

    /// Every stored session.
    pub fn records(&self) -> Result<Vec<SessionRecord>, ApiError> {
        self.store.list_sessions().map_err(Gateway::storage)
    }

    fn slot(&self, id: &str) -> Result<Arc<Slot>, ApiError> {
        // The record is read under the map's lock, so a slot is never created for a
        // session that `delete_session` is removing (it deletes the record, then the slot).
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = slots.get(id) {
            return Ok(s.clone());
        }
        let rec = self.record(id)?;
        let slot = Arc::new(Slot::new(
            id.to_string(),
            supervisor_config(&self.config, &rec.settings),
            pinned(&rec),
        ));
        slots.insert(id.to_string(), slot.clone());
        Ok(slot)
    }

    fn loaded_slot(&self, id: &str) -> Option<Arc<Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner()).get(id).cloned()
    }

    /// A session's status: its record, plus `status` (`open` with a tab, `idle`
    /// without one, `lost` when its browser is gone, with `lost_reason`), `busy`,
    /// `current_tab`, `tabs`, `pending_dialogs`, and `placement` (`endpoint`, `kind`,
    /// `url`, `health`, `pinned`).
    pub fn status(&self, rec: &SessionRecord) -> Value {
        let mut v = json!(rec);
        let live = match self.loaded_slot(&rec.session_id) {
            Some(s) => s.view(),
            None => Slot::idle_view(),
        };
        if let (Some(o), Some(l)) = (v.as_object_mut(), live.as_object()) {
            for (k, x) in l {
                o.insert(k.clone(), x.clone());
            }
        }
        let pin = pinned(rec);
        let ep = self.pool.placement(&rec.session_id);
        v["placement"] = match &ep {
            Some(e) => json!({"endpoint": e.name(), "kind": e.kind().as_str(), "url": e.shown_url(),
                              "health": e.health().as_str(), "pinned": pin.is_some()}),
            None => json!({"endpoint": pin, "pinned": pin.is_some()}),
        };
        if let Some(e) = ep.filter(|e| {
            v["status"] == "idle"
                && e.health() == crate::pool::Health::Down
                && e.kind() != tabgate_config::EndpointKind::Launch
        }) {
            v["status"] = json!("lost");
            v["lost_reason"] = json!(format!(
                "the endpoint is down ({})",
                e.error().unwrap_or_else(|| "unreachable".into())
            ));
        }
        v
    }

    /// Deletes session `id`: closes its tab (calls in flight fail) and removes its record;
    /// its dialog audit stays. Errors: 404 `unknown_session`.
    pub async fn delete_session(&self, id: &str) -> Result<(), ApiError> {
        // The record goes first: a call that arrives now finds no session and cannot open a
        // tab for it behind this deletion's back.
        if !self.store.delete_session(id).map_err(Gateway::storage)? {
            return Err(ApiError::unknown_session(id));
        }
        // The slot leaves the map only once its tab is closed, so a shutdown that starts
        // meanwhile still finds it and waits for the close.
        let slot = self.slots.lock().unwrap_or_else(|p| p.into_inner()).get(id).cloned();
        if let Some(s) = slot {
            s.close(self, true).await;
            self.slots.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
        }
        self.pool.release(id);
        tracing::info!(session = %id, "session deleted");
        Ok(())
    }

    /// Runs tool `tool` in session `id`, opening the session's tab first when it has
    /// none. Calls in one session run one at a time, except `browser_dialog`, which never
    /// waits behind another; sessions run in parallel.
    ///
    /// A tool failure is `Ok` with `error` set (unknown tool and bad arguments included,
    /// checked before a tab is opened). `Err` is a gateway failure: unknown session (404),
    /// too many queued calls or open tabs (429), the call's deadline (504), the browser
    /// lost (`browser_lost`, also for a call in flight when it goes), no room in the pool
    /// or shutdown (503).
    pub async fn call(&self, id: &str, tool: &str, args: Value) -> Result<ToolOutput, ApiError> {
        if self.is_closing() {
            return Err(gateway_error("shutting_down", "tabgate is shutting down").retry_after(5));
        }
        let slot = self.slot(id)?;
        let Some(spec) = tabgate_tools::find(tool) else {
            let known: Vec<&str> = tabgate_tools::catalogue().iter().map(|t| t.name).collect();
            return Ok(ToolOutput::failure(
                ToolError::new(
                    "unknown_tool",
                    format!("no tool named {tool:?}; known tools: {}", known.join(", ")),
                )
                .with(json!({"tool": tool})),
            ));
        };
        if let Err(e) = tabgate_tools::args::validate(&spec, &args) {
            return Ok(ToolOutput::failure(e));
        }
        let is_dialog = tool == "browser_dialog";
        let _queued = if is_dialog {
            None
        } else {
            let max = self.limits.max_queued_per_session;
            if slot.queued.fetch_add(1, Ordering::SeqCst) >= max {
                slot.queued.fetch_sub(1, Ordering::SeqCst);
                return Err(gateway_error(
                    "session_busy",
                    format!("session {id} already has {max} calls waiting; calls in one session run one at a time — wait for them, or use more sessions"),
                )
                .with(json!({"session_id": id}))
                .retry_after(1));
            }
            Some(Queued(slot.clone()))
        };
        let lease = slot.acquire(self, tool).await?;
        let deadline = match args.get("timeout_ms").and_then(Value::as_u64) {
            Some(ms) => Duration::from_millis(ms) + self.limits.call_grace,
            None => self.limits.call_timeout,
        };
        let out = tokio::select! {
            r = tokio::time::timeout(deadline, lease.session.call(tool, args.clone())) => r.map_err(|_| {
                gateway_error(
                    "tool_timeout",
                    format!("{tool} did not finish within {deadline:?}; the call was cancelled (answer a pending dialog with browser_dialog, or pass a larger timeout_ms)"),
                )
                .with(json!({"session_id": id, "tool": tool}))
            }),
            _ = slot.cancel.cancelled() => Err(if slot.removed() {
                gateway_error("session_deleted", format!("session {id} was deleted while {tool} ran; the call was cancelled"))
            } else {
                gateway_error("shutting_down", format!("tabgate is shutting down; {tool} was cancelled")).retry_after(5)
            }),
            reason = lease.open.wait_lost() => Err(lost_error(id, &lease.open.endpoint, &reason, slot.pinned())),
        };
        let open = lease.open.clone();
        drop(lease);
        if !slot.removed() {
            slot.touch(self);
        }
        let out = out?;
        // a call that failed because the connection dropped under it: if that is the
        // browser going away (not a reconnect), say so
        if out
            .error
            .as_ref()
            .is_some_and(|e| matches!(e.code.as_str(), "browser_disconnected" | "session_stopped"))
        {
            if let Some(reason) = open.settle_lost(Duration::from_secs(3)).await {
                return Err(lost_error(id, &open.endpoint, &reason, slot.pinned()));
            }
        }
        if is_dialog && out.error.is_none() {
            if let (Some(text), Some(d)) = (
                args.get("prompt_text").and_then(Value::as_str),
                out.structured.as_ref().and_then(|s| s["dialog"]["id"].as_str()),
            ) {
                slot.record_answer(d, text).await;
            }
        }
        Ok(out)
    }

    /// Closes the tabs of sessions idle for longer than the inactivity timeout (their
    /// records stay). Returns how many it closed.
    pub async fn reap_idle(&self) -> usize {
        let slots: Vec<Arc<Slot>> = self
            .slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .filter(|s| s.session().is_some())
            .cloned()
            .collect();
        let mut n = 0;
        for s in slots {
            if s.session().is_some() && s.close_if_idle(self, self.limits.inactivity_timeout).await {
                n += 1;
            }
        }
        n
    }

    /// Runs [`Gateway::reap_idle`] periodically until shutdown.
    pub fn spawn_reaper(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let weak = Arc::downgrade(self);
        let every = (self.limits.inactivity_timeout / 4).clamp(Duration::from_millis(250), Duration::from_secs(30));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(gw) = weak.upgrade() else { return };
                if gw.is_closing() {
                    return;
                }
                gw.reap_idle().await;
            }
        })
    }

    /// Shuts down: new calls get `shutting_down`, every open tab is closed (its URL
    /// recorded), sessions `/mcp` created are removed, and the database is checkpointed.
    /// Calls still running fail. The browser is left to the caller.
    pub async fn shutdown(self: &Arc<Self>) {
        self.closing.store(true, Ordering::SeqCst);
        let slots: Vec<Arc<Slot>> = self
            .slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        let mut set = JoinSet::new();
        for s in slots {
            let gw = self.clone();
            set.spawn(async move { s.close(&gw, false).await });
        }
        while set.join_next().await.is_some() {}
        if let Err(e) = self.store.delete_origin("mcp") {
            tracing::warn!("{e}");
        }
        if let Err(e) = self.store.checkpoint() {
            tracing::warn!("{e}");
        }
        self.pool.stop();
    }
}
