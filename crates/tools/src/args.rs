//! Argument checking against the catalogue's JSON Schemas, so every surface reports bad
//! input the same way (`invalid_argument`, naming the field and the fix).

use serde_json::Value;

use crate::{ToolError, ToolSpec};

fn type_ok(want: &str, v: &Value) -> bool {
    match want {
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        _ => true,
    }
}

/// Checks `args` against `spec.input_schema`: an object, required fields present, no
/// unknown fields, types, enums and integer bounds. `null` fields count as absent.
pub fn validate(spec: &ToolSpec, args: &Value) -> Result<(), ToolError> {
    let schema = &spec.input_schema;
    let empty = serde_json::Map::new();
    let obj = match args {
        Value::Object(o) => o,
        Value::Null => &empty,
        other => {
            return Err(ToolError::new(
                "invalid_argument",
                format!("{} takes a JSON object of arguments, got {}", spec.name, kind(other)),
            ))
        }
    };
    let props = schema["properties"].as_object().cloned().unwrap_or_default();
    for r in schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if obj.get(r).is_none_or(Value::is_null) {
            return Err(ToolError::new(
                "invalid_argument",
                format!("{} needs `{r}`{}", spec.name, hint(&props[r])),
            ));
        }
    }
    for (k, v) in obj {
        if v.is_null() {
            continue;
        }
        let Some(p) = props.get(k) else {
            let known: Vec<&String> = props.keys().collect();
            return Err(ToolError::new(
                "invalid_argument",
                format!("{} has no argument `{k}`; known: {known:?}", spec.name),
            ));
        };
        if let Some(t) = p["type"].as_str() {
            if !type_ok(t, v) {
                return Err(ToolError::new(
                    "invalid_argument",
                    format!("{}: `{k}` must be {t}, got {}", spec.name, kind(v)),
                ));
            }
        }
        if let Some(e) = p["enum"].as_array() {
            if !e.contains(v) {
                return Err(ToolError::new(
                    "invalid_argument",
                    format!(
                        "{}: `{k}` must be one of {}, got {v}",
                        spec.name,
                        Value::Array(e.clone())
                    ),
                ));
            }
        }
        if let (Some(n), Some(min)) = (v.as_i64(), p["minimum"].as_i64()) {
            if n < min {
                return Err(ToolError::new(
                    "invalid_argument",
                    format!("{}: `{k}` must be ≥ {min}", spec.name),
                ));
            }
        }
        if let (Some(n), Some(max)) = (v.as_i64(), p["maximum"].as_i64()) {
            if n > max {
                return Err(ToolError::new(
                    "invalid_argument",
                    format!("{}: `{k}` must be ≤ {max}", spec.name),
                ));
            }
        }
        if let (Some(a), Some(it)) = (v.as_array(), p["items"]["type"].as_str()) {
            if a.iter().any(|x| !type_ok(it, x)) {
                return Err(ToolError::new(
                    "invalid_argument",
                    format!("{}: `{k}` must be an array of {it}", spec.name),
                ));
            }
            if a.is_empty() && p["minItems"].as_u64().unwrap_or(0) > 0 {
                return Err(ToolError::new(
                    "invalid_argument",
                    format!("{}: `{k}` must not be empty", spec.name),
                ));
            }
        }
    }
    Ok(())
}

fn hint(p: &Value) -> String {
    match p["description"].as_str() {
        Some(d) => format!(" ({d})"),
        None => String::new(),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `args[k]` as a string, when present.
pub fn str_arg<'a>(args: &'a Value, k: &str) -> Option<&'a str> {
    args.get(k).and_then(Value::as_str)
}

/// `args[k]` as a bool (absent → false).
pub fn bool_arg(args: &Value, k: &str) -> bool {
    args.get(k).and_then(Value::as_bool).unwrap_or(false)
}
