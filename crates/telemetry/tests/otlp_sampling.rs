//! Head sampling end to end: a real rmcp client calls a real rmcp server whose tool runs its
//! statements through the audited SQLite pool, behind the HintAudit layer with the span maker
//! of a pipeline sampling at a ratio; spans go over OTLP/gRPC to a real receiver on loopback.
//!
//! What is checked: roots are kept at the ratio (not at ratio², which a second draw by the
//! SDK's sampler would give); a kept call exports its statement spans and an untraced call
//! none (no orphans); the client's sampled flag decides when it sends a `traceparent`.
//!
//! One test per binary: the tracing subscriber is process-global.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use hintaudit_rmcp::HintAuditLayer;
use hintaudit_sqlx::AuditedPool;
use hintaudit_telemetry::{OtelPipeline, OtlpProtocol, TracingConfig};
use hintaudit_test_support::mcp::connect;
use hintaudit_test_support::otlp::{flushed, hex, spans, start_receiver};
use opentelemetry_proto::tonic::trace::v1::Span;
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{CallToolRequestParams, RequestMetaObject};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use sqlx::Sqlite;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use tower::Layer;
use tracing_subscriber::layer::SubscriberExt;

#[derive(Debug, serde::Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct Note {
    body: String,
}

#[derive(Clone)]
#[allow(dead_code)] // `tool_router` is read by the code `#[tool_handler]` generates.
struct Notes {
    pool: AuditedPool<Sqlite>,
    tool_router: ToolRouter<Notes>,
}

#[tool_router]
impl Notes {
    #[tool(
        description = "Add a note",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = false
        )
    )]
    async fn add_note(&self, Parameters(note): Parameters<Note>) -> Result<String, String> {
        sqlx::query("INSERT INTO notes (body) VALUES (?)")
            .bind(note.body)
            .execute(&self.pool)
            .await
            .map_err(|e| e.to_string())?;
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM notes")
            .fetch_one(&self.pool)
            .await
            .map_err(|e| e.to_string())?;
        Ok(n.to_string())
    }
}

#[tool_handler]
impl ServerHandler for Notes {}

const ROOT_CALLS: usize = 400;
const CLIENT_CALLS: usize = 20;
const SAMPLED_TRACE: &str = "5a3b1ed0000000000000000000000001";
const UNSAMPLED_TRACE: &str = "0d5a3b1ed00000000000000000000002";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

fn call(body: &str, traceparent: Option<String>) -> CallToolRequestParams {
    let args = serde_json::json!({ "body": body });
    let mut params = CallToolRequestParams::new("add_note")
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    if let Some(tp) = traceparent {
        let mut meta = RequestMetaObject::new();
        meta.insert("traceparent".into(), tp.into());
        params.meta = Some(meta);
    }
    params
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn head_sampling_keeps_roots_at_the_ratio_with_their_statements_and_no_orphans() {
    let (receiver, addr) = start_receiver().await;
    let config = TracingConfig::disabled()
        .with_endpoint(format!("http://{addr}"))
        .with_protocol(OtlpProtocol::Grpc)
        .with_scheduled_delay(Duration::from_millis(50))
        .with_max_queue_size(100_000)
        .with_sample_ratio(0.5);
    let pipeline = OtelPipeline::new(&config).unwrap().expect("export is on");
    let subscriber = tracing_subscriber::registry()
        .with(tracing_subscriber::filter::LevelFilter::INFO)
        .with(pipeline.layer());
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let options = SqliteConnectOptions::new()
        .filename(dir.path().join("notes.db"))
        .create_if_missing(true);
    let pool = AuditedPool::<Sqlite>::options()
        .connect_with(SqlitePoolOptions::new(), options)
        .await
        .unwrap();
    sqlx::query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        .execute(pool.inner())
        .await
        .unwrap();
    let server = Notes {
        pool,
        tool_router: Notes::tool_router(),
    };
    let layer = HintAuditLayer::new().with_make_span(pipeline.make_span());
    let client = connect(layer.layer(server)).await;

    for i in 0..ROOT_CALLS {
        let answer = client.call_tool(call(&format!("root {i}"), None)).await;
        assert_eq!(answer.unwrap().is_error, Some(false), "root call {i}");
    }
    for (trace, flags) in [(SAMPLED_TRACE, "01"), (UNSAMPLED_TRACE, "00")] {
        for i in 0..CLIENT_CALLS {
            let tp = format!("00-{trace}-{CLIENT_SPAN}-{flags}");
            let answer = client
                .call_tool(call(&format!("{flags} {i}"), Some(tp)))
                .await;
            assert_eq!(
                answer.unwrap().is_error,
                Some(false),
                "client call {flags} {i}"
            );
        }
    }
    client.cancel().await.unwrap();

    let pipeline = flushed(pipeline).await;
    let stats = pipeline.export_stats();
    assert_eq!(stats.dropped, 0, "{stats:?}");

    let spans = spans(&receiver);
    let calls: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "tools/call add_note")
        .collect();
    let call_ids: HashSet<&[u8]> = calls.iter().map(|s| s.span_id.as_slice()).collect();
    let statements: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("INSERT") || s.name.starts_with("SELECT"))
        .collect();
    // Besides them, only rmcp's own session span (a root the SDK samples by itself).
    let others: Vec<&str> = spans
        .iter()
        .map(|s| s.name.as_str())
        .filter(|n| !n.starts_with("tools/call") && !n.starts_with("INSERT"))
        .filter(|n| !n.starts_with("SELECT") && *n != "serve_inner")
        .collect();
    assert!(others.is_empty(), "unexpected spans: {others:?}");

    // No orphans: every statement span hangs under an exported call span, two per call.
    let mut per_call: HashMap<&[u8], usize> = HashMap::new();
    for s in &statements {
        assert!(
            call_ids.contains(s.parent_span_id.as_slice()),
            "orphan statement span {}",
            s.name
        );
        *per_call.entry(s.parent_span_id.as_slice()).or_default() += 1;
    }
    for c in &calls {
        assert_eq!(
            per_call.get(c.span_id.as_slice()),
            Some(&2),
            "statements of a call"
        );
    }

    // The client's flag decides for calls that carry a traceparent.
    let in_trace = |trace: &str| calls.iter().filter(|s| hex(&s.trace_id) == trace).count();
    assert_eq!(in_trace(SAMPLED_TRACE), CLIENT_CALLS);
    assert_eq!(in_trace(UNSAMPLED_TRACE), 0);
    assert!(
        calls
            .iter()
            .filter(|s| hex(&s.trace_id) == SAMPLED_TRACE)
            .all(|s| hex(&s.parent_span_id) == CLIENT_SPAN)
    );

    // Roots at the ratio: 400 draws at 0.5 give 200 ± 10 (one standard deviation); a second
    // draw by the SDK (ratio²) would give 100 ± 9.
    let roots = calls.iter().filter(|s| s.parent_span_id.is_empty()).count();
    assert_eq!(roots + CLIENT_CALLS, calls.len());
    assert!(
        (150..=250).contains(&roots),
        "{roots} of {ROOT_CALLS} root calls kept"
    );
}
