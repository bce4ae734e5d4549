//! `correct_hints` for MCP 2026-07-28 clients (docs/design.md#corrected-annotations): a real
//! rmcp client with no session (server/discover, then `subscriptions/listen` over streamable
//! HTTP) against the bookings server through the layer, on a real SQLite file. Once
//! `get_appointment` (readOnlyHint true) is caught updating a row, the client's listen stream
//! carries `notifications/tools/list_changed`, and a re-list shows it corrected.

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientConfig, ProtocolVersion, ServerNotification, SubscriptionFilter,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::json;

use hintaudit_test_support::mcp::assert_served_corrected;

use crate::support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listening_2026_07_28_client_is_told_of_a_correction_and_relists() {
    let db = support::sqlite();
    let layer = support::correcting_layer();
    let (server, _pool) = support::serve_bookings(&db, layer).await;
    let client = ClientConfig::default()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_uri(server.url.clone()),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("server/discover");
    let tools = SubscriptionFilter::builder().tools_list_changed().build();
    let mut stream = client
        .listen(tools.clone())
        .await
        .expect("subscriptions/listen");
    assert_eq!(stream.acknowledged(), &tools, "toolsListChanged accepted");

    let before = support::tools_by_name(client.list_all_tools().await.expect("tools/list"));
    let params = CallToolRequestParams::new("get_appointment")
        .with_arguments(json!({"id": 1}).as_object().cloned().unwrap_or_default());
    client.call_tool(params).await.expect("tools/call");
    let told = tokio::time::timeout(Duration::from_secs(30), stream.next())
        .await
        .expect("a notification on the listen stream")
        .expect("the stream is sound");
    assert!(
        matches!(
            told,
            Some(ServerNotification::ToolListChangedNotification(_))
        ),
        "{told:?}"
    );

    let after = support::tools_by_name(client.list_all_tools().await.expect("tools/list"));
    assert_served_corrected(&before, &after, "get_appointment");
    stream.cancel().await.ok();
    client.cancel().await.ok();
    server.shutdown().await;
}
