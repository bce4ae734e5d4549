//! The `bookings` binary as operators run it: audited, with `/metrics`, stopped by SIGTERM,
//! and three replicas starting at once on one PostgreSQL database.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

mod support;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bookings::PLANTED_CALL_FINDINGS;
use hintaudit_core::Rule;
use hintaudit_telemetry::MetricName;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use sqlx::{Connection, Executor};
use support::*;

const VIOLATIONS: &str = MetricName::HintViolations.as_str();
const CALLS: &str = MetricName::ToolCalls.as_str();

/// The violation series a planted finding increments: its rule's one hint and severity.
fn planted_series(tool: &str, rule: &str) -> String {
    let r = Rule::parse(rule).expect("a rule id");
    assert_eq!(r.hints().len(), 1, "{rule}: a call rule names one hint");
    violation(tool, rule, r.hints()[0].spec_name(), r.severity().as_str())
}

fn sqlite_url(dir: &tempfile::TempDir) -> String {
    format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("bookings.db").display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audited_http_has_the_zero_series_before_any_call_and_counts_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(&["--http", "127.0.0.1:0", "--audit"], &sqlite_url(&dir)).await;
    let metrics = server.metrics.expect("/metrics beside /mcp");
    assert_eq!(Some(metrics), server.http);

    // Before any client: every planted violation's series is there, at 0, and no tool has
    // been called.
    let before = scrape(metrics, VIOLATIONS).await;
    for (tool, rule) in PLANTED_CALL_FINDINGS {
        let key = planted_series(tool, rule);
        assert_eq!(before.get(&key), Some(&0.0), "{key} in {before:#?}");
    }
    assert!(before.values().all(|v| *v == 0.0), "{before:#?}");
    let calls = scrape(metrics, CALLS).await;
    assert_eq!(
        calls.len(),
        (11 + 1) * 3,
        "every tool's, and __unknown__: {calls:#?}"
    );
    assert!(calls.values().all(|v| *v == 0.0));

    // One call of get_appointment, over a real rmcp client on streamable HTTP.
    call(&server, "get_appointment", serde_json::json!({"id": 1})).await;

    let after = scrape(metrics, VIOLATIONS).await;
    let first = planted_series("get_appointment", "read_only_write");
    assert_eq!(after.get(&first), Some(&1.0), "{after:#?}");
    let keys =
        |m: &std::collections::BTreeMap<String, f64>| m.keys().cloned().collect::<BTreeSet<_>>();
    assert_eq!(
        keys(&after),
        keys(&before),
        "no series appeared: it existed at 0"
    );
    assert_eq!(after.values().sum::<f64>(), 1.0, "{after:#?}");

    server.terminate().await; // SIGTERM ends it cleanly
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_serves_metrics_on_its_own_address_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--stdio", "--audit", "--metrics-addr", "127.0.0.1:0"];
    let server = start(&args, &sqlite_url(&dir)).await;
    let metrics = server.metrics.expect("metrics address printed");
    assert!(metrics.ip().is_loopback());
    let series = scrape(metrics, VIOLATIONS).await;
    let key = planted_series("purge_cancelled", "undeclared_destructive");
    assert_eq!(series.get(&key), Some(&0.0), "{series:#?}");
    server.terminate().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unaudited_http_has_no_metrics_route() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(&["--http", "127.0.0.1:0"], &sqlite_url(&dir)).await;
    let (status, _) = http_get(server.http.unwrap(), "/metrics").await;
    assert!(status.contains(" 404 "), "{status}");
    server.terminate().await;
}

/// With the standard OTEL_* variables set, the audited server exports its tools/call spans
/// over OTLP (HTTP/protobuf, to a receiver on loopback); SIGTERM flushes them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audited_server_exports_traces_where_otel_variables_say() {
    let received: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let sink = received.clone();
    let collector = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| async move {
            sink.lock().unwrap().push(body.to_vec());
            // An empty ExportTraceServiceResponse.
            (
                [("content-type", "application/x-protobuf")],
                Vec::<u8>::new(),
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let receiver = tokio::spawn(async move { axum::serve(listener, collector).await });

    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ("OTEL_SERVICE_NAME", "bookings-under-test"),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ];
    let args = ["--http", "127.0.0.1:0", "--audit"];
    let server = start_with_env(&args, &sqlite_url(&dir), &env).await;
    call(&server, "get_appointment", serde_json::json!({"id": 1})).await;
    server.terminate().await;
    receiver.abort();

    let bodies = received.lock().unwrap().concat();
    let has = |s: &str| bodies.windows(s.len()).any(|w| w == s.as_bytes());
    assert!(has("bookings-under-test"), "service.name exported");
    assert!(
        has("tools/call get_appointment"),
        "the call's span exported"
    );
    assert!(has("read_only_write"), "with its finding event");
}

/// Calls `tool` once over a real rmcp client on streamable HTTP; the call must succeed.
async fn call(server: &Process, tool: &'static str, arguments: serde_json::Value) {
    let transport = StreamableHttpClientTransport::from_uri(server.mcp_url());
    let client = ().serve(transport).await.expect("client connects");
    let params = CallToolRequestParams::new(tool)
        .with_arguments(arguments.as_object().cloned().unwrap_or_default());
    let answer = client.call_tool(params).await.expect("tools/call");
    assert_ne!(answer.is_error, Some(true), "{answer:?}");
    client.cancel().await.ok();
}

/// `url` with its database replaced by `database`.
fn with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url, String::new()),
    };
    let (scheme, rest) = base.split_once("://").expect("a URL");
    let host = rest.split_once('/').map_or(rest, |(h, _)| h);
    format!("{scheme}://{host}/{database}{query}")
}

/// Three replicas start at the same moment on one fresh PostgreSQL database: all come up
/// (the schema is created under an advisory lock) and the seed data is there once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_start_together_on_one_postgres_database() {
    let url = std::env::var("HINTAUDIT_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let connect = tokio::time::timeout(Duration::from_secs(5), sqlx::PgConnection::connect(&url));
    let mut admin = match connect.await {
        Ok(Ok(c)) => c,
        failed => {
            let why = match failed {
                Ok(Err(e)) => e.to_string(),
                _ => "timed out".to_owned(),
            };
            if hintaudit_test_support::required("HINTAUDIT_REQUIRE_PG") {
                panic!("PostgreSQL required but unreachable at {url}: {why}");
            }
            println!(
                "skipped: PostgreSQL unavailable: {url}: {why} (HINTAUDIT_REQUIRE_PG=1 fails instead)"
            );
            return;
        }
    };
    let name = format!("bookings_replicas_{}", std::process::id());
    let drop = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
    admin
        .execute(sqlx::AssertSqlSafe(drop.clone()))
        .await
        .expect("drop a leftover database");
    admin
        .execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .await
        .expect("create database");
    let db_url = with_database(&url, &name);

    // In a task of its own, so the database is dropped whatever happens; the processes are
    // killed when a panic drops them.
    let outcome = tokio::spawn(start_three_replicas(db_url)).await;
    admin
        .execute(sqlx::AssertSqlSafe(drop))
        .await
        .expect("drop database");
    if let Err(e) = outcome {
        std::panic::resume_unwind(e.into_panic());
    }
}

async fn start_three_replicas(db_url: String) {
    let args = ["--http", "127.0.0.1:0", "--audit"];
    let (a, b, c) = tokio::join!(
        start(&args, &db_url),
        start(&args, &db_url),
        start(&args, &db_url)
    );
    let mut check = sqlx::PgConnection::connect(&db_url).await.expect("connect");
    let patients: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM patients")
        .fetch_one(&mut check)
        .await
        .unwrap();
    let appointments: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM appointments")
        .fetch_one(&mut check)
        .await
        .unwrap();
    check.close().await.ok();
    assert_eq!((patients, appointments), (3, 4), "seeded once");
    let mut exported = Vec::new();
    for replica in [a, b, c] {
        exported.push(scrape(replica.metrics.unwrap(), VIOLATIONS).await);
        replica.terminate().await;
    }
    assert!(!exported[0].is_empty());
    assert!(
        exported.iter().all(|e| *e == exported[0]),
        "every replica exports the same zero series: {exported:#?}"
    );
}

#[test]
fn database_urls_are_rewritten() {
    let rows = [
        (
            "postgres://postgres@127.0.0.1:5432/test",
            "postgres://postgres@127.0.0.1:5432/x",
        ),
        (
            "postgres://u:p@h/test?sslmode=disable",
            "postgres://u:p@h/x?sslmode=disable",
        ),
        ("postgresql://h:5432", "postgresql://h:5432/x"),
    ];
    for (url, want) in rows {
        assert_eq!(with_database(url, "x"), want, "{url}");
    }
}
