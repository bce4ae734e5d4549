//! The bench's clients: an rmcp client over streamable HTTP on loopback or an in-process
//! duplex stream, the workload of tool calls it sends, and single statements on each pool.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hintaudit::core::CallScope;
use hintaudit::sqlx::AuditedPool;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{RoleClient, ServerHandler, ServiceExt};
use sqlx::{Sqlite, SqlitePool};

use crate::stats::env_or;

/// A connected client for a server served over streamable HTTP on loopback (axum, rmcp's
/// session manager, rmcp's reqwest client), as the demo and most deployments serve it.
pub async fn client_http<S: ServerHandler + Clone + Send + Sync + 'static>(
    server: S,
) -> RunningService<RoleClient, ()> {
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    ().serve(StreamableHttpClientTransport::from_uri(format!(
        "http://{addr}/mcp"
    )))
    .await
    .expect("client")
}

/// A connected client for a server served over an in-process duplex stream.
pub async fn client_for<S: ServerHandler>(server: S) -> RunningService<RoleClient, ()> {
    let (a, b) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(a).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(b).await.expect("client")
}

/// Calls in flight at once (HINTAUDIT_BENCH_CONCURRENCY, default 1: one call after another).
pub fn concurrency() -> usize {
    env_or("HINTAUDIT_BENCH_CONCURRENCY", 1_usize).max(1)
}

/// `n` calls, alternately `get` and `touch`, from [`concurrency`] loops over the one client
/// session (rmcp's client sends a request while others are pending; the server runs each in a
/// task of its own). The loops run in the caller's task, the runtime's main thread, so that
/// the client takes no worker thread from the server.
pub async fn calls(client: &RunningService<RoleClient, ()>, n: usize) -> Duration {
    let start = Instant::now();
    let k = concurrency();
    let calls = (0..k).map(|j| async move {
        for i in (j..n).step_by(k) {
            let tool = if i % 2 == 0 { "get" } else { "touch" };
            let args = serde_json::json!({ "id": 1 + (i % 1000) as i64 });
            let params =
                CallToolRequestParams::new(tool).with_arguments(args.as_object().unwrap().clone());
            let r = client.call_tool(params).await.expect("call");
            assert_ne!(r.is_error, Some(true));
        }
    });
    futures_util::future::join_all(calls).await;
    start.elapsed()
}

pub async fn statements_bare(pool: &SqlitePool, n: usize) -> Duration {
    let start = Instant::now();
    for i in 0..n {
        let _: String = sqlx::query_scalar("SELECT name FROM items WHERE id = $1")
            .bind(1 + (i % 1000) as i64)
            .fetch_one(pool)
            .await
            .unwrap();
    }
    start.elapsed()
}

pub async fn statements_audited(pool: &AuditedPool<Sqlite>, n: usize) -> Duration {
    let scope = CallScope::new("bench");
    let start = Instant::now();
    scope
        .run(async {
            for i in 0..n {
                let _: String = sqlx::query_scalar("SELECT name FROM items WHERE id = $1")
                    .bind(1 + (i % 1000) as i64)
                    .fetch_one(pool)
                    .await
                    .unwrap();
            }
        })
        .await;
    start.elapsed()
}
