//! Browser-extension control over the local API (DESIGN.md section 4, study 6.4):
//! `GET /v1/capabilities`, `POST /v1/browser-control/register` and the controller
//! WebSocket `GET /v1/browser-control/ws`.
//!
//! These routes sit outside the API-key layer: the first two check the bearer key
//! themselves, after the feature flag (so a disabled feature answers 404 first, as in
//! the reference's decision ladder), and the WebSocket authenticates with the one-shot
//! ticket alone (a browser's WebSocket cannot send an `Authorization` header). Every
//! refusal of the WebSocket happens before the upgrade; a ticket in the query string is
//! refused without being consumed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tabgate_controller::caps::{self, SUBPROTOCOL, TICKET_SUBPROTOCOL_PREFIX};
use tabgate_controller::{ControllerFrame, FrameSender, Scope, SendError, ServerFrame};

use crate::auth::ApiKey;
use crate::error::ApiError;
use crate::gateway::Gateway;

/// The register endpoint's path.
pub const REGISTER_PATH: &str = "/v1/browser-control/register";
/// The WebSocket endpoint's path.
pub const WS_PATH: &str = "/v1/browser-control/ws";
/// The server profile every tabgate request belongs to.
pub const PROFILE: &str = "default";
/// How often the server sends an application keepalive on a controller socket: MV3
/// service workers idle out after 30 s and WebSocket pings do not count as activity.
pub const KEEPALIVE: Duration = Duration::from_secs(15);

struct Bc {
    gw: Arc<Gateway>,
    key: ApiKey,
}

/// The browser-control routes (no state left to supply).
pub fn routes(gw: Arc<Gateway>, key: ApiKey) -> Router {
    Router::new()
        .route("/v1/capabilities", get(capabilities))
        .route(REGISTER_PATH, post(register))
        .route(WS_PATH, get(ws))
        .with_state(Arc::new(Bc { gw, key }))
}

fn err(status: StatusCode, code: &str, message: impl Into<String>) -> ApiError {
    ApiError::new(status, code, message)
}

/// The bearer check of the API-key layer, for routes outside it.
fn check_bearer(headers: &HeaderMap, key: &ApiKey) -> Result<(), ApiError> {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| {
            let (scheme, rest) = h.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim().to_string())
        });
    match presented {
        Some(k) if key.matches(&k) => Ok(()),
        Some(_) => Err(err(
            StatusCode::UNAUTHORIZED,
            "invalid_api_key",
            "the API key is wrong; tabgate serve printed where its key is at startup",
        )),
        None => Err(err(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing API key: send `Authorization: Bearer <key>`",
        )),
    }
}

fn disabled() -> ApiError {
    err(
        StatusCode::NOT_FOUND,
        "browser_control_disabled",
        "browser extension control is off; set browser.extension_control.enabled: true in the config",
    )
}

/// `local-api` for a loopback peer, else `remote-api` (also when the peer is unknown).
fn transport_family(peer: Option<SocketAddr>) -> &'static str {
    match peer {
        Some(a) if a.ip().is_loopback() || a.ip().to_canonical().is_loopback() => caps::TRANSPORT_LOCAL,
        _ => caps::TRANSPORT_REMOTE,
    }
}

/// `GET /v1/capabilities` (bearer): whether extension control is on, the protocol
/// version, transport, allow-lists and endpoints.
async fn capabilities(State(s): State<Arc<Bc>>, headers: HeaderMap) -> Result<Json<Value>, ApiError> {
    check_bearer(&headers, &s.key)?;
    let broker = s.gw.broker();
    let mut base: Vec<&str> = caps::BASE_CAPABILITIES.to_vec();
    base.sort_unstable();
    Ok(Json(json!({
        "features": {"browser_extension_control": {
            "enabled": broker.enabled(),
            "protocol_version": caps::PROTOCOL_VERSION,
            "capabilities": base,
            "developer_capabilities": caps::DEVELOPER_CAPABILITIES,
            "developer_mode": broker.developer_mode(),
            "real_browser_actions": true,
            "subprotocol": SUBPROTOCOL,
            "transports": {"local_vps": "websocket-subprotocol-ticket"},
        }},
        "endpoints": {
            "browser_control_register": {"method": "POST", "path": REGISTER_PATH},
            "browser_control_ws": {"method": "GET", "path": WS_PATH},
        },
    })))
}

fn required(body: &Value, field: &str) -> Result<String, ApiError> {
    match body.get(field).and_then(Value::as_str).map(str::trim) {
        Some(v) if !v.is_empty() => Ok(v.to_string()),
        _ => Err(err(
            StatusCode::BAD_REQUEST,
            "browser_control_invalid_registration",
            format!("{field} is required (a non-empty string)"),
        )
        .with(json!({"field": field}))),
    }
}

/// `POST /v1/browser-control/register` (bearer) → 201 with a single-use ticket (30 s)
/// and the server-bound scope. The decision ladder and codes are the reference's; the
/// principal comes from the API key, never from the body.
async fn register(
    State(s): State<Arc<Bc>>,
    extensions: axum::http::Extensions,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let broker = s.gw.broker();
    if !broker.enabled() {
        return Err(disabled());
    }
    // `browser_control_auth_required` (no key configured) cannot happen: tabgate serve
    // always has a key (configured, from the environment, or generated).
    check_bearer(&headers, &s.key)?;
    let body: Value = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request("invalid_json", format!("the body is not JSON: {e}")))?;
    if !body.is_object() {
        return Err(ApiError::bad_request("invalid_body", "the body must be a JSON object"));
    }
    let version = &body["protocol_version"];
    if !(version.is_u64() && version.as_u64() == Some(caps::PROTOCOL_VERSION)) {
        return Err(err(
            StatusCode::BAD_REQUEST,
            "browser_control_protocol_unsupported",
            format!("unsupported browser-control protocol version {version}; expected 1"),
        ));
    }
    let session_id = required(&body, "session_id")?;
    let controller_id = required(&body, "controller_id")?;
    let browser_profile_id = required(&body, "browser_profile_id")?;
    match s.gw.store().get_session(&session_id) {
        Ok(Some(_)) => {}
        Ok(None) => {
            return Err(err(
                StatusCode::FORBIDDEN,
                "browser_control_session_forbidden",
                format!("no session {session_id:?} a controller may register for; create it with POST /v1/sessions"),
            ))
        }
        Err(e) => {
            return Err(err(
                StatusCode::SERVICE_UNAVAILABLE,
                "session_db_unavailable",
                format!("the session database is unavailable: {}", e.0),
            ))
        }
    }
    let requested = &body["capabilities"];
    let granted = caps::filter_capabilities(requested, broker.developer_mode());
    if granted.is_empty() {
        return Err(err(
            StatusCode::BAD_REQUEST,
            "browser_control_no_capabilities",
            "none of the requested capabilities is allowed; see GET /v1/capabilities",
        ));
    }
    if caps::requests_developer(requested) && !broker.developer_mode() {
        return Err(err(
            StatusCode::FORBIDDEN,
            "browser_control_developer_mode_required",
            "browser_cdp and browser_evaluate need browser.extension_control.developer_mode: true",
        ));
    }
    let scope = Scope {
        principal_id: caps::principal_for(PROFILE, s.key.value()),
        profile_id: PROFILE.into(),
        session_id,
        controller_id,
        browser_profile_id,
        transport_family: transport_family(extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0)).into(),
        capabilities: granted,
    };
    let issued = broker
        .issue_ticket(scope.clone())
        .map_err(|e| err(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", e.to_string()))?;
    let body = json!({
        "protocol_version": caps::PROTOCOL_VERSION,
        "ticket": issued.ticket,
        "ticket_expires_at": tabgate_supervisor::now_epoch() + issued.expires_in.as_secs_f64(),
        "ticket_expires_in_seconds": issued.expires_in.as_secs(),
        "ws_path": WS_PATH,
        "scope": scope,
    });
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

fn ticket_refused(message: impl Into<String>) -> ApiError {
    err(StatusCode::UNAUTHORIZED, "browser_control_ticket_invalid", message)
}

/// The ticket from `Sec-WebSocket-Protocol`: it must offer `hermes-browser-control-v1`
/// and exactly one `hermes-browser-control-ticket.<ticket>`.
fn ticket_from_protocols(headers: &HeaderMap) -> Result<String, ApiError> {
    let offered: Vec<String> = headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect();
    if !offered.iter().any(|p| p == SUBPROTOCOL) {
        return Err(ticket_refused(format!(
            "the WebSocket must offer the subprotocol {SUBPROTOCOL}"
        )));
    }
    let tickets: Vec<&str> = offered
        .iter()
        .filter_map(|p| p.strip_prefix(TICKET_SUBPROTOCOL_PREFIX))
        .collect();
    match tickets.as_slice() {
        [t] => Ok(t.to_string()),
        [] => Err(ticket_refused(format!(
            "the WebSocket must offer the subprotocol {TICKET_SUBPROTOCOL_PREFIX}<ticket> (POST {REGISTER_PATH} for a ticket)"
        ))),
        _ => Err(ticket_refused("the WebSocket offered more than one ticket")),
    }
}

fn has_query_ticket(uri: &Uri) -> bool {
    uri.query().is_some_and(|q| {
        q.split('&')
            .any(|kv| kv.split('=').next().is_some_and(|k| k.eq_ignore_ascii_case("ticket")))
    })
}

/// `GET /v1/browser-control/ws`: the controller's socket. Refusals happen before the
/// upgrade: feature off → 404 (ticket kept); a `ticket` query parameter → 401 (ticket
/// kept); subprotocols missing or more than one ticket → 401; malformed, unknown,
/// expired or reused ticket → 401. Accepts with `hermes-browser-control-v1`.
async fn ws(
    State(s): State<Arc<Bc>>,
    uri: Uri,
    headers: HeaderMap,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    let broker = s.gw.broker().clone();
    if !broker.enabled() {
        return Err(disabled());
    }
    if has_query_ticket(&uri) {
        return Err(ticket_refused(
            "tickets are never accepted in the URL; send it as the subprotocol hermes-browser-control-ticket.<ticket>",
        ));
    }
    let ticket = ticket_from_protocols(&headers)?;
    let upgrade = upgrade.map_err(|r| ApiError::bad_request("websocket_required", r.body_text()))?;
    let scope = broker
        .redeem_ticket(&ticket)
        .map_err(|e| ticket_refused(e.to_string()))?;
    Ok(upgrade
        .protocols([SUBPROTOCOL])
        .on_upgrade(move |socket| serve_socket(socket, broker, scope)))
}

/// Runs one controller connection: attach, relay frames both ways, keepalives, and a
/// recoverable disconnect at the end. The socket closes once it no longer owns its
/// controller (replaced, detached, or superseded by a reconnect).
async fn serve_socket(mut socket: WebSocket, broker: Arc<tabgate_controller::Broker>, scope: Scope) {
    let owner = broker.new_owner();
    let id = scope.identity();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let sender: FrameSender = Arc::new(move |f: &ServerFrame| {
        tx.send(f.to_text())
            .map_err(|_| SendError("the controller's socket is closed".into()))
    });
    if let Err(e) = broker.attach(scope, sender, owner) {
        tracing::warn!(session = %id.session_id, "browser controller attach failed: {e}");
        let _ = socket.send(Message::Close(None)).await;
        return;
    }
    tracing::info!(session = %id.session_id, controller = %id.controller_id, "browser controller attached");
    let mut keepalive = tokio::time::interval_at(tokio::time::Instant::now() + KEEPALIVE, KEEPALIVE);
    let mut n: u64 = 0;
    loop {
        tokio::select! {
            out = rx.recv() => match out {
                Some(text) => if socket.send(Message::Text(text.into())).await.is_err() { break },
                None => break,
            },
            msg = socket.recv() => match msg {
                Some(Ok(Message::Text(t))) => {
                    let Some(frame) = ControllerFrame::parse(t.as_str()) else { continue };
                    if let Some(reply) = broker.handle_frame(&id, owner, frame) {
                        if socket.send(Message::Text(reply.to_text().into())).await.is_err() {
                            break;
                        }
                    }
                }
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
                Some(Ok(_)) => {}
            },
            _ = keepalive.tick() => {
                if !broker.is_owner(&id, owner) {
                    let _ = socket.send(Message::Close(None)).await;
                    break;
                }
                n += 1;
                if socket.send(Message::Text(ServerFrame::keepalive(n).to_text().into())).await.is_err() {
                    break;
                }
            }
        }
    }
    if broker.disconnect(&id, owner) {
        tracing::info!(session = %id.session_id, controller = %id.controller_id, "browser controller disconnected");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_family_follows_the_peer() {
        let p = |s: &str| Some(s.parse::<SocketAddr>().unwrap());
        assert_eq!(transport_family(p("127.0.0.1:5000")), "local-api");
        assert_eq!(transport_family(p("[::1]:5000")), "local-api");
        assert_eq!(transport_family(p("[::ffff:127.0.0.1]:5000")), "local-api");
        assert_eq!(transport_family(p("10.0.0.2:5000")), "remote-api");
        assert_eq!(transport_family(None), "remote-api");
    }

    #[test]
    fn query_tickets_are_spotted() {
        let u = |s: &str| s.parse::<Uri>().unwrap();
        assert!(has_query_ticket(&u("/v1/browser-control/ws?ticket=abc")));
        assert!(has_query_ticket(&u("/v1/browser-control/ws?x=1&TICKET")));
        assert!(!has_query_ticket(&u("/v1/browser-control/ws?tickets=1")));
        assert!(!has_query_ticket(&u("/v1/browser-control/ws")));
    }

    #[test]
    fn subprotocols_need_the_version_and_exactly_one_ticket() {
        let h = |v: &[&str]| {
            let mut m = HeaderMap::new();
            for x in v {
                m.append(header::SEC_WEBSOCKET_PROTOCOL, x.parse().unwrap());
            }
            m
        };
        let t = "hermes-browser-control-ticket.abc";
        assert_eq!(
            ticket_from_protocols(&h(&["hermes-browser-control-v1", t])).unwrap(),
            "abc"
        );
        assert_eq!(
            ticket_from_protocols(&h(&[&format!(" hermes-browser-control-v1 ,{t} ")])).unwrap(),
            "abc"
        );
        assert!(ticket_from_protocols(&h(&[t])).is_err());
        assert!(ticket_from_protocols(&h(&["hermes-browser-control-v1"])).is_err());
        assert!(
            ticket_from_protocols(&h(&["hermes-browser-control-v1", t, "hermes-browser-control-ticket.d"])).is_err()
        );
    }
}
