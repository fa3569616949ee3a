//! `/mcp` with a real MCP client (rmcp over streamable HTTP): the same catalogue and tool
//! calls as `/v1`, one tabgate session per MCP session, or an existing one by header.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use reqwest::StatusCode;
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use tabgate_testkit::Site;

async fn connect(g: &Gw, key: &str, session: Option<&str>) -> Result<RunningService<RoleClient, ClientConfig>, String> {
    let mut headers = HashMap::new();
    if let Some(s) = session {
        headers.insert(
            reqwest::header::HeaderName::from_static("x-tabgate-session"),
            reqwest::header::HeaderValue::from_str(s).unwrap(),
        );
    }
    let cfg = StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", g.url))
        .auth_header(key)
        .custom_headers(headers);
    let transport = StreamableHttpClientTransport::from_config(cfg);
    ClientConfig::default()
        .serve(transport)
        .await
        .map_err(|e| e.to_string())
}

async fn call(c: &RunningService<RoleClient, ClientConfig>, tool: &'static str, args: Value) -> CallToolResult {
    let args = args.as_object().cloned().unwrap_or_default();
    c.call_tool(CallToolRequestParams::new(tool).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

/// The tabgate session id the server named in its `instructions`.
fn session_of(c: &RunningService<RoleClient, ClientConfig>) -> String {
    let instructions = c.peer_info().and_then(|i| i.instructions.clone()).unwrap_or_default();
    instructions
        .split_whitespace()
        .find(|w| w.starts_with("ses_"))
        .unwrap_or_else(|| panic!("no session id in {instructions:?}"))
        .trim_end_matches(['.', ')'])
        .to_string()
}

fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn mcp_session_gets_its_own_tabgate_session() {
    run(async {
        let mut g = Gw::new().await;
        let site = Site::start().await;
        let mut c = connect(&g, KEY, None).await.expect("MCP connect");
        let sid = session_of(&c);
        let tools = c.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        let http_names: Vec<String> = g.get("/v1/tools").await.1["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names, http_names, "MCP and HTTP list different catalogues");

        let r = call(&c, "browser_navigate", json!({"url": site.a("hello.html")})).await;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        let r = call(&c, "browser_snapshot", json!({})).await;
        assert!(text(&r).contains("heading"), "{}", text(&r));
        let r = call(&c, "browser_click", json!({"ref": "e999"})).await;
        assert_eq!(r.is_error, Some(true));
        assert!(
            text(&r).contains("Error [unknown_ref]") || text(&r).contains("Error [stale_ref]"),
            "{}",
            text(&r)
        );

        // the same session is visible over HTTP
        let (st, v) = g.get(&format!("/v1/sessions/{sid}")).await;
        assert_eq!(st, StatusCode::OK, "{v}");
        assert_eq!(v["origin"], "mcp");
        assert!(v["current_tab"]["url"].as_str().unwrap().ends_with("hello.html"), "{v}");

        // ending the MCP session removes the session that was made for it
        c.close().await.ok();
        let mut gone = false;
        for _ in 0..50 {
            if g.get(&format!("/v1/sessions/{sid}")).await.0 == StatusCode::NOT_FOUND {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(gone, "the MCP session's tabgate session outlived it");
        g.stop().await;
    })
}

#[test]
fn mcp_session_can_use_an_existing_session_by_header() {
    run(async {
        let mut g = Gw::new().await;
        let site = Site::start().await;
        let sid = g.session(json!({"name": "shared"})).await;
        g.ok(&sid, "browser_navigate", json!({"url": site.a("form.html")}))
            .await;

        let mut c = connect(&g, KEY, Some(&sid)).await.expect("MCP connect");
        let r = call(&c, "browser_console", json!({"expression": "location.pathname"})).await;
        assert!(text(&r).contains("form.html"), "{}", text(&r));
        let r = call(&c, "browser_navigate", json!({"url": site.a("hello.html")})).await;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        let (_, v) = g.get(&format!("/v1/sessions/{sid}")).await;
        assert!(v["current_tab"]["url"].as_str().unwrap().ends_with("hello.html"), "{v}");
        c.close().await.ok();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (st, _) = g.get(&format!("/v1/sessions/{sid}")).await;
        assert_eq!(st, StatusCode::OK, "a named session must outlive the MCP session");

        // an unknown session by header, or a wrong key, fails the handshake
        assert!(connect(&g, KEY, Some("ses_missing")).await.is_err());
        assert!(connect(&g, "wrong-key", None).await.is_err());
        g.stop().await;
    })
}

#[test]
fn mcp_transport_errors_are_json_and_shutdown_ends_open_mcp_sessions() {
    run(async {
        let mut g = Gw::new().await;
        let url = format!("{}/mcp", g.url);
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        // no Accept: text/event-stream
        let r = g.http.post(&url).bearer_auth(KEY).json(&init).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::NOT_ACCEPTABLE);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], "not_acceptable", "{v}");
        // an MCP session id that does not exist
        let r = g
            .http
            .post(&url)
            .bearer_auth(KEY)
            .header("Accept", "application/json, text/event-stream")
            .header("Mcp-Session-Id", "no-such-session")
            .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], "unknown_mcp_session", "{v}");

        // a connected client with a tab does not hold shutdown up
        let c = connect(&g, KEY, None).await.expect("MCP connect");
        let r = call(&c, "browser_navigate", json!({"url": "data:text/html,<h1>x</h1>"})).await;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        let (_, v) = g.get(&format!("/v1/sessions/{}", session_of(&c))).await;
        let tab = v["current_tab"]["tab_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{v}"))
            .to_string();
        let t = std::time::Instant::now();
        g.stop().await;
        assert!(t.elapsed() < Duration::from_secs(4), "shutdown took {:?}", t.elapsed());
        assert!(
            !page_targets().await.contains(&tab),
            "the MCP session's tab outlived shutdown"
        );
        drop(c);
    })
}
