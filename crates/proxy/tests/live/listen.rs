//! `--correct-hints` for MCP 2026-07-28 clients (docs/design.md, *Corrected annotations*): an
//! rmcp client with no session (server/discover, then `subscriptions/listen` over streamable
//! HTTP) is told on its listen stream once the database log catches the read-only `get_item`
//! updating a row, and re-lists it corrected, every other tool as the fixture lists it.

use std::time::Duration;

use hintaudit_test_support::mcp::assert_served_corrected;
use rmcp::model::{ClientConfig, ProtocolVersion, ServerNotification, SubscriptionFilter, Tool};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{Map, Value, json};

use crate::support::*;

fn by_name(tools: Vec<Tool>) -> Map<String, Value> {
    tools
        .into_iter()
        .map(|t| (t.name.to_string(), serde_json::to_value(&t).expect("json")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listening_2026_07_28_client_is_told_of_a_correction_and_relists() {
    let Some((admin, py)) = parts().await else {
        return;
    };
    let name = "hintaudit_proxy_correct_listen";
    let db = fresh_db(&admin, name).await;
    let upstream = fixture(py, &db, "");
    let (proxy, addr) =
        proxy_http(&["--stdio", &upstream, "--database", &db, "--correct-hints"]).await;
    let client = ClientConfig::default()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_uri(format!("http://{addr}/mcp")),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("server/discover");
    let tools = SubscriptionFilter::builder().tools_list_changed().build();
    let mut stream = client.listen(tools.clone()).await.expect("listen");
    assert_eq!(stream.acknowledged(), &tools, "toolsListChanged accepted");

    let before = by_name(client.list_all_tools().await.expect("tools/list"));
    let params = rmcp::model::CallToolRequestParams::new("get_item")
        .with_arguments(json!({"id": 1}).as_object().cloned().unwrap_or_default());
    client.call_tool(params).await.expect("tools/call");
    let told = tokio::time::timeout(Duration::from_secs(60), stream.next())
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
    let after = by_name(client.list_all_tools().await.expect("tools/list"));
    assert_served_corrected(&before, &after, "get_item");

    stream.cancel().await.ok();
    client.cancel().await.ok();
    drop(proxy);
    drop_db(&admin, name).await;
}
