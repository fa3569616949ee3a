//! One WebSocket to a browser, shared by every supervisor using that browser.
//!
//! A reader task parses each frame: replies (`id`) wake their waiter, events go to the
//! sink that owns their `sessionId`. Browser-level events (no `sessionId`) go to every
//! sink. A child session announced by `Target.attachedToTarget` is routed to its parent's
//! sink *inside the reader*, before the next frame is read, so no event of a fresh child
//! (its `Runtime.executionContextCreated`, a dialog) can slip past unrouted.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

use crate::error::{CdpError, Redacted};

/// A CDP event: `method`, `params`, and the flattened `sessionId` it arrived on
/// (`None` for browser-level events). `Closed` is sent once when the socket ends.
#[derive(Debug, Clone)]
pub enum Event {
    /// A protocol event.
    Cdp {
        session_id: Option<Arc<str>>,
        method: String,
        params: Value,
    },
    /// The connection ended; carries the reason.
    Closed(String),
}

/// Where a subscriber's events go. Unbounded on purpose: dropping a
/// `Page.javascriptDialogOpening` under a console flood is worse than memory.
pub type EventSink = mpsc::UnboundedSender<Event>;

/// Identifies a subscriber registered with [`Connection::subscribe`].
pub type SinkId = u64;

type Reply = Result<Value, CdpError>;

#[derive(Default)]
struct Routes {
    sinks: HashMap<SinkId, EventSink>,
    /// flattened sessionId → owning sink
    sessions: HashMap<Arc<str>, SinkId>,
    /// targetId being attached by `attach_to_target` → sink that asked
    claims: HashMap<String, SinkId>,
    next_sink: SinkId,
}

struct Inner {
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, (String, oneshot::Sender<Reply>)>>,
    routes: Mutex<Routes>,
    writer: mpsc::UnboundedSender<Message>,
    closed: Mutex<Option<String>>,
    url: String,
}

/// A live CDP connection. Cheap to clone; all clones share one socket.
#[derive(Clone)]
pub struct Connection {
    inner: Arc<Inner>,
}

/// Removes a pending waiter when the calling future is dropped (deadline or cancel),
/// so a reply that arrives late is simply discarded.
struct PendingGuard<'a> {
    inner: &'a Inner,
    id: u64,
}
impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut p) = self.inner.pending.lock() {
            p.remove(&self.id);
        }
    }
}

impl Connection {
    /// Connects to a browser WebSocket URL (`ws://…/devtools/browser/…`) within
    /// `timeout_ms`. Frames up to 256 MiB are accepted (full-page screenshots are big).
    pub async fn connect(url: &str, timeout_ms: u64) -> Result<Connection, CdpError> {
        let mut cfg = WebSocketConfig::default();
        cfg.max_message_size = Some(256 << 20);
        cfg.max_frame_size = Some(256 << 20);
        let fut = tokio_tungstenite::connect_async_with_config(url, Some(cfg), true);
        let (ws, _) = tokio::time::timeout(Duration::from_millis(timeout_ms), fut)
            .await
            .map_err(|_| {
                CdpError::Connect(format!(
                    "no CDP handshake from {} within {timeout_ms} ms",
                    Redacted(url)
                ))
            })?
            .map_err(|e| CdpError::Connect(format!("cannot connect to {}: {e}", Redacted(url))))?;
        let (mut tx, mut rx) = ws.split();
        let (wtx, mut wrx) = mpsc::unbounded_channel::<Message>();
        let inner = Arc::new(Inner {
            next_id: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
            routes: Mutex::new(Routes::default()),
            writer: wtx,
            closed: Mutex::new(None),
            url: url.to_string(),
        });
        tokio::spawn(async move {
            while let Some(m) = wrx.recv().await {
                if tx.send(m).await.is_err() {
                    break;
                }
            }
            let _ = tx.close().await;
        });
        let weak = Arc::downgrade(&inner);
        tokio::spawn(async move {
            let reason = loop {
                let msg = match rx.next().await {
                    Some(Ok(m)) => m,
                    Some(Err(e)) => break format!("read error: {e}"),
                    None => break "socket closed".to_string(),
                };
                let Some(inner) = weak.upgrade() else { return };
                match msg {
                    Message::Text(t) => inner.dispatch(t.as_str()),
                    Message::Binary(b) => {
                        if let Ok(s) = std::str::from_utf8(&b) {
                            inner.dispatch(s)
                        }
                    }
                    Message::Close(_) => break "closed by the browser".to_string(),
                    _ => {}
                }
            };
            if let Some(inner) = weak.upgrade() {
                inner.close(reason);
            }
        });
        Ok(Connection { inner })
    }

    /// The endpoint this connection talks to (may contain credentials: redact before showing).
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// `Some(reason)` once the socket has ended.
    pub fn closed_reason(&self) -> Option<String> {
        self.inner.closed.lock().ok().and_then(|c| c.clone())
    }

    /// Sends `method` with `params` on `session_id` (or the browser when `None`) and waits
    /// at most `timeout_ms` for the reply's `result`. Dropping the future abandons the call.
    pub async fn call(
        &self,
        session_id: Option<&str>,
        method: &str,
        params: Value,
        timeout_ms: u64,
    ) -> Result<Value, CdpError> {
        if let Some(r) = self.closed_reason() {
            return Err(CdpError::Disconnected(r));
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.inner
            .pending
            .lock()
            .expect("pending lock")
            .insert(id, (method.to_string(), tx));
        let _guard = PendingGuard { inner: &self.inner, id };
        let mut msg = json!({"id": id, "method": method});
        if !(params.is_null() || params.as_object().is_some_and(|o| o.is_empty())) {
            msg["params"] = params;
        }
        if let Some(s) = session_id {
            msg["sessionId"] = Value::String(s.to_string());
        }
        if self.inner.writer.send(Message::Text(msg.to_string().into())).is_err() {
            return Err(CdpError::Disconnected("writer stopped".into()));
        }
        match tokio::time::timeout(Duration::from_millis(timeout_ms), rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(CdpError::Disconnected(
                self.closed_reason().unwrap_or_else(|| "connection dropped".into()),
            )),
            Err(_) => Err(CdpError::Timeout {
                method: method.to_string(),
                timeout_ms,
            }),
        }
    }

    /// Registers an event sink. It receives every browser-level event and every event
    /// of the sessions it owns (see [`Connection::attach_to_target`]).
    pub fn subscribe(&self, sink: EventSink) -> SinkId {
        let mut r = self.inner.routes.lock().expect("routes lock");
        r.next_sink += 1;
        let id = r.next_sink;
        r.sinks.insert(id, sink);
        id
    }

    /// Removes a sink and every session routed to it.
    pub fn unsubscribe(&self, sink: SinkId) {
        let mut r = self.inner.routes.lock().expect("routes lock");
        r.sinks.remove(&sink);
        r.sessions.retain(|_, s| *s != sink);
        r.claims.retain(|_, s| *s != sink);
    }

    /// Routes an already attached `session_id` to `sink`.
    pub fn route_session(&self, session_id: &str, sink: SinkId) {
        let mut r = self.inner.routes.lock().expect("routes lock");
        r.sessions.insert(Arc::from(session_id), sink);
    }

    /// Attaches to `target_id` with `flatten: true` (CDP `Target.attachToTarget`) and routes
    /// the new session's events to `sink` from its very first event. Returns the `sessionId`.
    pub async fn attach_to_target(&self, target_id: &str, sink: SinkId, timeout_ms: u64) -> Result<String, CdpError> {
        self.inner
            .routes
            .lock()
            .expect("routes lock")
            .claims
            .insert(target_id.to_string(), sink);
        let res = self
            .call(
                None,
                "Target.attachToTarget",
                json!({"targetId": target_id, "flatten": true}),
                timeout_ms,
            )
            .await;
        let mut r = self.inner.routes.lock().expect("routes lock");
        r.claims.remove(target_id);
        let sid = res?
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| CdpError::Connect("Target.attachToTarget returned no sessionId".into()))?;
        r.sessions.insert(Arc::from(sid.as_str()), sink);
        Ok(sid)
    }
}

impl Inner {
    fn dispatch(&self, text: &str) {
        let Ok(v) = serde_json::from_str::<Value>(text) else {
            return;
        };
        if let Some(id) = v.get("id").and_then(Value::as_u64) {
            let waiter = self.pending.lock().ok().and_then(|mut p| p.remove(&id));
            if let Some((method, tx)) = waiter {
                let reply = match v.get("error") {
                    Some(e) => Err(CdpError::Protocol {
                        method,
                        code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
                        message: e
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("unknown error")
                            .to_string(),
                    }),
                    None => Ok(v.get("result").cloned().unwrap_or(Value::Null)),
                };
                let _ = tx.send(reply);
            }
            return;
        }
        let Some(method) = v.get("method").and_then(Value::as_str) else {
            return;
        };
        let session_id: Option<Arc<str>> = v.get("sessionId").and_then(Value::as_str).map(Arc::from);
        let params = v.get("params").cloned().unwrap_or(Value::Null);
        let mut routes = self.routes.lock().expect("routes lock");
        let owner = match &session_id {
            Some(s) => routes.sessions.get(s).copied(),
            None => None,
        };
        if method == "Target.attachedToTarget" {
            let child = params.get("sessionId").and_then(Value::as_str).map(Arc::<str>::from);
            let target = params.pointer("/targetInfo/targetId").and_then(Value::as_str);
            let claim = target.and_then(|t| routes.claims.get(t).copied());
            if let (Some(child), Some(to)) = (child, owner.or(claim)) {
                routes.sessions.insert(child, to);
            }
        }
        let ev = Event::Cdp {
            session_id: session_id.clone(),
            method: method.to_string(),
            params,
        };
        match (&session_id, owner) {
            (Some(_), Some(o)) => {
                if let Some(s) = routes.sinks.get(&o) {
                    let _ = s.send(ev);
                }
            }
            (Some(_), None) => {} // a session nobody owns (another client's)
            (None, _) => {
                for s in routes.sinks.values() {
                    let _ = s.send(ev.clone());
                }
            }
        }
        // the route is kept until the owner has seen the detach event (sent above)
        if method == "Target.detachedFromTarget" {
            if let Some(child) = ev_session_param(&v) {
                routes.sessions.remove(child.as_str());
            }
        }
    }

    fn close(&self, reason: String) {
        {
            let mut c = self.closed.lock().expect("closed lock");
            if c.is_some() {
                return;
            }
            *c = Some(reason.clone());
        }
        let waiters: Vec<_> = self.pending.lock().expect("pending").drain().collect();
        for (_, (_, tx)) in waiters {
            let _ = tx.send(Err(CdpError::Disconnected(reason.clone())));
        }
        let routes = self.routes.lock().expect("routes lock");
        for s in routes.sinks.values() {
            let _ = s.send(Event::Closed(reason.clone()));
        }
    }
}

fn ev_session_param(v: &Value) -> Option<String> {
    v.pointer("/params/sessionId")
        .and_then(Value::as_str)
        .map(str::to_string)
}
