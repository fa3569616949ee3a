//! The broker: which controller serves which session, and the commands in flight
//! (study section 6.6).
//!
//! - A [`Scope`] is what a ticket grants: principal (from server auth), profile,
//!   session, controller id, browser profile, transport family — its [`Identity`] — plus
//!   capabilities, which a reconnect may renegotiate.
//! - A lane is (principal, profile, session, transport family): at most one controller
//!   per lane. A controller with a different controller id or browser profile on the same
//!   lane replaces the old one after cancelling its work (hard replacement).
//! - A dropped socket is recoverable ([`Broker::disconnect`]): the controller goes
//!   offline, its commands stay pending until their deadlines, cancels are queued
//!   (bounded) and flushed first when the same identity attaches again. A detach is hard.
//! - Results are accepted once, only for a pending command of the same identity, and
//!   only as success when `ok` is exactly JSON `true`.
//!
//! Locking: one state lock, never held while a frame is sent, and a per-controller send
//! lock held across "register pending + send command" and "remove pending + send
//! cancels", so a command never overtakes its own cancel and a controller may call
//! [`Broker::complete`] from inside its send callback.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::caps::is_developer;
use crate::frames::{ControllerFrame, ServerFrame};
use crate::ticket::{Clock, Issued, MonotonicClock, TicketError, Tickets, TICKET_TTL};

/// How long a dispatched command may take before it is cancelled.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// At most this many cancel frames wait for an offline controller; older ones are dropped.
pub const MAX_DEFERRED_CANCELS: usize = 512;

/// Who a controller is: everything in its scope but the capabilities.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Identity {
    /// Derived from server auth; a client-supplied principal is never used.
    pub principal_id: String,
    /// The server profile (`default`).
    pub profile_id: String,
    /// The tabgate session the controller serves.
    pub session_id: String,
    /// The controller's own id (one extension install).
    pub controller_id: String,
    /// The browser profile the extension runs in.
    pub browser_profile_id: String,
    /// `local-api` or `remote-api`.
    pub transport_family: String,
}

impl Identity {
    fn same_lane(&self, o: &Identity) -> bool {
        self.principal_id == o.principal_id
            && self.profile_id == o.profile_id
            && self.session_id == o.session_id
            && self.transport_family == o.transport_family
    }
}

/// What a ticket grants: an [`Identity`] and the capabilities negotiated for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scope {
    /// Derived from server auth.
    pub principal_id: String,
    /// The server profile.
    pub profile_id: String,
    /// The tabgate session.
    pub session_id: String,
    /// The controller's id.
    pub controller_id: String,
    /// The browser profile.
    pub browser_profile_id: String,
    /// `local-api` or `remote-api`.
    pub transport_family: String,
    /// Allowed actions, sorted.
    pub capabilities: BTreeSet<String>,
}

impl Scope {
    /// The scope's identity.
    pub fn identity(&self) -> Identity {
        Identity {
            principal_id: self.principal_id.clone(),
            profile_id: self.profile_id.clone(),
            session_id: self.session_id.clone(),
            controller_id: self.controller_id.clone(),
            browser_profile_id: self.browser_profile_id.clone(),
            transport_family: self.transport_family.clone(),
        }
    }
}

/// A transport write failed (the peer is gone).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SendError(pub String);

/// Writes one frame to a controller's transport. Must not block and must not call back
/// into [`Broker::attach`], [`Broker::detach`] or [`Broker::cancel`]; calling
/// [`Broker::complete`] is fine.
pub type FrameSender = Arc<dyn Fn(&ServerFrame) -> Result<(), SendError> + Send + Sync>;

/// One transport connection (socket) of a controller; a stale owner can neither
/// complete, disconnect nor detach a newer generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Owner(pub u64);

/// Why a dispatch did not produce a result. The controller's answer is final: callers
/// never retry on another backend.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BrokerError {
    /// No connected controller with the capability (offline, detached, replaced,
    /// ambiguous, or lacking it), or the command could not be sent.
    #[error("{0}")]
    Unavailable(String),
    /// The command outlived its deadline; a cancel frame was sent (or queued).
    #[error("{0}")]
    Timeout(String),
    /// The command was cancelled (explicit cancel, detach or replacement).
    #[error("{0}")]
    Cancelled(String),
    /// The controller answered without `ok: true`.
    #[error("{message}")]
    Rejected {
        /// `controller rejected command <id>: <error>`.
        message: String,
        /// The controller's `error` value (or its non-`true` `ok`).
        error: Value,
    },
}

impl BrokerError {
    /// Stable snake_case code: `controller_unavailable`, `controller_timeout`,
    /// `controller_cancelled`, `controller_rejected`.
    pub fn code(&self) -> &'static str {
        match self {
            BrokerError::Unavailable(_) => "controller_unavailable",
            BrokerError::Timeout(_) => "controller_timeout",
            BrokerError::Cancelled(_) => "controller_cancelled",
            BrokerError::Rejected { .. } => "controller_rejected",
        }
    }
}

/// Broker settings.
#[derive(Clone)]
pub struct BrokerOptions {
    /// Per-command deadline (default [`COMMAND_TIMEOUT`]).
    pub command_timeout: Duration,
    /// Ticket lifetime (default 30 s).
    pub ticket_ttl: Duration,
    /// The monotonic clock tickets expire on.
    pub clock: Arc<dyn Clock>,
    /// Initial developer mode (gates `browser_cdp`, `browser_evaluate`); changeable live
    /// with [`Broker::set_developer_mode`].
    pub developer_mode: bool,
    /// Initial state of the feature flag (`browser.extension_control.enabled`) the
    /// transports check on every request; changeable live with [`Broker::set_enabled`].
    pub enabled: bool,
    /// Bound of the deferred cancel queue per controller (default 512).
    pub max_deferred: usize,
}

impl Default for BrokerOptions {
    fn default() -> Self {
        BrokerOptions {
            command_timeout: COMMAND_TIMEOUT,
            ticket_ttl: TICKET_TTL,
            clock: Arc::new(MonotonicClock::new()),
            developer_mode: false,
            enabled: false,
            max_deferred: MAX_DEFERRED_CANCELS,
        }
    }
}

enum Outcome {
    Done { ok: bool, payload: Value },
    Cancelled(&'static str),
}

struct Controller {
    scope: Scope,
    epoch: u64,
    owner: Owner,
    sender: FrameSender,
    connected: bool,
    deferred: VecDeque<ServerFrame>,
    send_lock: Arc<Mutex<()>>,
}

struct Pending {
    identity: Identity,
    tool_call_id: String,
    seq: u64,
    tx: oneshot::Sender<Outcome>,
}

#[derive(Default)]
struct Inner {
    controllers: HashMap<Identity, Controller>,
    pending: HashMap<String, Pending>,
    next_epoch: u64,
    next_seq: u64,
}

/// The broker. Share it as `Arc<Broker>` between the transport and the tool router.
pub struct Broker {
    inner: Mutex<Inner>,
    tickets: Tickets<Scope>,
    command_timeout: Duration,
    max_deferred: usize,
    developer_mode: AtomicBool,
    enabled: AtomicBool,
    next_owner: AtomicU64,
}

impl Default for Broker {
    fn default() -> Self {
        Broker::new(BrokerOptions::default())
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn command_id() -> String {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_err() {
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst) as u128 | (std::process::id() as u128) << 64;
        b = n.to_le_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Removes the pending command and sends its cancel when a dispatch is dropped before it
/// finished (the caller's own deadline or cancellation).
struct PendingGuard<'a> {
    broker: &'a Broker,
    command_id: String,
    armed: bool,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.broker.abandon(&self.command_id);
        }
    }
}

impl Broker {
    /// A broker with `opts`.
    pub fn new(opts: BrokerOptions) -> Broker {
        Broker {
            inner: Mutex::new(Inner::default()),
            tickets: Tickets::new(opts.ticket_ttl, opts.clock),
            command_timeout: opts.command_timeout,
            max_deferred: opts.max_deferred.max(1),
            developer_mode: AtomicBool::new(opts.developer_mode),
            enabled: AtomicBool::new(opts.enabled),
            next_owner: AtomicU64::new(1),
        }
    }

    /// A fresh owner token for a new transport connection.
    pub fn new_owner(&self) -> Owner {
        Owner(self.next_owner.fetch_add(1, Ordering::SeqCst))
    }

    /// Turns developer mode on or off; turning it off revokes developer capabilities of
    /// attached controllers at their next selection.
    pub fn set_developer_mode(&self, on: bool) {
        self.developer_mode.store(on, Ordering::SeqCst);
    }

    /// True in developer mode.
    pub fn developer_mode(&self) -> bool {
        self.developer_mode.load(Ordering::SeqCst)
    }

    /// Turns the feature on or off (transports refuse registration and connections
    /// while it is off; attached controllers stay until they detach or drop).
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::SeqCst);
    }

    /// True while the feature is on.
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::SeqCst)
    }

    /// The per-command deadline.
    pub fn command_timeout(&self) -> Duration {
        self.command_timeout
    }

    /// Issues a single-use ticket bound to `scope`.
    ///
    /// Errors: no system randomness.
    pub fn issue_ticket(&self, scope: Scope) -> Result<Issued, TicketError> {
        self.tickets.issue(scope)
    }

    /// Redeems a ticket once, returning its scope.
    ///
    /// Errors: malformed, unknown or already used, expired.
    pub fn redeem_ticket(&self, ticket: &str) -> Result<Scope, TicketError> {
        self.tickets.redeem(ticket)
    }

    /// Attaches a controller on transport `owner` writing through `sender`.
    ///
    /// - A controller of the same lane with another controller id or browser profile is
    ///   detached first (its pending work cancelled, no frames to it): hard replacement.
    /// - The same identity again (a reconnect) takes the new scope (capabilities may
    ///   change), sender and owner; its pending commands stay pending (nothing is sent
    ///   again) and cancels queued while it was offline are flushed before it can be
    ///   selected.
    ///
    /// Errors: a deferred cancel could not be written; the controller stays offline and
    /// the unsent cancels stay queued.
    pub fn attach(&self, scope: Scope, sender: FrameSender, owner: Owner) -> Result<Scope, SendError> {
        let id = scope.identity();
        let siblings: Vec<Identity> = lock(&self.inner)
            .controllers
            .keys()
            .filter(|k| k.same_lane(&id) && **k != id)
            .cloned()
            .collect();
        for s in siblings {
            tracing::info!(session = %s.session_id, old = %s.controller_id, new = %id.controller_id, "browser controller replaced");
            self.detach(&s, None, false);
        }
        loop {
            let existing = {
                let mut g = lock(&self.inner);
                match g.controllers.get(&id) {
                    Some(c) => c.send_lock.clone(),
                    None => {
                        g.next_epoch += 1;
                        let epoch = g.next_epoch;
                        g.controllers.insert(
                            id.clone(),
                            Controller {
                                scope: scope.clone(),
                                epoch,
                                owner,
                                sender,
                                connected: true,
                                deferred: VecDeque::new(),
                                send_lock: Arc::new(Mutex::new(())),
                            },
                        );
                        return Ok(scope);
                    }
                }
            };
            let _send = lock(&existing);
            let flush: Vec<ServerFrame> = {
                let mut g = lock(&self.inner);
                let Some(c) = g
                    .controllers
                    .get_mut(&id)
                    .filter(|c| Arc::ptr_eq(&c.send_lock, &existing))
                else {
                    continue; // detached meanwhile: attach anew
                };
                c.scope = scope.clone();
                c.sender = sender.clone();
                c.owner = owner;
                c.connected = false;
                c.deferred.drain(..).collect()
            };
            for (i, f) in flush.iter().enumerate() {
                if let Err(e) = sender(f) {
                    let mut g = lock(&self.inner);
                    if let Some(c) = g.controllers.get_mut(&id) {
                        for f in flush[i..].iter().rev() {
                            c.deferred.push_front(f.clone());
                        }
                    }
                    return Err(e);
                }
            }
            let mut g = lock(&self.inner);
            if let Some(c) = g.controllers.get_mut(&id).filter(|c| c.owner == owner) {
                c.connected = true;
            }
            return Ok(scope);
        }
    }

    /// The connected controller of `identity`, if it holds `capability` in its current
    /// negotiated set (developer capabilities also need developer mode now).
    ///
    /// Errors: [`BrokerError::Unavailable`] naming why.
    pub fn select(&self, identity: &Identity, capability: &str) -> Result<Scope, BrokerError> {
        self.select_epoch(identity, capability).map(|(s, _)| s)
    }

    fn select_epoch(&self, identity: &Identity, capability: &str) -> Result<(Scope, u64), BrokerError> {
        if is_developer(capability) && !self.developer_mode() {
            return Err(BrokerError::Unavailable(format!(
                "{capability} needs browser.extension_control.developer_mode: true"
            )));
        }
        let g = lock(&self.inner);
        let c = g.controllers.get(identity).filter(|c| c.connected).ok_or_else(|| {
            BrokerError::Unavailable(format!("bound browser controller unavailable for {capability}"))
        })?;
        if !c.scope.capabilities.contains(capability) {
            return Err(BrokerError::Unavailable(format!(
                "bound browser controller cannot execute {capability}"
            )));
        }
        Ok((c.scope.clone(), c.epoch))
    }

    /// Sends `action` with `arguments` to the controller of `identity` and waits for its
    /// result, at most the command deadline. Dropping the future cancels the command
    /// (cancel frame sent or queued).
    ///
    /// Errors: [`BrokerError::Unavailable`] (not selectable, detached before dispatch,
    /// send failed), [`BrokerError::Timeout`] (a cancel frame was sent or queued),
    /// [`BrokerError::Cancelled`], [`BrokerError::Rejected`] (`ok` not exactly `true`).
    pub async fn dispatch(
        &self,
        identity: &Identity,
        action: &str,
        arguments: Value,
        tool_call_id: &str,
    ) -> Result<Value, BrokerError> {
        let (_, epoch) = self.select_epoch(identity, action)?;
        let (command_id, rx) = self.send_command(identity, epoch, action, arguments, tool_call_id)?;
        self.wait(command_id, tool_call_id, rx).await
    }

    fn send_command(
        &self,
        identity: &Identity,
        epoch: u64,
        action: &str,
        arguments: Value,
        tool_call_id: &str,
    ) -> Result<(String, oneshot::Receiver<Outcome>), BrokerError> {
        let gone =
            || BrokerError::Unavailable(format!("bound browser controller detached before dispatch of {action}"));
        let send_lock = lock(&self.inner)
            .controllers
            .get(identity)
            .map(|c| c.send_lock.clone())
            .ok_or_else(gone)?;
        let _send = lock(&send_lock);
        let command_id = command_id();
        let (tx, rx) = oneshot::channel();
        let (sender, frame) = {
            let mut g = lock(&self.inner);
            let c = g
                .controllers
                .get(identity)
                .filter(|c| c.epoch == epoch && c.connected && Arc::ptr_eq(&c.send_lock, &send_lock))
                .ok_or_else(gone)?;
            if !c.scope.capabilities.contains(action) {
                return Err(BrokerError::Unavailable(format!(
                    "bound browser controller cannot execute {action}"
                )));
            }
            let frame = ServerFrame::Command {
                command_id: command_id.clone(),
                action: action.to_string(),
                arguments,
                controller_id: identity.controller_id.clone(),
                browser_profile_id: identity.browser_profile_id.clone(),
                tool_call_id: tool_call_id.to_string(),
            };
            let sender = c.sender.clone();
            g.next_seq += 1;
            let seq = g.next_seq;
            g.pending.insert(
                command_id.clone(),
                Pending {
                    identity: identity.clone(),
                    tool_call_id: tool_call_id.to_string(),
                    seq,
                    tx,
                },
            );
            (sender, frame)
        };
        if let Err(e) = sender(&frame) {
            lock(&self.inner).pending.remove(&command_id);
            return Err(BrokerError::Unavailable(format!(
                "sending {action} to the browser controller failed: {e}"
            )));
        }
        Ok((command_id, rx))
    }

    async fn wait(
        &self,
        command_id: String,
        tool_call_id: &str,
        mut rx: oneshot::Receiver<Outcome>,
    ) -> Result<Value, BrokerError> {
        let mut guard = PendingGuard {
            broker: self,
            command_id: command_id.clone(),
            armed: true,
        };
        let outcome = match tokio::time::timeout(self.command_timeout, &mut rx).await {
            Ok(o) => o.unwrap_or(Outcome::Cancelled("the broker dropped it")),
            Err(_) => {
                let still_pending = lock(&self.inner).pending.remove(&command_id);
                match still_pending {
                    // a result won the race at the deadline
                    None => rx.await.unwrap_or(Outcome::Cancelled("the broker dropped it")),
                    Some(p) => {
                        guard.armed = false;
                        self.emit_cancel(
                            &p.identity,
                            ServerFrame::Cancel {
                                command_id: command_id.clone(),
                                tool_call_id: tool_call_id.to_string(),
                            },
                        );
                        return Err(BrokerError::Timeout(format!(
                            "browser controller did not answer command {command_id} within {:?}; it was cancelled",
                            self.command_timeout
                        )));
                    }
                }
            }
        };
        guard.armed = false;
        match outcome {
            Outcome::Done { ok: true, payload } => Ok(payload),
            Outcome::Done { ok: false, payload } => Err(BrokerError::Rejected {
                message: format!("controller rejected command {command_id}: {payload}"),
                error: payload,
            }),
            Outcome::Cancelled(why) => Err(BrokerError::Cancelled(format!(
                "browser controller command {command_id} was cancelled: {why}"
            ))),
        }
    }

    /// A dispatch future was dropped: forget its command and tell the controller.
    fn abandon(&self, command_id: &str) {
        let p = lock(&self.inner).pending.remove(command_id);
        if let Some(p) = p {
            self.emit_cancel(
                &p.identity,
                ServerFrame::Cancel {
                    command_id: command_id.to_string(),
                    tool_call_id: p.tool_call_id,
                },
            );
        }
    }

    /// Sends a cancel to the controller of `identity` under its send lock, or queues it
    /// (bounded) while the controller is offline.
    fn emit_cancel(&self, identity: &Identity, frame: ServerFrame) {
        let Some(send_lock) = lock(&self.inner).controllers.get(identity).map(|c| c.send_lock.clone()) else {
            return;
        };
        let _send = lock(&send_lock);
        let sender = {
            let mut g = lock(&self.inner);
            let Some(c) = g
                .controllers
                .get_mut(identity)
                .filter(|c| Arc::ptr_eq(&c.send_lock, &send_lock))
            else {
                return;
            };
            if c.connected {
                c.sender.clone()
            } else {
                if c.deferred.len() >= self.max_deferred {
                    c.deferred.pop_front();
                    tracing::warn!(controller = %identity.controller_id, "deferred cancel queue full; dropped the oldest");
                }
                c.deferred.push_back(frame);
                return;
            }
        };
        if let Err(e) = sender(&frame) {
            tracing::debug!(controller = %identity.controller_id, "cancel frame not sent: {e}");
        }
    }

    /// Accepts the result of pending command `command_id` from the controller of
    /// `identity`: success only when `ok` is exactly JSON `true`. Late, unknown,
    /// duplicate and foreign (other identity) results return false and change nothing.
    pub fn complete(
        &self,
        identity: &Identity,
        command_id: &str,
        ok: &Value,
        result: Option<Value>,
        error: Option<Value>,
    ) -> bool {
        let p = {
            let mut g = lock(&self.inner);
            match g.pending.get(command_id) {
                Some(p) if p.identity == *identity => g.pending.remove(command_id),
                _ => None,
            }
        };
        let Some(p) = p else { return false };
        let outcome = if *ok == Value::Bool(true) {
            Outcome::Done {
                ok: true,
                payload: result.unwrap_or(Value::Null),
            }
        } else {
            Outcome::Done {
                ok: false,
                payload: error.unwrap_or_else(|| serde_json::json!({"ok": ok})),
            }
        };
        p.tx.send(outcome).is_ok()
    }

    /// Cancels the oldest pending command of `tool_call_id` of the controller of
    /// `identity`: its dispatch fails as cancelled and exactly one cancel frame goes to
    /// the controller (queued while it is offline). False when there is none.
    pub fn cancel(&self, identity: &Identity, tool_call_id: &str) -> bool {
        let found = {
            let mut g = lock(&self.inner);
            if !g.controllers.contains_key(identity) {
                return false;
            }
            let id = g
                .pending
                .iter()
                .filter(|(_, p)| p.identity == *identity && p.tool_call_id == tool_call_id)
                .min_by_key(|(_, p)| p.seq)
                .map(|(k, _)| k.clone());
            id.and_then(|id| g.pending.remove(&id).map(|p| (id, p)))
        };
        let Some((command_id, p)) = found else { return false };
        let _ = p.tx.send(Outcome::Cancelled("cancelled"));
        self.emit_cancel(
            identity,
            ServerFrame::Cancel {
                command_id,
                tool_call_id: tool_call_id.to_string(),
            },
        );
        true
    }

    /// Marks the controller of `identity` offline (its transport dropped) without
    /// cancelling anything, if `owner` is its current transport. Returns whether it did.
    pub fn disconnect(&self, identity: &Identity, owner: Owner) -> bool {
        let mut g = lock(&self.inner);
        match g.controllers.get_mut(identity) {
            Some(c) if c.owner == owner => {
                c.connected = false;
                true
            }
            _ => false,
        }
    }

    /// [`Broker::disconnect`] for every controller whose transport is `owner`; the count.
    pub fn disconnect_owner(&self, owner: Owner) -> usize {
        let mut g = lock(&self.inner);
        let mut n = 0;
        for c in g.controllers.values_mut().filter(|c| c.owner == owner) {
            c.connected = false;
            n += 1;
        }
        n
    }

    /// Removes the controller of `identity` (only if `owner` is its current transport,
    /// when given) and fails its pending commands as cancelled; with `notify`, sends a
    /// cancel frame for each, after any command frame being written. Returns whether a
    /// controller was removed.
    pub fn detach(&self, identity: &Identity, owner: Option<Owner>, notify: bool) -> bool {
        let Some(send_lock) = lock(&self.inner).controllers.get(identity).map(|c| c.send_lock.clone()) else {
            return false;
        };
        let _send = lock(&send_lock);
        let (c, mut pending) = {
            let mut g = lock(&self.inner);
            match g.controllers.get(identity) {
                Some(c) if Arc::ptr_eq(&c.send_lock, &send_lock) && owner.is_none_or(|o| o == c.owner) => {}
                _ => return false,
            }
            let c = g.controllers.remove(identity).expect("checked above");
            let ids: Vec<String> = g
                .pending
                .iter()
                .filter(|(_, p)| p.identity == *identity)
                .map(|(k, _)| k.clone())
                .collect();
            let pending: Vec<(String, Pending)> = ids
                .into_iter()
                .filter_map(|k| g.pending.remove(&k).map(|p| (k, p)))
                .collect();
            (c, pending)
        };
        pending.sort_by_key(|(_, p)| p.seq);
        let mut frames = vec![];
        for (command_id, p) in pending {
            let _ = p.tx.send(Outcome::Cancelled("the browser controller detached"));
            frames.push(ServerFrame::Cancel {
                command_id,
                tool_call_id: p.tool_call_id,
            });
        }
        if notify && c.connected {
            for f in &frames {
                if (c.sender)(f).is_err() {
                    break;
                }
            }
        }
        true
    }

    /// [`Broker::detach`] of every controller whose transport is `owner`; the count.
    pub fn detach_owner(&self, owner: Owner, notify: bool) -> usize {
        let ids: Vec<Identity> = lock(&self.inner)
            .controllers
            .iter()
            .filter(|(_, c)| c.owner == owner)
            .map(|(k, _)| k.clone())
            .collect();
        ids.iter().filter(|id| self.detach(id, Some(owner), notify)).count()
    }

    /// True when `owner` is the current transport of the controller of `identity`.
    pub fn is_owner(&self, identity: &Identity, owner: Owner) -> bool {
        lock(&self.inner)
            .controllers
            .get(identity)
            .is_some_and(|c| c.owner == owner)
    }

    /// True when that controller is attached and connected.
    pub fn is_connected(&self, identity: &Identity) -> bool {
        lock(&self.inner).controllers.get(identity).is_some_and(|c| c.connected)
    }

    /// The one controller scope (online or offline) for `session_id` of `principal_id`
    /// over `transport_family`; `None` when any is empty, or when none or several match
    /// (ambiguity fails closed).
    pub fn scope_for_session(&self, session_id: &str, principal_id: &str, transport_family: &str) -> Option<Scope> {
        if session_id.is_empty() || principal_id.is_empty() || transport_family.is_empty() {
            return None;
        }
        let g = lock(&self.inner);
        let mut it = g.controllers.values().filter(|c| {
            c.scope.session_id == session_id
                && c.scope.principal_id == principal_id
                && c.scope.transport_family == transport_family
        });
        match (it.next(), it.next()) {
            (Some(c), None) => Some(c.scope.clone()),
            _ => None,
        }
    }

    /// True when any controller (even offline) is attached for that lane.
    pub fn lane_registered(&self, session_id: &str, principal_id: &str, transport_family: &str) -> bool {
        lock(&self.inner).controllers.values().any(|c| {
            c.scope.session_id == session_id
                && c.scope.principal_id == principal_id
                && c.scope.transport_family == transport_family
        })
    }

    /// Every attached controller scope of `session_id` (any principal or transport).
    pub fn scopes_for_session(&self, session_id: &str) -> Vec<Scope> {
        lock(&self.inner)
            .controllers
            .values()
            .filter(|c| c.scope.session_id == session_id)
            .map(|c| c.scope.clone())
            .collect()
    }

    /// How many commands are in flight.
    pub fn pending_count(&self) -> usize {
        lock(&self.inner).pending.len()
    }

    /// How many cancels wait for the offline controller of `identity`.
    pub fn deferred_count(&self, identity: &Identity) -> usize {
        lock(&self.inner)
            .controllers
            .get(identity)
            .map_or(0, |c| c.deferred.len())
    }

    /// Detaches every controller without notifying them (shutdown, tests).
    pub fn reset(&self) {
        let ids: Vec<Identity> = lock(&self.inner).controllers.keys().cloned().collect();
        for id in ids {
            self.detach(&id, None, false);
        }
    }

    /// Handles a frame from transport `owner` of the controller of `identity` and
    /// returns the reply to send, if any. Frames from a transport that is not the
    /// current owner are ignored silently; a heartbeat with a nonce of 1–128 characters
    /// (after trimming) is echoed; a result completes its command; a cancel cancels the
    /// command of that tool call; a detach is hard (pending work cancelled, no cancel
    /// frames back) and answered `{"ok": true}`.
    pub fn handle_frame(&self, identity: &Identity, owner: Owner, frame: ControllerFrame) -> Option<ServerFrame> {
        if !self.is_owner(identity, owner) {
            return None;
        }
        match frame {
            ControllerFrame::Result {
                command_id,
                ok,
                result,
                error,
            } => {
                if !self.complete(identity, &command_id, &ok, result, error) {
                    tracing::debug!(command_id, "late, unknown or duplicate controller result ignored");
                }
                None
            }
            ControllerFrame::Cancel { tool_call_id } => {
                self.cancel(identity, &tool_call_id);
                None
            }
            ControllerFrame::Heartbeat { nonce } => {
                let n = nonce.trim();
                (!n.is_empty() && n.chars().count() <= 128).then(|| ServerFrame::Heartbeat {
                    nonce: n.to_string(),
                    ok: true,
                })
            }
            ControllerFrame::Detach {} => {
                self.detach(identity, Some(owner), false);
                Some(ServerFrame::Detach { ok: true })
            }
        }
    }
}

#[cfg(test)]
mod tests;
