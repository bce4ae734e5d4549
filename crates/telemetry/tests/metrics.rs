//! The Prometheus recorder end to end: synthetic audit events in, a real HTTP scrape out,
//! parsed with a text-format parser. The exposition's form (promtool, the golden file) is
//! checked in exposition.rs.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

mod support;

use std::collections::BTreeSet;

use hintaudit_core::*;
use hintaudit_telemetry::{
    MetricName, PrometheusRecorder, UNKNOWN_TOOL, encode_text, metrics_excerpt, metrics_router,
    serve_metrics,
};
use hintaudit_test_support::scrape::{Scraped, http_get};
use support::*;

const CALLS: &str = MetricName::ToolCalls.as_str();
const VIOLATIONS: &str = MetricName::HintViolations.as_str();
const STATEMENTS: &str = MetricName::ToolStatements.as_str();
const ROWS: &str = MetricName::ToolRowChanges.as_str();
const DECLARED: &str = MetricName::ToolDeclaredHints.as_str();
const ADVICE: &str = MetricName::ToolAdvice.as_str();
const CHANGED: &str = MetricName::ToolHintsChanged.as_str();
const AUDIT_ERRORS: &str = MetricName::AuditErrors.as_str();
const UNATTRIBUTED: &str = MetricName::UnattributedStatements.as_str();

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrape_over_http_has_the_exact_planted_values() {
    let recorder = planted();
    // Mounted beside another route, as an operator does beside /mcp.
    let app = axum::Router::new()
        .route("/mcp", axum::routing::get(|| async { "mcp" }))
        .merge(metrics_router(recorder.registry().clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let (status, headers, body) = http_get(addr, "/metrics").await;
    assert!(status.contains(" 200 "), "{status}");
    assert!(
        headers.contains("content-type: text/plain; version=0.0.4"),
        "{headers}"
    );
    let (_, _, mcp) = http_get(addr, "/mcp").await;
    assert_eq!(mcp, "mcp");
    server.abort();

    let s = Scraped::parse(&body);
    let calls = |tool, status| s.value(CALLS, &[("tool", tool), ("status", status)]);
    assert_eq!(calls("get_booking", "ok"), Some(2.0));
    assert_eq!(calls("get_booking", "tool_error"), Some(0.0));
    assert_eq!(calls("cancel_booking", "tool_error"), Some(1.0));
    assert_eq!(calls("cancel_booking", "ok"), Some(1.0));
    assert_eq!(calls("export_report", "ok"), Some(1.0));
    assert_eq!(calls(UNKNOWN_TOOL, "protocol_error"), Some(1.0));
    assert_eq!(calls("drop_everything", "protocol_error"), None);

    let v = |tool, rule, hint, sev| {
        s.value(
            VIOLATIONS,
            &[
                ("tool", tool),
                ("rule", rule),
                ("hint", hint),
                ("severity", sev),
            ],
        )
    };
    let ro = v("get_booking", "read_only_write", "readOnlyHint", "critical");
    assert_eq!(ro, Some(1.0));
    let destructive = v(
        "cancel_booking",
        "undeclared_destructive",
        "destructiveHint",
        "critical",
    );
    assert_eq!(destructive, Some(1.0));
    // Listing lint (hint_missing) is a state, shown by the gauge, not a violation count.
    let nonzero = s.samples(VIOLATIONS).filter(|x| s.number(x) != 0.0);
    assert_eq!(nonzero.count(), 2, "{}", s.text);
    // Every other series a declared tool's hints allow is there at 0: get_booking and
    // cancel_booking 3 rules and hints_changed for each of the 4 hints, export_report only
    // hints_changed (series.rs checks them one by one).
    assert_eq!(s.samples(VIOLATIONS).count(), 7 + 7 + 4, "{}", s.text);
    let unknown = s
        .samples(VIOLATIONS)
        .filter(|x| x.labels.get("tool") == Some(UNKNOWN_TOOL));
    assert_eq!(unknown.count(), 0, "no series for {UNKNOWN_TOOL}");

    let st = |tool, op| s.value(STATEMENTS, &[("tool", tool), ("operation", op)]);
    assert_eq!(st("get_booking", "SELECT"), Some(2.0));
    assert_eq!(st("get_booking", "UPDATE"), Some(1.0));
    assert_eq!(st("cancel_booking", "DELETE"), Some(1.0));
    assert_eq!(s.samples(STATEMENTS).count(), 3);

    let rows =
        |tool, table, op| s.value(ROWS, &[("tool", tool), ("table", table), ("operation", op)]);
    assert_eq!(rows("get_booking", "bookings", "update"), Some(1.0));
    assert_eq!(rows("cancel_booking", "bookings", "delete"), Some(2.0));
    assert_eq!(rows("cancel_booking", "slots", "update"), Some(3.0));
    assert_eq!(
        s.samples(ROWS).count(),
        3,
        "rolled-back changes are not counted"
    );

    // The declared-hints gauge: one series per declared tool, unset shown as `unset`.
    let gauge = |tool, ro, d, i, ow| {
        s.value(
            DECLARED,
            &[
                ("tool", tool),
                ("read_only", ro),
                ("destructive", d),
                ("idempotent", i),
                ("open_world", ow),
            ],
        )
    };
    assert_eq!(
        gauge("get_booking", "true", "unset", "unset", "false"),
        Some(1.0)
    );
    assert_eq!(
        gauge("cancel_booking", "false", "false", "true", "false"),
        Some(1.0)
    );
    assert_eq!(
        gauge("export_report", "unset", "unset", "unset", "unset"),
        Some(1.0)
    );
    assert_eq!(s.samples(DECLARED).count(), 3);

    let advice = |tool, a| s.value(ADVICE, &[("tool", tool), ("advice", a)]);
    assert_eq!(advice("export_report", "could_be_read_only"), Some(1.0));
    assert_eq!(advice("export_report", "could_be_closed_world"), Some(1.0));
    assert_eq!(advice("export_report", "could_be_idempotent"), Some(0.0));
    assert_eq!(advice("get_booking", "could_be_read_only"), Some(0.0));
    assert_eq!(advice(UNKNOWN_TOOL, "could_be_read_only"), None);

    let count = &format!("{}_count", MetricName::ToolCallDuration);
    assert_eq!(s.value(count, &[("tool", "get_booking")]), Some(2.0));
    let sum = &format!("{}_sum", MetricName::ToolCallDuration);
    let got = s.value(sum, &[("tool", "get_booking")]).unwrap();
    assert!((got - 0.012).abs() < 1e-9, "{got}");
    assert_eq!(s.value(CHANGED, &[("tool", "get_booking")]), Some(0.0));

    // Every metric of docs/design.md#5-telemetry-names is there, with its help text; the
    // process-wide counters have every label value from the start.
    for m in MetricName::ALL.into_iter().filter(|m| !m.proxy_only()) {
        assert!(body.contains(&format!("# HELP {} ", m.as_str())), "{m}");
        assert!(
            body.contains(&format!("# TYPE {} {}", m.as_str(), m.kind().as_str())),
            "{m}"
        );
    }
    for stage in AuditStage::ALL {
        let v = s.value(AUDIT_ERRORS, &[("stage", stage.as_str())]);
        assert!(v.is_some(), "{stage:?}");
    }
    for op in Operation::ALL {
        let v = s.value(UNATTRIBUTED, &[("operation", op.as_str())]);
        assert!(v.is_some(), "{op:?}");
    }
}

#[test]
fn process_wide_counters_are_read_at_scrape_time() {
    let recorder = PrometheusRecorder::new();
    let value = |stage: &str| {
        Scraped::parse(&encode_text(recorder.registry()))
            .value(AUDIT_ERRORS, &[("stage", stage)])
            .unwrap()
    };
    let before = value("oracle");
    stats().audit_error(AuditStage::Oracle, &"test: the oracle failed");
    stats().audit_error(AuditStage::Oracle, &"test: the oracle failed");
    assert!(value("oracle") >= before + 2.0);
    stats().unattributed_statement(Operation::Truncate);
    let s = Scraped::parse(&encode_text(recorder.registry()));
    let op = s.value(UNATTRIBUTED, &[("operation", "TRUNCATE")]);
    assert!(op.unwrap() >= 1.0);
}

#[test]
fn hints_changes_replace_the_gauge_and_count_once_per_change() {
    let r = PrometheusRecorder::new();
    let judge = Judge::new(Policy::default());
    let first = DeclaredHints::new(Some(true), None, None, Some(false));
    let second = DeclaredHints::new(Some(false), Some(true), None, Some(false));
    let list = |h: DeclaredHints| {
        let findings = judge.judge_listing("t", h);
        listing(&r, "t", h, &findings);
    };
    list(first);
    list(first);
    list(second); // judge: hints_changed
    list(second); // still changed from the first: no new change
    let s = Scraped::parse(&encode_text(r.registry()));
    assert_eq!(s.value(CHANGED, &[("tool", "t")]), Some(1.0));
    let v = [
        ("tool", "t"),
        ("rule", "hints_changed"),
        ("hint", "readOnlyHint"),
        ("severity", "warning"),
    ];
    assert_eq!(s.value(VIOLATIONS, &v), Some(1.0));
    let series: Vec<_> = s.samples(DECLARED).collect();
    assert_eq!(series.len(), 1, "the old hints' series is removed");
    assert_eq!(series[0].labels.get("read_only"), Some("false"));
    assert_eq!(series[0].labels.get("destructive"), Some("true"));
    assert_eq!(series[0].labels.get("idempotent"), Some("unset"));

    list(first); // back to the first hints: a change, but no finding
    let s = Scraped::parse(&encode_text(r.registry()));
    assert_eq!(s.value(CHANGED, &[("tool", "t")]), Some(2.0));
    assert_eq!(s.value(VIOLATIONS, &v), Some(1.0));
    assert_eq!(s.samples(DECLARED).count(), 1);
}

#[test]
fn declared_tools_learned_from_calls_and_declare_tool() {
    let r = PrometheusRecorder::new();
    r.declare_tool(
        "listed_up_front",
        DeclaredHints::new(None, None, None, Some(true)),
    );
    let h = DeclaredHints::new(Some(true), None, None, None);
    call(
        &r,
        "seen_in_a_call",
        true,
        h,
        CallStatus::Ok,
        1,
        &Effect::default(),
        vec![],
        &[],
    );
    let s = Scraped::parse(&encode_text(r.registry()));
    let tools = s.label_values("tool");
    let want: BTreeSet<String> = ["listed_up_front", "seen_in_a_call", UNKNOWN_TOOL]
        .map(String::from)
        .into();
    assert_eq!(tools, want);
    assert_eq!(s.samples(DECLARED).count(), 2);
    assert_eq!(s.value(CHANGED, &[("tool", "listed_up_front")]), Some(0.0));
}

#[test]
fn two_recorders_share_a_registry_only_once() {
    let registry = prometheus::Registry::new();
    let first = PrometheusRecorder::builder()
        .with_registry(registry.clone())
        .build();
    assert!(first.is_ok());
    let second = PrometheusRecorder::builder()
        .with_registry(registry)
        .build();
    assert!(second.is_err(), "the same names cannot be registered twice");
}

#[test]
fn excerpt_shows_nonzero_samples_only() {
    let r = planted();
    let text = metrics_excerpt(
        r.registry(),
        &[MetricName::HintViolations, MetricName::ToolCalls],
    );
    assert!(text.contains(&format!("{VIOLATIONS}{{")), "{text}");
    assert!(
        text.contains(r#"status="ok",tool="get_booking"} 2"#),
        "{text}"
    );
    assert!(!text.contains(" 0\n"), "{text}");
    assert!(!text.contains('#'), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standalone_listener_serves_and_stops() {
    let r = planted();
    let server = serve_metrics("127.0.0.1:0".parse().unwrap(), r.registry().clone())
        .await
        .unwrap();
    let addr = server.local_addr();
    let (status, _, body) = http_get(addr, "/metrics").await;
    assert!(status.contains(" 200 "), "{status}");
    assert!(body.contains(CALLS));
    let (status, _, _) = http_get(addr, "/other").await;
    assert!(status.contains(" 404 "), "{status}");
    server.shutdown().await;
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

/// `hintaudit_evidence_incomplete_total{source}`: every source at 0 from the start; a call
/// counts once per source that lost part of its interval, never for a pending one.
#[test]
fn incomplete_evidence_counts_each_source_once_per_call() {
    const INCOMPLETE: &str = MetricName::EvidenceIncomplete.as_str();
    let recorder = PrometheusRecorder::new();
    let count = |source: &str| {
        Scraped::parse(&encode_text(recorder.registry())).value(INCOMPLETE, &[("source", source)])
    };
    for source in EvidenceSource::ALL {
        assert_eq!(count(source.as_str()), Some(0.0), "{source:?}");
    }
    let hints = DeclaredHints::default();
    let mut e = Effect::default();
    e.completeness.incomplete(EvidenceSource::Files);
    e.completeness.incomplete(EvidenceSource::Files);
    e.completeness
        .incomplete(EvidenceSource::Database(DatabaseKind::Postgres));
    e.completeness.pending(EvidenceSource::Egress);
    for _ in 0..2 {
        call(
            &recorder,
            "t",
            true,
            hints,
            CallStatus::Ok,
            1,
            &e,
            vec![],
            &[],
        );
    }
    // A whole call counts nothing.
    let whole = Effect::default();
    call(
        &recorder,
        "t",
        true,
        hints,
        CallStatus::Ok,
        1,
        &whole,
        vec![],
        &[],
    );
    assert_eq!(count("files"), Some(2.0));
    assert_eq!(count("postgresql"), Some(2.0));
    assert_eq!(count("egress"), Some(0.0), "pending is not incomplete");
    assert_eq!(count("mysql"), Some(0.0));
}
