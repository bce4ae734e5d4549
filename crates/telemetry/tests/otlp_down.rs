//! The collector is down: the OTLP endpoint is a closed port on loopback. Every call still
//! succeeds, quickly, and every span that could not be exported is counted in
//! `hintaudit_audit_errors_total{stage="export"}`.
//!
//! One test per binary: the tracing subscriber is process-global.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

mod support;

use std::time::{Duration, Instant};

use hintaudit_core::{AuditStage, stats};
use hintaudit_rmcp::HintAuditLayer;
use hintaudit_telemetry::{
    MetricName, OtelMakeSpan, OtelPipeline, OtlpProtocol, PrometheusRecorder, TracingConfig,
    encode_text,
};
use hintaudit_test_support::mcp::{call_params, connect};
use hintaudit_test_support::otlp::flushed;
use hintaudit_test_support::scrape::Scraped;
use support::clinic::*;
use tower::Layer;
use tracing_subscriber::layer::SubscriberExt;

const CALLS: usize = 300;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_collector_port_drops_and_counts_but_never_fails_a_call() {
    // A port that was just free: nothing listens there.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let config = TracingConfig::disabled()
        .with_endpoint(format!("http://{closed}"))
        .with_protocol(OtlpProtocol::Grpc)
        .with_export_timeout(Duration::from_secs(1))
        .with_scheduled_delay(Duration::from_millis(20))
        .with_max_queue_size(64)
        .with_max_export_batch_size(16);
    let pipeline = OtelPipeline::new(&config).unwrap().expect("export is on");
    let subscriber = tracing_subscriber::registry()
        .with(tracing_subscriber::filter::LevelFilter::INFO)
        .with(pipeline.layer());
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let recorder = PrometheusRecorder::new();
    let scraped_errors = |r: &PrometheusRecorder| {
        Scraped::parse(&encode_text(r.registry()))
            .value(MetricName::AuditErrors.as_str(), &[("stage", "export")])
            .unwrap()
    };
    let before = stats().audit_errors(AuditStage::Export);
    let scraped_before = scraped_errors(&recorder);

    let layer = HintAuditLayer::new()
        .with_recorder(recorder.clone())
        .with_make_span(OtelMakeSpan::new());
    let client = connect(layer.layer(Clinic::default())).await;
    let started = Instant::now();
    for _ in 0..CALLS {
        let answer = client
            .call_tool(call_params("list_bookings", None, None))
            .await
            .expect("the call succeeds while the collector is down");
        assert_eq!(answer.is_error, Some(false));
    }
    let elapsed = started.elapsed();
    client.cancel().await.unwrap();
    // Nothing waits for the exporter: 300 calls take far less than one export timeout each.
    assert!(
        elapsed < Duration::from_secs(20),
        "{CALLS} calls took {elapsed:?}"
    );

    let pipeline = flushed(pipeline).await;
    let s = pipeline.export_stats();
    // Each call ends a server span and a statement span; none reaches the collector.
    assert_eq!(s.exported, 0, "{s:?}");
    assert_eq!(s.in_flight, 0, "{s:?}");
    assert!(s.dropped >= 2 * CALLS as u64, "{s:?}");
    let counted = stats().audit_errors(AuditStage::Export) - before;
    assert!(counted >= s.dropped, "{counted} counted, {s:?}");
    let scraped = scraped_errors(&recorder) - scraped_before;
    assert!(scraped >= s.dropped as f64, "{scraped} scraped, {s:?}");
    println!("{CALLS} calls in {elapsed:?} with the collector down; {s:?}");

    tokio::task::spawn_blocking(move || drop(pipeline))
        .await
        .unwrap();
}
