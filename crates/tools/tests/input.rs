//! Input: non-ASCII typing (case 20), key chords, select, scroll, screenshot, a form.

mod common;

use common::{find_ref, run, T};
use serde_json::{json, Value};

#[test]
fn case20_unicode_and_newlines_are_typed_exactly() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("unicode.html")).await;
        let snap = t.snapshot().await;
        let name = find_ref(&snap, "textbox", "Name").unwrap();
        let notes = find_ref(&snap, "textbox", "Notes").unwrap();
        let text = "Zoë — 東京 👩‍💻 ok";
        let r = t.json("browser_type", json!({"ref": name, "text": text})).await;
        assert_eq!(r["value"], text, "read-back echoed in the result");
        let r = t
            .json("browser_type", json!({"ref": notes, "text": "line1\nline2"}))
            .await;
        assert_eq!(r["value"], "line1\nline2");
        let rep = t.find("button", "Report").await;
        t.ok("browser_click", json!({"ref": rep})).await;
        assert!(t.site.wait_key("unicode", 5_000).await.is_some());
        let v: Value = serde_json::from_str(&t.site.last("unicode").unwrap()).unwrap();
        assert_eq!(v["name"]["value"], text);
        assert_eq!(v["notes"]["value"], "line1\nline2");
        assert!(
            v["name"]["keydown"].as_u64().unwrap() >= 4,
            "ASCII typed with key events: {v}"
        );
        assert!(
            v["notes"]["keydown"].as_u64().unwrap() >= 11,
            "Enter and letters are key events: {v}"
        );
        // typing again replaces, not appends
        let r = t.json("browser_type", json!({"ref": name, "text": "short"})).await;
        assert_eq!(r["value"], "short");
    })
}

#[test]
fn press_sends_keys_and_chords() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("keys.html")).await;
        let k = t.find("textbox", "Key input").await;
        t.ok("browser_type", json!({"ref": k, "text": "hello"})).await;
        t.ok("browser_press", json!({"key": "Control+A"})).await;
        assert!(t.log("key", "Control+a").await);
        t.ok("browser_press", json!({"key": "Backspace"})).await;
        assert!(t.log("value", "").await, "Control+A then Backspace clears the field");
        t.ok("browser_press", json!({"key": "Shift+x"})).await;
        assert!(t.log("key", "Shift+X").await);
        t.ok("browser_press", json!({"key": "ArrowLeft"})).await;
        assert!(t.log("key", "ArrowLeft").await);
    })
}

#[test]
fn form_controls_each_with_one_call() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("form.html")).await;
        let snap = t.snapshot().await;
        let r =
            |role: &str, name: &str| find_ref(&snap, role, name).unwrap_or_else(|| panic!("{role} {name}:\n{snap}"));
        t.ok(
            "browser_type",
            json!({"ref": r("textbox", "Full name"), "text": "Ada Lovelace"}),
        )
        .await;
        t.ok(
            "browser_type",
            json!({"ref": r("textbox", "Biography"), "text": "Wrote the first program."}),
        )
        .await;
        let sel = t
            .json(
                "browser_select_option",
                json!({"ref": r("combobox", "Favorite color"), "values": ["Green"]}),
            )
            .await;
        assert_eq!(sel["selected"], json!(["Green"]), "{sel}");
        t.ok("browser_click", json!({"ref": r("checkbox", "I agree to the terms")}))
            .await;
        t.ok("browser_click", json!({"ref": r("radio", "Pro plan")})).await;
        t.ok(
            "browser_type",
            json!({"ref": r("textbox", "Notes"), "text": "Notes typed via MCP"}),
        )
        .await;
        let m = t
            .err(
                "browser_select_option",
                json!({"ref": r("combobox", "Favorite color"), "values": ["Purple"]}),
                "missing_option",
            )
            .await;
        assert!(m.contains("Purple") || m.contains("missing"), "{m}");
        t.ok("browser_click", json!({"ref": r("button", "Echo values")})).await;
        assert!(t.site.wait_key("form", 5_000).await.is_some());
        let v: Value = serde_json::from_str(&t.site.last("form").unwrap()).unwrap();
        assert_eq!(v["name"], "Ada Lovelace");
        assert_eq!(v["bio"], "Wrote the first program.");
        assert_eq!(v["color"], "green");
        assert_eq!(v["agree"], true);
        assert_eq!(v["plan"], "pro");
        assert_eq!(v["notes"], "Notes typed via MCP");
    })
}

#[test]
fn scroll_moves_the_page_and_screenshot_is_png() {
    run(async {
        let t = T::new().await;
        t.goto(&t.site.a("scroll.html")).await;
        let s = t.json("browser_scroll", json!({"direction": "down"})).await;
        assert!(
            s["scroll_y_after"].as_f64().unwrap() > s["scroll_y_before"].as_f64().unwrap(),
            "{s}"
        );
        let y: f64 = t.eval("window.scrollY").await.as_f64().unwrap();
        assert!(y > 100.0, "page reports scrollY {y}");
        let s = t.json("browser_scroll", json!({"direction": "up"})).await;
        assert!(
            s["scroll_y_after"].as_f64().unwrap() < s["scroll_y_before"].as_f64().unwrap(),
            "{s}"
        );
        let shot = t.raw("browser_screenshot", json!({})).await;
        let png = shot.image_png.expect("image");
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD.decode(png).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        let bottom = t.find("button", "Bottom button").await;
        let el = t.raw("browser_screenshot", json!({"ref": bottom})).await;
        assert!(el.error.is_none() && el.image_png.is_some(), "{}", el.text);
        t.ok("browser_click", json!({"ref": bottom})).await;
        assert!(
            t.log("bottom", "clicked").await,
            "click scrolls the element into view first"
        );
    })
}
