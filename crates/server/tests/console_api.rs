//! The console's gateway side over real HTTP: console tokens, the fetch proxy's security
//! rules (each refusal with its rule), limits, header hygiene and log, model forwarding
//! (plain and streamed) and conversations.

mod common;
#[path = "support/stubs.rs"]
mod stubs;

use std::sync::Arc;

use common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use stubs::{LlmStub, Origin};
use tabgate_config::Config;
use tabgate_testkit::Site;

/// A gateway whose proxy allows site A (by port) and the test origin, with small limits.
async fn gateway(site: &Site, origin: &Origin, extra: &str) -> Gw {
    let yaml = format!(
        "proxy:\n  allow_hosts: [\"127.0.0.1:{}\", \"127.0.0.1:{}\"]\n  max_bytes: 4096\n  timeout_s: 2\n{extra}",
        site.port_a(),
        origin.port
    );
    Gw::with_config(Config::parse(&yaml).unwrap()).await
}

/// A console token for a new session: (token, session id).
async fn token(g: &Gw) -> (String, String) {
    let (st, v) = g.post("/v1/console/token", json!({})).await;
    assert_eq!(st, StatusCode::CREATED, "{v}");
    assert!(v["token"].as_str().unwrap().starts_with("tgc_"), "{v}");
    (
        v["token"].as_str().unwrap().into(),
        v["session_id"].as_str().unwrap().into(),
    )
}

/// A request with `bearer` (or none); returns status, headers and the body text.
async fn send(
    g: &Gw,
    method: Method,
    path: &str,
    bearer: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<(&str, Vec<u8>)>,
) -> (StatusCode, reqwest::header::HeaderMap, String) {
    let mut r = g.http.request(method, format!("{}{}", g.url, path));
    if let Some(b) = bearer {
        r = r.bearer_auth(b);
    }
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    if let Some((ct, b)) = body {
        r = r.header("content-type", ct).body(b);
    }
    let resp = r.send().await.unwrap();
    let st = resp.status();
    let h = resp.headers().clone();
    (st, h, resp.text().await.unwrap())
}

fn proxy_path(url: &str) -> String {
    format!(
        "/v1/proxy?url={}",
        url::form_urlencoded::byte_serialize(url.as_bytes()).collect::<String>()
    )
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn console_page_is_served_without_a_key_and_tokens_are_scoped() {
    run(async {
        let site = Site::start().await;
        let origin = Origin::start().await;
        let g = gateway(&site, &origin, "").await;
        // the page and its modules need no key
        let (st, h, body) = send(&g, Method::GET, "/", None, &[], None).await;
        assert_eq!(st, StatusCode::OK);
        assert!(h["content-type"].to_str().unwrap().starts_with("text/html"));
        assert_eq!(h["x-frame-options"], "DENY");
        assert!(body.contains("/web/js/app.js"), "{body}");
        let (st, h, _) = send(&g, Method::GET, "/web/js/agent.js", None, &[], None).await;
        assert_eq!(st, StatusCode::OK);
        assert!(h["content-type"].to_str().unwrap().starts_with("text/javascript"));
        let (st, _, b) = send(&g, Method::GET, "/web/js/nope.js", None, &[], None).await;
        assert_eq!(
            (st, json_of(&b)["error"]["code"].as_str()),
            (StatusCode::NOT_FOUND, Some("not_found"))
        );
        // a foreign Host is refused for the console too (DNS rebinding)
        let (st, _, _) = send(&g, Method::GET, "/", None, &[("host", "evil.example")], None).await;
        assert_eq!(st, StatusCode::FORBIDDEN);

        // console endpoints: no credentials, a wrong one, an unknown token
        for (bearer, code) in [
            (None, "unauthorized"),
            (Some("wrong"), "invalid_api_key"),
            (Some("tgc_unknown"), "invalid_token"),
        ] {
            let (st, _, b) = send(&g, Method::GET, "/v1/console/session", bearer, &[], None).await;
            assert_eq!(st, StatusCode::UNAUTHORIZED, "{bearer:?}: {b}");
            assert_eq!(json_of(&b)["error"]["code"], code, "{b}");
        }
        let (tok, sid) = token(&g).await;
        let (st, _, b) = send(&g, Method::GET, "/v1/console/session", Some(&tok), &[], None).await;
        assert_eq!(st, StatusCode::OK, "{b}");
        let v = json_of(&b);
        assert_eq!(
            (v["via"].as_str(), v["session"]["session_id"].as_str()),
            (Some("console_token"), Some(sid.as_str()))
        );
        assert_eq!(v["session"]["origin"], "console");
        // the token is not the API key: the rest of the API stays closed to it
        let (st, _, _) = send(&g, Method::GET, "/v1/sessions", Some(&tok), &[], None).await;
        assert_eq!(st, StatusCode::UNAUTHORIZED);
        let (st, _, b) = send(
            &g,
            Method::POST,
            "/v1/console/token",
            Some(&tok),
            &[],
            Some(("application/json", b"{}".to_vec())),
        )
        .await;
        assert_eq!(
            (st, json_of(&b)["error"]["code"].as_str()),
            (StatusCode::FORBIDDEN, Some("api_key_required"))
        );
        // its session's tools, but not raw CDP
        let (st, _, b) = send(&g, Method::GET, "/v1/console/tools", Some(&tok), &[], None).await;
        assert_eq!(st, StatusCode::OK);
        let names: Vec<String> = json_of(&b)["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
        assert!(
            names.contains(&"browser_navigate".to_string()) && !names.contains(&"browser_cdp".to_string()),
            "{names:?}"
        );
        let nav = json!({"url": site.a("hello.html")}).to_string().into_bytes();
        let (st, _, b) = send(
            &g,
            Method::POST,
            "/v1/console/tools/browser_navigate",
            Some(&tok),
            &[],
            Some(("application/json", nav)),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{b}");
        assert_eq!(json_of(&b)["result"]["title"], "Hello");
        let (_, v) = g.get(&format!("/v1/sessions/{sid}")).await;
        assert_eq!(
            v["current_tab"]["url"],
            site.a("hello.html"),
            "the call ran in the token's session"
        );
        let (st, _, b) = send(
            &g,
            Method::POST,
            "/v1/console/tools/browser_cdp",
            Some(&tok),
            &[],
            Some(("application/json", br#"{"method":"Browser.getVersion"}"#.to_vec())),
        )
        .await;
        assert_eq!(
            (st, json_of(&b)["error"]["code"].as_str()),
            (StatusCode::FORBIDDEN, Some("tool_not_allowed"))
        );
        // with the API key, the session is named by a header
        let (st, _, b) = send(&g, Method::GET, "/v1/console/session", Some(KEY), &[], None).await;
        assert_eq!(
            (st, json_of(&b)["error"]["code"].as_str()),
            (StatusCode::BAD_REQUEST, Some("no_session"))
        );
        let (st, _, _) = send(
            &g,
            Method::GET,
            "/v1/console/session",
            Some(KEY),
            &[("x-tabgate-session", &sid)],
            None,
        )
        .await;
        assert_eq!(st, StatusCode::OK);
        // a token for an existing session; an unknown session is 404
        let (st, v) = g.post("/v1/console/token", json!({"session_id": sid})).await;
        assert_eq!(
            (st, v["session_id"].as_str()),
            (StatusCode::CREATED, Some(sid.as_str()))
        );
        let tok2 = v["token"].as_str().unwrap().to_string();
        let (st, v) = g.post("/v1/console/token", json!({"session_id": "ses_nope"})).await;
        assert_eq!(
            (st, v["error"]["code"].as_str()),
            (StatusCode::NOT_FOUND, Some("unknown_session"))
        );
        // revoking one token leaves the other; deleting the session ends both
        let (st, _, _) = send(&g, Method::DELETE, "/v1/console/token", Some(&tok2), &[], None).await;
        assert_eq!(st, StatusCode::OK);
        let (st, _, _) = send(&g, Method::GET, "/v1/console/session", Some(&tok2), &[], None).await;
        assert_eq!(st, StatusCode::UNAUTHORIZED);
        let (st, _, _) = send(&g, Method::GET, "/v1/console/session", Some(&tok), &[], None).await;
        assert_eq!(st, StatusCode::OK);
        let (st, _) = g.req(Method::DELETE, &format!("/v1/sessions/{sid}"), None).await;
        assert_eq!(st, StatusCode::OK);
        let (st, _, b) = send(&g, Method::GET, "/v1/console/session", Some(&tok), &[], None).await;
        assert_eq!(
            (st, json_of(&b)["error"]["code"].as_str()),
            (StatusCode::UNAUTHORIZED, Some("invalid_token"))
        );
    });
}

/// The refusal table: every input is refused before anything is sent, with its rule.
#[test]
fn proxy_refuses_internal_and_disguised_targets_with_the_rule() {
    run(async {
        let site = Site::start().await;
        let origin = Origin::start().await;
        let g = gateway(&site, &origin, "").await;
        let (tok, sid) = token(&g).await;
        let pb = site.port_b();
        let o = &origin.url;
        let redirect = |to: &str| {
            format!(
                "{o}/redirect?to={}",
                url::form_urlencoded::byte_serialize(to.as_bytes()).collect::<String>()
            )
        };
        let cases: Vec<(String, u16, &str, &str)> = vec![
            (
                "http://169.254.169.254/latest/meta-data/".into(),
                403,
                "proxy_refused",
                "metadata",
            ),
            (
                "http://metadata.google.internal/computeMetadata/v1/".into(),
                403,
                "proxy_refused",
                "metadata",
            ),
            (
                "http://[fd00:ec2::254]/latest/meta-data/".into(),
                403,
                "proxy_refused",
                "metadata",
            ),
            ("http://10.0.0.1/".into(), 403, "proxy_refused", "private"),
            ("http://172.16.0.1:8080/".into(), 403, "proxy_refused", "private"),
            ("http://192.168.1.1/admin".into(), 403, "proxy_refused", "private"),
            ("http://[fd12::1]/".into(), 403, "proxy_refused", "private"),
            ("http://100.64.0.1/".into(), 403, "proxy_refused", "cgnat"),
            ("http://169.254.1.1/".into(), 403, "proxy_refused", "link_local"),
            ("http://[fe80::1]/".into(), 403, "proxy_refused", "link_local"),
            ("http://0.0.0.0:80/".into(), 403, "proxy_refused", "unspecified"),
            (format!("http://127.0.0.1:{pb}/echo"), 403, "proxy_refused", "loopback"),
            (format!("http://[::1]:{pb}/echo"), 403, "proxy_refused", "loopback"),
            (format!("http://localhost:{pb}/echo"), 403, "proxy_refused", "loopback"),
            (
                format!("http://[::ffff:127.0.0.1]:{pb}/echo"),
                403,
                "proxy_refused",
                "ipv4_mapped",
            ),
            ("http://[::ffff:a9fe:a9fe]/".into(), 403, "proxy_refused", "ipv4_mapped"),
            (
                format!("http://2130706433:{pb}/echo"),
                403,
                "proxy_refused",
                "obfuscated_ip",
            ),
            (
                format!("http://0177.0.0.1:{pb}/echo"),
                403,
                "proxy_refused",
                "obfuscated_ip",
            ),
            ("http://0x7f.1/".into(), 403, "proxy_refused", "obfuscated_ip"),
            (
                "http://0251.0376.0251.0376/".into(),
                403,
                "proxy_refused",
                "obfuscated_ip",
            ),
            ("file:///etc/passwd".into(), 403, "proxy_refused", "scheme"),
            ("ftp://example.com/".into(), 403, "proxy_refused", "scheme"),
            (
                format!("http://user:secret@127.0.0.1:{}/hello.html", site.port_a()),
                403,
                "proxy_refused",
                "credentials_in_url",
            ),
            ("not a url".into(), 400, "invalid_url", "invalid_url"),
            // redirects are checked hop by hop
            (
                redirect(&format!("http://localhost:{pb}/echo")),
                403,
                "proxy_refused",
                "loopback",
            ),
            (
                redirect("http://169.254.169.254/latest/meta-data/"),
                403,
                "proxy_refused",
                "metadata",
            ),
            (
                redirect(&format!("http://2130706433:{pb}/")),
                403,
                "proxy_refused",
                "obfuscated_ip",
            ),
            (redirect("//10.1.2.3/"), 403, "proxy_refused", "private"),
            (redirect("gopher://example.com/"), 403, "proxy_refused", "scheme"),
        ];
        let mut table = String::new();
        for (url, status, code, rule) in &cases {
            let (st, h, b) = send(&g, Method::GET, &proxy_path(url), Some(&tok), &[], None).await;
            let v = json_of(&b);
            assert_eq!(st.as_u16(), *status, "{url}: {b}");
            assert_eq!(v["error"]["code"], *code, "{url}: {b}");
            assert_eq!(v["error"]["rule"], *rule, "{url}: {b}");
            assert_eq!(h["x-tabgate-proxy-error"], *code, "{url}");
            let msg = v["error"]["message"].as_str().unwrap();
            assert!(!msg.is_empty());
            if url.contains("/redirect?") {
                assert_eq!(v["error"]["hop"], 1, "{url}: {b}");
                assert!(msg.contains("redirect hop 1"), "{msg}");
            }
            table.push_str(&format!("| `{url}` | {status} `{code}` | `{rule}` | {msg} |\n"));
        }
        // missing url
        let (st, _, b) = send(&g, Method::GET, "/v1/proxy", Some(&tok), &[], None).await;
        assert_eq!(
            (st, json_of(&b)["error"]["code"].as_str()),
            (StatusCode::BAD_REQUEST, Some("invalid_url"))
        );
        // no token at all, or a wrong one: nothing is fetched
        site.clear_requests();
        let ok_url = site.a("hello.html");
        for (bearer, code) in [(None, "unauthorized"), (Some("tgc_forged"), "invalid_token")] {
            let (st, _, b) = send(&g, Method::GET, &proxy_path(&ok_url), bearer, &[], None).await;
            assert_eq!(
                (st, json_of(&b)["error"]["code"].as_str()),
                (StatusCode::UNAUTHORIZED, Some(code)),
                "{b}"
            );
            table.push_str(&format!(
                "| `{ok_url}` without a valid token | 401 `{code}` | auth | {} |\n",
                json_of(&b)["error"]["message"].as_str().unwrap()
            ));
        }
        assert!(!site.was_requested("/hello.html"), "a refused request reached the site");
        // the allow-listed loopback site works; the other loopback site (not listed) did not
        let (st, h, b) = send(&g, Method::GET, &proxy_path(&ok_url), Some(&tok), &[], None).await;
        assert_eq!(st, StatusCode::OK, "{b}");
        assert!(b.contains("<title>Hello</title>"), "{b}");
        assert_eq!(h["x-tabgate-proxy-url"], ok_url.as_str());
        assert!(site.was_requested("/hello.html"));
        // every request is in the log, refusals with their rule
        let (st, _, b) = send(&g, Method::GET, "/v1/proxy/log?limit=1000", Some(&tok), &[], None).await;
        assert_eq!(st, StatusCode::OK);
        let entries = json_of(&b)["entries"].as_array().unwrap().clone();
        // the cases, the missing url and the relayed one (the two refused for their
        // credentials belong to no session)
        assert_eq!(entries.len(), cases.len() + 2, "{b}");
        assert!(entries.iter().all(|e| e["session_id"] == sid.as_str()));
        let last = entries.last().unwrap();
        assert_eq!(
            (last["outcome"].as_str(), last["status"].as_u64()),
            (Some("ok"), Some(200))
        );
        assert!(last["bytes"].as_u64().unwrap() > 100);
        let meta = &entries[0];
        assert_eq!(
            (meta["outcome"].as_str(), meta["rule"].as_str()),
            (Some("proxy_refused"), Some("metadata"))
        );
        let (_, all) = g.get("/v1/proxy/log?limit=1000").await;
        let all = all["entries"].as_array().unwrap();
        assert_eq!(all.len(), cases.len() + 4, "the API key sees every request");
        let unauth: Vec<&Value> = all.iter().filter(|e| e["rule"] == "auth").collect();
        assert_eq!(unauth.len(), 2);
        assert!(unauth
            .iter()
            .all(|e| e["session_id"].is_null() && e["url"] == ok_url.as_str()));
        assert_eq!(unauth[1]["outcome"], "invalid_token");
        eprintln!("proxy refusal table:\n| input | answer | rule | message |\n|---|---|---|---|\n{table}");
        std::fs::create_dir_all(concat!(env!("CARGO_MANIFEST_DIR"), "/../../target")).ok();
        std::fs::write(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/proxy-refusals.md"),
            format!("| input | answer | rule | message |\n|---|---|---|---|\n{table}"),
        )
        .ok();
    });
}

#[test]
fn proxy_bounds_size_and_time_and_forwards_no_credentials() {
    run(async {
        let site = Site::start().await;
        let origin = Origin::start().await;
        let g = gateway(&site, &origin, "").await;
        let (tok, _) = token(&g).await;
        // Content-Length over proxy.max_bytes (4096)
        let (st, _, b) = send(
            &g,
            Method::GET,
            &proxy_path(&site.a("attachment?size=5000")),
            Some(&tok),
            &[],
            None,
        )
        .await;
        let v = json_of(&b);
        assert_eq!(
            (st, v["error"]["code"].as_str(), v["error"]["rule"].as_str()),
            (
                StatusCode::BAD_GATEWAY,
                Some("proxy_response_too_large"),
                Some("max_bytes")
            ),
            "{b}"
        );
        assert_eq!(v["error"]["limit_bytes"], 4096);
        // a chunked body that grows past it
        let (st, _, b) = send(
            &g,
            Method::GET,
            &proxy_path(&format!("{}/chunked?n=9000", origin.url)),
            Some(&tok),
            &[],
            None,
        )
        .await;
        assert_eq!(
            (st, json_of(&b)["error"]["code"].as_str()),
            (StatusCode::BAD_GATEWAY, Some("proxy_response_too_large")),
            "{b}"
        );
        // one just under it passes
        let (st, _, b) = send(
            &g,
            Method::GET,
            &proxy_path(&format!("{}/chunked?n=4000", origin.url)),
            Some(&tok),
            &[],
            None,
        )
        .await;
        assert_eq!((st, b.len()), (StatusCode::OK, 4000));
        // a target that never answers: proxy.timeout_s (2)
        let t0 = std::time::Instant::now();
        let (st, _, b) = send(&g, Method::GET, &proxy_path(&site.a("hang")), Some(&tok), &[], None).await;
        assert_eq!(
            (st, json_of(&b)["error"]["code"].as_str()),
            (StatusCode::GATEWAY_TIMEOUT, Some("proxy_timeout")),
            "{b}"
        );
        assert!(t0.elapsed() < std::time::Duration::from_secs(10));
        // the caller's cookies, credentials and other headers stay behind; upstream
        // cookies and CORS headers do not come back
        let (st, h, b) = send(
            &g,
            Method::GET,
            &proxy_path(&format!("{}/headers", origin.url)),
            Some(&tok),
            &[
                ("cookie", "session=secret"),
                ("x-api-key", "k"),
                ("accept", "application/json"),
                ("origin", "http://evil.example"),
            ],
            None,
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{b}");
        let got = json_of(&b);
        let sent: Vec<&String> = got["headers"].as_object().unwrap().keys().collect();
        for bad in ["cookie", "authorization", "x-api-key", "origin", "referer"] {
            assert!(!sent.iter().any(|k| *k == bad), "{bad} was forwarded: {sent:?}");
        }
        assert_eq!(got["headers"]["accept"], "application/json");
        assert!(got["headers"]["user-agent"]
            .as_str()
            .unwrap()
            .starts_with("tabgate-proxy/"));
        assert!(h.get("set-cookie").is_none(), "upstream cookie relayed");
        assert!(
            h.get("access-control-allow-origin").is_none(),
            "CORS for a foreign origin: {h:?}"
        );
        assert_eq!(h["x-content-type-options"], "nosniff");
        assert_eq!(h["cache-control"], "no-store");
        // the console's own origin gets CORS (the gateway's origin as the browser sends it)
        let own = g.url.clone();
        let (_, h, _) = send(
            &g,
            Method::GET,
            &proxy_path(&format!("{}/headers", origin.url)),
            Some(&tok),
            &[("origin", &own)],
            None,
        )
        .await;
        assert_eq!(h["access-control-allow-origin"], own.as_str());
        // POST with its body and content type; a 303 continues as GET
        let (st, _, b) = send(
            &g,
            Method::POST,
            &proxy_path(&format!("{}/post", origin.url)),
            Some(&tok),
            &[],
            Some(("application/json", br#"{"q":1}"#.to_vec())),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{b}");
        assert_eq!(
            json_of(&b),
            json!({"content_type": "application/json", "body": "{\"q\":1}"})
        );
        let (st, h, b) = send(
            &g,
            Method::POST,
            &proxy_path(&format!("{}/redirect?status=303&to=/headers", origin.url)),
            Some(&tok),
            &[],
            Some(("text/plain", b"x".to_vec())),
        )
        .await;
        assert_eq!((st, json_of(&b)["method"].as_str()), (StatusCode::OK, Some("GET")));
        assert_eq!(h["x-tabgate-proxy-redirects"], "1");
        // a redirect loop ends
        let (st, _, b) = send(
            &g,
            Method::GET,
            &proxy_path(&format!("{}/loop", origin.url)),
            Some(&tok),
            &[],
            None,
        )
        .await;
        assert_eq!(
            (st, json_of(&b)["error"]["code"].as_str()),
            (StatusCode::BAD_GATEWAY, Some("proxy_too_many_redirects"))
        );
    });
}

#[test]
fn without_an_allow_list_loopback_fixtures_are_refused() {
    run(async {
        let site = Site::start().await;
        let g = Gw::new().await;
        let (tok, _) = token(&g).await;
        for u in [site.a("hello.html"), site.b("echo")] {
            let (st, _, b) = send(&g, Method::GET, &proxy_path(&u), Some(&tok), &[], None).await;
            assert_eq!(
                (st, json_of(&b)["error"]["rule"].as_str()),
                (StatusCode::FORBIDDEN, Some("loopback")),
                "{u}: {b}"
            );
        }
        assert!(site.requests().is_empty(), "{:?}", site.requests());
        // bad allow-list entries stop startup
        let bad = Config::parse("proxy:\n  allow_hosts: [\"http://x/\"]\n").unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let e = tabgate_server::Prepared::bind(options(tmp.path(), bad))
            .await
            .err()
            .unwrap();
        assert!(e.0.contains("proxy.allow_hosts"), "{e}");
    });
}

#[test]
fn model_requests_are_forwarded_with_the_server_key_streamed_or_not() {
    run(async {
        let site = Site::start().await;
        let origin = Origin::start().await;
        let stub = LlmStub::start(Arc::new(|req: &Value| {
            let last = req["messages"].as_array().unwrap().last().unwrap()["content"]
                .as_str()
                .unwrap_or("")
                .to_string();
            if last == "fail" {
                return json!({"__status": 429, "__body": {"error": {"message": "slow down", "type": "rate_limit"}}});
            }
            if last == "tool" {
                return stubs::tool_calls(&[("call_9", "run_js", json!({"code": "return 6*7"}))]);
            }
            json!({"content": format!("echo: {last}")})
        }))
        .await;
        let extra = format!(
            "llm:\n  base_url: \"{}/\"\n  api_key: sk-upstream-secret\n  model: stub-model\n",
            stub.base_url
        );
        let g = gateway(&site, &origin, &extra).await;
        let (tok, _) = token(&g).await;
        let chat = |body: Value| {
            let g = &g;
            let tok = tok.clone();
            async move {
                send(
                    g,
                    Method::POST,
                    "/v1/chat/completions",
                    Some(&tok),
                    &[],
                    Some(("application/json", body.to_string().into_bytes())),
                )
                .await
            }
        };
        // plain: the default model is filled in, the upstream key is sent upstream only
        let (st, h, b) = chat(json!({"messages": [{"role": "user", "content": "hi"}]})).await;
        assert_eq!(st, StatusCode::OK, "{b}");
        assert!(h["content-type"].to_str().unwrap().starts_with("application/json"));
        let v = json_of(&b);
        assert_eq!(v["choices"][0]["message"]["content"], "echo: hi");
        assert_eq!(stub.requests()[0]["model"], "stub-model");
        assert_eq!(stub.auth()[0].as_deref(), Some("Bearer sk-upstream-secret"));
        assert!(!b.contains("sk-upstream-secret") && !format!("{h:?}").contains("sk-upstream-secret"));
        // a named model is kept
        chat(json!({"model": "other", "messages": [{"role": "user", "content": "x"}]})).await;
        assert_eq!(stub.requests()[1]["model"], "other");
        // streamed: the events arrive as the upstream sent them
        let (st, h, b) = chat(json!({"stream": true, "messages": [{"role": "user", "content": "tool"}]})).await;
        assert_eq!(st, StatusCode::OK, "{b}");
        assert_eq!(h["content-type"], "text/event-stream");
        assert!(
            b.contains("\"call_9\"") && b.trim_end().ends_with("data: [DONE]"),
            "{b}"
        );
        let args: String = b
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter(|d| *d != "[DONE]")
            .filter_map(|d| {
                json_of(d)["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                    .as_str()
                    .map(str::to_string)
            })
            .collect();
        assert_eq!(json_of(&args), json!({"code": "return 6*7"}));
        // upstream failures keep their status and message
        let (st, _, b) = chat(json!({"messages": [{"role": "user", "content": "fail"}]})).await;
        let v = json_of(&b);
        assert_eq!(
            (st, v["error"]["code"].as_str(), v["error"]["upstream_status"].as_u64()),
            (StatusCode::BAD_GATEWAY, Some("llm_upstream_error"), Some(429))
        );
        assert!(v["error"]["message"].as_str().unwrap().contains("slow down"));
        // bad requests
        let (st, _, _) = chat(json!({"messages": "nope"})).await;
        assert_eq!(st, StatusCode::BAD_REQUEST);
        let (st, _, b) = send(
            &g,
            Method::POST,
            "/v1/chat/completions",
            None,
            &[],
            Some(("application/json", b"{}".to_vec())),
        )
        .await;
        assert_eq!(st, StatusCode::UNAUTHORIZED, "{b}");
        // the model list, with the default
        let (st, _, b) = send(&g, Method::GET, "/v1/models", Some(&tok), &[], None).await;
        assert_eq!(st, StatusCode::OK);
        let v = json_of(&b);
        assert_eq!(
            (v["data"][0]["id"].as_str(), v["default_model"].as_str()),
            (Some("stub-model"), Some("stub-model"))
        );

        // no upstream configured
        let g2 = Gw::new().await;
        let (tok2, _) = token(&g2).await;
        let (st, _, b) = send(
            &g2,
            Method::POST,
            "/v1/chat/completions",
            Some(&tok2),
            &[],
            Some(("application/json", br#"{"messages":[]}"#.to_vec())),
        )
        .await;
        assert_eq!(
            (st, json_of(&b)["error"]["code"].as_str()),
            (StatusCode::SERVICE_UNAVAILABLE, Some("llm_not_configured"))
        );
        // an upstream that is down
        let g3 = Gw::with_config(Config::parse("llm:\n  base_url: http://127.0.0.1:1/v1\n  model: m\n").unwrap()).await;
        let (tok3, _) = token(&g3).await;
        let (st, _, b) = send(
            &g3,
            Method::POST,
            "/v1/chat/completions",
            Some(&tok3),
            &[],
            Some(("application/json", br#"{"messages":[]}"#.to_vec())),
        )
        .await;
        assert_eq!(
            (st, json_of(&b)["error"]["code"].as_str()),
            (StatusCode::BAD_GATEWAY, Some("llm_unreachable")),
            "{b}"
        );
    });
}

#[test]
fn conversations_are_stored_per_session() {
    run(async {
        let g = Gw::new().await;
        let (tok, _) = token(&g).await;
        let (other, _) = token(&g).await;
        let body =
            json!({"title": "Trending repos", "runner_mode": "page", "messages": [{"role": "user", "content": "hi"}]});
        let put = |t: &str, id: &str, b: &Value| {
            let g = &g;
            let (t, id, b) = (t.to_string(), id.to_string(), b.to_string().into_bytes());
            async move {
                send(
                    g,
                    Method::PUT,
                    &format!("/v1/console/conversations/{id}"),
                    Some(&t),
                    &[],
                    Some(("application/json", b)),
                )
                .await
            }
        };
        let (st, _, b) = put(&tok, "c_one", &body).await;
        assert_eq!(st, StatusCode::OK, "{b}");
        let created = json_of(&b)["created_at"].as_f64().unwrap();
        let (st, _, _) = put(&tok, "c_one", &json!({"title": "Renamed", "messages": []})).await;
        assert_eq!(st, StatusCode::OK);
        let (_, _, b) = send(
            &g,
            Method::GET,
            "/v1/console/conversations/c_one",
            Some(&tok),
            &[],
            None,
        )
        .await;
        let v = json_of(&b);
        assert_eq!(
            (v["title"].as_str(), v["messages"].clone(), v["created_at"].as_f64()),
            (Some("Renamed"), json!([]), Some(created))
        );
        let (_, _, b) = send(&g, Method::GET, "/v1/console/conversations", Some(&tok), &[], None).await;
        assert_eq!(json_of(&b)["conversations"].as_array().unwrap().len(), 1);
        // another session sees none of it
        let (_, _, b) = send(&g, Method::GET, "/v1/console/conversations", Some(&other), &[], None).await;
        assert!(json_of(&b)["conversations"].as_array().unwrap().is_empty());
        let (st, _, b) = send(
            &g,
            Method::GET,
            "/v1/console/conversations/c_one",
            Some(&other),
            &[],
            None,
        )
        .await;
        assert_eq!(
            (st, json_of(&b)["error"]["code"].as_str()),
            (StatusCode::NOT_FOUND, Some("unknown_conversation"))
        );
        // bad input
        let (st, _, _) = put(&tok, "c_two", &json!({"messages": "x"})).await;
        assert_eq!(st, StatusCode::BAD_REQUEST);
        let (st, _, _) = put(&tok, "c_two", &json!({"messages": [], "runner_mode": "turbo"})).await;
        assert_eq!(st, StatusCode::BAD_REQUEST);
        let (st, _, _) = put(&tok, "bad%20id", &json!({"messages": []})).await;
        assert_eq!(st, StatusCode::BAD_REQUEST);
        let (st, _, _) = send(
            &g,
            Method::DELETE,
            "/v1/console/conversations/c_one",
            Some(&tok),
            &[],
            None,
        )
        .await;
        assert_eq!(st, StatusCode::OK);
        let (st, _, _) = send(
            &g,
            Method::DELETE,
            "/v1/console/conversations/c_one",
            Some(&tok),
            &[],
            None,
        )
        .await;
        assert_eq!(st, StatusCode::NOT_FOUND);
    });
}
