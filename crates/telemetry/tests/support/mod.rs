//! This crate's own test fixtures: synthetic audit events, the planted workload ([`planted`]), and a small
//! MCP server ([`clinic`]). What hintaudit's test suites share (the OTLP receiver, the scrape
//! and its parser, promtool, the in-memory MCP client) is in hintaudit-test-support.
#![allow(dead_code)]

use std::time::Duration;

use hintaudit_core::*;
use hintaudit_telemetry::PrometheusRecorder;

pub fn statement(op: Operation, table: &str) -> StatementEffect {
    StatementEffect::new(op, vec![table.to_owned()])
}

pub fn row(table: &str, op: RowOperation, committed: bool) -> RowChange {
    RowChange {
        table: table.to_owned(),
        operation: op,
        statement: None,
        committed,
        image: RowImage::Unknown,
        nested: None,
        row_id: None,
    }
}

pub fn finding(tool: &str, rule: Rule, hint: Hint) -> Finding {
    Finding::new(tool, rule, hint, Confidence::Confirmed, "test evidence")
}

/// Records one call.
#[allow(clippy::too_many_arguments)]
pub fn call(
    recorder: &impl Recorder,
    tool: &str,
    known_tool: bool,
    hints: DeclaredHints,
    status: CallStatus,
    millis: u64,
    effect: &Effect,
    findings: Vec<Finding>,
    advice: &[Advice],
) {
    let verdict = Verdict {
        findings,
        advice: advice.to_vec(),
        ..Default::default()
    };
    let report = CallReport {
        tool,
        known_tool,
        hints,
        status,
        duration: Duration::from_millis(millis),
        effect,
        verdict: &verdict,
    };
    recorder.record(&AuditEvent::Call(&report));
}

pub fn listing(recorder: &impl Recorder, tool: &str, hints: DeclaredHints, findings: &[Finding]) {
    recorder.record(&AuditEvent::Listing {
        tool,
        hints,
        findings,
    });
}

/// Plants a known workload: three declared tools, one unknown, every kind of effect.
pub fn planted() -> PrometheusRecorder {
    let r = PrometheusRecorder::new();
    let get = DeclaredHints::new(Some(true), None, None, Some(false));
    let cancel = DeclaredHints::new(Some(false), Some(false), Some(true), Some(false));
    let export = DeclaredHints::default();
    listing(&r, "get_booking", get, &lint_hints("get_booking", get));
    listing(&r, "cancel_booking", cancel, &[]);
    listing(
        &r,
        "export_report",
        export,
        &lint_hints("export_report", export),
    );

    // get_booking writes although read-only: one critical finding.
    let mut e = Effect::default();
    e.statements.push(statement(Operation::Select, "bookings"));
    e.statements.push(statement(Operation::Update, "bookings"));
    e.row_changes
        .push(row("bookings", RowOperation::Update, true));
    let f = vec![finding("get_booking", Rule::ReadOnlyWrite, Hint::ReadOnly)];
    call(&r, "get_booking", true, get, CallStatus::Ok, 10, &e, f, &[]);
    // ... and once cleanly.
    let mut e = Effect::default();
    e.statements.push(statement(Operation::Select, "bookings"));
    call(
        &r,
        "get_booking",
        true,
        get,
        CallStatus::Ok,
        2,
        &e,
        vec![],
        &[],
    );

    // cancel_booking deletes two rows (a third, in audit_log, rolled back) and errs.
    let mut e = Effect::default();
    e.statements.push(statement(Operation::Delete, "bookings"));
    e.row_changes
        .push(row("bookings", RowOperation::Delete, true));
    e.row_changes
        .push(row("bookings", RowOperation::Delete, true));
    e.row_changes
        .push(row("audit_log", RowOperation::Delete, false));
    let f = vec![finding(
        "cancel_booking",
        Rule::UndeclaredDestructive,
        Hint::Destructive,
    )];
    call(
        &r,
        "cancel_booking",
        true,
        cancel,
        CallStatus::ToolError,
        30,
        &e,
        f,
        &[],
    );
    // ... and a PostgreSQL-style call: oracle counts, one committed transaction.
    let mut e = Effect::default();
    e.transactions.push(TransactionObservation {
        wrote: true,
        committed: true,
        tables: vec![TableWrites {
            table: "slots".into(),
            inserted: 0,
            updated: 3,
            deleted: 0,
        }],
        ..Default::default()
    });
    e.transactions.push(TransactionObservation {
        wrote: true,
        committed: false,
        tables: vec![TableWrites {
            table: "slots".into(),
            inserted: 0,
            updated: 0,
            deleted: 5,
        }],
        ..Default::default()
    });
    call(
        &r,
        "cancel_booking",
        true,
        cancel,
        CallStatus::Ok,
        4,
        &e,
        vec![],
        &[],
    );

    // A tool the server does not declare.
    let none = DeclaredHints::default();
    let e = Effect::default();
    call(
        &r,
        "drop_everything",
        false,
        none,
        CallStatus::ProtocolError,
        1,
        &e,
        vec![],
        &[],
    );

    // Advice for the tool with no hints.
    let advice = [Advice::CouldBeReadOnly, Advice::CouldBeClosedWorld];
    call(
        &r,
        "export_report",
        true,
        export,
        CallStatus::Ok,
        5,
        &e,
        vec![],
        &advice,
    );
    r
}

pub mod clinic;
