//! Overhead of auditing: the same database-backed tool workload through a bare rmcp server on
//! a plain sqlx pool, and through the same server on hintaudit's audited pool wrapped by the
//! layer, in one run, on a file-backed SQLite database.
//!
//! Variants: bare; a control (the bare server again, on a pool of its own: what separates two
//! identical variants is noise); audited (layer + audited pool, no telemetry); its two parts
//! alone (the layer over the plain pool, the audited pool with no layer); and with telemetry
//! on: the Prometheus recorder alone (tracing disabled), and the recorder with the
//! OpenTelemetry spans (server span, statement spans, finding events) exported over OTLP to a
//! receiver on loopback (see `start_telemetry`), for every trace and for a sample
//! (HINTAUDIT_BENCH_SAMPLE, default 0.1; head-sampled by the pipeline's span maker, so that
//! unsampled calls build no spans). The bare server, the audited one and the audited one with
//! the Prometheus recorder are also served over streamable HTTP on loopback, as the demo serves
//! them, and compared with the bare server on that transport. Every variant has a pool of its
//! own.
//!
//! The machine is noisy, so rounds shuffle the order of the variants and each variant's ratio
//! to bare is the median of its per-round ratios to that round's bare run, in wall time and in
//! CPU time of the whole process. Also printed: the added time per statement, and single
//! SELECT statements on both pools.
//!
//! The calls go one after another by default; HINTAUDIT_BENCH_CONCURRENCY=k keeps k in flight
//! (throughput under load: the SQLite pool has 4 connections, the runtime 2 worker threads).
//! Besides the median ratio, each variant prints the middle half of its per-round ratios: on
//! a noisy machine that spread, and the control's distance from 1.0, say how far to trust it.
//!
//! `cargo bench --bench overhead` (HINTAUDIT_BENCH_CALLS calls per round, default 300;
//! HINTAUDIT_BENCH_ROUNDS rounds, default 15). HINTAUDIT_BENCH_PROFILE=i runs variant i alone,
//! for a profiler: under `valgrind --tool=callgrind`, the difference between two runs with
//! different HINTAUDIT_BENCH_CALLS gives instructions per call without the set-up.

use std::time::{Duration, Instant};

use hintaudit::core::{CallScope, Judge, Policy};
use hintaudit::rmcp::HintAuditLayer;
use hintaudit::sqlx::AuditedPool;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolRequestParams;
use rmcp::schemars::{self, JsonSchema};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
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
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::{Registry, reload};

mod telemetry;
use telemetry::{start_telemetry, telemetry_mode};

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

/// The index of the audited variant (layer + audited pool) in `variants`.
const AUDITED: usize = 2;

/// How many variants `main` builds (see `make` there).
const VARIANTS: usize = 11;

/// The index of the bare server over streamable HTTP, the reference of the HTTP variants.
const HTTP_BARE: usize = 8;

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

/// A connected client for a server served over streamable HTTP on loopback (axum, rmcp's
/// session manager, rmcp's reqwest client), as the demo and most deployments serve it.
async fn client_http<S: ServerHandler + Clone + Send + Sync + 'static>(
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
async fn client_for<S: ServerHandler>(server: S) -> RunningService<RoleClient, ()> {
    let (a, b) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(a).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(b).await.expect("client")
}

/// Calls in flight at once (HINTAUDIT_BENCH_CONCURRENCY, default 1: one call after another).
fn concurrency() -> usize {
    env_or("HINTAUDIT_BENCH_CONCURRENCY", 1_usize).max(1)
}

/// `n` calls, alternately `get` and `touch`, from [`concurrency`] loops over the one client
/// session (rmcp's client sends a request while others are pending; the server runs each in a
/// task of its own). The loops run in the caller's task, the runtime's main thread, so that
/// the client takes no worker thread from the server.
async fn calls(client: &RunningService<RoleClient, ()>, n: usize) -> Duration {
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

/// Which tracing layer of the telemetry variant is on: 0 none (tracing is off, as if no
/// subscriber were installed), 1 every trace exported, 2 a sample of traces.
static TELEMETRY_MODE: AtomicU8 = AtomicU8::new(0);

/// The global level filter: `OFF` in mode 0, so that spans are not even created (per-layer
/// filters that all say no still let the registry create them), `INFO` otherwise.
static LEVEL: OnceLock<reload::Handle<LevelFilter, Registry>> = OnceLock::new();

/// One way of serving the workload: a client of one server, the tracing layer that is on
/// while it runs (see [`telemetry_mode`]), and the OTLP pipeline whose queued spans are
/// flushed at the end of each of its rounds.
struct Variant {
    label: &'static str,
    /// The variant whose time is 1.0 for this one: the bare server on the same transport.
    base: usize,
    client: RunningService<RoleClient, ()>,
    mode: u8,
    pipeline: Option<Arc<OtelPipeline>>,
}

/// One round of `n` calls of `v`: wall time and CPU time of the whole process (every thread:
/// client, server, SQLite workers, the exporter and the receiver), both including the flush
/// of the round's spans: exporting is part of their cost.
async fn round(v: &Variant, n: usize) -> (f64, f64) {
    let cpu = process_cpu_ns();
    let start = Instant::now();
    telemetry_mode(v.mode);
    calls(&v.client, n).await;
    telemetry_mode(0);
    if let Some(p) = v.pipeline.clone() {
        tokio::task::spawn_blocking(move || p.force_flush())
            .await
            .unwrap();
    }
    let wall = start.elapsed().as_secs_f64();
    let cpu = (process_cpu_ns() - cpu) as f64 / 1e9;
    (wall / n as f64, cpu / n as f64)
}

/// Fisher-Yates with xorshift64: a fixed, reproducible sequence of orders.
fn shuffle(order: &mut [usize], seed: &mut u64) {
    for i in (1..order.len()).rev() {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        order.swap(i, (*seed % (i as u64 + 1)) as usize);
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The 25th and 75th percentiles (nearest rank): the spread of a variant's per-round ratios.
fn quartiles(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 4], v[(3 * v.len()) / 4])
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What the variants are built from: the database file, the Prometheus recorder and the
/// OTLP pipelines (all traces, sampled; none when no variant here exports).
struct Parts {
    path: std::path::PathBuf,
    metrics: PrometheusRecorder,
    pipeline: Option<Arc<OtelPipeline>>,
    sampled: Option<Arc<OtelPipeline>>,
}

fn judge() -> Arc<Judge> {
    Arc::new(Judge::new(Policy::default()))
}

fn variant(
    label: &'static str,
    client: RunningService<RoleClient, ()>,
    mode: u8,
    pipeline: Option<Arc<OtelPipeline>>,
) -> Variant {
    Variant {
        label,
        base: 0,
        client,
        mode,
        pipeline,
    }
}

/// `server` wrapped by `layer`, over the in-process transport.
async fn audit(
    label: &'static str,
    layer: HintAuditLayer,
    server: Bench,
    mode: u8,
    pipeline: Option<Arc<OtelPipeline>>,
) -> Variant {
    let server = layer.layer(server);
    variant(label, client_for(server).await, mode, pipeline)
}

/// A variant over streamable HTTP: its base is the bare server on that transport.
fn http(label: &'static str, client: RunningService<RoleClient, ()>) -> Variant {
    Variant {
        label,
        base: HTTP_BARE,
        client,
        mode: 0,
        pipeline: None,
    }
}

fn pipelined(p: &Option<Arc<OtelPipeline>>) -> Arc<OtelPipeline> {
    p.clone().expect("telemetry started")
}

impl Parts {
    // Every variant has a pool of its own, so that no pool's connections (page caches, WAL
    // positions) favour one variant; the control measures what remains of that.
    async fn bare(&self) -> Bench {
        Bench {
            pool: Pool::Bare(
                SqlitePoolOptions::new()
                    .max_connections(4)
                    .connect_with(options(&self.path))
                    .await
                    .unwrap(),
            ),
        }
    }

    async fn audited(&self) -> Bench {
        Bench {
            pool: Pool::Audited(
                AuditedPool::options()
                    .connect_with(
                        SqlitePoolOptions::new().max_connections(4),
                        options(&self.path),
                    )
                    .await
                    .unwrap(),
            ),
        }
    }

    fn plain(&self) -> HintAuditLayer {
        HintAuditLayer::new().with_judge(judge()).with_recorder(())
    }

    /// The sampled variants take their span maker from their pipeline: head sampling.
    fn telemetry(&self, make_span: OtelMakeSpan) -> HintAuditLayer {
        HintAuditLayer::new()
            .with_judge(judge())
            .with_recorder(self.metrics.clone())
            .with_make_span(make_span)
    }

    /// Variant `i` (of [`VARIANTS`]).
    async fn make(&self, i: usize) -> Variant {
        match i {
            0..5 => self.make_plain(i).await,
            5..HTTP_BARE => self.make_telemetry(i).await,
            _ => self.make_http(i).await,
        }
    }

    /// Variants 0 to 4: no telemetry, over the in-process transport.
    async fn make_plain(&self, i: usize) -> Variant {
        match i {
            0 => variant(
                "bare server, plain sqlx pool",
                client_for(self.bare().await).await,
                0,
                None,
            ),
            1 => variant(
                "control: bare server, 2nd plain pool",
                client_for(self.bare().await).await,
                0,
                None,
            ),
            2 => {
                audit(
                    "audited: layer + audited pool",
                    self.plain(),
                    self.audited().await,
                    0,
                    None,
                )
                .await
            }
            3 => {
                audit(
                    "  part: the layer over the plain pool",
                    self.plain(),
                    self.bare().await,
                    0,
                    None,
                )
                .await
            }
            _ => variant(
                "  part: the audited pool, no layer",
                client_for(self.audited().await).await,
                0,
                None,
            ),
        }
    }

    /// Variants 5 to 7: the Prometheus recorder, then spans, over the in-process transport.
    async fn make_telemetry(&self, i: usize) -> Variant {
        let (pipes, samples) = (&self.pipeline, &self.sampled);
        match i {
            5 => {
                audit(
                    "audited + Prometheus recorder",
                    self.telemetry(OtelMakeSpan::new()),
                    self.audited().await,
                    0,
                    None,
                )
                .await
            }
            6 => {
                audit(
                    "audited + recorder + spans, all traces",
                    self.telemetry(pipelined(pipes).make_span()),
                    self.audited().await,
                    1,
                    pipes.clone(),
                )
                .await
            }
            _ => {
                audit(
                    "audited + recorder + spans, sampled",
                    self.telemetry(pipelined(samples).make_span()),
                    self.audited().await,
                    2,
                    samples.clone(),
                )
                .await
            }
        }
    }

    /// Variants 8 to 10: over streamable HTTP on loopback.
    async fn make_http(&self, i: usize) -> Variant {
        match i {
            8 => http(
                "streamable HTTP: bare server",
                client_http(self.bare().await).await,
            ),
            9 => http(
                "streamable HTTP: audited",
                client_http(self.plain().layer(self.audited().await)).await,
            ),
            _ => http(
                "streamable HTTP: audited + Prometheus",
                client_http(
                    self.telemetry(OtelMakeSpan::new())
                        .layer(self.audited().await),
                )
                .await,
            ),
        }
    }
}

/// Each variant's wall and CPU time per call in each round, and single statements' time on
/// both pools.
struct Rounds {
    wall: Vec<Vec<f64>>,
    cpu: Vec<Vec<f64>>,
    statements: (Vec<f64>, Vec<f64>),
}

/// Warms every variant up, then runs `rounds` rounds of `calls_per_round` calls of each.
async fn run_rounds(
    variants: &[Variant],
    path: &std::path::Path,
    calls_per_round: usize,
    rounds: usize,
) -> Rounds {
    let bare_pool = SqlitePoolOptions::new()
        .max_connections(4)
        .connect_with(options(path))
        .await
        .unwrap();
    let audited_pool = AuditedPool::options()
        .connect_with(SqlitePoolOptions::new().max_connections(4), options(path))
        .await
        .unwrap();
    // Warm up every variant (statement caches, hooks, history, exporters).
    for v in variants {
        round(v, 100).await;
    }
    // Each round runs the variants in a new random order, so that drift favours none and
    // no variant always follows the same one (whose leftovers, an exporter's say, it would
    // pay for; with a fixed rotation the control read 1.005 to 1.030); each round's ratio
    // pairs a variant with that round's bare run.
    let mut order: Vec<usize> = (0..variants.len()).collect();
    let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
    let mut out = Rounds {
        wall: vec![Vec::new(); variants.len()],
        cpu: vec![Vec::new(); variants.len()],
        statements: (Vec::new(), Vec::new()),
    };
    for r in 0..rounds {
        shuffle(&mut order, &mut seed);
        for &i in &order {
            let (w, c) = round(&variants[i], calls_per_round).await;
            out.wall[i].push(w);
            out.cpu[i].push(c);
        }
        let n = calls_per_round * 2;
        let statements = &mut out.statements;
        if r % 2 == 0 {
            statements
                .0
                .push(statements_bare(&bare_pool, n).await.as_secs_f64() / n as f64);
            statements
                .1
                .push(statements_audited(&audited_pool, n).await.as_secs_f64() / n as f64);
        } else {
            statements
                .1
                .push(statements_audited(&audited_pool, n).await.as_secs_f64() / n as f64);
            statements
                .0
                .push(statements_bare(&bare_pool, n).await.as_secs_f64() / n as f64);
        }
    }
    out
}

/// Prints each variant's times and ratios to its base, then the added time per statement.
fn print_variants(variants: &[Variant], r: &Rounds, workload: &str) {
    let per_round = |times: &[Vec<f64>], i: usize| -> Vec<f64> {
        times[variants[i].base]
            .iter()
            .zip(&times[i])
            .map(|(b, v)| b / v)
            .collect()
    };
    println!("{workload}");
    println!(
        "ratio = throughput vs the bare server on the same transport (bare time / variant time), median of per-round ratios, and the middle half of them (25th to 75th percentile); target >= 0.97"
    );
    println!(
        "{:<42} {:>12} {:>7} {:>13} {:>12} {:>9}",
        "variant", "wall us/call", "ratio", "middle half", "CPU us/call", "CPU ratio"
    );
    for (i, v) in variants.iter().enumerate() {
        let (q1, q3) = quartiles(per_round(&r.wall, i));
        println!(
            "{:<42} {:>12.1} {:>7.3} {:>13} {:>12.1} {:>9.3}",
            v.label,
            median(r.wall[i].clone()) * 1e6,
            median(per_round(&r.wall, i)),
            format!("{q1:.3}-{q3:.3}"),
            median(r.cpu[i].clone()) * 1e6,
            median(per_round(&r.cpu, i))
        );
    }
    let statements_per_call =
        STATEMENTS.iter().map(|(_, n)| *n as f64).sum::<f64>() / STATEMENTS.len() as f64;
    let added = (median(r.wall[AUDITED].clone()) - median(r.wall[0].clone())) / statements_per_call;
    println!(
        "added time per statement (whole audited call): {:.2} us",
        added * 1e6
    );
}

/// Prints the spans exported and the single statements' times.
fn print_spans_and_statements(r: &Rounds, pipelines: [&OtelPipeline; 2]) {
    for p in pipelines {
        let stats = p.export_stats();
        println!(
            "spans exported {}, dropped {}",
            stats.exported, stats.dropped
        );
    }
    let (b, a) = (
        median(r.statements.0.clone()),
        median(r.statements.1.clone()),
    );
    let ratio = median(
        r.statements
            .0
            .iter()
            .zip(&r.statements.1)
            .map(|(b, a)| b / a)
            .collect(),
    );
    println!(
        "single SELECT statements: plain pool {:.1} us, audited pool in a call scope {:.1} us; ratio {ratio:.3}, added {:.2} us/statement",
        b * 1e6,
        a * 1e6,
        (a - b) * 1e6
    );
}

/// The bench: every variant in shuffled rounds, or the one `profiled` alone.
async fn run(profiled: Option<usize>) {
    let calls_per_round: usize = env_or("HINTAUDIT_BENCH_CALLS", 300);
    let rounds: usize = env_or("HINTAUDIT_BENCH_ROUNDS", 15);
    let concurrency = concurrency();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.db");
    setup(&path).await;
    // The OTLP pipelines and their receiver only where a variant exports: their batch
    // processors' timers run by the clock, so a profiled variant that does not export
    // would count their work in proportion to its run time.
    let exporting = profiled.is_none_or(|i| i == 6 || i == 7);
    let (pipeline, sampled, receiver) = if exporting {
        let (p, s, r) = start_telemetry().await;
        (Some(Arc::new(p)), Some(Arc::new(s)), r)
    } else {
        (None, None, "nowhere (no variant here exports)")
    };
    let parts = Parts {
        path,
        metrics: PrometheusRecorder::new(),
        pipeline,
        sampled,
    };

    // For profilers (valgrind --tool=callgrind, perf): one variant alone, warm-up then
    // HINTAUDIT_BENCH_CALLS calls; compare two call counts to leave out the set-up.
    if let Some(i) = profiled {
        let v = parts.make(i).await;
        round(&v, 100).await;
        round(&v, calls_per_round).await;
        println!("profiled: {} x {calls_per_round} calls", v.label);
        return;
    }
    let mut variants = Vec::with_capacity(VARIANTS);
    for i in 0..VARIANTS {
        variants.push(parts.make(i).await);
    }
    assert_eq!(variants[HTTP_BARE].label, "streamable HTTP: bare server");
    let (pipeline, sampled) = (pipelined(&parts.pipeline), pipelined(&parts.sampled));
    let r = run_rounds(&variants, &parts.path, calls_per_round, rounds).await;
    let workload = format!(
        "workload: {calls_per_round} tool calls x {rounds} rounds per variant, {concurrency} in flight, over an in-process MCP transport (streamable HTTP on loopback where the label says), file-backed SQLite (WAL); spans go {receiver}"
    );
    print_variants(&variants, &r, &workload);
    print_spans_and_statements(&r, [&pipeline, &sampled]);
    for v in variants {
        v.client.cancel().await.ok();
    }
    let text = hintaudit_telemetry::encode_text(parts.metrics.registry());
    println!(
        "telemetry: /metrics exposition {} bytes, {} lines",
        text.len(),
        text.lines().count()
    );
    drop(parts);
    for p in [pipeline, sampled] {
        if let Ok(p) = Arc::try_unwrap(p) {
            tokio::task::spawn_blocking(move || drop(p)).await.ok();
        }
    }
}

fn main() {
    // Profiled alone (HINTAUDIT_BENCH_PROFILE), the variant runs on one thread: tokio's
    // worker threads spin and park differently from run to run, which moved callgrind's
    // totals by thousands of instructions per call; on one thread they repeat.
    let profiled = std::env::var("HINTAUDIT_BENCH_PROFILE")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .map(|i| i.min(VARIANTS - 1));
    let runtime = if profiled.is_some() {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(2);
        b
    }
    .enable_all()
    .build()
    .unwrap();
    runtime.block_on(run(profiled));
}
