//! Spans of the demo server exported over OTLP/gRPC to a real receiver on loopback.

use std::time::Duration;

use hintaudit_cli::demo::connect;
use hintaudit_telemetry::{OtelPipeline, OtlpProtocol, TracingConfig, attributes};
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use rmcp::model::{CallToolRequestParams, RequestMetaObject};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;

use hintaudit_test_support::otlp::{attr, flushed, hex, spans, start_receiver};

use crate::support::demo;

const TRACE_GET: &str = "11111111111111111111111111111111";
const TRACE_ADD: &str = "22222222222222222222222222222222";
const CLIENT_SPAN: &str = "3333333333333333";
const SECRET_NAME: &str = "Ada SECRET-Lovelace";
const SECRET_EMAIL: &str = "ada.secret@example.org";

fn with_parent(tool: &'static str, args: serde_json::Value, trace: &str) -> CallToolRequestParams {
    let mut meta = RequestMetaObject::new();
    meta.insert(
        "traceparent".into(),
        format!("00-{trace}-{CLIENT_SPAN}-01").into(),
    );
    let mut params = CallToolRequestParams::new(tool);
    params.meta = Some(meta);
    if let serde_json::Value::Object(map) = args {
        params = params.with_arguments(map);
    }
    params
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_spans_reach_a_real_otlp_receiver() {
    let (receiver, addr) = start_receiver().await;
    let config = TracingConfig::disabled()
        .with_endpoint(format!("http://{addr}"))
        .with_protocol(OtlpProtocol::Grpc)
        .with_scheduled_delay(Duration::from_millis(50))
        .with_default_service_name("hintaudit-demo-test");
    let pipeline = OtelPipeline::new(&config).unwrap().expect("export is on");
    let layer = pipeline
        .layer()
        .with_filter(hintaudit_telemetry::otel_filter());
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer)).unwrap();

    // The demo's own run (no trace context), then two calls that carry one in `_meta`.
    let run = demo().await;
    let client = connect(&run.server.url).await.unwrap();
    let get = with_parent("get_appointment", serde_json::json!({"id": 1}), TRACE_GET);
    client.call_tool(get).await.unwrap();
    let add_args = serde_json::json!({"name": SECRET_NAME, "email": SECRET_EMAIL});
    let add = with_parent("add_patient", add_args, TRACE_ADD);
    client.call_tool(add).await.unwrap();
    client.cancel().await.ok();
    run.server.shutdown().await;

    let pipeline = flushed(pipeline).await;
    // Other tests of this binary run concurrently and their spans share the pipeline (the
    // subscriber is process-global), so drops are possible here and not asserted.
    assert!(pipeline.export_stats().exported > 0);

    let requests = receiver.got.lock().unwrap().clone();
    let spans: Vec<Span> = spans(&receiver);
    let children = |parent: &Span| -> Vec<&Span> {
        spans
            .iter()
            .filter(|s| s.parent_span_id == parent.span_id)
            .collect()
    };
    let server_span = |trace: &str| -> &Span {
        spans
            .iter()
            .find(|s| hex(&s.trace_id) == trace && s.kind == SpanKind::Server as i32)
            .unwrap_or_else(|| panic!("no server span in trace {trace}"))
    };

    // get_appointment: declared read-only, updates a row. Its span continues the client's trace.
    let get = server_span(TRACE_GET);
    assert_eq!(get.name, "tools/call get_appointment");
    assert_eq!(hex(&get.parent_span_id), CLIENT_SPAN);
    let a = |k: &str| attr(&get.attributes, k);
    assert_eq!(
        a(attributes::MCP_METHOD_NAME).as_deref(),
        Some("tools/call")
    );
    assert_eq!(
        a(attributes::GEN_AI_TOOL_NAME).as_deref(),
        Some("get_appointment")
    );
    assert_eq!(
        a(attributes::GEN_AI_OPERATION_NAME).as_deref(),
        Some("execute_tool")
    );
    assert!(a(attributes::JSONRPC_REQUEST_ID).is_some());
    assert!(a(attributes::MCP_SESSION_ID).is_some_and(|s| !s.is_empty()));
    assert_eq!(a(attributes::HINT_READ_ONLY).as_deref(), Some("true"));
    assert_eq!(a(attributes::HINT_DESTRUCTIVE).as_deref(), Some("unset"));
    assert_eq!(a(attributes::HINT_OPEN_WORLD).as_deref(), Some("false"));
    assert_eq!(a(attributes::VERDICT).as_deref(), Some("critical"));
    let findings: Vec<_> = get
        .events
        .iter()
        .filter(|e| e.name == attributes::FINDING_EVENT)
        .collect();
    assert_eq!(findings.len(), 1, "{:?}", get.events);
    let f = |k: &str| attr(&findings[0].attributes, k);
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
    assert!(f(attributes::FINDING_EVIDENCE).is_some());
    let statements = children(get);
    let ops: Vec<String> = statements
        .iter()
        .filter_map(|s| attr(&s.attributes, attributes::DB_OPERATION_NAME))
        .collect();
    assert!(
        ops.contains(&"SELECT".to_owned()) && ops.contains(&"UPDATE".to_owned()),
        "{ops:?}"
    );
    for s in &statements {
        assert_eq!(s.kind, SpanKind::Client as i32, "{}", s.name);
        let a = |k: &str| attr(&s.attributes, k);
        assert_eq!(a(attributes::DB_SYSTEM_NAME).as_deref(), Some("sqlite"));
        assert_eq!(
            a(attributes::DB_QUERY_SUMMARY).as_deref(),
            Some(s.name.as_str())
        );
        assert_eq!(
            a(attributes::DB_COLLECTION_NAME).as_deref(),
            Some("appointments")
        );
        assert!(a(attributes::DB_QUERY_TEXT).is_some());
    }

    // add_patient: its INSERT's text has placeholders, never the values.
    let add = server_span(TRACE_ADD);
    assert_eq!(add.name, "tools/call add_patient");
    assert_eq!(
        attr(&add.attributes, attributes::VERDICT).as_deref(),
        Some("clean")
    );
    let insert = children(add)
        .into_iter()
        .find(|s| attr(&s.attributes, attributes::DB_OPERATION_NAME).as_deref() == Some("INSERT"))
        .expect("the INSERT span");
    assert_eq!(insert.name, "INSERT patients");

    // The demo's own calls carried no trace context: their server spans are roots. (Other
    // tests of this binary run the demo too, and their spans may be here as well.)
    let roots: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "tools/call purge_cancelled")
        .collect();
    assert!(
        roots.len() >= 2,
        "purge_cancelled is called twice per demo run"
    );
    assert!(roots.iter().all(|s| s.parent_span_id.is_empty()));
    // The first call deletes the cancelled appointments; its repeat finds none left.
    let verdicts: Vec<String> = roots
        .iter()
        .filter_map(|s| attr(&s.attributes, attributes::VERDICT))
        .collect();
    assert!(verdicts.iter().any(|v| v == "critical"), "{verdicts:?}");

    // No argument value and no SQL literal anywhere in what was exported.
    let everything = format!("{requests:?}");
    let forbidden = [
        SECRET_NAME,
        SECRET_EMAIL,
        "Edsger Dijkstra",
        "edsger@example.org",
        "consultation",
        "2026-12-24T10:00",
        "2026-12-09T10:00",
        "'cancelled'",
        "'search_patients'",
    ];
    for value in forbidden {
        assert!(!everything.contains(value), "{value:?} was exported");
    }
    let service: Vec<String> = requests
        .iter()
        .flat_map(|r| &r.resource_spans)
        .filter_map(|rs| rs.resource.as_ref())
        .filter_map(|r| attr(&r.attributes, "service.name"))
        .collect();
    assert!(
        service.iter().all(|s| s == "hintaudit-demo-test"),
        "{service:?}"
    );

    tokio::task::spawn_blocking(move || drop(pipeline))
        .await
        .unwrap();
}
