//! `correct_hints` in the layer, end to end (docs/design.md#corrected-annotations): the
//! bookings server on a real SQLite file through its audited pool, served over streamable
//! HTTP; a real rmcp client with a handler is told with `notifications/tools/list_changed`
//! once `get_appointment` (readOnlyHint true) is caught updating a row, and re-lists it with
//! readOnlyHint false and destructiveHint true, every other tool as the server lists it.

use std::time::Duration;

use bookings::{Bookings, Db};
use hintaudit_cli::demo::serve_http;
use hintaudit_test_support::mcp::{ListChangedWatcher, tools_by_name};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};

use hintaudit_test_support::mcp::assert_served_corrected;

use crate::support;

#[tokio::test]
async fn bookings_get_appointment_caught_writing_is_served_corrected() {
    let db = support::sqlite();
    let pool = Db::connect(&db.url).await.expect("connect");
    let layer = support::correcting_layer();
    let server = serve_http(
        Bookings::new(pool),
        layer,
        "127.0.0.1:0".parse().unwrap(),
        None,
    )
    .await
    .expect("serve");
    let watcher = ListChangedWatcher::default();
    let client = watcher
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(server.url.clone()))
        .await
        .expect("MCP handshake");
    let before = tools_by_name(&client.list_all_tools().await.expect("tools/list"));
    let params = CallToolRequestParams::new("get_appointment")
        .with_arguments(json!({"id": 1}).as_object().cloned().unwrap_or_default());
    client.call_tool(params).await.expect("tools/call");
    tokio::time::timeout(Duration::from_secs(30), watcher.changed.notified())
        .await
        .expect("notifications/tools/list_changed");

    let after = tools_by_name(&client.list_all_tools().await.expect("tools/list"));
    assert_served_corrected(&before, &after, "get_appointment");
    client.cancel().await.ok();
    server.shutdown().await;
}

/// The Python SDK's client with a message handler (crates/proxy/tests/live/
/// list_changed_client.py) through the layer: told, and re-lists `get_appointment`
/// corrected, every other tool as listed. Skips without python3 and the MCP SDK (mandatory
/// under `HINTAUDIT_REQUIRE_ALL`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_sdk_client_through_the_layer_is_told_and_relists() {
    let has_sdk = std::process::Command::new("python3")
        .args(["-c", "import mcp.client.streamable_http"])
        .status()
        .is_ok_and(|s| s.success());
    if !has_sdk {
        assert!(
            !hintaudit_test_support::required("HINTAUDIT_REQUIRE_PYTHON"),
            "python3 with the MCP SDK required"
        );
        eprintln!("skipped: python3 with the MCP SDK unavailable");
        return;
    }
    let db = support::sqlite();
    let layer = support::correcting_layer();
    let (server, _pool) = support::serve_bookings(&db, layer).await;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates/proxy/tests/live/list_changed_client.py");
    let out = tokio::process::Command::new("python3")
        .arg(&script)
        .args([server.url.as_str(), "get_appointment"])
        .output()
        .await
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(seen["advertised"], json!(true), "{seen}");
    assert_eq!(seen["told"], json!(true), "{seen}");
    let after = &seen["after"];
    assert_eq!(
        after["get_appointment"]["readOnlyHint"],
        json!(false),
        "{seen}"
    );
    assert_eq!(
        after["get_appointment"]["destructiveHint"],
        json!(true),
        "{seen}"
    );
    for (tool, listed) in seen["before"].as_object().expect("tools") {
        if tool != "get_appointment" {
            assert_eq!(&after[tool], listed, "{tool}");
        }
    }
    server.shutdown().await;
}
