//! The "done when", through the proxy with `--correct-hints --disclose-effects`
//! (docs/design.md, *Corrected annotations* and *Observed effects disclosed*): after the
//! read-only `get_item` is caught updating a row on PostgreSQL, an rmcp client over
//! streamable HTTP receives `notifications/tools/list_changed`, re-lists `get_item` with
//! readOnlyHint false and destructiveHint true (every other tool as the fixture lists it),
//! and finds in the call's `_meta` what the call did. A client that ignores `_meta` gets the
//! result it gets without the options.

use std::time::Duration;

use hintaudit_test_support::mcp::{ListChangedWatcher, assert_served_corrected, tools_by_name};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::support::*;

const KEY: &str = "io.hintaudit/effects";

type Watching = RunningService<RoleClient, ListChangedWatcher>;

async fn get_item(client: &RunningService<RoleClient, impl rmcp::ClientHandler>) -> Value {
    let params = CallToolRequestParams::new("get_item").with_arguments(args(json!({"id": 1})));
    serde_json::to_value(client.call_tool(params).await.expect("tools/call")).expect("json")
}

/// `result` without the disclosure: its `_meta` key removed, and `_meta` itself when that
/// leaves it empty.
fn without_disclosure(mut result: Value) -> Value {
    if let Some(meta) = result.get_mut("_meta").and_then(Value::as_object_mut) {
        meta.remove(KEY);
        if meta.is_empty() {
            result.as_object_mut().expect("object").remove("_meta");
        }
    }
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_tool_caught_writing_is_corrected_and_its_call_discloses_the_write() {
    let Some((admin, py)) = parts().await else {
        return;
    };
    let name = "hintaudit_proxy_disclose";
    let db = fresh_db(&admin, name).await;
    let upstream = fixture(py, &db, "");
    let options = ["--correct-hints", "--disclose-effects"];
    let (proxy, addr) =
        proxy_http(&[&["--stdio", &upstream, "--database", &db][..], &options].concat()).await;
    let watcher = ListChangedWatcher::default();
    let client: Watching = watcher
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(format!(
            "http://{addr}/mcp"
        )))
        .await
        .expect("MCP handshake over HTTP");
    let before = tools_by_name(&client.list_tools(None).await.expect("tools/list").tools);

    let result = get_item(&client).await;
    assert_eq!(
        result["_meta"][KEY],
        json!({
            "status": "observed",
            "pending": [],
            "incomplete": [],
            "tables": [{"name": "items", "inserted": 0, "updated": 1, "deleted": 0,
                        "operations": []}],
            "files": [],
            "reported": [],
            "outbound": [],
            "findings": [{"rule": "read_only_write", "severity": "critical",
                          "hint": "readOnlyHint", "confidence": "likely"}],
        }),
        "{result}"
    );
    tokio::time::timeout(Duration::from_secs(60), watcher.changed.notified())
        .await
        .expect("notifications/tools/list_changed");
    let after = tools_by_name(&client.list_tools(None).await.expect("tools/list").tools);
    assert_served_corrected(&before, &after, "get_item");
    client.cancel().await.expect("cancel");
    drop(proxy);
    drop_db(&admin, name).await;

    // The same first call on a fresh database through a proxy without the options: the
    // same result, but for the disclosure.
    let plain_db = fresh_db(&admin, name).await;
    let upstream = fixture(py, &plain_db, "");
    let (plain_proxy, plain_addr) =
        proxy_http(&["--stdio", &upstream, "--database", &plain_db]).await;
    let plain = http_client(&format!("http://{plain_addr}/mcp")).await;
    let without = get_item(&plain).await;
    assert_eq!(without.get("_meta"), None, "{without}");
    assert_eq!(without_disclosure(result), without);
    plain.cancel().await.expect("cancel");
    drop(plain_proxy);
    drop_db(&admin, name).await;
}
