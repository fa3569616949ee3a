//! Broker scenarios of the study's 9.4.

use super::*;
use crate::caps::BASE_CAPABILITIES;
use serde_json::json;

/// Frames a fake transport received.
#[derive(Clone, Default)]
struct Rec(Arc<Mutex<Vec<ServerFrame>>>);

impl Rec {
    fn sender(&self) -> FrameSender {
        let r = self.clone();
        Arc::new(move |f: &ServerFrame| {
            lock(&r.0).push(f.clone());
            Ok(())
        })
    }
    fn frames(&self) -> Vec<ServerFrame> {
        lock(&self.0).clone()
    }
    fn commands(&self) -> Vec<String> {
        self.frames()
            .into_iter()
            .filter_map(|f| match f {
                ServerFrame::Command { command_id, .. } => Some(command_id),
                _ => None,
            })
            .collect()
    }
    fn cancels(&self) -> Vec<String> {
        self.frames()
            .into_iter()
            .filter_map(|f| match f {
                ServerFrame::Cancel { command_id, .. } => Some(command_id),
                _ => None,
            })
            .collect()
    }
    async fn command(&self, n: usize) -> String {
        for _ in 0..2000 {
            if let Some(c) = self.commands().get(n) {
                return c.clone();
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        panic!("command {n} never sent; frames: {:?}", self.frames());
    }
}

fn failing() -> FrameSender {
    Arc::new(|_: &ServerFrame| Err(SendError("socket closed".into())))
}

fn scope(controller: &str, caps: &[&str]) -> Scope {
    Scope {
        principal_id: "principal:default:abc".into(),
        profile_id: "default".into(),
        session_id: "ses_1".into(),
        controller_id: controller.into(),
        browser_profile_id: "profile-1".into(),
        transport_family: "local-api".into(),
        capabilities: caps.iter().map(|s| s.to_string()).collect(),
    }
}

fn all() -> Scope {
    scope("ctrl-a", &BASE_CAPABILITIES)
}

fn broker() -> Arc<Broker> {
    Arc::new(Broker::default())
}

fn quick(timeout_ms: u64) -> Arc<Broker> {
    Arc::new(Broker::new(BrokerOptions {
        command_timeout: Duration::from_millis(timeout_ms),
        ..BrokerOptions::default()
    }))
}

type Task = tokio::task::JoinHandle<Result<Value, BrokerError>>;

fn spawn(b: &Arc<Broker>, id: &Identity, action: &str, tool_call_id: &str) -> Task {
    let (b, id, action, tc) = (b.clone(), id.clone(), action.to_string(), tool_call_id.to_string());
    tokio::spawn(async move { b.dispatch(&id, &action, json!({"x": 1}), &tc).await })
}

#[test]
fn tickets_are_single_use_and_bound_to_the_scope() {
    let clock = crate::ticket::ManualClock::new();
    let b = Broker::new(BrokerOptions {
        clock: Arc::new(clock.clone()),
        ..BrokerOptions::default()
    });
    let t = b.issue_ticket(all()).unwrap();
    assert!(t.ticket.len() >= 32);
    assert_eq!(b.redeem_ticket(&t.ticket), Ok(all()));
    assert_eq!(b.redeem_ticket(&t.ticket), Err(TicketError::Unknown));
    let t2 = b.issue_ticket(all()).unwrap();
    clock.advance(Duration::from_secs(31));
    assert_eq!(b.redeem_ticket(&t2.ticket), Err(TicketError::Expired));
}

#[test]
fn selection_requires_the_exact_identity_and_a_held_capability() {
    let b = broker();
    let s = scope("ctrl-a", &["browser_snapshot"]);
    b.attach(s.clone(), Rec::default().sender(), b.new_owner()).unwrap();
    let id = s.identity();
    assert!(b.select(&id, "browser_snapshot").is_ok());
    assert_eq!(
        b.select(&id, "browser_click"),
        Err(BrokerError::Unavailable(
            "bound browser controller cannot execute browser_click".into()
        ))
    );
    for f in 0..6 {
        let mut other = id.clone();
        let field = [
            &mut other.principal_id,
            &mut other.profile_id,
            &mut other.session_id,
            &mut other.controller_id,
            &mut other.browser_profile_id,
            &mut other.transport_family,
        ];
        field.into_iter().nth(f).unwrap().push('x');
        assert!(b.select(&other, "browser_snapshot").is_err(), "field {f}");
    }
}

#[test]
fn developer_capabilities_need_live_developer_mode() {
    let b = Broker::new(BrokerOptions {
        developer_mode: true,
        ..BrokerOptions::default()
    });
    let s = scope("ctrl-a", &["browser_cdp"]);
    b.attach(s.clone(), Rec::default().sender(), b.new_owner()).unwrap();
    assert!(b.select(&s.identity(), "browser_cdp").is_ok());
    b.set_developer_mode(false);
    assert!(matches!(
        b.select(&s.identity(), "browser_cdp"),
        Err(BrokerError::Unavailable(_))
    ));
}

#[tokio::test]
async fn noop_round_trip_completes_from_inside_send() {
    let b = broker();
    let s = scope("ctrl-a", &["controller.noop"]);
    let id = s.identity();
    let seen = Rec::default();
    let (b2, id2, seen2) = (b.clone(), id.clone(), seen.clone());
    let sender: FrameSender = Arc::new(move |f: &ServerFrame| {
        lock(&seen2.0).push(f.clone());
        if let ServerFrame::Command { command_id, .. } = f {
            assert!(b2.complete(&id2, command_id, &json!(true), Some(json!({"pong": true})), None));
        }
        Ok(())
    });
    b.attach(s, sender, b.new_owner()).unwrap();
    let r = b.dispatch(&id, "controller.noop", json!({}), "call-1").await;
    assert_eq!(r, Ok(json!({"pong": true})));
    assert_eq!(b.pending_count(), 0);
    match &seen.frames()[0] {
        ServerFrame::Command {
            command_id,
            action,
            controller_id,
            browser_profile_id,
            tool_call_id,
            ..
        } => {
            assert_eq!(command_id.len(), 32);
            assert!(command_id.bytes().all(|c| c.is_ascii_hexdigit()));
            assert_eq!(
                (
                    action.as_str(),
                    controller_id.as_str(),
                    browser_profile_id.as_str(),
                    tool_call_id.as_str()
                ),
                ("controller.noop", "ctrl-a", "profile-1", "call-1")
            );
        }
        f => panic!("{f:?}"),
    }
    // a noop controller cannot run browser actions
    assert!(b.select(&id, "browser_click").is_err());
}

#[tokio::test]
async fn cancel_targets_only_the_matching_tool_call() {
    let b = broker();
    let rec = Rec::default();
    let id = all().identity();
    b.attach(all(), rec.sender(), b.new_owner()).unwrap();
    let t1 = spawn(&b, &id, "browser_click", "call-1");
    let c1 = rec.command(0).await;
    let t2 = spawn(&b, &id, "browser_click", "call-2");
    let c2 = rec.command(1).await;
    assert!(!b.cancel(&id, "call-3"));
    assert!(b.cancel(&id, "call-2"));
    assert!(matches!(t2.await.unwrap(), Err(BrokerError::Cancelled(_))));
    assert_eq!(rec.cancels(), std::slice::from_ref(&c2));
    assert!(!b.cancel(&id, "call-2"));
    assert!(b.complete(&id, &c1, &json!(true), Some(json!("done")), None));
    assert_eq!(t1.await.unwrap(), Ok(json!("done")));
    assert_eq!(rec.cancels(), [c2]);
}

#[tokio::test]
async fn detach_fails_pending_closed_and_ignores_late_results() {
    let b = broker();
    let rec = Rec::default();
    let id = all().identity();
    b.attach(all(), rec.sender(), b.new_owner()).unwrap();
    let t = spawn(&b, &id, "browser_navigate", "call-1");
    let c = rec.command(0).await;
    assert!(b.detach(&id, None, true));
    assert!(matches!(t.await.unwrap(), Err(BrokerError::Cancelled(_))));
    assert!(!b.complete(&id, &c, &json!(true), Some(json!(1)), None));
    assert_eq!(b.pending_count(), 0);
    // order: the command, then its cancel
    assert!(matches!(rec.frames()[0], ServerFrame::Command { .. }));
    assert_eq!(
        rec.frames()[1],
        ServerFrame::Cancel {
            command_id: c,
            tool_call_id: "call-1".into()
        }
    );
    assert!(b.dispatch(&id, "browser_navigate", json!({}), "call-2").await.is_err());
}

#[tokio::test]
async fn dispatch_revalidates_the_controller_after_a_detach_race() {
    let b = broker();
    let id = all().identity();
    let rec = Rec::default();
    b.attach(all(), rec.sender(), b.new_owner()).unwrap();
    let (_, epoch) = b.select_epoch(&id, "browser_click").unwrap();
    b.detach(&id, None, false);
    let r = b.send_command(&id, epoch, "browser_click", json!({}), "call-1");
    assert!(matches!(r, Err(BrokerError::Unavailable(m)) if m.contains("detached before dispatch")));
    // same identity attached again in between: a new generation, still refused
    b.attach(all(), rec.sender(), b.new_owner()).unwrap();
    assert!(b
        .send_command(&id, epoch, "browser_click", json!({}), "call-1")
        .is_err());
    assert!(rec.frames().is_empty());
    assert_eq!(b.pending_count(), 0);
}

#[tokio::test]
async fn completion_requires_the_scope_of_the_pending_command() {
    let b = broker();
    let rec = Rec::default();
    let id = all().identity();
    b.attach(all(), rec.sender(), b.new_owner()).unwrap();
    let mut other = scope("ctrl-a", &BASE_CAPABILITIES);
    other.session_id = "ses_2".into();
    b.attach(other.clone(), Rec::default().sender(), b.new_owner()).unwrap();
    let t = spawn(&b, &id, "browser_click", "call-1");
    let c = rec.command(0).await;
    assert!(!b.complete(&other.identity(), &c, &json!(true), Some(json!("foreign")), None));
    assert!(!b.complete(&id, "0123", &json!(true), None, None));
    assert!(b.complete(&id, &c, &json!(true), Some(json!("mine")), None));
    assert!(!b.complete(&id, &c, &json!(true), Some(json!("again")), None));
    assert_eq!(t.await.unwrap(), Ok(json!("mine")));
}

#[tokio::test]
async fn same_identity_reattach_keeps_pending_work_and_sends_nothing_again() {
    let b = broker();
    let (old, new) = (Rec::default(), Rec::default());
    let id = all().identity();
    let o1 = b.new_owner();
    b.attach(all(), old.sender(), o1).unwrap();
    let t = spawn(&b, &id, "browser_snapshot", "call-1");
    let c = old.command(0).await;
    assert!(b.disconnect(&id, o1));
    let o2 = b.new_owner();
    b.attach(all(), new.sender(), o2).unwrap();
    assert!(new.frames().is_empty());
    assert!(b.is_owner(&id, o2) && !b.is_owner(&id, o1));
    // the old socket's result is ignored; the new one's completes
    let stale = ControllerFrame::Result {
        command_id: c.clone(),
        ok: json!(true),
        result: Some(json!("old")),
        error: None,
    };
    assert_eq!(b.handle_frame(&id, o1, stale), None);
    assert_eq!(b.pending_count(), 1);
    let fresh = ControllerFrame::Result {
        command_id: c,
        ok: json!(true),
        result: Some(json!("new")),
        error: None,
    };
    assert_eq!(b.handle_frame(&id, o2, fresh), None);
    assert_eq!(t.await.unwrap(), Ok(json!("new")));
}

#[test]
fn same_identity_renegotiates_capabilities() {
    let b = broker();
    let s1 = scope("ctrl-a", &["browser_snapshot"]);
    b.attach(s1.clone(), Rec::default().sender(), b.new_owner()).unwrap();
    assert!(b.select(&s1.identity(), "browser_click").is_err());
    let s2 = scope("ctrl-a", &["browser_snapshot", "browser_click"]);
    b.attach(s2.clone(), Rec::default().sender(), b.new_owner()).unwrap();
    assert!(b.select(&s1.identity(), "browser_click").is_ok());
    assert_eq!(b.scope_for_session("ses_1", &s1.principal_id, "local-api"), Some(s2));
}

#[tokio::test]
async fn a_dropped_transport_parks_pending_work_until_reconnect() {
    let b = broker();
    let rec = Rec::default();
    let id = all().identity();
    let o1 = b.new_owner();
    b.attach(all(), rec.sender(), o1).unwrap();
    let t = spawn(&b, &id, "browser_type", "call-1");
    let c = rec.command(0).await;
    assert_eq!(b.disconnect_owner(o1), 1);
    assert!(b.lane_registered("ses_1", &id.principal_id, "local-api"));
    assert!(b.select(&id, "browser_type").is_err());
    assert!(matches!(
        b.dispatch(&id, "browser_type", json!({}), "call-2").await,
        Err(BrokerError::Unavailable(m)) if m.contains("unavailable")
    ));
    b.attach(all(), Rec::default().sender(), b.new_owner()).unwrap();
    assert!(b.complete(&id, &c, &json!(true), Some(json!("typed")), None));
    assert_eq!(t.await.unwrap(), Ok(json!("typed")));
}

#[tokio::test]
async fn timeout_while_offline_defers_the_cancel_and_flushes_it_first() {
    let b = quick(100);
    let rec = Rec::default();
    let id = all().identity();
    let o1 = b.new_owner();
    b.attach(all(), rec.sender(), o1).unwrap();
    let t = spawn(&b, &id, "browser_click", "call-1");
    let c = rec.command(0).await;
    b.disconnect(&id, o1);
    assert!(matches!(t.await.unwrap(), Err(BrokerError::Timeout(_))));
    assert_eq!(b.deferred_count(&id), 1);
    assert!(rec.cancels().is_empty());
    let new = Rec::default();
    b.attach(all(), new.sender(), b.new_owner()).unwrap();
    assert_eq!(
        new.frames(),
        [ServerFrame::Cancel {
            command_id: c.clone(),
            tool_call_id: "call-1".into()
        }]
    );
    assert_eq!(b.deferred_count(&id), 0);
    // a late result for the timed-out command changes nothing; the next dispatch works
    assert!(!b.complete(&id, &c, &json!(true), None, None));
    let t2 = spawn(&b, &id, "browser_click", "call-2");
    let c2 = new.command(0).await;
    assert!(b.complete(&id, &c2, &json!(true), Some(json!("ok")), None));
    assert_eq!(t2.await.unwrap(), Ok(json!("ok")));
}

#[tokio::test]
async fn cancel_with_the_pre_reconnect_scope_reaches_the_new_transport() {
    let b = broker();
    let (old, new) = (Rec::default(), Rec::default());
    let before = scope("ctrl-a", &["browser_click"]);
    let o1 = b.new_owner();
    b.attach(before.clone(), old.sender(), o1).unwrap();
    let t = spawn(&b, &before.identity(), "browser_click", "call-1");
    let c = old.command(0).await;
    b.disconnect(&before.identity(), o1);
    b.attach(
        scope("ctrl-a", &["browser_click", "browser_type"]),
        new.sender(),
        b.new_owner(),
    )
    .unwrap();
    assert!(b.cancel(&before.identity(), "call-1"));
    assert!(matches!(t.await.unwrap(), Err(BrokerError::Cancelled(_))));
    assert_eq!(new.cancels(), [c]);
    assert!(old.cancels().is_empty());
}

#[tokio::test]
async fn a_different_controller_hard_replaces_and_cancels_pending_work() {
    let b = broker();
    let (a, rec_b) = (Rec::default(), Rec::default());
    let ida = all().identity();
    b.attach(all(), a.sender(), b.new_owner()).unwrap();
    let t = spawn(&b, &ida, "browser_click", "call-1");
    let c = a.command(0).await;
    let sb = scope("ctrl-b", &BASE_CAPABILITIES);
    b.attach(sb.clone(), rec_b.sender(), b.new_owner()).unwrap();
    assert!(matches!(t.await.unwrap(), Err(BrokerError::Cancelled(_))));
    assert!(!b.complete(&ida, &c, &json!(true), None, None));
    assert!(b.select(&ida, "browser_click").is_err());
    assert!(b.select(&sb.identity(), "browser_click").is_ok());
    assert_eq!(b.scope_for_session("ses_1", &sb.principal_id, "local-api"), Some(sb));
    // a different browser profile replaces too
    let mut sc = scope("ctrl-b", &BASE_CAPABILITIES);
    sc.browser_profile_id = "profile-2".into();
    b.attach(sc.clone(), Rec::default().sender(), b.new_owner()).unwrap();
    assert_eq!(b.scope_for_session("ses_1", &sc.principal_id, "local-api"), Some(sc));
    assert!(a.cancels().is_empty() && rec_b.frames().is_empty());
}

#[test]
fn a_different_controller_replaces_a_parked_one() {
    let b = broker();
    let ida = all().identity();
    let o = b.new_owner();
    b.attach(all(), Rec::default().sender(), o).unwrap();
    b.disconnect(&ida, o);
    let sb = scope("ctrl-b", &BASE_CAPABILITIES);
    b.attach(sb.clone(), Rec::default().sender(), b.new_owner()).unwrap();
    assert!(!b.is_owner(&ida, o));
    assert_eq!(b.scopes_for_session("ses_1"), [sb]);
}

#[tokio::test]
async fn a_failed_deferred_cancel_flush_keeps_the_controller_offline() {
    let b = quick(50);
    let rec = Rec::default();
    let id = all().identity();
    let o1 = b.new_owner();
    b.attach(all(), rec.sender(), o1).unwrap();
    let t = spawn(&b, &id, "browser_click", "call-1");
    rec.command(0).await;
    b.disconnect(&id, o1);
    assert!(matches!(t.await.unwrap(), Err(BrokerError::Timeout(_))));
    assert!(b.attach(all(), failing(), b.new_owner()).is_err());
    assert!(!b.is_connected(&id));
    assert_eq!(b.deferred_count(&id), 1);
    assert!(b.select(&id, "browser_click").is_err());
    let ok = Rec::default();
    b.attach(all(), ok.sender(), b.new_owner()).unwrap();
    assert_eq!(ok.cancels().len(), 1);
    assert!(b.is_connected(&id));
}

#[tokio::test]
async fn deferred_cancels_are_bounded() {
    let b = Arc::new(Broker::new(BrokerOptions {
        command_timeout: Duration::from_millis(20),
        max_deferred: 2,
        ..BrokerOptions::default()
    }));
    let rec = Rec::default();
    let id = all().identity();
    let o = b.new_owner();
    b.attach(all(), rec.sender(), o).unwrap();
    let tasks: Vec<Task> = (0..3)
        .map(|i| spawn(&b, &id, "browser_click", &format!("call-{i}")))
        .collect();
    rec.command(2).await;
    b.disconnect(&id, o);
    for t in tasks {
        assert!(matches!(t.await.unwrap(), Err(BrokerError::Timeout(_))));
    }
    assert_eq!(b.deferred_count(&id), 2);
}

#[test]
fn owner_scoped_detach_and_reset() {
    let b = broker();
    let o1 = b.new_owner();
    b.attach(all(), Rec::default().sender(), o1).unwrap();
    let mut other_lane = all();
    other_lane.session_id = "ses_2".into();
    let o2 = b.new_owner();
    b.attach(other_lane.clone(), Rec::default().sender(), o2).unwrap();
    assert_eq!(b.detach_owner(b.new_owner(), true), 0);
    assert_eq!(b.detach_owner(o1, true), 1);
    assert!(!b.lane_registered("ses_1", &all().principal_id, "local-api"));
    assert!(b.lane_registered("ses_2", &all().principal_id, "local-api"));
    b.reset();
    assert!(b.scopes_for_session("ses_2").is_empty());
}

#[test]
fn session_lookup_requires_exact_principal_and_transport() {
    let b = broker();
    let s = all();
    assert!(!b.lane_registered("ses_1", &s.principal_id, "local-api"));
    b.attach(s.clone(), Rec::default().sender(), b.new_owner()).unwrap();
    assert_eq!(
        b.scope_for_session("ses_1", &s.principal_id, "local-api"),
        Some(s.clone())
    );
    assert_eq!(b.scope_for_session("ses_1", "principal:other", "local-api"), None);
    assert_eq!(b.scope_for_session("ses_1", &s.principal_id, "remote-api"), None);
    assert_eq!(b.scope_for_session("", &s.principal_id, "local-api"), None);
    assert_eq!(b.scope_for_session("ses_1", "", "local-api"), None);
    assert!(!b.lane_registered("ses_1", &s.principal_id, "remote-api"));
    // two controllers of one session on different profiles: ambiguous, fails closed
    let mut p2 = s.clone();
    p2.profile_id = "other".into();
    b.attach(p2, Rec::default().sender(), b.new_owner()).unwrap();
    assert_eq!(b.scope_for_session("ses_1", &s.principal_id, "local-api"), None);
    assert!(b.lane_registered("ses_1", &s.principal_id, "local-api"));
}

#[tokio::test]
async fn teardown_without_notify_cancels_waiters_silently() {
    let b = broker();
    let rec = Rec::default();
    let id = all().identity();
    let o = b.new_owner();
    b.attach(all(), rec.sender(), o).unwrap();
    let t = spawn(&b, &id, "browser_click", "call-1");
    rec.command(0).await;
    assert_eq!(b.detach_owner(o, false), 1);
    assert!(matches!(t.await.unwrap(), Err(BrokerError::Cancelled(_))));
    assert!(rec.cancels().is_empty());
}

#[tokio::test]
async fn a_stale_owner_cannot_tear_down_the_next_generation() {
    let b = broker();
    let id = all().identity();
    let o1 = b.new_owner();
    b.attach(all(), Rec::default().sender(), o1).unwrap();
    let o2 = b.new_owner();
    b.attach(all(), Rec::default().sender(), o2).unwrap();
    assert!(!b.disconnect(&id, o1));
    assert_eq!(b.disconnect_owner(o1), 0);
    assert!(!b.detach(&id, Some(o1), true));
    assert_eq!(b.detach_owner(o1, false), 0);
    assert_eq!(b.handle_frame(&id, o1, ControllerFrame::Detach {}), None);
    assert!(b.is_connected(&id) && b.is_owner(&id, o2));
    assert_eq!(
        b.handle_frame(&id, o2, ControllerFrame::Detach {}),
        Some(ServerFrame::Detach { ok: true })
    );
    assert!(!b.lane_registered("ses_1", &id.principal_id, "local-api"));
}

#[tokio::test]
async fn a_completion_at_the_deadline_is_not_a_timeout() {
    // the result arrives inside send, so it is already there when a zero deadline fires
    let b = Arc::new(Broker::new(BrokerOptions {
        command_timeout: Duration::ZERO,
        ..BrokerOptions::default()
    }));
    let s = all();
    let id = s.identity();
    let (b2, id2) = (b.clone(), id.clone());
    let sender: FrameSender = Arc::new(move |f: &ServerFrame| {
        if let ServerFrame::Command { command_id, .. } = f {
            b2.complete(&id2, command_id, &json!(true), Some(json!("won")), None);
        }
        Ok(())
    });
    b.attach(s, sender, b.new_owner()).unwrap();
    assert_eq!(b.dispatch(&id, "browser_click", json!({}), "c").await, Ok(json!("won")));
    // and the boundary path itself: the deadline fired but the pending entry is gone
    let (tx, rx) = oneshot::channel();
    tx.send(Outcome::Done {
        ok: true,
        payload: json!("late but first"),
    })
    .ok();
    assert_eq!(
        b.wait("unregistered".into(), "c", rx).await,
        Ok(json!("late but first"))
    );
}

#[tokio::test]
async fn a_timeout_is_terminal_and_sends_a_cancel() {
    let b = quick(50);
    let rec = Rec::default();
    let id = all().identity();
    b.attach(all(), rec.sender(), b.new_owner()).unwrap();
    let r = b.dispatch(&id, "browser_snapshot", json!({}), "call-9").await;
    assert!(matches!(r, Err(BrokerError::Timeout(_))));
    let c = rec.commands()[0].clone();
    assert_eq!(
        rec.frames()[1],
        ServerFrame::Cancel {
            command_id: c.clone(),
            tool_call_id: "call-9".into()
        }
    );
    assert!(!b.complete(&id, &c, &json!(true), None, None));
    assert_eq!(b.pending_count(), 0);
}

#[tokio::test]
async fn ok_must_be_exactly_true() {
    let b = broker();
    let rec = Rec::default();
    let id = all().identity();
    let o = b.new_owner();
    b.attach(all(), rec.sender(), o).unwrap();
    for (i, ok) in [json!("false"), json!("true"), json!(1), json!(null), json!(false)]
        .into_iter()
        .enumerate()
    {
        let t = spawn(&b, &id, "browser_click", "call");
        let c = rec.command(i).await;
        let frame = ControllerFrame::Result {
            command_id: c.clone(),
            ok: ok.clone(),
            result: Some(json!("looks fine")),
            error: Some(json!({"code": "nope"})),
        };
        b.handle_frame(&id, o, frame);
        match t.await.unwrap() {
            Err(BrokerError::Rejected { message, error }) => {
                assert!(message.starts_with(&format!("controller rejected command {c}")));
                assert_eq!(error, json!({"code": "nope"}));
            }
            r => panic!("ok {ok} gave {r:?}"),
        }
    }
}

#[tokio::test]
async fn a_dropped_dispatch_cancels_its_command() {
    let b = broker();
    let rec = Rec::default();
    let id = all().identity();
    b.attach(all(), rec.sender(), b.new_owner()).unwrap();
    let t = spawn(&b, &id, "browser_click", "call-1");
    let c = rec.command(0).await;
    t.abort();
    let _ = t.await;
    assert_eq!(rec.cancels(), [c]);
    assert_eq!(b.pending_count(), 0);
}

#[tokio::test]
async fn a_failed_send_leaves_nothing_pending() {
    let b = broker();
    let id = all().identity();
    b.attach(all(), failing(), b.new_owner()).unwrap();
    let r = b.dispatch(&id, "browser_click", json!({}), "c").await;
    assert!(matches!(r, Err(BrokerError::Unavailable(m)) if m.contains("socket closed")));
    assert_eq!(b.pending_count(), 0);
}

#[test]
fn heartbeats_are_echoed_when_the_nonce_is_sane() {
    let b = broker();
    let id = all().identity();
    let o = b.new_owner();
    b.attach(all(), Rec::default().sender(), o).unwrap();
    let hb = |n: &str| ControllerFrame::Heartbeat { nonce: n.into() };
    assert_eq!(
        b.handle_frame(&id, o, hb(" n-1 ")),
        Some(ServerFrame::Heartbeat {
            nonce: "n-1".into(),
            ok: true
        })
    );
    assert_eq!(b.handle_frame(&id, o, hb("  ")), None);
    assert_eq!(b.handle_frame(&id, o, hb(&"x".repeat(129))), None);
    assert_eq!(b.handle_frame(&id, b.new_owner(), hb("n")), None);
}
