//! MCP 2026-07-28 clients have no session: their calls go to the proxy's start-up `--stdio`
//! child, which they all share. With a capture the proxy sends that child one call at a
//! time, so each of its commits is exactly its call's, with 0 ambiguous: on PostgreSQL and
//! on MariaDB.

use std::sync::Arc;

use rmcp::model::ProtocolVersion;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::json;
use tokio::sync::Barrier;

use crate::holds::Holds;
use crate::mariadb::mysql_or_skip;
use crate::support::*;
use crate::writers::Server;

/// A client on protocol 2026-07-28 (`server/discover`, no `initialize`, no session).
async fn sessionless_client(url: &str) -> Client {
    ().serve_with_lifecycle(
        StreamableHttpClientTransport::from_uri(url),
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    )
    .await
    .expect("server/discover over HTTP")
}

/// 4 sessionless clients at once, each archiving an item (a lie, held in flight after its
/// DELETE until the test releases it), viewing one (a lie) and adding a note. Their calls
/// share the start-up child, one at a time: the test releases each held archive_item once
/// every client is connected, so the others' calls arrive while it is in flight.
async fn sessionless_clients(server: Server, py: &str) {
    let name = "hintaudit_proxy_sessionless";
    let db = server.seeded(name, py).await;
    let mut holds = Holds::new(name);
    let upstream = fixture(
        py,
        &db,
        &format!("FIXTURE_HOLD_AFTER={}", holds.env("archive_item")),
    );
    let (_proxy, addr) = proxy_http(&["--stdio", &upstream, "--database", &db]).await;
    let url = format!("http://{addr}/mcp");
    let connected = Arc::new(Barrier::new(5));
    let mut tasks = Vec::new();
    for c in 0..4_u64 {
        let url = url.clone();
        let connected = connected.clone();
        tasks.push(tokio::spawn(async move {
            let client = sessionless_client(&url).await;
            connected.wait().await;
            let calls = [
                ("archive_item", json!({"id": 100 + c})),
                ("get_item", json!({"id": 1 + c})),
                ("add_note", json!({"id": 10_000 + c, "text": "n"})),
            ];
            for (tool, arguments) in calls {
                let answer = call(&client, tool, args(arguments)).await;
                assert!(answer.get("error").is_none(), "{tool}: {answer}");
            }
            client.cancel().await.ok();
        }));
    }
    connected.wait().await;
    for _ in 0..4 {
        let held = holds.held(1).await;
        held.iter().for_each(|h| holds.release(h));
    }
    for t in tasks {
        t.await.expect("a client's calls");
    }

    let s = metrics(addr).await;
    assert_eq!(commits(&s, "ambiguous"), 0.0, "{}", s.text);
    assert_eq!(commits(&s, "attributed"), 12.0, "{}", s.text);
    assert_eq!(violations(&s, "get_item", "read_only_write"), 4.0);
    assert_eq!(
        violations(&s, "archive_item", "undeclared_destructive"),
        4.0
    );
    assert_eq!(violations(&s, "add_note", "undeclared_destructive"), 0.0);
    assert_eq!(rows(&s, "add_note", "notes", "insert"), 4.0, "{}", s.text);
    for (tool, table, op) in [
        ("get_item", "items", "delete"),
        ("archive_item", "items", "update"),
        ("add_note", "items", "update"),
        ("add_note", "items", "delete"),
    ] {
        assert_eq!(rows(&s, tool, table, op), 0.0, "{tool} {table} {op}");
    }
    drop(_proxy);
    server.drop(name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessionless_clients_each_commit_is_exactly_its_calls() {
    if let Some((admin, py)) = parts().await {
        sessionless_clients(Server::Pg(admin), py).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessionless_clients_each_commit_is_exactly_its_calls_on_mariadb() {
    let Some(admin) = mysql_or_skip().await else {
        return;
    };
    if let Some(py) = python_or_skip() {
        sessionless_clients(Server::My(admin), py).await;
    }
}
