//! Traces end to end: a real rmcp client calls a real rmcp server behind the HintAudit layer
//! with [`OtelMakeSpan`]; spans go through tracing-opentelemetry and the OTLP gRPC exporter to
//! a real OTLP receiver (tonic, opentelemetry-proto's service definitions) on loopback.
//!
//! One test per binary: the tracing subscriber is process-global.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

mod support;

use std::time::Duration;

use hintaudit_rmcp::HintAuditLayer;
use hintaudit_telemetry::{
    OtelMakeSpan, OtelPipeline, OtlpProtocol, PrometheusRecorder, TracingConfig, attributes,
};
use hintaudit_test_support::mcp::{call_params, connect};
use hintaudit_test_support::otlp::{attr, flushed, hex, start_receiver};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::{Span, span::SpanKind, status::StatusCode};
use support::clinic::*;
use tower::Layer;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt;

const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_reach_a_real_otlp_receiver_with_parents_attributes_and_findings() {
    let (receiver, addr) = start_receiver().await;
    let config = TracingConfig::disabled()
        .with_endpoint(format!("http://{addr}"))
        .with_protocol(OtlpProtocol::Grpc)
        .with_scheduled_delay(Duration::from_millis(50))
        .with_default_service_name("otlp-test");
    let pipeline = OtelPipeline::new(&config).unwrap().expect("export is on");
    // As init_tracing filters: INFO and above, and the finding events.
    let subscriber = tracing_subscriber::registry().with(
        pipeline
            .layer()
            .with_filter(hintaudit_telemetry::otel_filter()),
    );
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let layer = HintAuditLayer::new()
        .with_recorder(PrometheusRecorder::new())
        .with_make_span(OtelMakeSpan::new());
    let client = connect(layer.layer(Clinic::default())).await;
    let traceparent = format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01");
    let with_parent = call_params("get_booking", Some(secret_args()), Some(&traceparent));
    let answer = client.call_tool(with_parent).await.unwrap();
    assert_eq!(answer.is_error, Some(false));
    client
        .call_tool(call_params("list_bookings", None, None))
        .await
        .unwrap();
    let broken = client
        .call_tool(call_params("broken", None, None))
        .await
        .unwrap();
    assert_eq!(broken.is_error, Some(true));
    assert!(
        client
            .call_tool(call_params("no_such_tool", None, None))
            .await
            .is_err()
    );
    // An undeclared name longer than the bound, of 2-byte characters.
    assert!(
        client
            .call_tool(call_params("é".repeat(200).leak(), None, None))
            .await
            .is_err()
    );
    client.cancel().await.unwrap();

    let flushed = flushed(pipeline).await;
    let stats = flushed.export_stats();
    assert_eq!(stats.dropped, 0, "{stats:?}");

    let requests = receiver.got.lock().unwrap().clone();
    let everything = format!("{requests:?}");
    let resource_attrs: Vec<KeyValue> = requests
        .iter()
        .flat_map(|r| &r.resource_spans)
        .filter_map(|rs| rs.resource.as_ref())
        .flat_map(|r| r.attributes.clone())
        .collect();
    assert_eq!(
        attr(&resource_attrs, "service.name").as_deref(),
        Some("otlp-test")
    );
    let spans: Vec<Span> = requests
        .iter()
        .flat_map(|r| &r.resource_spans)
        .flat_map(|rs| &rs.scope_spans)
        .flat_map(|ss| ss.spans.clone())
        .collect();
    let named = |name: &str| -> Vec<&Span> { spans.iter().filter(|s| s.name == name).collect() };

    // The call with a client trace context: a server span in the client's trace.
    let server = named("tools/call get_booking");
    assert_eq!(
        server.len(),
        1,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let server = server[0];
    assert_eq!(server.kind, SpanKind::Server as i32);
    assert_eq!(hex(&server.trace_id), CLIENT_TRACE);
    assert_eq!(hex(&server.parent_span_id), CLIENT_SPAN);
    let a = |key: &str| attr(&server.attributes, key);
    assert_eq!(
        a(attributes::MCP_METHOD_NAME).as_deref(),
        Some("tools/call")
    );
    assert_eq!(
        a(attributes::GEN_AI_TOOL_NAME).as_deref(),
        Some("get_booking")
    );
    assert_eq!(
        a(attributes::GEN_AI_OPERATION_NAME).as_deref(),
        Some("execute_tool")
    );
    assert!(a(attributes::JSONRPC_REQUEST_ID).is_some());
    assert_eq!(a(attributes::HINT_READ_ONLY).as_deref(), Some("true"));
    assert_eq!(a(attributes::HINT_DESTRUCTIVE).as_deref(), Some("unset"));
    assert_eq!(a(attributes::HINT_IDEMPOTENT).as_deref(), Some("unset"));
    assert_eq!(a(attributes::HINT_OPEN_WORLD).as_deref(), Some("false"));
    assert_eq!(a(attributes::VERDICT).as_deref(), Some("critical"));
    assert_eq!(a(attributes::ERROR_TYPE), None);

    // One hintaudit.finding event per finding.
    let findings: Vec<_> = server
        .events
        .iter()
        .filter(|e| e.name == attributes::FINDING_EVENT)
        .collect();
    assert_eq!(findings.len(), 1, "{:?}", server.events);
    let f = |key: &str| attr(&findings[0].attributes, key);
    assert_eq!(
        f(attributes::FINDING_RULE).as_deref(),
        Some("read_only_write")
    );
    assert_eq!(f(attributes::FINDING_HINT).as_deref(), Some("readOnlyHint"));
    assert_eq!(f(attributes::FINDING_SEVERITY).as_deref(), Some("critical"));
    assert_eq!(
        f(attributes::FINDING_CONFIDENCE).as_deref(),
        Some("confirmed")
    );
    assert!(f(attributes::FINDING_EVIDENCE).is_some_and(|e| e.contains("bookings")));

    // Statement spans are its children, named by their summary, with sanitized text.
    let statements: Vec<&Span> = spans
        .iter()
        .filter(|s| s.parent_span_id == server.span_id)
        .collect();
    assert_eq!(statements.len(), 2, "{statements:?}");
    for s in &statements {
        assert_eq!(s.kind, SpanKind::Client as i32);
        assert_eq!(s.trace_id, server.trace_id);
        let a = |key: &str| attr(&s.attributes, key);
        assert_eq!(a(attributes::DB_SYSTEM_NAME).as_deref(), Some("sqlite"));
        assert_eq!(
            a(attributes::DB_QUERY_SUMMARY).as_deref(),
            Some(s.name.as_str())
        );
        assert_eq!(
            a(attributes::DB_COLLECTION_NAME).as_deref(),
            Some("bookings")
        );
        let query = a(attributes::DB_QUERY_TEXT).unwrap();
        assert!(query.contains('?'), "{query}");
    }
    let update = statements
        .iter()
        .find(|s| attr(&s.attributes, attributes::DB_OPERATION_NAME).as_deref() == Some("UPDATE"))
        .expect("the UPDATE span");
    assert_eq!(
        attr(&update.attributes, attributes::DB_RESPONSE_AFFECTED_ROWS).as_deref(),
        Some("1")
    );

    // Without a trace context: a new trace, no parent.
    let list = named("tools/call list_bookings");
    assert_eq!(list.len(), 1);
    assert!(
        list[0].parent_span_id.is_empty(),
        "a root span, not under rmcp's session span"
    );
    assert_ne!(hex(&list[0].trace_id), CLIENT_TRACE);
    assert_eq!(
        attr(&list[0].attributes, attributes::VERDICT).as_deref(),
        Some("clean")
    );

    // Errors: a tool error, and a protocol error for an unknown tool.
    let broken = named("tools/call broken");
    assert_eq!(broken.len(), 1);
    assert_eq!(
        attr(&broken[0].attributes, attributes::ERROR_TYPE).as_deref(),
        Some("tool_error")
    );
    let status = broken[0].status.as_ref().map(|s| s.code);
    assert_eq!(status, Some(StatusCode::Error as i32));
    // Undeclared tools: one span name (bounded cardinality), the name asked for in
    // gen_ai.tool.name, cut at a character boundary within the byte limit.
    assert!(named("tools/call no_such_tool").is_empty());
    let unknown = named("tools/call __unknown__");
    assert_eq!(unknown.len(), 2);
    let mut asked: Vec<String> = unknown
        .iter()
        .map(|s| attr(&s.attributes, attributes::GEN_AI_TOOL_NAME).unwrap())
        .collect();
    asked.sort();
    assert_eq!(
        asked,
        vec![
            "no_such_tool".to_owned(),
            "é".repeat(attributes::TOOL_NAME_MAX_BYTES / 2)
        ]
    );
    for span in &unknown {
        let error_type = attr(&span.attributes, attributes::ERROR_TYPE).unwrap_or_default();
        assert!(error_type.starts_with('-'), "a JSON-RPC code: {error_type}");
    }

    // Arguments and SQL literals never leave the process.
    assert!(!everything.contains(SECRET_NOTE), "the note leaked");
    assert!(
        !everything.contains(&SECRET_ID.to_string()),
        "the id leaked"
    );
    assert!(!everything.contains("'x'"), "a SQL literal leaked");

    tokio::task::spawn_blocking(move || drop(flushed))
        .await
        .unwrap();
}
