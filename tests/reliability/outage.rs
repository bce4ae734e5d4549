//! Case 4, telemetry outage: the OTLP collector is down (a closed port), then slow (a
//! listener on that port that accepts connections and never answers), then back (a real
//! OTLP/gRPC receiver on the same port), while calls run on the bookings server bare and
//! behind the layer, and 50 clients scrape `/metrics` without pause. No call fails, no
//! scrape fails, every span that never reached a collector is counted, spans reach the
//! collector once it is back, and resident memory stays bounded. Latency p99 against bare is
//! printed for each phase, never asserted. Sizes: 400 audited and 200 bare calls per phase,
//! 34,000 and 1,000 with the long switch (102,000 audited calls in all, the 100,000).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bookings::{Bookings, Db};
use hintaudit::core::{AuditStage, Judge, stats};
use hintaudit::rmcp::HintAuditLayer;
use hintaudit_cli::demo::demo_policy;
use hintaudit_telemetry::{
    OtelPipeline, OtlpProtocol, PrometheusRecorder, TracingConfig, serve_metrics,
};
use hintaudit_test_support::mcp::connect;
use hintaudit_test_support::otlp::{spans, start_receiver_on};
use hintaudit_test_support::scrape::http_get;
use rmcp::RoleClient;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use serde_json::json;
use tower::Layer;
use tracing_subscriber::layer::SubscriberExt;

use crate::support::{figure, in_own_process, rss_kb, size};

type Client = Arc<RunningService<RoleClient, ()>>;

/// Concurrent callers per side.
const CALLERS: usize = 8;
/// Concurrent `/metrics` scrapers.
const SCRAPERS: usize = 50;
/// Each scraper's pause between scrapes: 50 scrapers then ask up to 100 times a second,
/// far above any Prometheus set-up, without taking the 2 cores from the calls entirely.
const SCRAPE_PAUSE: Duration = Duration::from_millis(500);

async fn database(dir: &tempfile::TempDir, name: &str) -> Db {
    let url = format!("sqlite://{}?mode=rwc", dir.path().join(name).display());
    Db::connect(&url).await.expect("db")
}

/// `calls` calls of `list_appointments` from [`CALLERS`] tasks: each call's latency, and the
/// calls that failed (an error or `isError`).
async fn run_calls(client: &Client, calls: usize) -> (Vec<Duration>, usize) {
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..CALLERS {
        let (client, next) = (client.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let (mut latencies, mut failed) = (Vec::new(), 0);
            while next.fetch_add(1, Ordering::Relaxed) < calls {
                let params = CallToolRequestParams::new("list_appointments")
                    .with_arguments(json!({"limit": 5}).as_object().unwrap().clone());
                let started = Instant::now();
                let r = client.call_tool(params).await;
                latencies.push(started.elapsed());
                failed += usize::from(!matches!(r, Ok(ref a) if a.is_error != Some(true)));
            }
            (latencies, failed)
        }));
    }
    let (mut all, mut failed) = (Vec::new(), 0);
    for t in tasks {
        let (l, f) = t.await.expect("caller");
        all.extend(l);
        failed += f;
    }
    (all, failed)
}

/// The 99th percentile, in ms with one decimal.
fn p99(mut v: Vec<Duration>) -> String {
    v.sort();
    let i = (v.len() * 99 / 100).min(v.len().saturating_sub(1));
    format!(
        "{:.1}",
        v.get(i).copied().unwrap_or_default().as_secs_f64() * 1e3
    )
}

/// [`SCRAPERS`] tasks scraping `/metrics` until `stop`, each pausing [`SCRAPE_PAUSE`] between
/// scrapes: (scrapes, failed scrapes).
fn scrapers(
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<(usize, usize)>> {
    (0..SCRAPERS)
        .map(|_| {
            let stop = stop.clone();
            tokio::spawn(async move {
                let (mut n, mut failed) = (0, 0);
                while !stop.load(Ordering::Relaxed) {
                    let scrape = tokio::spawn(async move { http_get(addr, "/metrics").await });
                    n += 1;
                    match scrape.await {
                        Ok((status, _, body))
                            if status.contains("200")
                                && body.contains("hintaudit_tool_calls_total") => {}
                        _ => failed += 1,
                    }
                    tokio::time::sleep(SCRAPE_PAUSE).await;
                }
                (n, failed)
            })
        })
        .collect()
}

fn outage() {
    // The collector's address: closed now (down), later a silent listener, then a receiver.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let config = TracingConfig::disabled()
        .with_endpoint(format!("http://{addr}"))
        .with_protocol(OtlpProtocol::Grpc)
        .with_export_timeout(Duration::from_millis(500))
        .with_scheduled_delay(Duration::from_millis(50))
        .with_max_queue_size(2048)
        .with_max_export_batch_size(512);
    // The gRPC exporter's channel lives on a runtime of its own, built first: the test's
    // runtime needs the pipeline's layer before its threads start.
    let exporter_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("exporter runtime");
    let pipeline = exporter_runtime.block_on(async {
        OtelPipeline::new(&config)
            .expect("pipeline")
            .expect("export is on")
    });
    let subscriber = tracing_subscriber::registry()
        .with(tracing_subscriber::filter::LevelFilter::INFO)
        .with(pipeline.layer());
    let dispatch = tracing::Dispatch::new(subscriber);
    // This runtime's threads trace into the pipeline; the binary's global subscriber (the
    // privacy case's) is left alone.
    let runtime = {
        let dispatch = dispatch.clone();
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .on_thread_start(move || std::mem::forget(tracing::dispatcher::set_default(&dispatch)))
            .enable_all()
            .build()
            .expect("runtime")
    };
    let _here = tracing::dispatcher::set_default(&dispatch);
    runtime.block_on(async move { tokio::spawn(phases(addr, pipeline)).await.expect("phases") });
    drop(runtime);
    drop(exporter_runtime);
}

async fn phases(addr: SocketAddr, pipeline: OtelPipeline) {
    let dir = tempfile::tempdir().expect("tempdir");
    let recorder = PrometheusRecorder::new();
    let metrics = serve_metrics("127.0.0.1:0".parse().unwrap(), recorder.registry().clone())
        .await
        .expect("metrics");
    let bare: Client = Arc::new(connect(Bookings::new(database(&dir, "bare.db").await)).await);
    let audit = HintAuditLayer::new()
        .with_judge(Arc::new(Judge::new(demo_policy())))
        .with_recorder(recorder.clone())
        .with_make_span(pipeline.make_span())
        .layer(Bookings::new(database(&dir, "audited.db").await));
    audit.learn_tools(&Bookings::tools());
    let audited: Client = Arc::new(connect(audit).await);
    let stop = Arc::new(AtomicBool::new(false));
    let scraping = scrapers(metrics.local_addr(), stop.clone());

    let (per_phase, bare_per_phase) = (size(400, 34_000), size(200, 1_000));
    let export_errors = stats().audit_errors(AuditStage::Export);
    // Warm both sides up before the memory baseline.
    run_calls(&bare, 200).await;
    run_calls(&audited, 200).await;
    let rss_before = rss_kb();
    let started_all = Instant::now();
    // At the end of the slow phase: after the outage's calls, before the receiver (which
    // keeps a copy of every span it gets) exists.
    let mut rss_outage = 0;
    let mut pairs: Vec<(&str, String)> = Vec::new();
    let (mut calls, mut failed) = (0, 0);
    let mut silent: Option<tokio::task::JoinHandle<()>> = None;
    let mut receiver = None;
    for phase in ["down", "slow", "back"] {
        match phase {
            "slow" => {
                let listener = tokio::net::TcpListener::bind(addr).await.expect("rebind");
                silent = Some(tokio::spawn(async move {
                    let mut held = Vec::new();
                    while let Ok((socket, _)) = listener.accept().await {
                        held.push(socket); // accepted, never read, never answered
                    }
                }));
            }
            "back" => {
                if let Some(s) = silent.take() {
                    s.abort();
                    let _ = s.await;
                }
                let listener = tokio::net::TcpListener::bind(addr).await.expect("rebind");
                receiver = Some(start_receiver_on(listener));
            }
            _ => {}
        }
        let (b, bf) = run_calls(&bare, bare_per_phase).await;
        let (a, af) = run_calls(&audited, per_phase).await;
        calls += a.len() + b.len();
        failed += af + bf;
        pairs.push((leak(format!("p99_ms_bare_{phase}")), p99(b)));
        pairs.push((leak(format!("p99_ms_audited_{phase}")), p99(a)));
        if phase == "slow" {
            rss_outage = rss_kb();
        }
    }
    // Back: spans reach the collector again.
    let receiver = receiver.expect("the receiver");
    let started = Instant::now();
    while spans(&receiver).is_empty() && started.elapsed() < Duration::from_secs(30) {
        run_calls(&audited, 50).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let rss_after = rss_kb();
    stop.store(true, Ordering::Relaxed);
    let (mut scrapes, mut scrapes_failed) = (0, 0);
    for s in scraping {
        let (n, f) = s.await.expect("scraper");
        scrapes += n;
        scrapes_failed += f;
    }
    let pipeline = hintaudit_test_support::otlp::flushed(pipeline).await;
    let s = pipeline.export_stats();
    let received = spans(&receiver).len();
    let counted = stats().audit_errors(AuditStage::Export) - export_errors;
    let growth_mb = rss_outage.saturating_sub(rss_before) / 1024;
    pairs.extend([
        ("calls", calls.to_string()),
        ("callers", CALLERS.to_string()),
        ("calls_failed", failed.to_string()),
        ("scrapers", SCRAPERS.to_string()),
        ("scrapes", scrapes.to_string()),
        ("scrapes_failed", scrapes_failed.to_string()),
        ("spans_exported", s.exported.to_string()),
        ("spans_received_after_back", received.to_string()),
        ("spans_dropped", s.dropped.to_string()),
        ("dropped_counted_export_errors", counted.to_string()),
        ("rss_mb_before", (rss_before / 1024).to_string()),
        ("rss_mb_after_outage", (rss_outage / 1024).to_string()),
        ("rss_mb_after", (rss_after / 1024).to_string()),
        (
            "seconds",
            format!("{:.1}", started_all.elapsed().as_secs_f64()),
        ),
    ]);
    figure("outage", &pairs);
    assert_eq!(failed, 0, "calls failed during the outage");
    assert_eq!(scrapes_failed, 0, "scrapes failed");
    assert!(
        received > 0,
        "no span reached the collector once it was back"
    );
    assert!(
        s.dropped > 0,
        "the outage dropped no span: was the collector down?"
    );
    assert!(counted >= s.dropped, "{counted} counted, {s:?}");
    // Bounded: the span queue holds 2,048 spans at most, so the outage may not grow the
    // process with its calls; a coarse bound (a leak of 1 KB per call over the long run's
    // 68,000 audited calls of the down and slow phases would fail it). The final size also
    // holds the test receiver's copy of every span it got, so it is printed only.
    assert!(
        growth_mb < 64,
        "resident size grew {growth_mb} MB during the outage"
    );
    drop((bare, audited));
    metrics.shutdown().await;
    tokio::task::spawn_blocking(move || drop(pipeline))
        .await
        .expect("drop");
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

#[test]
fn a_collector_down_slow_and_back_fails_no_call_and_no_scrape() {
    // Alone in its process: its resident-size bound is this case's, not the hostile case's
    // 10 MB arguments or the attribution case's pools running beside it.
    in_own_process(
        "outage::a_collector_down_slow_and_back_fails_no_call_and_no_scrape",
        outage,
    );
}
