//! CDP transport for tabgate.
//!
//! [`Connection`] owns one WebSocket to a browser endpoint
//! (`ws://host:port/devtools/browser/<id>`), numbers commands, routes flattened-session
//! replies and events (`sessionId`, CDP `Target.attachToTarget{flatten: true}`), and puts a
//! deadline on every command. [`launch`] finds and starts Chromium; [`resolve_endpoint`]
//! turns `http://host:port` into the browser WebSocket URL through `/json/version`.

mod connection;
mod error;
mod launch;

pub use connection::{Connection, Event, EventSink, SinkId};
pub use error::{redact_url, CdpError};
pub use launch::{discover_browser, launch, resolve_endpoint, BrowserProcess, LaunchOptions};

/// Default deadline for a CDP command, in ms (study 2.2: "default CDP call timeout 10 s").
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
