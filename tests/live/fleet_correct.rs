//! Corrected annotations across a fleet (docs/design.md#corrected-annotations, *A fleet*):
//! two bookings replicas, each on a SQLite file of its own behind its own layer with
//! `correct_hints`, share `history_url` on a real `redis-server` of the test's own. The
//! correction made on replica A when `get_appointment` is caught writing is served by
//! replica B to a client that never called it there, and B's client is told; the
//! operator's lever (the store's field deleted with `redis-cli`) lifts it on both.

use std::sync::Arc;
use std::time::Duration;

use bookings::Bookings;
use hintaudit::core::{Config, Judge};
use hintaudit::rmcp::{HintAuditLayer, SharedHistory};
use hintaudit_cli::demo::{RunningServer, connect, demo_policy};
use hintaudit_test_support::mcp::{ListChangedWatcher, assert_served_corrected};
use hintaudit_test_support::redis::RedisServer;
use rmcp::model::{CallToolRequestParams, ClientRequest, ListToolsRequest, ServerResult};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Map, Value, json};

use crate::support::{self, TestDb};

const SECRET: &str = "fleet-correct-secret-0123456789";

/// A replica of bookings with `correct_hints`, sharing the store at `url` as `name`.
async fn replica(db: &TestDb, url: &str, name: &str) -> (RunningServer<Bookings>, SharedHistory) {
    let config = Config::default()
        .with_correct_hints(true)
        .with_history_url(url.to_owned())
        .with_history_secret(SECRET);
    let settings = config.shared_history().expect("settings").expect("set");
    let shared = SharedHistory::open_as(&settings, name, "{hintaudit}").expect("open");
    let layer = HintAuditLayer::new()
        .with_judge(Arc::new(Judge::new(demo_policy())))
        .with_recorder(())
        .with_corrections_of(&config)
        .with_shared_history(shared.clone());
    let (server, _pool) = support::serve_bookings(db, layer).await;
    (server, shared)
}

/// tools/list straight through the peer (no client-side cache), by name.
async fn listing(client: &RunningService<RoleClient, impl ClientHandler>) -> Map<String, Value> {
    let request = ClientRequest::ListToolsRequest(ListToolsRequest {
        method: Default::default(),
        params: None,
        extensions: Default::default(),
    });
    let ServerResult::ListToolsResult(list) = client.send_request(request).await.expect("list")
    else {
        panic!("not a tools/list answer");
    };
    list.tools
        .iter()
        .map(|t| (t.name.to_string(), serde_json::to_value(t).expect("json")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_correction_made_on_one_replica_is_served_by_the_other_until_the_operator_lifts_it() {
    let Some(redis) = RedisServer::start("fleet corrections") else {
        return;
    };
    let (db_a, db_b) = (support::sqlite(), support::sqlite());
    let (a, shared_a) = replica(&db_a, &redis.url(), "replica-a").await;
    let (b, _shared_b) = replica(&db_b, &redis.url(), "replica-b").await;
    let client_a = connect(&a.url).await.expect("client of A");
    let watcher = ListChangedWatcher::default();
    let client_b = watcher
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(b.url.clone()))
        .await
        .expect("client of B");
    let before = listing(&client_b).await;
    assert_eq!(
        before["get_appointment"]["annotations"]["readOnlyHint"],
        json!(true)
    );

    let params = CallToolRequestParams::new("get_appointment")
        .with_arguments(json!({"id": 1}).as_object().cloned().unwrap_or_default());
    client_a.call_tool(params).await.expect("tools/call on A");
    // The correction goes to the store after A's call answered: wait for it.
    shared_a.flush().await;

    // B serves A's correction.
    assert_served_corrected(&before, &listing(&client_b).await, "get_appointment");
    tokio::time::timeout(Duration::from_secs(30), watcher.changed.notified())
        .await
        .expect("B's session told when B learnt the correction");

    // The operator's lever for a fleet: the store's field deleted.
    let lifted = std::process::Command::new("redis-cli")
        .args(["-u", &redis.url()])
        .args(["HDEL", "{hintaudit}:corrections", "get_appointment"])
        .output()
        .expect("redis-cli runs");
    assert_eq!(String::from_utf8_lossy(&lifted.stdout).trim(), "1");
    assert_eq!(listing(&client_b).await, before, "lifted on B");
    let on_a = listing(&client_a).await;
    assert_eq!(on_a, before, "lifted on A");

    client_a.cancel().await.ok();
    client_b.cancel().await.ok();
    a.shutdown().await;
    b.shutdown().await;
}
