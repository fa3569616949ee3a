//! The console end to end: real Chromium, driven by tabgate itself over its HTTP API,
//! opens the console page served by `tabgate serve`; a scripted OpenAI-compatible stub
//! plays the model and answers with tool calls. Checked on what the page and the stub
//! saw:
//!
//! - isolated mode: run_js cannot see `document` (ReferenceError, reported to the model);
//!   a direct cross-origin fetch fails with the CORS error while the same code's fetch
//!   through `/v1/proxy` of an allow-listed loopback page succeeds;
//! - the person switches to page mode in settings: the next message carries the
//!   runner-mode badge once (shown as a chip, text clean), the developer prompt and the
//!   run_js description say page, and run_js changes the Send button's background;
//! - open_in_workspace shows the page in the workspace panel (the session's own tab);
//! - the conversation persists across a reload and loading it resets the baseline.
//!
//! A screenshot of the console goes to `target/console-e2e.png`.

mod common;
#[path = "support/stubs.rs"]
mod stubs;

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use common::*;
use serde_json::{json, Value};
use stubs::{tool_calls, LlmStub};
use tabgate_config::Config;
use tabgate_testkit::Site;

/// The model's script: tool calls chosen by the `STEPn` marker of the last user message;
/// after tool results, a final answer quoting them.
fn script(hello_a: String, echo_b: String) -> stubs::Script {
    let fetch_code = format!(
        "const direct = await fetch('{echo_b}').then(r => r.text()).then(t => 'ok:' + t, e => 'error:' + e.message);\n\
         const r = await fetch('/v1/proxy?url=' + encodeURIComponent('{hello_a}'));\n\
         const body = await r.text();\n\
         return {{ direct, proxied: r.status, title: (body.match(/<title>([^<]*)<\\/title>/) || [])[1] || null }};"
    );
    Arc::new(move |req: &Value| {
        let msgs = req["messages"].as_array().unwrap();
        let user = msgs.iter().rev().find(|m| m["role"] == "user").unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string();
        let step = ["STEP1", "STEP2", "STEP3", "STEP4"]
            .into_iter()
            .find(|s| user.contains(s))
            .unwrap_or("STEP?");
        let last = msgs.last().unwrap();
        if last["role"] == "tool" {
            let mut results: Vec<String> = msgs
                .iter()
                .rev()
                .take_while(|m| m["role"] == "tool")
                .map(|m| m["content"].as_str().unwrap_or("").replace('\n', " "))
                .collect();
            results.reverse();
            return json!({"content": format!("done {step}: {}", results.join(" | "))});
        }
        match step {
            "STEP1" => tool_calls(&[
                ("s1_dom", "run_js", json!({"code": "return document.title"})),
                ("s1_fetch", "run_js", json!({"code": fetch_code})),
            ]),
            "STEP2" => tool_calls(&[
                (
                    "s2_dom",
                    "run_js",
                    json!({"code": "const b = document.getElementById('send');\nb.style.background = 'rgb(0, 0, 255)';\nreturn getComputedStyle(b).backgroundColor;"}),
                ),
                ("s2_fetch", "run_js", json!({"code": fetch_code})),
            ]),
            "STEP3" => tool_calls(&[("s3_open", "open_in_workspace", json!({"url": hello_a}))]),
            _ => json!({"content": format!("done {step}: no tools needed")}),
        }
    })
}

/// Polls a page expression until it is `true`.
async fn wait_for(g: &Gw, sid: &str, expr: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let v = g.eval(sid, expr).await;
        if v == json!(true) {
            return;
        }
        if Instant::now() > deadline {
            let chat = g
                .eval(
                    sid,
                    "document.querySelector('#chat') && document.querySelector('#chat').innerText",
                )
                .await;
            panic!("timed out waiting for {what} ({expr}); chat: {chat}");
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

async fn snapshot(g: &Gw, sid: &str) -> String {
    g.ok(sid, "browser_snapshot", json!({})).await["snapshot"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn ref_of(g: &Gw, sid: &str, role: &str, name: &str) -> String {
    let snap = snapshot(g, sid).await;
    find_ref(&snap, role, name).unwrap_or_else(|| panic!("no {role} {name:?} in:\n{snap}"))
}

/// Types a message into the console and sends it, as a person would; waits for the
/// agent's final answer for `step`.
async fn say(g: &Gw, sid: &str, text: &str, step: &str) {
    let input = ref_of(g, sid, "textbox", "Message").await;
    g.ok(sid, "browser_type", json!({"ref": input, "text": text})).await;
    let send = ref_of(g, sid, "button", "Send").await;
    g.ok(sid, "browser_click", json!({"ref": send})).await;
    wait_for(
        g,
        sid,
        &format!(
            "[...document.querySelectorAll('#chat .msg.assistant')].some(e => e.innerText.includes('done {step}')) && document.querySelector('#chat').dataset.state === 'idle'"
        ),
        step,
    )
    .await;
}

/// The requests the model got for `step`: the first (the user's message) and the last.
fn requests_for(stub: &LlmStub, step: &str) -> Vec<Value> {
    stub.requests()
        .into_iter()
        .filter(|r| {
            let msgs = r["messages"].as_array().unwrap();
            let user = msgs.iter().rev().find(|m| m["role"] == "user").unwrap();
            user["content"].as_str().unwrap().contains(step)
        })
        .collect()
}

fn last_user(req: &Value) -> String {
    req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

fn tool_result(req: &Value, id: &str) -> String {
    req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .unwrap_or_else(|| panic!("no tool result {id} in {req}"))["content"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn console_runs_the_agent_in_the_page_with_modes_proxy_and_workspace() {
    run(async {
        let site = Site::start().await;
        let hello_a = site.a("hello.html");
        let stub = LlmStub::start(script(hello_a.clone(), site.b("echo"))).await;
        let yaml = format!(
            "proxy:\n  allow_hosts: [\"127.0.0.1:{}\"]\nllm:\n  base_url: {}\n  model: stub-model\n",
            site.port_a(),
            stub.base_url
        );
        let g = Gw::with_config(Config::parse(&yaml).unwrap()).await;

        // the tester's session opens the console (the key in the fragment connects it)
        let t = g.session(json!({"name": "tester"})).await;
        // a desktop-sized window, for the screenshot
        g.ok(
            &t,
            "browser_cdp",
            json!({"method": "Emulation.setDeviceMetricsOverride", "params": {"width": 1280, "height": 860, "deviceScaleFactor": 1, "mobile": false}}),
        )
        .await;
        g.ok(
            &t,
            "browser_navigate",
            json!({"url": format!("{}/#key={}", g.url, KEY)}),
        )
        .await;
        wait_for(&g, &t, "document.body.dataset.ready === '1'", "the console to connect").await;
        assert_eq!(
            g.eval(&t, "location.hash").await,
            json!(""),
            "the key is removed from the URL"
        );
        let w = g.eval(&t, "localStorage.getItem('tabgate.console.session')").await;
        let w = w.as_str().expect("the console's session").to_string();
        assert_ne!(w, t);
        assert_eq!(
            g.eval(
                &t,
                "Object.keys(localStorage).some(k => (localStorage.getItem(k) || '').includes('test-key'))"
            )
            .await,
            json!(false),
            "the API key is not stored"
        );
        assert_eq!(
            g.eval(&t, "document.querySelector('#runner-mode').value").await,
            json!("isolated")
        );

        // STEP1, isolated: no document; direct cross-origin fetch blocked, proxied fetch works
        say(&g, &t, "STEP1 what can you reach from run_js?", "STEP1").await;
        let reqs = requests_for(&stub, "STEP1");
        assert_eq!(reqs.len(), 2, "one request with the message, one with the tool results");
        assert!(
            !last_user(&reqs[0]).contains("<user_contexts>"),
            "no badge on the first message"
        );
        let system = reqs[0]["messages"][0]["content"].as_str().unwrap();
        assert!(
            system.contains("Selected mode: Web Worker isolated sandbox (isolated)"),
            "{system}"
        );
        assert!(reqs[0]["tools"][0]["function"]["description"]
            .as_str()
            .unwrap()
            .contains("Current runner mode: isolated"));
        assert_eq!(reqs[0]["stream"], true);
        let dom = tool_result(&reqs[1], "s1_dom");
        assert!(
            dom.starts_with("mode: isolated") && dom.contains("error: ReferenceError: document is not defined"),
            "{dom}"
        );
        let fetched = tool_result(&reqs[1], "s1_fetch");
        assert!(fetched.contains(r#""direct": "error:Failed to fetch""#), "{fetched}");
        assert!(
            fetched.contains(r#""proxied": 200"#) && fetched.contains(r#""title": "Hello""#),
            "{fetched}"
        );
        // the model said so in the chat; the failed run shows as failed
        let chat = g.eval(&t, "document.querySelector('#chat').innerText").await;
        assert!(chat.as_str().unwrap().contains("document is not defined"), "{chat}");
        assert_eq!(
            g.eval(&t, "document.querySelectorAll('.tool-result.failed').length")
                .await,
            json!(1)
        );

        // the person switches to page mode in settings
        let mode = ref_of(&g, &t, "combobox", "Runner mode").await;
        g.ok(&t, "browser_select_option", json!({"ref": mode, "values": ["page"]}))
            .await;
        assert_eq!(g.eval(&t, "document.body.dataset.runnerMode").await, json!("page"));

        // STEP2, page: the badge once, the prompts say page, the button turns blue
        say(&g, &t, "STEP2 make the send button blue", "STEP2").await;
        let reqs = requests_for(&stub, "STEP2");
        let user = last_user(&reqs[0]);
        assert!(
            user.starts_with("<user_contexts>\n  <context_badge type=\"runner-mode\" label=\"⚙️ Runner: Main thread (Develop)\" preview=\"JavaScript runner switched to page\">"),
            "{user}"
        );
        assert!(
            user.ends_with("</user_contexts>\n\nSTEP2 make the send button blue"),
            "{user}"
        );
        let system = reqs[0]["messages"][0]["content"].as_str().unwrap();
        assert!(
            system.contains("Selected mode: Page main-thread mode (Develop / page)"),
            "{system}"
        );
        assert!(reqs[0]["tools"][0]["function"]["description"]
            .as_str()
            .unwrap()
            .contains("Current runner mode: page"));
        let dom = tool_result(&reqs[1], "s2_dom");
        assert_eq!(dom, "mode: page\nresult:\nrgb(0, 0, 255)");
        assert_eq!(
            g.eval(&t, "getComputedStyle(document.getElementById('send')).backgroundColor")
                .await,
            json!("rgb(0, 0, 255)")
        );
        let fetched = tool_result(&reqs[1], "s2_fetch");
        assert!(
            fetched.contains(r#""direct": "error:Failed to fetch""#) && fetched.contains(r#""proxied": 200"#),
            "{fetched}"
        );
        // the chat shows the badge as a chip with a tooltip, and the text without XML
        assert_eq!(
            g.eval(
                &t,
                "document.querySelectorAll('#chat .msg.user .user-context-chip.runner-mode').length"
            )
            .await,
            json!(1)
        );
        let chip = g.eval(&t, "(() => { const c = document.querySelector('.user-context-chip.runner-mode'); return [c.textContent, c.title]; })()").await;
        assert_eq!(chip[0], "⚙️ Runner: Main thread (Develop)");
        assert!(
            chip[1]
                .as_str()
                .unwrap()
                .contains("[System notice: runner environment changed]"),
            "{chip}"
        );
        let texts = g
            .eval(
                &t,
                "[...document.querySelectorAll('#chat .msg.user .user-text')].map(e => e.textContent)",
            )
            .await;
        assert_eq!(
            texts,
            json!([
                "STEP1 what can you reach from run_js?",
                "STEP2 make the send button blue"
            ])
        );

        // STEP3, still page: no repeated notice; open_in_workspace shows the page
        site.clear_requests();
        say(&g, &t, "STEP3 open the hello page in the workspace", "STEP3").await;
        let reqs = requests_for(&stub, "STEP3");
        assert!(
            !last_user(&reqs[0]).contains("<user_contexts>"),
            "the notice is not repeated"
        );
        let opened = tool_result(&reqs[1], "s3_open");
        assert!(opened.contains("The page is shown in the workspace panel."), "{opened}");
        wait_for(
            &g,
            &t,
            &format!(
                "document.querySelector('#workspace').dataset.url === '{hello_a}' && !document.querySelector('#ws-shot').hidden && document.querySelector('#ws-shot').naturalWidth > 100"
            ),
            "the workspace screenshot",
        )
        .await;
        let ws_text = g.eval(&t, "document.querySelector('#ws-url').textContent").await;
        assert_eq!(ws_text, json!(format!("Hello — {hello_a}")));
        let (_, status) = g.get(&format!("/v1/sessions/{w}")).await;
        assert_eq!(
            status["current_tab"]["url"],
            hello_a.as_str(),
            "the console's session tab has the page"
        );
        assert!(site.was_requested("/hello.html"));
        // the developer prompt of the next request names the workspace page
        let system = reqs[1]["messages"][0]["content"].as_str().unwrap();
        assert!(system.contains(&format!("{hello_a} \"Hello\"")), "{system}");

        // a picture of the console for people
        let shot = g.call(&t, "browser_screenshot", json!({})).await.1;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["image_png"].as_str().expect("a PNG"))
            .unwrap();
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/console-e2e.png");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &png).unwrap();
        eprintln!("console screenshot: {}", path.display());

        // reload: the conversation is listed and loads; loading resets the baseline
        g.ok(&t, "browser_navigate", json!({"url": format!("{}/", g.url)}))
            .await;
        wait_for(
            &g,
            &t,
            "document.body.dataset.ready === '1' && document.querySelectorAll('#conversations li').length === 1",
            "the reloaded console",
        )
        .await;
        assert_eq!(
            g.eval(&t, "document.querySelector('#runner-mode').value").await,
            json!("page"),
            "settings persist"
        );
        let open = ref_of(&g, &t, "button", "STEP1 what can you reach from run_js?").await;
        g.ok(&t, "browser_click", json!({"ref": open})).await;
        wait_for(
            &g,
            &t,
            "document.querySelectorAll('#chat .msg.user').length === 3",
            "the loaded conversation",
        )
        .await;
        assert_eq!(
            g.eval(
                &t,
                "document.querySelectorAll('#chat .user-context-chip.runner-mode').length"
            )
            .await,
            json!(1)
        );
        say(&g, &t, "STEP4 anything else?", "STEP4").await;
        let reqs = requests_for(&stub, "STEP4");
        assert!(
            !last_user(&reqs[0]).contains("<user_contexts>"),
            "a loaded conversation starts from the current mode"
        );
        let roles: Vec<&str> = reqs[0]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(
            roles.iter().filter(|r| **r == "user").count(),
            4,
            "the history went with it: {roles:?}"
        );

        // every proxied request of the page was logged for the console's session
        let (_, log) = g.req(reqwest::Method::GET, "/v1/proxy/log", None).await;
        let entries = log["entries"].as_array().unwrap();
        assert_eq!(entries.len(), 2, "{log}");
        assert!(entries
            .iter()
            .all(|e| e["session_id"] == w.as_str() && e["outcome"] == "ok" && e["url"] == hello_a.as_str()));
    });
}
