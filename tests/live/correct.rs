//! `correct_hints` in the layer, end to end (docs/design.md#corrected-annotations): the
//! bookings server on a real SQLite file through its audited pool, served over streamable
//! HTTP; a real rmcp client with a handler is told with `notifications/tools/list_changed`
//! once `get_appointment` (readOnlyHint true) is caught updating a row, and re-lists it with
//! readOnlyHint false and destructiveHint true, every other tool as the server lists it.

use std::sync::Arc;
use std::time::Duration;

use bookings::{Bookings, Db};
use hintaudit::core::{Config, Judge};
use hintaudit::rmcp::HintAuditLayer;
use hintaudit_cli::demo::{demo_policy, serve_http};
use hintaudit_test_support::mcp::ListChangedWatcher;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Map, Value, json};

use crate::support;

#[tokio::test]
async fn bookings_get_appointment_caught_writing_is_served_corrected() {
    let db = support::sqlite();
    let pool = Db::connect(&db.url).await.expect("connect");
    let config = Config::default().with_correct_hints(true);
    let layer = HintAuditLayer::new()
        .with_judge(Arc::new(Judge::new(demo_policy())))
        .with_recorder(())
        .with_corrections_of(&config);
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
    let by_name = |tools: Vec<rmcp::model::Tool>| -> Map<String, Value> {
        tools
            .into_iter()
            .map(|t| (t.name.to_string(), serde_json::to_value(&t).expect("json")))
            .collect()
    };
    let before = by_name(client.list_all_tools().await.expect("tools/list"));
    let params = CallToolRequestParams::new("get_appointment")
        .with_arguments(json!({"id": 1}).as_object().cloned().unwrap_or_default());
    client.call_tool(params).await.expect("tools/call");
    tokio::time::timeout(Duration::from_secs(30), watcher.changed.notified())
        .await
        .expect("notifications/tools/list_changed");

    let after = by_name(client.list_all_tools().await.expect("tools/list"));
    let annotations = &after["get_appointment"]["annotations"];
    assert_eq!(annotations["readOnlyHint"], json!(false), "{annotations}");
    assert_eq!(annotations["destructiveHint"], json!(true), "{annotations}");
    for (tool, listed) in &before {
        if tool != "get_appointment" {
            assert_eq!(&after[tool], listed, "{tool} served as listed");
        }
    }
    client.cancel().await.ok();
    server.shutdown().await;
}
