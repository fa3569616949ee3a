//! The tool catalogue: names, descriptions and JSON Schemas, defined once for every
//! surface (MCP stdio, MCP HTTP, HTTP JSON, extension capability list).

use serde_json::{json, Value};

use crate::ToolSpec;

fn obj(props: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

const REF: &str = "Element ref from the latest browser_snapshot, e.g. \"e12\".";

/// Every tool tabgate offers, in a stable order. `needs_cdp` tools are listed only for
/// sessions whose backend speaks CDP.
pub fn catalogue() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "browser_navigate",
            description: "Open a URL in the current tab. Status: complete; partial (load did not fire in time; the page is usable; lists outstanding requests); download (the URL is a file: name, bytes, path); blocked_by_dialog (answer with browser_dialog). Recovers a crashed tab.",
            input_schema: obj(
                json!({
                    "url": {"type": "string", "description": "Absolute URL (http, https, file, data, about)."},
                    "timeout_ms": {"type": "integer", "minimum": 100, "maximum": 300000, "description": "Deadline in ms (default 30000), kept exactly."},
                    "wait_until": {"type": "string", "enum": ["commit", "domcontentloaded", "load"], "description": "Default: DOMContentLoaded, then load for at most 5 s (until timeout_ms when given)."}
                }),
                &["url"],
            ),
            needs_cdp: false,
        },
        ToolSpec {
            name: "browser_snapshot",
            description: "Accessibility snapshot of the current tab: one node per line, `- role \"name\" [attrs] [ref=eN]`, iframes and shadow roots included. Use the refs with the action tools. Also returns pending_dialogs, recent_dialogs and frame_tree. Over max_tokens, long lists are cut, each ending with \"… N more\" and the call that shows the rest.",
            input_schema: obj(
                json!({
                    "full": {"type": "boolean", "description": "Keep wrapper nodes too."},
                    "ref": {"type": "string", "description": "Only this element's subtree."},
                    "offset": {"type": "integer", "minimum": 0, "description": "First child of `ref` (or top-level node) to show."},
                    "limit": {"type": "integer", "minimum": 1, "description": "How many of them to show."},
                    "interactive_only": {"type": "boolean", "description": "Only elements with a ref."},
                    "search": {"type": "string", "description": "Only nodes containing this text, with their ancestors."},
                    "max_tokens": {"type": "integer", "minimum": 500, "maximum": 200000, "description": "Default 24000."},
                    "diff": {"type": "boolean", "description": "Only lines added (+) or removed (-) since the previous snapshot."}
                }),
                &[],
            ),
            needs_cdp: false,
        },
        ToolSpec {
            name: "browser_find",
            description: "Find elements or text in every frame of the tab as browser_snapshot sees them; each match has a ref, its nearest named container (e.g. its row) and its iframes.",
            input_schema: obj(
                json!({
                    "text": {"type": "string", "description": "Text contained (case-insensitive)."},
                    "role": {"type": "string", "description": "button, link, textbox, heading, row, text, ..."},
                    "name": {"type": "string", "description": "Name contains this."},
                    "exact": {"type": "boolean", "description": "Whole-name match."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 500, "description": "Default 20."}
                }),
                &[],
            ),
            needs_cdp: false,
        },
        ToolSpec {
            name: "browser_wait_for",
            description: "Wait until text (or role/name, as in browser_find) appears, text is gone, or `ref` is visible, in any frame. Returns the matches with refs; wait_timeout after timeout_ms.",
            input_schema: obj(
                json!({
                    "text": {"type": "string"},
                    "role": {"type": "string"},
                    "name": {"type": "string"},
                    "exact": {"type": "boolean"},
                    "gone": {"type": "string"},
                    "ref": {"type": "string"},
                    "timeout_ms": {"type": "integer", "minimum": 0, "maximum": 120000, "description": "Default 5000."}
                }),
                &[],
            ),
            needs_cdp: false,
        },
        ToolSpec {
            name: "browser_click",
            description: "Click an element with a real mouse event at its centre (scrolled into view, frame offsets applied). Reports dialogs and new tabs the click opened.",
            input_schema: obj(json!({"ref": {"type": "string", "description": REF}}), &["ref"]),
            needs_cdp: false,
        },
        ToolSpec {
            name: "browser_type",
            description: "Replace the content of a text field or contenteditable with `text`, typed with real key events (Input.insertText for characters not on a keyboard; \\n is Enter in multi-line fields). Returns the value read back from the page.",
            input_schema: obj(
                json!({"ref": {"type": "string", "description": REF}, "text": {"type": "string"}}),
                &["ref", "text"],
            ),
            needs_cdp: false,
        },
        ToolSpec {
            name: "browser_select_option",
            description: "Select option(s) by value or label in a <select> or a custom dropdown (opened with a click, option clicked) and read the choice back; selection_reverted when the page undoes it.",
            input_schema: obj(
                json!({"ref": {"type": "string", "description": REF}, "values": {"type": "array", "items": {"type": "string"}, "minItems": 1}}),
                &["ref", "values"],
            ),
            needs_cdp: false,
        },
        ToolSpec {
            name: "browser_hover",
            description: "Move the real mouse pointer onto an element and leave it there (hover menus open and stay open).",
            input_schema: obj(json!({"ref": {"type": "string", "description": REF}}), &["ref"]),
            needs_cdp: false,
        },
        ToolSpec {
            name: "browser_upload",
            description: "Upload files through a file input, or a button or drop zone that opens a file chooser (`ref`). Without ref: answer an open chooser (paths [] cancels it). Absolute paths under the allowed upload roots only.",
            input_schema: obj(
                json!({
                    "ref": {"type": "string", "description": REF},
                    "paths": {"type": "array", "items": {"type": "string"}}
                }),
                &["paths"],
            ),
            needs_cdp: false,
        },
        ToolSpec {
            name: "browser_press",
            description: "Press a key or chord on the focused element: Enter, Tab, Escape, ArrowDown, PageDown, a, Control+A, Shift+Tab, Meta+Enter ...",
            input_schema: obj(json!({"key": {"type": "string"}}), &["key"]),
            needs_cdp: false,
        },
        ToolSpec {
            name: "browser_scroll",
            description: "Scroll the page (or the element `ref`) up or down by most of a screen with the mouse wheel. Returns the scroll position before and after.",
            input_schema: obj(
                json!({"direction": {"type": "string", "enum": ["up", "down"]}, "ref": {"type": "string", "description": REF}}),
                &["direction"],
            ),
            needs_cdp: false,
        },
        ToolSpec {
            name: "browser_back",
            description: "Go back one entry in the current tab's history.",
            input_schema: obj(json!({}), &[]),
            needs_cdp: false,
        },
        ToolSpec {
            name: "browser_screenshot",
            description: "PNG screenshot of the current tab's viewport, the full page, or one element.",
            input_schema: obj(
                json!({"full_page": {"type": "boolean"}, "ref": {"type": "string", "description": REF}}),
                &[],
            ),
            needs_cdp: false,
        },
        ToolSpec {
            name: "browser_tabs",
            description: "List this session's tabs (popups included, with their opener), or open a new one, or close one.",
            input_schema: obj(
                json!({
                    "action": {"type": "string", "enum": ["list", "new", "close"], "description": "Default list."},
                    "url": {"type": "string", "description": "For new: the URL to open (default about:blank)."},
                    "tab_id": {"type": "string", "description": "For close: the tab (default the current one)."}
                }),
                &[],
            ),
            needs_cdp: false,
        },
        ToolSpec {
            name: "browser_tab_activate",
            description: "Make a tab of this session the current one (tab ids from browser_tabs).",
            input_schema: obj(json!({"tab_id": {"type": "string"}}), &["tab_id"]),
            needs_cdp: false,
        },
        ToolSpec {
            name: "browser_dialog",
            description: "Answer a pending JavaScript dialog (alert, confirm, prompt, beforeunload) listed in pending_dialogs. accept = OK / leave page; dismiss = Cancel / stay. Never waits behind another tool call.",
            input_schema: obj(
                json!({
                    "action": {"type": "string", "enum": ["accept", "dismiss"]},
                    "prompt_text": {"type": "string", "description": "Text prompt() returns (accept only)."},
                    "dialog_id": {"type": "string", "description": "Needed only when several dialogs are pending."}
                }),
                &["action"],
            ),
            needs_cdp: true,
        },
        ToolSpec {
            name: "browser_cdp",
            description: "Send a raw Chrome DevTools Protocol command. Runs on the current tab's page session; frame_id (an OOPIF from frame_tree) runs it in that frame's own session; target_id picks another tab. Browser.* and Target.* run at browser level.",
            input_schema: obj(
                json!({
                    "method": {"type": "string", "description": "e.g. Runtime.evaluate"},
                    "params": {"type": "object"},
                    "frame_id": {"type": "string"},
                    "target_id": {"type": "string"}
                }),
                &["method"],
            ),
            needs_cdp: true,
        },
        ToolSpec {
            name: "browser_console",
            description: "Without expression: the console errors, warnings and uncaught exceptions of this session's tabs (last 50). With expression: evaluate JavaScript in the current page and return its value.",
            input_schema: obj(
                json!({"expression": {"type": "string"}, "clear": {"type": "boolean", "description": "Empty the console ring after reading."}}),
                &[],
            ),
            needs_cdp: false,
        },
    ]
}

/// Looks a tool up by name.
pub fn find(name: &str) -> Option<ToolSpec> {
    catalogue().into_iter().find(|t| t.name == name)
}
