//! Stateless serving: the demo's server (as bookings') answers MCP 2026-07-28 requests with
//! no session (any replica can take any request, no affinity) as well as legacy sessions,
//! and audits both alike.

use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde_json::{Value, json};

use crate::support;

/// POSTs one JSON-RPC message to `url`, with the protocol version header when given and the
/// session when given; returns the answer's status, session header and JSON-RPC message (the
/// body as JSON, or the `data:` line of an event stream).
async fn post(
    url: &str,
    version: Option<&str>,
    session: Option<&str>,
    message: Value,
) -> (u16, Option<String>, Value) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, "application/json")
        .body(message.to_string());
    if let Some(v) = version {
        request = request.header("MCP-Protocol-Version", v);
    }
    // 2026-07-28 mirrors the method and the tool's name in headers, so that a
    // load balancer can route without reading the body.
    if version == Some("2026-07-28") {
        request = request.header("Mcp-Method", message["method"].as_str().unwrap_or_default());
        if let Some(name) = message["params"]["name"].as_str() {
            request = request.header("Mcp-Name", name);
        }
    }
    if let Some(s) = session {
        request = request.header("Mcp-Session-Id", s);
    }
    let response = request.send().await.expect("POST /mcp");
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = response.text().await.expect("body");
    let json = serde_json::from_str(&body).unwrap_or_else(|_| {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("id").is_some())
            .unwrap_or(Value::Null)
    });
    (status, session, json)
}

/// A tools/call; stateless (2026-07-28) requests carry their context in `_meta`.
fn call(id: u64, stateless: bool) -> Value {
    let mut params = json!({"name": "list_appointments", "arguments": {"limit": 2}});
    if stateless {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "stateless", "version": "1"},
        });
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_requests_and_legacy_sessions_are_both_served_and_audited() {
    let db = support::sqlite();
    let (server, collector, _pool) = support::audited(&db).await;

    // MCP 2026-07-28: no initialize, no session; the answer carries none either.
    let (status, session, answer) =
        post(&server.url, Some("2026-07-28"), None, call(1, true)).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(session, None, "a stateless answer opens no session");
    assert!(answer["result"]["content"].is_array(), "{answer}");

    // A legacy client: initialize opens a session, the call runs in it.
    let init = json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "legacy", "version": "1"}}});
    let (status, session, answer) = post(&server.url, None, None, init).await;
    assert_eq!(status, 200, "{answer}");
    let session = session.expect("a legacy initialize opens a session");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(&server.url, Some("2025-06-18"), Some(&session), initialized).await;
    let (status, _, answer) = post(
        &server.url,
        Some("2025-06-18"),
        Some(&session),
        call(3, false),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer["result"]["content"].is_array(), "{answer}");

    // Both calls were judged.
    let calls = collector.snapshot().calls;
    let listed = calls
        .iter()
        .filter(|c| c.tool == "list_appointments")
        .count();
    assert_eq!(listed, 2, "{calls:?}");
    server.shutdown().await;
}
