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
//!
//! - this file: the variants, the rounds and `main`;
//! - server.rs: the MCP server measured (its two tools) and its SQLite file;
//! - clients.rs: the clients (HTTP on loopback, an in-process stream) and their workload;
//! - telemetry.rs: the OTLP receiver and the tracing layers the telemetry variants turn on;
//! - stats.rs: CPU time, the shuffled order, medians and quartiles;
//! - report.rs: the tables printed.

use std::time::Instant;

use hintaudit::core::{Judge, Policy};
use hintaudit::rmcp::HintAuditLayer;
use hintaudit::sqlx::AuditedPool;
use rmcp::RoleClient;
use rmcp::service::RunningService;
use sqlx::sqlite::SqlitePoolOptions;
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

mod clients;
mod report;
mod server;
mod stats;
mod telemetry;

use clients::{calls, client_for, client_http, concurrency, statements_audited, statements_bare};
use report::{print_spans_and_statements, print_variants};
use server::{Bench, Pool, options, setup};
use stats::{env_or, process_cpu_ns, shuffle};
use telemetry::{start_telemetry, telemetry_mode};

/// The index of the audited variant (layer + audited pool) in `variants`.
const AUDITED: usize = 2;

/// How many variants `main` builds (see `make` there).
const VARIANTS: usize = 11;

/// The index of the bare server over streamable HTTP, the reference of the HTTP variants.
const HTTP_BARE: usize = 8;

/// Statements per tool call: `get` runs 2, `touch` runs 3.
const STATEMENTS: [(&str, usize); 2] = [("get", 2), ("touch", 3)];

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
