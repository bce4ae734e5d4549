//! End-to-end tests of the call's span (own test binary: it installs a global tracing
//! subscriber).
//!
//! The call's span: DefaultMakeSpan's attributes, what the layer records after judging, the
//! finding events, and what a custom MakeSpan sees in CallInfo.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use hintaudit_core::semconv;
use hintaudit_rmcp::{CallInfo, HintAuditLayer};
use rmcp::model::{CallToolRequestParams, RequestMetaObject};
use tower::Layer;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

#[path = "../layer/common.rs"]
#[allow(dead_code)] // shared with the layer tests; this binary uses part of it
mod common;

use common::*;

type Fields = BTreeMap<String, String>;
/// (span id, span name, fields)
type SpanLog = Arc<Mutex<Vec<(u64, String, Fields)>>>;
/// (parent span id, fields)
type EventLog = Arc<Mutex<Vec<(Option<u64>, Fields)>>>;

/// Keeps every span's fields (at creation and as recorded later) and every event with its
/// parent span's name.
#[derive(Clone, Default)]
struct Capture {
    spans: SpanLog,
    events: EventLog,
}

struct Collect<'a>(&'a mut Fields);

impl Visit for Collect<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _: Context<'_, S>) {
        let mut fields = Fields::new();
        attrs.record(&mut Collect(&mut fields));
        let name = attrs.metadata().name().to_owned();
        self.spans
            .lock()
            .unwrap()
            .push((id.into_u64(), name, fields));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut spans = self.spans.lock().unwrap();
        if let Some((_, _, fields)) = spans.iter_mut().find(|(i, _, _)| *i == id.into_u64()) {
            values.record(&mut Collect(fields));
        }
    }

    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::new();
        event.record(&mut Collect(&mut fields));
        let parent = event
            .parent()
            .cloned()
            .or_else(|| ctx.current_span().id().cloned())
            .map(|id| id.into_u64());
        self.events.lock().unwrap().push((parent, fields));
    }
}

impl Capture {
    fn call_spans(&self) -> Vec<(u64, Fields)> {
        self.spans
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, name, _)| name == "tools/call")
            .map(|(id, _, f)| (*id, f.clone()))
            .collect()
    }
}

/// The process-wide capture. A global subscriber, not a scoped one: tracing caches callsite
/// interest per process, and a scoped subscriber on one test thread races with other threads.
fn capture() -> &'static Capture {
    static CAPTURE: OnceLock<Capture> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        let capture = Capture::default();
        tracing::subscriber::set_global_default(
            tracing_subscriber::registry().with(capture.clone()),
        )
        .expect("the only global subscriber of this test binary");
        capture
    })
}

#[tokio::test]
async fn default_span_carries_semconv_attributes_verdict_and_findings() {
    let capture = capture();

    let client = connect(HintAuditLayer::new().with_recorder(()).layer(Clinic::new())).await;
    client
        .call_tool(CallToolRequestParams::new("touch_appointment"))
        .await
        .unwrap();
    client
        .call_tool(CallToolRequestParams::new("broken"))
        .await
        .unwrap();
    client
        .call_tool(CallToolRequestParams::new("no_such_tool"))
        .await
        .unwrap_err();

    let spans = capture.call_spans();
    assert_eq!(spans.len(), 3, "{spans:#?}");
    let (touch_id, touch) = &spans[0];
    let want = [
        (semconv::OTEL_NAME, "tools/call touch_appointment"),
        (semconv::OTEL_KIND, "server"),
        (semconv::MCP_METHOD_NAME, "tools/call"),
        (semconv::GEN_AI_TOOL_NAME, "touch_appointment"),
        (semconv::GEN_AI_OPERATION_NAME, "execute_tool"),
        (semconv::HINT_READ_ONLY, "true"),
        (semconv::HINT_DESTRUCTIVE, "unset"),
        (semconv::HINT_IDEMPOTENT, "unset"),
        (semconv::HINT_OPEN_WORLD, "false"),
        (semconv::VERDICT, "critical"),
    ];
    for (key, value) in want {
        assert_eq!(
            touch.get(key).map(String::as_str),
            Some(value),
            "{key} in {touch:#?}"
        );
    }
    assert!(touch.contains_key(semconv::JSONRPC_REQUEST_ID));
    assert!(
        !touch.contains_key(semconv::ERROR_TYPE),
        "no error: {touch:#?}"
    );
    assert!(
        !touch.contains_key(semconv::MCP_SESSION_ID),
        "no session over a stream"
    );

    let (_, broken) = &spans[1];
    assert_eq!(broken[semconv::ERROR_TYPE], "tool_error");
    assert_eq!(broken[semconv::OTEL_STATUS_CODE], "error");
    let (_, unknown) = &spans[2];
    assert_eq!(unknown[semconv::GEN_AI_TOOL_NAME], "no_such_tool");
    assert!(
        unknown[semconv::ERROR_TYPE].starts_with('-'),
        "{unknown:#?}"
    );
    assert_eq!(unknown[semconv::OTEL_STATUS_CODE], "error");

    let events = capture.events.lock().unwrap().clone();
    let findings: Vec<&Fields> = events
        .iter()
        .filter(|(_, f)| f.get("message").map(String::as_str) == Some(semconv::FINDING_EVENT))
        .map(|(_, f)| f)
        .collect();
    assert_eq!(findings.len(), 1, "{events:#?}");
    assert!(events.iter().any(|(parent, f)| *parent == Some(*touch_id)
        && f.get("message").map(String::as_str) == Some(semconv::FINDING_EVENT)));
    let finding = findings[0];
    assert_eq!(finding[semconv::FINDING_RULE], "read_only_write");
    assert_eq!(finding[semconv::FINDING_HINT], "readOnlyHint");
    assert_eq!(finding[semconv::FINDING_SEVERITY], "critical");
    assert_eq!(finding[semconv::FINDING_CONFIDENCE], "confirmed");
    assert!(!finding[semconv::FINDING_EVIDENCE].is_empty());
}

#[derive(Debug, Default, Clone, PartialEq)]
struct SeenInfo {
    tool: String,
    known_tool: bool,
    request_id: String,
    traceparent: Option<String>,
    tracestate: Option<String>,
    session_id: Option<String>,
}

#[tokio::test]
async fn custom_make_span_sees_request_id_meta_and_hints() {
    const TRACEPARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let layer =
        HintAuditLayer::new()
            .with_recorder(())
            .with_make_span(move |call: &CallInfo<'_>| {
                sink.lock().unwrap().push(SeenInfo {
                    tool: call.tool().to_owned(),
                    known_tool: call.known_tool(),
                    request_id: call.request_id().to_string(),
                    traceparent: call.traceparent().map(str::to_owned),
                    tracestate: call.tracestate().map(str::to_owned),
                    session_id: call.session_id().map(str::to_owned),
                });
                assert_eq!(
                    call.hints().read_only,
                    (call.tool() == "get_appointment").then_some(true)
                );
                tracing::Span::none()
            });
    let client = connect(layer.layer(Clinic::new())).await;

    let mut request = CallToolRequestParams::new("get_appointment");
    let mut meta = RequestMetaObject::new();
    meta.set_traceparent(TRACEPARENT);
    meta.set_tracestate("vendor=1");
    request.meta = Some(meta);
    let answer = client.call_tool(request).await.unwrap();
    // The span maker returned a disabled span: the call is still audited and answered.
    assert_eq!(text_of(&answer), "get_appointment");
    client
        .call_tool(CallToolRequestParams::new("no_such_tool"))
        .await
        .unwrap_err();

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].tool, "get_appointment");
    assert!(seen[0].known_tool);
    assert_eq!(seen[0].traceparent.as_deref(), Some(TRACEPARENT));
    assert_eq!(seen[0].tracestate.as_deref(), Some("vendor=1"));
    assert_eq!(seen[0].session_id, None);
    assert!(
        seen[0].request_id.parse::<i64>().is_ok(),
        "{:?}",
        seen[0].request_id
    );
    assert_ne!(seen[0].request_id, seen[1].request_id);
    assert!(!seen[1].known_tool);
    assert_eq!(seen[1].traceparent, None);
}
