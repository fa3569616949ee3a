//! The extension-controller broker (DESIGN.md section 4, seed `004_*`, study section 6).
//!
//! A browser extension registers as the exact controller of one tabgate session's
//! `browser_*` tools. This crate is transport-neutral: it knows nothing about HTTP or
//! WebSockets. It provides
//!
//! - [`caps`]: the capability allow-list and the feature flags (`browser.extension_control.*`
//!   must be literally boolean `true`);
//! - [`frames`]: the JSON frames of protocol version 1 (`{"method", "params"}`), with the
//!   method strings of the reference system;
//! - [`ticket`]: single-use registration tickets (32 random bytes, base64url without
//!   padding, 30 s on a monotonic, injectable [`ticket::Clock`]);
//! - [`broker`]: scopes, lanes (at most one controller per lane), attach / reconnect / hard
//!   replacement, dispatch with a per-command deadline, cancels (deferred while the
//!   controller is offline), detach, and strict result handling (`ok` must be JSON `true`).

#![warn(missing_docs)]

pub mod broker;
pub mod caps;
pub mod frames;
pub mod ticket;

pub use broker::{Broker, BrokerError, BrokerOptions, FrameSender, Identity, Owner, Scope, SendError};
pub use caps::{filter_capabilities, principal_for, BASE_CAPABILITIES, DEVELOPER_CAPABILITIES, PROTOCOL_VERSION};
pub use frames::{ControllerFrame, ServerFrame};
pub use ticket::{Clock, ManualClock, MonotonicClock, TicketError, Tickets};
