//! `--correct-hints` for MCP 2026-07-28 clients (docs/design.md, *Corrected annotations*): an
//! rmcp client with no session (server/discover, then `subscriptions/listen` over streamable
//! HTTP) is told on its listen stream once the database log catches the read-only `get_item`
//! updating a row, and re-lists it corrected, every other tool as the fixture lists it.

use std::time::Duration;

use hintaudit_test_support::mcp::told_on_listen_and_relisted;
use rmcp::model::{ClientConfig, ProtocolVersion};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::json;

use crate::support::*;

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
    let arguments = json!({"id": 1}).as_object().cloned().unwrap_or_default();
    told_on_listen_and_relisted(&client, "get_item", arguments, Duration::from_secs(60)).await;

    client.cancel().await.ok();
    drop(proxy);
    drop_db(&admin, name).await;
}
