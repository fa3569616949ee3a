//! tabgate's tools: one catalogue with JSON Schemas ([`catalogue`]), one dispatcher
//! ([`Tools::call`]), the accessibility snapshot with refs, and the actions.
//!
//! Nothing here knows about MCP or HTTP: surfaces turn a [`ToolOutput`] into their own
//! wire shape.

mod output;

pub use output::{ToolError, ToolOutput};

/// One tool as every surface lists it.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    /// `browser_navigate`, … (DESIGN.md section 3).
    pub name: &'static str,
    /// What the tool does, shown to the model.
    pub description: &'static str,
    /// JSON Schema (draft 2020-12 subset) of the arguments object.
    pub input_schema: serde_json::Value,
    /// Offered only when the backend speaks CDP (`browser_dialog`, `browser_cdp`).
    pub needs_cdp: bool,
}

mod session;
pub use session::{Session, SessionConfig};
