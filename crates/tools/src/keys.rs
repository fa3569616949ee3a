//! Key chords (`Control+A`, `Shift+Tab`, `Enter`) to CDP `Input.dispatchKeyEvent` params.

use serde_json::{json, Value};

use crate::ToolError;

/// CDP modifier bits (`Input.dispatchKeyEvent.modifiers`): Alt=1, Control=2, Meta=4, Shift=8.
fn modifier_bit(name: &str) -> Option<(i64, &'static str, &'static str, i64)> {
    Some(match name.to_ascii_lowercase().as_str() {
        "alt" | "option" => (1, "Alt", "AltLeft", 18),
        "control" | "ctrl" => (2, "Control", "ControlLeft", 17),
        "meta" | "cmd" | "command" | "super" => (4, "Meta", "MetaLeft", 91),
        "shift" => (8, "Shift", "ShiftLeft", 16),
        _ => return None,
    })
}

/// A named key: (`key`, `code`, `windowsVirtualKeyCode`, text it types).
fn named(k: &str) -> Option<(&'static str, &'static str, i64, &'static str)> {
    Some(match k.to_ascii_lowercase().as_str() {
        "enter" | "return" => ("Enter", "Enter", 13, "\r"),
        "tab" => ("Tab", "Tab", 9, ""),
        "escape" | "esc" => ("Escape", "Escape", 27, ""),
        "backspace" => ("Backspace", "Backspace", 8, ""),
        "delete" | "del" => ("Delete", "Delete", 46, ""),
        "space" => (" ", "Space", 32, " "),
        "arrowup" | "up" => ("ArrowUp", "ArrowUp", 38, ""),
        "arrowdown" | "down" => ("ArrowDown", "ArrowDown", 40, ""),
        "arrowleft" | "left" => ("ArrowLeft", "ArrowLeft", 37, ""),
        "arrowright" | "right" => ("ArrowRight", "ArrowRight", 39, ""),
        "home" => ("Home", "Home", 36, ""),
        "end" => ("End", "End", 35, ""),
        "pageup" => ("PageUp", "PageUp", 33, ""),
        "pagedown" => ("PageDown", "PageDown", 34, ""),
        "insert" => ("Insert", "Insert", 45, ""),
        "f1" => ("F1", "F1", 112, ""),
        "f2" => ("F2", "F2", 113, ""),
        "f3" => ("F3", "F3", 114, ""),
        "f4" => ("F4", "F4", 115, ""),
        "f5" => ("F5", "F5", 116, ""),
        "f6" => ("F6", "F6", 117, ""),
        "f7" => ("F7", "F7", 118, ""),
        "f8" => ("F8", "F8", 119, ""),
        "f9" => ("F9", "F9", 120, ""),
        "f10" => ("F10", "F10", 121, ""),
        "f11" => ("F11", "F11", 122, ""),
        "f12" => ("F12", "F12", 123, ""),
        _ => return None,
    })
}

/// Key params for one printable ASCII character (`a`, `A`, `7`, `.`), US layout.
pub fn char_key(c: char) -> Option<Value> {
    if !c.is_ascii() || c.is_ascii_control() {
        return None;
    }
    let (code, vk) = if c.is_ascii_alphabetic() {
        (format!("Key{}", c.to_ascii_uppercase()), c.to_ascii_uppercase() as i64)
    } else if c.is_ascii_digit() {
        (format!("Digit{c}"), c as i64)
    } else if c == ' ' {
        ("Space".to_string(), 32)
    } else {
        let (code, vk) = match c {
            '-' | '_' => ("Minus", 189),
            '=' | '+' => ("Equal", 187),
            '[' | '{' => ("BracketLeft", 219),
            ']' | '}' => ("BracketRight", 221),
            '\\' | '|' => ("Backslash", 220),
            ';' | ':' => ("Semicolon", 186),
            '\'' | '"' => ("Quote", 222),
            ',' | '<' => ("Comma", 188),
            '.' | '>' => ("Period", 190),
            '/' | '?' => ("Slash", 191),
            '`' | '~' => ("Backquote", 192),
            '!' => ("Digit1", 49),
            '@' => ("Digit2", 50),
            '#' => ("Digit3", 51),
            '$' => ("Digit4", 52),
            '%' => ("Digit5", 53),
            '^' => ("Digit6", 54),
            '&' => ("Digit7", 55),
            '*' => ("Digit8", 56),
            '(' => ("Digit9", 57),
            ')' => ("Digit0", 48),
            _ => return None,
        };
        (code.to_string(), vk)
    };
    Some(
        json!({"key": c.to_string(), "code": code, "windowsVirtualKeyCode": vk, "text": c.to_string(), "unmodifiedText": c.to_string()}),
    )
}

/// The key events of a chord, in order: modifiers down, key down, key up, modifiers up.
/// Each element is the params object of one `Input.dispatchKeyEvent`.
///
/// Errors: an empty chord, an unknown modifier or key name.
pub fn chord(spec: &str) -> Result<Vec<Value>, ToolError> {
    let parts: Vec<&str> = if spec == "+" {
        vec!["+"]
    } else {
        spec.split('+').collect()
    };
    let (mods, key) = parts.split_at(parts.len().saturating_sub(1));
    let key = key.first().copied().unwrap_or("");
    if key.is_empty() {
        return Err(ToolError::new(
            "invalid_argument",
            format!("browser_press: no key in {spec:?}; e.g. Enter, Control+A"),
        ));
    }
    let mut bits = 0;
    let mut events = Vec::new();
    for m in mods {
        let (bit, k, code, vk) = modifier_bit(m).ok_or_else(|| {
            ToolError::new(
                "invalid_argument",
                format!("browser_press: unknown modifier {m:?}; use Control, Shift, Alt or Meta"),
            )
        })?;
        bits |= bit;
        events.push(
            json!({"type": "rawKeyDown", "key": k, "code": code, "windowsVirtualKeyCode": vk, "modifiers": bits}),
        );
    }
    let mut down = if let Some((k, code, vk, text)) = named(key) {
        json!({"key": k, "code": code, "windowsVirtualKeyCode": vk, "text": text, "unmodifiedText": text})
    } else if key.chars().count() == 1 {
        let c = key.chars().next().unwrap_or(' ');
        // a letter is lower case unless Shift is held, whatever case the chord spells it in
        let c = if bits & 8 != 0 {
            c.to_ascii_uppercase()
        } else if c.is_ascii_alphabetic() {
            c.to_ascii_lowercase()
        } else {
            c
        };
        char_key(c).ok_or_else(|| {
            ToolError::new(
                "invalid_argument",
                format!("browser_press: {key:?} is not on a US keyboard; use browser_type for text"),
            )
        })?
    } else {
        return Err(ToolError::new(
            "invalid_argument",
            format!("browser_press: unknown key {key:?}; use names like Enter, Tab, Escape, ArrowDown, PageDown, F5, or one character"),
        ));
    };
    // With Control/Alt/Meta held a key types nothing (shortcuts); `commands` drives editing
    // shortcuts that headless Chromium does not map by itself.
    if bits & 7 != 0 {
        down["text"] = json!("");
        down["unmodifiedText"] = json!("");
        if bits & 6 != 0 {
            let cmd = match key.to_ascii_lowercase().as_str() {
                "a" => Some("selectAll"),
                "c" => Some("copy"),
                "x" => Some("cut"),
                "v" => Some("paste"),
                "z" => Some("undo"),
                _ => None,
            };
            if let Some(cmd) = cmd {
                down["commands"] = json!([cmd]);
            }
        }
    }
    down["modifiers"] = json!(bits);
    let has_text = down["text"].as_str().is_some_and(|t| !t.is_empty());
    down["type"] = json!(if has_text { "keyDown" } else { "rawKeyDown" });
    let mut up = down.clone();
    up["type"] = json!("keyUp");
    if let Some(o) = up.as_object_mut() {
        o.remove("text");
        o.remove("unmodifiedText");
        o.remove("commands");
    }
    events.push(down);
    events.push(up);
    for m in mods.iter().rev() {
        let (bit, k, code, vk) = modifier_bit(m).unwrap_or((0, "", "", 0));
        bits &= !bit;
        events.push(json!({"type": "keyUp", "key": k, "code": code, "windowsVirtualKeyCode": vk, "modifiers": bits}));
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_a_selects_all() {
        let ev = chord("Control+A").unwrap();
        assert_eq!(ev.len(), 4);
        assert_eq!(ev[0]["key"], "Control");
        assert_eq!(ev[1]["modifiers"], 2);
        assert_eq!(ev[1]["commands"][0], "selectAll");
        assert_eq!(ev[3]["type"], "keyUp");
    }

    #[test]
    fn enter_types_carriage_return() {
        let ev = chord("Enter").unwrap();
        assert_eq!(ev[0]["type"], "keyDown");
        assert_eq!(ev[0]["text"], "\r");
    }

    #[test]
    fn bad_names_are_clear_errors() {
        assert!(chord("Hyper+A").unwrap_err().message.contains("unknown modifier"));
        assert!(chord("Frobnicate").unwrap_err().message.contains("unknown key"));
        assert!(chord("Control+").is_err());
    }
}
