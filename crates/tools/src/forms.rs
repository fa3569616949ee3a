//! Form controls typing cannot fill the same way everywhere: `<input type=date|time|
//! datetime-local|month|week>`. Their keyboard entry follows the browser's locale (month
//! first or day first, 12 or 24 hours), so browser_type sets the value in the input's own
//! format instead, fires input and change, and reads it back.

use serde_json::{json, Value};

use crate::session::Session;
use crate::target::{self, Target};
use crate::ToolError;

impl Session {
    /// `Some(result)` when `t` is a date or time input and `text` was set on it; `None`
    /// for any other element (typed as usual).
    pub(crate) async fn type_date(&self, t: &Target, text: &str) -> Result<Option<(String, Value)>, ToolError> {
        let r = match target::call(&self.sup, t, "setDateLike", &[json!(text)]).await {
            Ok(r) => r,
            Err(e) if e.code == "bad_format" => {
                let kind = e.details["type"].as_str().unwrap_or("date").to_string();
                let example = match kind.as_str() {
                    "time" => "14:30 or 2:30 PM",
                    "month" => "2024-03",
                    "week" => "2024-W11",
                    "datetime-local" => "2024-03-27T14:30",
                    _ => "2024-03-27 or 03/27/2024",
                };
                return Err(ToolError::new(
                    "invalid_argument",
                    format!("{text:?} is not a value for this {kind} input; type it like {example}"),
                ));
            }
            Err(e) if e.code == "not_editable" => {
                return Err(ToolError::new(
                    "not_editable",
                    format!("{} {:?} is disabled or read-only", t.entry.role, t.entry.name),
                ))
            }
            Err(e) => return Err(e),
        };
        if r["skip"] == true {
            return Ok(None);
        }
        let same = r["value"] == r["wanted"];
        let mut out = format!(
            "Set the {} input {:?} to {} (its own format); value read back: {}",
            r["type"].as_str().unwrap_or("date"),
            t.entry.name,
            r["wanted"],
            r["value"]
        );
        if !same {
            out.push_str("\nNote: the input did not keep the value (out of its min/max range, or the page reset it).");
        }
        Ok(Some((
            out,
            json!({"typed": text, "value": r["value"], "matches": same}),
        )))
    }
}
