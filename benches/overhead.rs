//! Overhead of auditing: the same database-backed tool workload through a bare rmcp server on
//! a plain sqlx pool, and through the same server on hintaudit's audited pool wrapped by the
//! layer, in one run, on a file-backed SQLite database.
//!
//! Prints the throughput ratio (audited/bare, target >= 0.97) and the added time per
//! statement, for whole tool calls over an in-process MCP transport and for bare statements.
//! Rounds alternate bare and audited, and medians are reported, because the machine is noisy.
//!
//! A third server runs the same workload with telemetry on, in two kinds of rounds: the
//! Prometheus recorder alone (tracing disabled), and the recorder with the OpenTelemetry spans
//! (server span, statement spans, finding events) exported over OTLP to a receiver on loopback
//! (see `start_telemetry`), for every trace and for a sample (HINTAUDIT_BENCH_SAMPLE, default
//! 0.1). Each ratio to bare is printed, in wall time and in CPU time of the whole process.
//!
//! `cargo bench --bench overhead` (set HINTAUDIT_BENCH_CALLS to change the calls per round).

use std::time::{Duration, Instant};

use hintaudit::core::{CallScope, Judge, Policy};
use hintaudit::rmcp::HintAuditLayer;
use hintaudit::sqlx::AuditedPool;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolRequestParams;
use rmcp::schemars::{self, JsonSchema};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde::Deserialize;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use sqlx::{Sqlite, SqlitePool};
use tower::Layer;

use hintaudit_telemetry::{
    OtelMakeSpan, OtelPipeline, OtlpProtocol, PrometheusRecorder, TracingConfig,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

#[derive(Debug, Clone)]
enum Pool {
    Bare(SqlitePool),
    Audited(AuditedPool<Sqlite>),
}

macro_rules! on_pool {
    ($p:expr, $pool:ident => $body:expr) => {
        match $p {
            Pool::Bare($pool) => $body,
            Pool::Audited($pool) => $body,
        }
    };
}

#[derive(Debug, Clone)]
struct Bench {
    pool: Pool,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Id {
    id: i64,
}

/// Statements per tool call: `get` runs 2, `touch` runs 3.
const STATEMENTS: [(&str, usize); 2] = [("get", 2), ("touch", 3)];

#[tool_router]
impl Bench {
    #[tool(
        description = "Read an item and its tag.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get(&self, Parameters(Id { id }): Parameters<Id>) -> Result<String, String> {
        let name: String = on_pool!(&self.pool, p => sqlx::query_scalar("SELECT name FROM items WHERE id = $1").bind(id).fetch_one(p).await)
            .map_err(|e| e.to_string())?;
        let tag: Option<String> = on_pool!(&self.pool, p => sqlx::query_scalar("SELECT tag FROM tags WHERE item_id = $1").bind(id).fetch_optional(p).await)
            .map_err(|e| e.to_string())?;
        Ok(format!("{name} {tag:?}"))
    }

    #[tool(
        description = "Update an item.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn touch(&self, Parameters(Id { id }): Parameters<Id>) -> Result<String, String> {
        on_pool!(&self.pool, p => sqlx::query("UPDATE items SET name = 'item ' || $1 WHERE id = $1").bind(id).execute(p).await)
            .map_err(|e| e.to_string())?;
        on_pool!(&self.pool, p => sqlx::query("INSERT INTO tags (item_id, tag) VALUES ($1, 'seen') ON CONFLICT (item_id) DO UPDATE SET tag = excluded.tag").bind(id).execute(p).await)
            .map_err(|e| e.to_string())?;
        let n: i64 = on_pool!(&self.pool, p => sqlx::query_scalar("SELECT COUNT(*) FROM tags").fetch_one(p).await)
            .map_err(|e| e.to_string())?;
        Ok(n.to_string())
    }
}

#[tool_handler]
impl ServerHandler for Bench {}

fn options(path: &std::path::Path) -> SqliteConnectOptions {
    SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
}

async fn setup(path: &std::path::Path) {
    let pool = SqlitePool::connect_with(options(path)).await.unwrap();
    for sql in [
        "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
        "CREATE TABLE tags (item_id INTEGER PRIMARY KEY, tag TEXT NOT NULL)",
        "INSERT INTO items (id, name) SELECT value, 'item ' || value FROM generate_series(1, 1000)",
    ] {
        if sqlx::query(sql).execute(&pool).await.is_err() {
            // Older SQLite without generate_series: insert one by one.
            for i in 1..=1000 {
                sqlx::query("INSERT OR IGNORE INTO items (id, name) VALUES ($1, 'item ' || $1)")
                    .bind(i)
                    .execute(&pool)
                    .await
                    .unwrap();
            }
        }
    }
    pool.close().await;
}

/// A connected client for a server served over an in-process duplex stream.
async fn client_for<S: ServerHandler>(server: S) -> RunningService<RoleClient, ()> {
    let (a, b) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(a).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(b).await.expect("client")
}

async fn calls(client: &RunningService<RoleClient, ()>, n: usize) -> Duration {
    let start = Instant::now();
    for i in 0..n {
        let tool = if i % 2 == 0 { "get" } else { "touch" };
        let args = serde_json::json!({ "id": 1 + (i % 1000) as i64 });
        let params =
            CallToolRequestParams::new(tool).with_arguments(args.as_object().unwrap().clone());
        let r = client.call_tool(params).await.expect("call");
        assert_ne!(r.is_error, Some(true));
    }
    start.elapsed()
}

async fn statements_bare(pool: &SqlitePool, n: usize) -> Duration {
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

async fn statements_audited(pool: &AuditedPool<Sqlite>, n: usize) -> Duration {
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

/// CPU time spent so far by every thread of this process, in ns (Linux `schedstat`; 0
/// elsewhere).
fn process_cpu_ns() -> u128 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u128>().ok())
        .sum()
}

/// Which tracing layer of the telemetry variant is on: 0 none (the bare and audited rounds run
/// with tracing disabled, as before), 1 every trace exported, 2 a sample of traces.
static TELEMETRY_MODE: AtomicU8 = AtomicU8::new(0);

fn telemetry_mode(mode: u8) {
    TELEMETRY_MODE.store(mode, Ordering::SeqCst);
}

/// A filter that is on while [`TELEMETRY_MODE`] is `mode`; dynamic: evaluated per span, never
/// cached per callsite.
fn when<S>(mode: u8) -> impl tracing_subscriber::layer::Filter<S> {
    tracing_subscriber::filter::dynamic_filter_fn(move |_, _| {
        TELEMETRY_MODE.load(Ordering::Relaxed) == mode
    })
}

/// The fraction of traces the sampled rounds keep (HINTAUDIT_BENCH_SAMPLE, default 0.1).
fn sample_ratio() -> f64 {
    std::env::var("HINTAUDIT_BENCH_SAMPLE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.1)
}

/// An OTLP/gRPC receiver on loopback that decodes and discards spans, counting them.
#[derive(Clone, Default)]
struct Receiver(Arc<AtomicUsize>);

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let spans: usize = request
            .get_ref()
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .map(|s| s.spans.len())
            .sum();
        self.0.fetch_add(spans, Ordering::Relaxed);
        Ok(tonic::Response::new(Default::default()))
    }
}

/// Starts a receiver on loopback and installs the global tracing subscriber: the OTLP
/// pipelines' layers (every trace; a sample), each enabled only while [`telemetry_mode`] says. `HINTAUDIT_BENCH_OTLP=grpc`
/// exports over OTLP/gRPC to a receiver that decodes every span (its cost lands on the same
/// two cores); the default exports over OTLP/HTTP (protobuf) to a receiver that reads and
/// discards the bodies, standing in for a collector on another machine.
async fn start_telemetry() -> (OtelPipeline, OtelPipeline, &'static str) {
    use tracing_subscriber::{Layer, layer::SubscriberExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let grpc = std::env::var("HINTAUDIT_BENCH_OTLP").is_ok_and(|v| v == "grpc");
    let (protocol, what) = if grpc {
        let service = TraceServiceServer::new(Receiver::default());
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
        );
        (
            OtlpProtocol::Grpc,
            "OTLP/gRPC to a decoding loopback receiver",
        )
    } else {
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(|body: axum::body::Bytes| async move {
                std::hint::black_box(body.len());
                [(axum::http::header::CONTENT_TYPE, "application/x-protobuf")]
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
        (
            OtlpProtocol::HttpProtobuf,
            "OTLP/HTTP to a discarding loopback receiver",
        )
    };
    let config = TracingConfig::disabled()
        .with_endpoint(format!("http://{addr}"))
        .with_protocol(protocol);
    let full = OtelPipeline::new(&config).unwrap().expect("export on");
    let sampled = OtelPipeline::new(&config.with_sample_ratio(sample_ratio()))
        .unwrap()
        .expect("export on");
    let info = tracing_subscriber::filter::LevelFilter::INFO;
    let subscriber = tracing_subscriber::registry()
        .with(full.layer().with_filter(info).with_filter(when(1)))
        .with(sampled.layer().with_filter(info).with_filter(when(2)));
    tracing::subscriber::set_global_default(subscriber).unwrap();
    (full, sampled, what)
}

/// Telemetry rounds: tracing on (`mode`) for the calls, then queued spans flushed outside the
/// timing.
async fn calls_with_telemetry(
    client: &RunningService<RoleClient, ()>,
    n: usize,
    pipeline: &Arc<OtelPipeline>,
    mode: u8,
) -> Duration {
    telemetry_mode(mode);
    let took = calls(client, n).await;
    telemetry_mode(0);
    let p = pipeline.clone();
    tokio::task::spawn_blocking(move || p.force_flush())
        .await
        .unwrap();
    took
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let calls_per_round: usize = std::env::var("HINTAUDIT_BENCH_CALLS").ok().and_then(|v| v.parse().ok()).unwrap_or(400);
        let rounds = 7;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench.db");
        setup(&path).await;

        let bare_pool = SqlitePoolOptions::new().max_connections(4).connect_with(options(&path)).await.unwrap();
        let audited_pool = AuditedPool::connect_with(SqlitePoolOptions::new().max_connections(4), options(&path)).await.unwrap();
        let bare = client_for(Bench { pool: Pool::Bare(bare_pool.clone()) }).await;
        let judge = std::sync::Arc::new(Judge::new(Policy::default()));
        let audited = client_for(HintAuditLayer::new().with_judge(judge).with_recorder(()).layer(Bench { pool: Pool::Audited(audited_pool.clone()) })).await;
        let (pipeline, sampled, receiver) = start_telemetry().await;
        let (pipeline, sampled) = (Arc::new(pipeline), Arc::new(sampled));
        let metrics = PrometheusRecorder::new();
        let telemetry = client_for(
            HintAuditLayer::new()
                .with_judge(std::sync::Arc::new(Judge::new(Policy::default())))
                .with_recorder(metrics.clone())
                .with_make_span(OtelMakeSpan::new())
                .layer(Bench { pool: Pool::Audited(audited_pool.clone()) }),
        )
        .await;

        // Warm up both (statement caches, hooks, history).
        calls(&bare, 100).await;
        calls(&audited, 100).await;
        calls_with_telemetry(&telemetry, 100, &pipeline, 1).await;
        calls_with_telemetry(&telemetry, 100, &sampled, 2).await;

        let (mut tb, mut ta, mut sb, mut sa, mut tm, mut tt) = (vec![], vec![], vec![], vec![], vec![], vec![]);
        let mut ts = vec![];
        // CPU time of the whole process (every thread: client, server, SQLite workers, the
        // exporter and the receiver) per variant: steadier than wall time on a busy machine.
        let mut cpu: [Vec<u128>; 5] = Default::default();
        for round in 0..rounds {
            // Alternate the order so drift favours neither.
            if round % 2 == 0 {
                let c = process_cpu_ns();
                tb.push(calls(&bare, calls_per_round).await);
                cpu[0].push(process_cpu_ns() - c);
                let c = process_cpu_ns();
                ta.push(calls(&audited, calls_per_round).await);
                cpu[1].push(process_cpu_ns() - c);
            } else {
                let c = process_cpu_ns();
                ta.push(calls(&audited, calls_per_round).await);
                cpu[1].push(process_cpu_ns() - c);
                let c = process_cpu_ns();
                tb.push(calls(&bare, calls_per_round).await);
                cpu[0].push(process_cpu_ns() - c);
            }
            let c = process_cpu_ns();
            tm.push(calls(&telemetry, calls_per_round).await);
            cpu[2].push(process_cpu_ns() - c);
            // Includes flushing this round's spans: exporting is part of their cost.
            let c = process_cpu_ns();
            tt.push(calls_with_telemetry(&telemetry, calls_per_round, &pipeline, 1).await);
            cpu[3].push(process_cpu_ns() - c);
            let c = process_cpu_ns();
            ts.push(calls_with_telemetry(&telemetry, calls_per_round, &sampled, 2).await);
            cpu[4].push(process_cpu_ns() - c);
            sb.push(statements_bare(&bare_pool, calls_per_round * 5).await);
            sa.push(statements_audited(&audited_pool, calls_per_round * 5).await);
        }
        let per_call = |d: Duration| d.as_secs_f64() / calls_per_round as f64;
        let statements_per_call = STATEMENTS.iter().map(|(_, n)| *n as f64).sum::<f64>() / STATEMENTS.len() as f64;
        let (b, a) = (per_call(median(tb)), per_call(median(ta)));
        println!("workload: {calls_per_round} tool calls x {rounds} rounds over an in-process MCP transport, file-backed SQLite (WAL)");
        println!("tool calls: bare {:.1} us/call, audited {:.1} us/call", b * 1e6, a * 1e6);
        println!("throughput ratio (audited/bare): {:.3}   (target >= 0.97)", b / a);
        println!("added time per statement (whole call): {:.2} us", (a - b) / statements_per_call * 1e6);
        let (m, t, ss) = (per_call(median(tm)), per_call(median(tt)), per_call(median(ts)));
        let exported = pipeline.export_stats();
        println!(
            "audited + Prometheus recorder: {:.1} us/call, ratio to bare {:.3} (target >= 0.97), {:+.2} us/call over audited",
            m * 1e6,
            b / m,
            (m - a) * 1e6
        );
        println!(
            "audited + Prometheus recorder + spans ({receiver}): {:.1} us/call, ratio to bare {:.3} (target >= 0.97), {:+.2} us/call over audited; spans exported {}, dropped {}",
            t * 1e6,
            b / t,
            (t - a) * 1e6,
            exported.exported,
            exported.dropped
        );
        let exported = sampled.export_stats();
        println!(
            "audited + Prometheus recorder + spans, {:.0}% of traces sampled: {:.1} us/call, ratio to bare {:.3} (target >= 0.97), {:+.2} us/call over audited; spans exported {}, dropped {}",
            sample_ratio() * 100.0,
            ss * 1e6,
            b / ss,
            (ss - a) * 1e6,
            exported.exported,
            exported.dropped
        );
        let cpu_us: Vec<f64> = cpu
            .into_iter()
            .map(|mut v| {
                v.sort();
                v[v.len() / 2] as f64 / calls_per_round as f64 / 1e3
            })
            .collect();
        println!(
            "CPU per call, all threads: bare {:.1} us, audited {:.1} us, + recorder {:.1} us, + recorder and spans {:.1} us, sampled {:.1} us; CPU ratios to bare: {:.3}, {:.3}, {:.3}, {:.3}",
            cpu_us[0],
            cpu_us[1],
            cpu_us[2],
            cpu_us[3],
            cpu_us[4],
            cpu_us[0] / cpu_us[1],
            cpu_us[0] / cpu_us[2],
            cpu_us[0] / cpu_us[3],
            cpu_us[0] / cpu_us[4]
        );
        let n = (calls_per_round * 5) as f64;
        let (b, a) = (median(sb).as_secs_f64() / n, median(sa).as_secs_f64() / n);
        println!("bare statements: plain pool {:.1} us, audited pool in a call scope {:.1} us", b * 1e6, a * 1e6);
        println!("statement throughput ratio (audited/bare): {:.3}; added {:.2} us/statement", b / a, (a - b) * 1e6);
        bare.cancel().await.ok();
        audited.cancel().await.ok();
        telemetry.cancel().await.ok();
        let text = hintaudit_telemetry::encode_text(metrics.registry());
        println!("telemetry: /metrics exposition {} bytes, {} lines", text.len(), text.lines().count());
        for p in [pipeline, sampled] {
            if let Ok(p) = Arc::try_unwrap(p) {
                tokio::task::spawn_blocking(move || drop(p)).await.ok();
            }
        }
    });
}
