//! A tool session: one supervised tab set in a browser, its refs, and the dispatcher.

use std::sync::Arc;

use serde_json::Value;
use tabgate_supervisor::Browser;

use crate::{ToolError, ToolOutput, ToolSpec};

/// Per-session settings.
#[derive(Debug, Clone, Default)]
pub struct SessionConfig {}

/// One agent session: its own page target(s) in `browser`, never shared with another session.
pub struct Session {
    _browser: Arc<Browser>,
}

impl Session {
    /// Opens a session: creates its page target and starts its supervisor.
    pub async fn open(browser: Arc<Browser>, _cfg: SessionConfig) -> Result<Session, ToolError> {
        Ok(Session { _browser: browser })
    }

    /// The tools this session offers (CDP-only tools included when the backend speaks CDP).
    pub fn catalogue(&self) -> Vec<ToolSpec> {
        Vec::new()
    }

    /// Runs tool `name` with `args` (a JSON object). Never panics on bad input; every
    /// failure is a [`ToolOutput`] with `error` set.
    pub async fn call(&self, name: &str, _args: Value) -> ToolOutput {
        ToolOutput::failure(ToolError::new("unknown_tool", format!("no tool named {name}")))
    }

    /// Closes the session's tabs and stops its supervisor.
    pub async fn close(&self) {}
}
