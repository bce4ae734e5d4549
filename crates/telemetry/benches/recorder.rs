//! What telemetry adds per tool call, in nanoseconds:
//!
//! - the Prometheus recorder for one typical call (2 statements, 1 committed row change, no
//!   finding), for a declared tool and for an unknown one, on 1 and 2 threads;
//! - the tracing spans of one call (a `tools/call` server span, two statement child spans and
//!   one finding event) through tracing-opentelemetry and the OTLP gRPC exporter, pointed at a
//!   local receiver on loopback, against the same spans with no subscriber.
//!
//! Times are CPU time of the calling thread (Linux), so that other load on the machine does
//! not show; the exporter's own thread is not counted in them.
//!
//! `cargo bench -p hintaudit-telemetry --bench recorder` (HINTAUDIT_BENCH_ITERS changes the
//! iterations per measurement).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hintaudit_core::*;
use hintaudit_telemetry::{
    OtelPipeline, OtlpProtocol, PrometheusRecorder, TracingConfig, attributes,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt;

fn iterations() -> u32 {
    std::env::var("HINTAUDIT_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000)
}

fn typical_effect() -> Effect {
    let mut e = Effect::default();
    e.statements.push(StatementEffect::new(
        Operation::Select,
        vec!["items".into()],
    ));
    e.statements.push(StatementEffect::new(
        Operation::Update,
        vec!["items".into()],
    ));
    e.row_changes.push(RowChange {
        table: "items".into(),
        operation: RowOperation::Update,
        statement: Some(1),
        committed: true,
        image: RowImage::Unknown,
        nested: None,
        row_id: None,
    });
    e
}

/// CPU time this thread has spent running, in ns (Linux `schedstat`); wall time elsewhere.
/// CPU time keeps the numbers steady on a busy machine, where wall time does not.
fn thread_cpu_ns() -> u128 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| {
            static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
            START.get_or_init(Instant::now).elapsed().as_nanos()
        })
}

/// Median of 5 runs of `n` iterations of `f`, in ns of this thread's CPU time per iteration.
fn measure(n: u32, mut f: impl FnMut()) -> f64 {
    let mut runs: Vec<f64> = (0..5)
        .map(|_| {
            let t = thread_cpu_ns();
            for _ in 0..n {
                f();
            }
            (thread_cpu_ns() - t) as f64 / f64::from(n)
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[2]
}

fn bench_recorder(n: u32) {
    let recorder = PrometheusRecorder::new();
    let hints = DeclaredHints {
        read_only: Some(false),
        destructive: Some(false),
        idempotent: Some(true),
        open_world: Some(false),
    };
    recorder.record(&AuditEvent::Listing {
        tool: "touch",
        hints,
        findings: &[],
    });
    let effect = typical_effect();
    let verdict = Verdict::default();
    let report = |tool: &'static str, known_tool: bool| CallReport {
        tool,
        known_tool,
        hints,
        status: CallStatus::Ok,
        duration: Duration::from_micros(300),
        effect: &effect,
        verdict: &verdict,
    };
    let declared = report("touch", true);
    let unknown = report("nope", false);
    let ns = measure(n, || {
        recorder.record(black_box(&AuditEvent::Call(&declared)))
    });
    println!("prometheus recorder, declared tool, 1 thread: {ns:8.0} ns/call");
    let ns = measure(n, || {
        recorder.record(black_box(&AuditEvent::Call(&unknown)))
    });
    println!("prometheus recorder, unknown tool, 1 thread:  {ns:8.0} ns/call");

    let shared = Arc::new(recorder);
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..2 {
            let r = shared.clone();
            let effect = &effect;
            let verdict = &verdict;
            s.spawn(move || {
                let report = CallReport {
                    tool: "touch",
                    known_tool: true,
                    hints,
                    status: CallStatus::Ok,
                    duration: Duration::from_micros(300),
                    effect,
                    verdict,
                };
                for _ in 0..n {
                    r.record(black_box(&AuditEvent::Call(&report)));
                }
            });
        }
    });
    let ns = t.elapsed().as_nanos() as f64 / f64::from(n);
    println!("prometheus recorder, declared tool, 2 threads: {ns:7.0} ns per call pair (wall)");
}

#[derive(Clone, Default)]
struct Sink;

#[tonic::async_trait]
impl TraceService for Sink {
    async fn export(
        &self,
        _request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

/// An exporter that discards every batch.
#[derive(Debug)]
struct Discard;

impl opentelemetry_sdk::trace::SpanExporter for Discard {
    async fn export(
        &self,
        _batch: Vec<opentelemetry_sdk::trace::SpanData>,
    ) -> opentelemetry_sdk::error::OTelSdkResult {
        Ok(())
    }
}

fn call_spans() {
    let span = tracing::info_span!(
        "tools/call",
        { attributes::OTEL_NAME } = "tools/call touch",
        { attributes::OTEL_KIND } = "server",
        { attributes::MCP_METHOD_NAME } = "tools/call",
        { attributes::GEN_AI_TOOL_NAME } = "touch",
        { attributes::GEN_AI_OPERATION_NAME } = "execute_tool",
        { attributes::JSONRPC_REQUEST_ID } = 7,
        { attributes::HINT_READ_ONLY } = "true",
        { attributes::VERDICT } = tracing::field::Empty,
    );
    let _e = span.enter();
    for (summary, op) in [("SELECT items", "SELECT"), ("UPDATE items", "UPDATE")] {
        let s = tracing::info_span!(
            "db.statement",
            { attributes::OTEL_NAME } = summary,
            { attributes::OTEL_KIND } = "client",
            { attributes::DB_SYSTEM_NAME } = "sqlite",
            { attributes::DB_OPERATION_NAME } = op,
            { attributes::DB_COLLECTION_NAME } = "items",
            { attributes::DB_QUERY_SUMMARY } = summary,
            { attributes::DB_QUERY_TEXT } = "UPDATE items SET n = n + ? WHERE id = ?",
        );
        drop(s.enter());
    }
    span.record(attributes::VERDICT, "critical");
    tracing::event!(
        target: "hintaudit::finding",
        tracing::Level::TRACE,
        { attributes::FINDING_RULE } = "read_only_write",
        { attributes::FINDING_HINT } = "readOnlyHint",
        { attributes::FINDING_SEVERITY } = "critical",
        { attributes::FINDING_CONFIDENCE } = "confirmed",
        { attributes::FINDING_EVIDENCE } = "UPDATE items: 1 row updated (committed)",
        "hintaudit.finding"
    );
}

fn bench_tracing(n: u32) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let addr = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(TraceServiceServer::new(Sink))
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
        );
        addr
    });
    let ns_bare = measure(n, call_spans);
    println!("tracing spans of one call, no subscriber:      {ns_bare:8.0} ns/call");

    // The producer side alone: the same pipeline with an exporter that discards batches.
    let noop = OtelPipeline::with_exporter(&TracingConfig::disabled(), Discard);
    let subscriber = tracing_subscriber::registry()
        .with(noop.layer().with_filter(hintaudit_telemetry::otel_filter()));
    let ns = tracing::subscriber::with_default(subscriber, || measure(n / 4, call_spans));
    noop.force_flush();
    let s = noop.export_stats();
    println!(
        "tracing spans of one call, discarding exporter: {ns:8.0} ns/call ({} spans exported, {} dropped)",
        s.exported, s.dropped
    );
    drop(noop);

    let _enter = rt.enter();
    let config = TracingConfig::disabled()
        .with_endpoint(format!("http://{addr}"))
        .with_protocol(OtlpProtocol::Grpc);
    let pipeline = OtelPipeline::new(&config).expect("pipeline").expect("on");
    let subscriber = tracing_subscriber::registry()
        .with(tracing_subscriber::filter::LevelFilter::INFO)
        .with(pipeline.layer());
    let ns = tracing::subscriber::with_default(subscriber, || measure(n / 4, call_spans));
    pipeline.force_flush();
    let s = pipeline.export_stats();
    println!(
        "tracing spans of one call, OTLP to loopback:  {ns:8.0} ns/call ({} spans exported, {} dropped)",
        s.exported, s.dropped
    );
    drop(pipeline);
}

/// CPU time spent so far by every thread of this process, in ns (Linux `schedstat`).
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

/// All-in cost: `calls` calls' spans produced, exported and received, with a queue large
/// enough that nothing is dropped, in CPU time of the whole process per call.
fn bench_all_in(calls: u32) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let _enter = rt.enter();
    let (grpc, http) = rt.block_on(async {
        let grpc = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let grpc_addr = grpc.local_addr().expect("addr");
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(TraceServiceServer::new(Sink))
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(grpc)),
        );
        let http = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let http_addr = http.local_addr().expect("addr");
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(|body: axum::body::Bytes| async move {
                black_box(body.len());
                [(axum::http::header::CONTENT_TYPE, "application/x-protobuf")]
            }),
        );
        tokio::spawn(async move { axum::serve(http, app).await });
        (grpc_addr, http_addr)
    });
    let queue = calls as usize * 4;
    let variants: [(&str, Option<TracingConfig>); 3] = [
        ("discarding exporter", None),
        (
            "OTLP/HTTP, discarding receiver",
            Some(
                TracingConfig::disabled()
                    .with_endpoint(format!("http://{http}"))
                    .with_protocol(OtlpProtocol::HttpProtobuf),
            ),
        ),
        (
            "OTLP/gRPC, decoding receiver",
            Some(
                TracingConfig::disabled()
                    .with_endpoint(format!("http://{grpc}"))
                    .with_protocol(OtlpProtocol::Grpc),
            ),
        ),
    ];
    for (what, config) in variants {
        let pipeline = match config {
            Some(c) => OtelPipeline::new(&c.with_max_queue_size(queue))
                .expect("pipeline")
                .expect("on"),
            None => OtelPipeline::with_exporter(
                &TracingConfig::disabled().with_max_queue_size(queue),
                Discard,
            ),
        };
        let subscriber = tracing_subscriber::registry()
            .with(tracing_subscriber::filter::LevelFilter::INFO)
            .with(pipeline.layer());
        let before = process_cpu_ns();
        tracing::subscriber::with_default(subscriber, || {
            for _ in 0..calls {
                call_spans();
            }
        });
        pipeline.force_flush();
        let cpu = (process_cpu_ns() - before) as f64 / f64::from(calls);
        let s = pipeline.export_stats();
        println!(
            "all-in, {what}: {cpu:8.0} ns CPU/call, all threads ({} spans exported, {} dropped)",
            s.exported, s.dropped
        );
    }
}

fn main() {
    let n = iterations();
    bench_recorder(n);
    bench_tracing(n);
    bench_all_in(n / 10);
}
