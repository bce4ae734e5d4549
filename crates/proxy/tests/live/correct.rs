//! `--correct-hints` through the proxy (docs/design.md, *Corrected annotations*): an rmcp
//! client connected over streamable HTTP is told with `notifications/tools/list_changed`
//! once the database log catches the read-only `get_item` updating a row, and re-lists it
//! with readOnlyHint false and destructiveHint true; every other tool is served as the
//! Python fixture lists it. Without the option nothing changes.

use std::net::SocketAddr;
use std::time::Duration;

use hintaudit_telemetry::MetricName;
use hintaudit_test_support::mcp::{ListChangedWatcher, assert_served_corrected, tools_by_name};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value, json};

use crate::support::*;

pub(crate) type Watching = RunningService<RoleClient, ListChangedWatcher>;

pub(crate) async fn watching_client(addr: SocketAddr, watcher: ListChangedWatcher) -> Watching {
    let url = format!("http://{addr}/mcp");
    watcher
        .serve(StreamableHttpClientTransport::from_uri(url))
        .await
        .expect("MCP handshake over HTTP")
}

pub(crate) async fn listing(client: &Watching) -> Map<String, Value> {
    tools_by_name(&client.list_tools(None).await.expect("tools/list").tools)
}

async fn get_item(client: &Watching) {
    let params = rmcp::model::CallToolRequestParams::new("get_item")
        .with_arguments(json!({"id": 1}).as_object().cloned().unwrap_or_default());
    client.call_tool(params).await.expect("tools/call");
}

fn corrected_count(addr_metrics: &hintaudit_test_support::scrape::Scraped, tool: &str) -> f64 {
    addr_metrics
        .value(MetricName::ToolHintsCorrected.as_str(), &[("tool", tool)])
        .unwrap_or(f64::NAN)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_tool_caught_writing_is_served_corrected_and_clients_are_told() {
    let Some((admin, py)) = parts().await else {
        return;
    };
    let name = "hintaudit_proxy_correct";
    let db = fresh_db(&admin, name).await;
    let upstream = fixture(py, &db, "");
    let (proxy, addr) =
        proxy_http(&["--stdio", &upstream, "--database", &db, "--correct-hints"]).await;
    let watcher = ListChangedWatcher::default();
    let client = watching_client(addr, watcher.clone()).await;
    let info = client.peer_info().expect("initialized");
    let tools_cap = info.capabilities.tools.as_ref().expect("tools capability");
    assert_eq!(tools_cap.list_changed, Some(true), "listChanged advertised");

    let before = listing(&client).await;
    assert_eq!(
        before["get_item"]["annotations"]["readOnlyHint"],
        json!(true)
    );
    get_item(&client).await;
    tokio::time::timeout(Duration::from_secs(60), watcher.changed.notified())
        .await
        .expect("notifications/tools/list_changed");

    let after = listing(&client).await;
    assert_served_corrected(&before, &after, "get_item");
    let s = metrics(addr).await;
    assert_eq!(corrected_count(&s, "get_item"), 1.0, "{}", s.text);
    assert_eq!(corrected_count(&s, "list_tables"), 0.0, "{}", s.text);
    // The listing rule judged the fixture's own listing: no hints_changed for the correction.
    assert_eq!(
        violations(&s, "get_item", "hints_changed"),
        0.0,
        "{}",
        s.text
    );

    client.cancel().await.expect("cancel");
    drop(proxy);
    drop_db(&admin, name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_option_the_listing_passes_unchanged() {
    let Some((admin, py)) = parts().await else {
        return;
    };
    let name = "hintaudit_proxy_no_correct";
    let db = fresh_db(&admin, name).await;
    let upstream = fixture(py, &db, "");
    let (proxy, addr) = proxy_http(&["--stdio", &upstream, "--database", &db]).await;
    let client = watching_client(addr, ListChangedWatcher::default()).await;
    let before = listing(&client).await;
    get_item(&client).await;
    let s = metrics(addr).await;
    assert_eq!(
        violations(&s, "get_item", "read_only_write"),
        1.0,
        "{}",
        s.text
    );
    assert_eq!(listing(&client).await, before);
    assert_eq!(corrected_count(&s, "get_item"), 0.0, "{}", s.text);
    client.cancel().await.expect("cancel");
    drop(proxy);
    drop_db(&admin, name).await;
}

/// The Python SDK's client, with a message handler (list_changed_client.py), sees the same:
/// the notification, then get_item corrected and every other tool as listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_sdk_client_with_a_message_handler_is_told_and_relists() {
    let Some((admin, py)) = parts().await else {
        return;
    };
    let name = "hintaudit_proxy_correct_py";
    let db = fresh_db(&admin, name).await;
    let upstream = fixture(py, &db, "");
    let (proxy, addr) =
        proxy_http(&["--stdio", &upstream, "--database", &db, "--correct-hints"]).await;
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/live/list_changed_client.py");
    let out = tokio::process::Command::new(py)
        .arg(&script)
        .arg(format!("http://{addr}/mcp"))
        .output()
        .await
        .expect("python runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(seen["advertised"], json!(true), "{seen}");
    assert_eq!(seen["told"], json!(true), "{seen}");
    let after = &seen["after"];
    assert_eq!(after["get_item"]["readOnlyHint"], json!(false), "{seen}");
    assert_eq!(after["get_item"]["destructiveHint"], json!(true), "{seen}");
    for (tool, listed) in seen["before"].as_object().expect("tools") {
        if tool != "get_item" {
            assert_eq!(&after[tool], listed, "{tool}");
        }
    }
    drop(proxy);
    drop_db(&admin, name).await;
}
