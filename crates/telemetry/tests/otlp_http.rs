//! Traces over OTLP/HTTP with protobuf bodies (`http/protobuf`, the default protocol) to a real
//! receiver: an axum route `POST /v1/traces` on loopback decoding opentelemetry-proto messages.
//!
//! One test per binary: the tracing subscriber is process-global.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use hintaudit_rmcp::HintAuditLayer;
use hintaudit_telemetry::{OtelMakeSpan, OtelPipeline, OtlpProtocol, TracingConfig};
use hintaudit_test_support::mcp::{call_params, connect};
use hintaudit_test_support::otlp::flushed;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;
use support::clinic::*;
use tower::Layer;
use tracing_subscriber::layer::SubscriberExt;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_reach_an_otlp_http_receiver() {
    let got: Arc<Mutex<Vec<ExportTraceServiceRequest>>> = Arc::default();
    let sink = got.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: Bytes| {
            let sink = sink.clone();
            async move {
                let request = ExportTraceServiceRequest::decode(body).expect("protobuf body");
                sink.lock().unwrap().push(request);
                let answer = ExportTraceServiceResponse {
                    partial_success: None,
                };
                (
                    [(axum::http::header::CONTENT_TYPE, "application/x-protobuf")],
                    answer.encode_to_vec(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });

    // A base URL, as OTEL_EXPORTER_OTLP_ENDPOINT gives it: /v1/traces is appended.
    let config = TracingConfig::disabled()
        .with_endpoint(format!("http://{addr}"))
        .with_protocol(OtlpProtocol::HttpProtobuf)
        .with_scheduled_delay(Duration::from_millis(50));
    let pipeline = OtelPipeline::new(&config).unwrap().expect("export is on");
    let subscriber = tracing_subscriber::registry()
        .with(tracing_subscriber::filter::LevelFilter::INFO)
        .with(pipeline.layer());
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let layer = HintAuditLayer::new().with_make_span(OtelMakeSpan::new());
    let client = connect(layer.layer(Clinic::default())).await;
    let trace = "0af7651916cd43dd8448eb211c80319c";
    let parent = format!("00-{trace}-b7ad6b7169203331-01");
    let params = call_params("get_booking", Some(secret_args()), Some(&parent));
    client.call_tool(params).await.unwrap();
    client.cancel().await.unwrap();

    let pipeline = flushed(pipeline).await;
    let stats = pipeline.export_stats();
    assert_eq!(stats.dropped, 0, "{stats:?}");

    let requests = got.lock().unwrap().clone();
    let spans: Vec<_> = requests
        .iter()
        .flat_map(|r| &r.resource_spans)
        .flat_map(|rs| &rs.scope_spans)
        .flat_map(|ss| ss.spans.clone())
        .collect();
    let server = spans
        .iter()
        .find(|s| s.name == "tools/call get_booking")
        .expect("the server span");
    assert_eq!(server.kind, SpanKind::Server as i32);
    let hex: String = server.trace_id.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, trace);
    let children = spans
        .iter()
        .filter(|s| s.parent_span_id == server.span_id)
        .count();
    assert_eq!(children, 2);
    let everything = format!("{requests:?}");
    assert!(!everything.contains(SECRET_NOTE));
    assert!(!everything.contains(&SECRET_ID.to_string()));

    tokio::task::spawn_blocking(move || drop(pipeline))
        .await
        .unwrap();
}
