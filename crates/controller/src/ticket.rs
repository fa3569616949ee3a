//! Single-use registration tickets.
//!
//! A ticket is 32 random bytes in URL-safe base64 without padding (43 characters of
//! `A–Z a–z 0–9 - _`): Chrome refuses `/` and `=` in a WebSocket subprotocol token. It is
//! valid for a TTL (30 s) measured on a monotonic [`Clock`], bound to what it was issued
//! for, and can be redeemed exactly once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;

/// How long a ticket is valid.
pub const TICKET_TTL: Duration = Duration::from_secs(30);

/// The length of a ticket (32 bytes in unpadded base64).
pub const TICKET_LEN: usize = 43;

/// A monotonic clock: time elapsed since an arbitrary fixed origin.
pub trait Clock: Send + Sync {
    /// Now, as time since the clock's origin; never goes backwards.
    fn now(&self) -> Duration;
}

/// The real monotonic clock ([`Instant`]).
#[derive(Debug)]
pub struct MonotonicClock(Instant);

impl MonotonicClock {
    /// A clock whose origin is now.
    pub fn new() -> MonotonicClock {
        MonotonicClock(Instant::now())
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        MonotonicClock::new()
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
}

/// A clock moved by hand (tests).
#[derive(Debug, Default, Clone)]
pub struct ManualClock(Arc<Mutex<Duration>>);

impl ManualClock {
    /// A clock at zero.
    pub fn new() -> ManualClock {
        ManualClock::default()
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) += d;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Why a ticket was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TicketError {
    /// Not 43 characters of the URL-safe base64 alphabet.
    #[error("malformed browser-control ticket")]
    Malformed,
    /// Never issued, or already redeemed.
    #[error("unknown or already used browser-control ticket")]
    Unknown,
    /// Its TTL passed.
    #[error("expired browser-control ticket; register again for a fresh one")]
    Expired,
    /// The system has no randomness to mint one.
    #[error("no system randomness to mint a ticket: {0}")]
    NoRandomness(String),
}

/// A freshly issued ticket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    /// The ticket.
    pub ticket: String,
    /// How long it stays valid.
    pub expires_in: Duration,
}

/// Outstanding tickets, each bound to a value of type `T` (the scope it grants).
pub struct Tickets<T> {
    ttl: Duration,
    clock: Arc<dyn Clock>,
    live: Mutex<HashMap<String, (T, Duration)>>,
}

/// True for a string that has the shape of a ticket.
pub fn is_well_formed(t: &str) -> bool {
    t.len() == TICKET_LEN && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl<T: Clone> Tickets<T> {
    /// Tickets valid for `ttl` on `clock`.
    pub fn new(ttl: Duration, clock: Arc<dyn Clock>) -> Tickets<T> {
        Tickets {
            ttl,
            clock,
            live: Mutex::new(HashMap::new()),
        }
    }

    /// Issues a ticket bound to `value`. Expired tickets are dropped on the way.
    ///
    /// Errors: [`TicketError::NoRandomness`].
    pub fn issue(&self, value: T) -> Result<Issued, TicketError> {
        let mut b = [0u8; 32];
        getrandom::fill(&mut b).map_err(|e| TicketError::NoRandomness(e.to_string()))?;
        let ticket = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        let now = self.clock.now();
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|_, (_, exp)| *exp > now);
        live.insert(ticket.clone(), (value, now + self.ttl));
        Ok(Issued {
            ticket,
            expires_in: self.ttl,
        })
    }

    /// Redeems `ticket` once, returning what it was bound to.
    ///
    /// Errors: [`TicketError::Malformed`] (nothing is looked up),
    /// [`TicketError::Unknown`] (never issued or already redeemed),
    /// [`TicketError::Expired`] (and it is gone).
    pub fn redeem(&self, ticket: &str) -> Result<T, TicketError> {
        if !is_well_formed(ticket) {
            return Err(TicketError::Malformed);
        }
        let now = self.clock.now();
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        match live.remove(ticket) {
            None => Err(TicketError::Unknown),
            Some((_, exp)) if now >= exp => Err(TicketError::Expired),
            Some((v, _)) => Ok(v),
        }
    }

    /// How many tickets are outstanding (expired ones included until the next issue).
    pub fn outstanding(&self) -> usize {
        self.live.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickets_are_short_lived_single_use_and_bound() {
        let clock = ManualClock::new();
        let t: Tickets<&str> = Tickets::new(TICKET_TTL, Arc::new(clock.clone()));
        let a = t.issue("scope-a").unwrap();
        assert_eq!(a.ticket.len(), 43);
        assert!(is_well_formed(&a.ticket));
        assert!(!a.ticket.contains(['=', '/', '+']));
        assert_eq!(a.expires_in, Duration::from_secs(30));
        let b = t.issue("scope-b").unwrap();
        assert_ne!(a.ticket, b.ticket);
        assert_eq!(t.redeem(&a.ticket), Ok("scope-a"));
        assert_eq!(t.redeem(&a.ticket), Err(TicketError::Unknown));
        clock.advance(Duration::from_millis(29_999));
        assert_eq!(t.redeem(&b.ticket), Ok("scope-b"));
        let c = t.issue("scope-c").unwrap();
        clock.advance(Duration::from_secs(30));
        assert_eq!(t.redeem(&c.ticket), Err(TicketError::Expired));
        assert_eq!(t.redeem(&c.ticket), Err(TicketError::Unknown));
        let unknown = "A".repeat(43);
        assert_eq!(t.redeem(&unknown), Err(TicketError::Unknown));
        for bad in [
            "",
            "short",
            &"A".repeat(44),
            &format!("{}=", "A".repeat(42)),
            &format!("{}/", "A".repeat(42)),
        ] {
            assert_eq!(t.redeem(bad), Err(TicketError::Malformed), "{bad}");
        }
    }

    #[test]
    fn expired_tickets_are_pruned_on_issue() {
        let clock = ManualClock::new();
        let t: Tickets<u8> = Tickets::new(TICKET_TTL, Arc::new(clock.clone()));
        t.issue(1).unwrap();
        t.issue(2).unwrap();
        clock.advance(TICKET_TTL);
        t.issue(3).unwrap();
        assert_eq!(t.outstanding(), 1);
    }
}
