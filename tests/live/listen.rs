//! `correct_hints` for MCP 2026-07-28 clients (docs/design.md#corrected-annotations): a real
//! rmcp client with no session (server/discover, then `subscriptions/listen` over streamable
//! HTTP) against the bookings server through the layer, on a real SQLite file. Once
//! `get_appointment` (readOnlyHint true) is caught updating a row, the client's listen stream
//! carries `notifications/tools/list_changed`, and a re-list shows it corrected.

use std::time::Duration;

use rmcp::model::{ClientConfig, ProtocolVersion};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::json;

use hintaudit_test_support::mcp::told_on_listen_and_relisted;

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
    let arguments = json!({"id": 1}).as_object().cloned().unwrap_or_default();
    told_on_listen_and_relisted(
        &client,
        "get_appointment",
        arguments,
        Duration::from_secs(30),
    )
    .await;
    client.cancel().await.ok();
    server.shutdown().await;
}
