//! tabgate's tools: one catalogue with JSON Schemas ([`catalogue()`]), one dispatcher
//! ([`Session::call`]), the accessibility snapshot with refs, and the actions.
//!
//! Nothing here knows about MCP or HTTP: surfaces turn a [`ToolOutput`] into their own
//! wire shape.

mod act;
pub mod args;
mod catalogue;
mod downloads;
mod find;
mod forms;
mod hover;
mod keys;
mod misc;
mod nav;
mod output;
mod page;
mod prepare;
mod refs;
mod select;
mod session;
mod snapshot;
mod target;
mod upload;

pub use catalogue::{catalogue, find};
pub use output::{ToolError, ToolOutput};
pub use session::{Session, SessionConfig};

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
