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
            description: "Open a URL in the current tab. By default waits for DOMContentLoaded, then for the load event for at most 5 s; a page whose load never fires returns as status \"partial\" (usable) with its lifecycle and outstanding requests. A URL that answers with a file is status \"download\" (file name, bytes, state, path). If the page raises a dialog (alert, beforeunload, ...) the call returns at once with status \"blocked_by_dialog\"; answer it with browser_dialog. Recovers a crashed tab.",
            input_schema: obj(
                json!({
                    "url": {"type": "string", "description": "Absolute URL (http, https, file, data, about)."},
                    "timeout_ms": {"type": "integer", "minimum": 100, "maximum": 300000, "description": "Deadline in ms (default 30000); honoured exactly: with it the call waits for load until this deadline."},
                    "wait_until": {"type": "string", "enum": ["commit", "domcontentloaded", "load"], "description": "What to wait for: commit (the new document exists), domcontentloaded, or load (until timeout_ms). Default: DOMContentLoaded, then load for at most 5 s."}
                }),
                &["url"],
            ),
            needs_cdp: false,
        },
        ToolSpec {
            name: "browser_snapshot",
            description: "Accessibility snapshot of the current tab: one node per line, `- role \"name\" [attrs] [ref=eN]`, including same-origin and cross-origin iframes and shadow roots. Use the refs with the action tools. Also returns pending_dialogs, recent_dialogs and frame_tree. A page too big for max_tokens shows every list cut to its first items, each cut list ending with \"… N more\" and the call that shows the rest; `ref` shows one element's subtree, offset/limit page through it, search/interactive_only narrow the view, diff shows only what changed.",
            input_schema: obj(
                json!({
                    "full": {"type": "boolean", "description": "Keep every node (default false drops wrappers that carry no meaning; interactive elements are always kept)."},
                    "ref": {"type": "string", "description": "Only this element's subtree (a ref from an earlier snapshot or browser_find)."},
                    "offset": {"type": "integer", "minimum": 0, "description": "First child of `ref` (or first top-level node) to show."},
                    "limit": {"type": "integer", "minimum": 1, "description": "How many children of `ref` (or top-level nodes) to show."},
                    "interactive_only": {"type": "boolean", "description": "Only elements with a ref (what can be acted on)."},
                    "search": {"type": "string", "description": "Only nodes whose name or text contains this (case-insensitive), with their ancestors."},
                    "max_tokens": {"type": "integer", "minimum": 500, "maximum": 200000, "description": "Size budget of the snapshot text (default 24000, about 72,000 characters)."},
                    "diff": {"type": "boolean", "description": "Only the lines added (+) and removed (-) since the previous snapshot of this tab."}
                }),
                &[],
            ),
            needs_cdp: false,
        },
        ToolSpec {
            name: "browser_find",
            description: "Find elements and text in every frame of the current tab (same-origin and cross-origin iframes, shadow roots), exactly as browser_snapshot sees them, without paging through the snapshot. Each match comes with a ref that acts on it, the nearest named container (e.g. its table row) and the iframes it is inside.",
            input_schema: obj(
                json!({
                    "text": {"type": "string", "description": "Text contained in the element's name or text (case-insensitive)."},
                    "role": {"type": "string", "description": "Role: button, link, textbox, checkbox, heading, row, option, text, ..."},
                    "name": {"type": "string", "description": "Accessible name contains this (case-insensitive)."},
                    "exact": {"type": "boolean", "description": "Whole-name match instead of contains."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 500, "description": "Most matches listed (default 20); the total is always given."}
                }),
                &[],
            ),
            needs_cdp: false,
        },
        ToolSpec {
            name: "browser_wait_for",
            description: "Wait until text appears (`text`, or an element by `role`/`name` as in browser_find), text disappears (`gone`) or an element becomes visible (`ref`), in any frame of the current tab, checked the way browser_snapshot sees the page. Returns as soon as it holds, with refs for the matches; fails with wait_timeout after timeout_ms.",
            input_schema: obj(
                json!({
                    "text": {"type": "string", "description": "Text to appear."},
                    "role": {"type": "string", "description": "Role of the element to appear (with name: as in browser_find)."},
                    "name": {"type": "string", "description": "Name of the element to appear (contains, case-insensitive)."},
                    "exact": {"type": "boolean", "description": "Whole-name match for text/name."},
                    "gone": {"type": "string", "description": "Text to disappear."},
                    "ref": {"type": "string", "description": REF},
                    "timeout_ms": {"type": "integer", "minimum": 0, "maximum": 120000, "description": "How long to wait (default 5000)."}
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
            description: "Select option(s) by value or visible label and read the selection back. A native <select> is set and gets input and change events (error selection_reverted when the page puts the old value back); a custom dropdown (ARIA combobox, or anything that opens role=option items) is opened with a click and the option clicked. A missing option fails with the available ones listed.",
            input_schema: obj(
                json!({"ref": {"type": "string", "description": REF}, "values": {"type": "array", "items": {"type": "string"}, "minItems": 1}}),
                &["ref", "values"],
            ),
            needs_cdp: false,
        },
        ToolSpec {
            name: "browser_hover",
            description: "Move the real mouse pointer onto an element (CSS :hover, mouseenter and mouseover run as for a person) and leave it there: menus that open on hover stay open for the next snapshot and click.",
            input_schema: obj(json!({"ref": {"type": "string", "description": REF}}), &["ref"]),
            needs_cdp: false,
        },
        ToolSpec {
            name: "browser_upload",
            description: "Upload files. With `ref` of an <input type=file> (or its label) the files are set on it; with the ref of a button or drop zone that opens a file chooser, it is clicked and the chooser answered. Without `ref`, answers a file chooser a click already opened (paths: [] cancels it). Paths must be absolute and under the allowed upload directories.",
            input_schema: obj(
                json!({
                    "ref": {"type": "string", "description": REF},
                    "paths": {"type": "array", "items": {"type": "string"}, "description": "Absolute file paths."}
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
