//! Per-session CDP supervision (seed 000, DESIGN.md section 2).

mod browser;

pub use browser::Browser;
