//! Which series exist: every declared tool's violation series at 0 before its first
//! violation (so `increase()` sees the first one), and the caps on the `tool` and `table`
//! labels.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

mod support;

use std::collections::{BTreeMap, BTreeSet};

use hintaudit_core::*;
use hintaudit_rmcp::HintAuditLayer;
use hintaudit_telemetry::{MetricName, OTHER_TABLE, PrometheusRecorder, UNKNOWN_TOOL, encode_text};
use hintaudit_test_support::mcp::{call_params, connect};
use hintaudit_test_support::scrape::Scraped;
use serde_json::json;
use support::clinic::{Clinic, secret_args};
use support::*;
use tower::Layer;

const CALLS: &str = MetricName::ToolCalls.as_str();
const VIOLATIONS: &str = MetricName::HintViolations.as_str();
const ROWS: &str = MetricName::ToolRowChanges.as_str();
const DECLARED: &str = MetricName::ToolDeclaredHints.as_str();

const T: Option<bool> = Some(true);
const F: Option<bool> = Some(false);
const U: Option<bool> = None;

/// Every violation series of `tool`: `rule/hint/severity` → value.
fn violations_of(r: &PrometheusRecorder, tool: &str) -> BTreeMap<String, f64> {
    let s = Scraped::parse(&encode_text(r.registry()));
    s.samples(VIOLATIONS)
        .filter(|x| x.labels.get("tool") == Some(tool))
        .map(|x| {
            let l = |k: &str| x.labels.get(k).unwrap_or("?").to_owned();
            let key = format!("{}/{}/{}", l("rule"), l("hint"), l("severity"));
            (key, s.number(x))
        })
        .collect()
}

/// The four `hints_changed` series every declared tool has, at `value`.
fn hints_changed(value: f64) -> Vec<(String, f64)> {
    Hint::ALL
        .iter()
        .map(|h| (format!("hints_changed/{}/warning", h.spec_name()), value))
        .collect()
}

fn zeros(keys: &[&str]) -> BTreeMap<String, f64> {
    keys.iter()
        .map(|k| (k.to_string(), 0.0))
        .chain(hints_changed(0.0))
        .collect()
}

/// One row per hints case: the series a tool with these hints has before any call, whichever
/// way it was declared.
#[test]
fn declared_tools_have_their_applicable_violation_series_at_zero() {
    let rows: [(DeclaredHints, &[&str]); 6] = [
        (
            DeclaredHints::new(T, U, U, F),
            &[
                "read_only_write/readOnlyHint/critical",
                "read_only_write_attempt/readOnlyHint/warning",
                "undeclared_open_world/openWorldHint/warning",
            ],
        ),
        (
            DeclaredHints::new(F, F, T, F),
            &[
                "idempotency_broken/idempotentHint/warning",
                "undeclared_destructive/destructiveHint/critical",
                "undeclared_open_world/openWorldHint/warning",
            ],
        ),
        (
            DeclaredHints::new(U, F, U, U),
            &["undeclared_destructive/destructiveHint/critical"],
        ),
        (
            DeclaredHints::new(T, F, T, T),
            &[
                "read_only_write/readOnlyHint/critical",
                "read_only_write_attempt/readOnlyHint/warning",
            ],
        ),
        (DeclaredHints::new(F, T, F, T), &[]),
        (DeclaredHints::new(U, U, U, U), &[]),
    ];
    type Declare = fn(&PrometheusRecorder, &str, DeclaredHints);
    let ways: [(&str, Declare); 4] = [
        ("declare_tool", |r, t, h| r.declare_tool(t, h)),
        ("Declared", |r, t, h| {
            r.record(&AuditEvent::Declared { tool: t, hints: h })
        }),
        ("Listing", |r, t, h| listing(r, t, h, &lint_hints(t, h))),
        ("first call", |r, t, h| {
            let e = Effect::default();
            call(r, t, true, h, CallStatus::Ok, 1, &e, vec![], &[])
        }),
    ];
    for (way, declare) in ways {
        let r = PrometheusRecorder::new();
        for (i, (h, want)) in rows.iter().enumerate() {
            let tool = format!("tool{i}");
            declare(&r, &tool, *h);
            assert_eq!(violations_of(&r, &tool), zeros(want), "{way}: {h:?}");
        }
        // Declaring again changes nothing.
        declare(&r, "tool0", rows[0].0);
        assert_eq!(violations_of(&r, "tool0"), zeros(rows[0].1), "{way}");
        assert!(violations_of(&r, UNKNOWN_TOOL).is_empty(), "{way}");
    }
}

/// New hints add the series they allow, at 0; no violation series is ever removed, and
/// counts survive.
#[test]
fn new_hints_add_zero_series_and_remove_none() {
    let r = PrometheusRecorder::new();
    let judge = Judge::new(Policy::default());
    let read_only = DeclaredHints::new(T, U, U, F);
    let writer = DeclaredHints::new(F, F, T, U);
    let list = |h: DeclaredHints| listing(&r, "t", h, &judge.judge_listing("t", h));
    r.record(&AuditEvent::Declared {
        tool: "t",
        hints: read_only,
    });
    list(read_only);
    let f = vec![finding("t", Rule::ReadOnlyWrite, Hint::ReadOnly)];
    let e = Effect::default();
    call(&r, "t", true, read_only, CallStatus::Ok, 1, &e, f, &[]);
    list(writer); // hints_changed on readOnlyHint
    let mut want = zeros(&[
        "read_only_write_attempt/readOnlyHint/warning",
        "undeclared_open_world/openWorldHint/warning",
        "undeclared_destructive/destructiveHint/critical",
        "idempotency_broken/idempotentHint/warning",
    ]);
    want.insert("read_only_write/readOnlyHint/critical".into(), 1.0);
    want.insert("hints_changed/readOnlyHint/warning".into(), 1.0);
    assert_eq!(violations_of(&r, "t"), want);
    let s = Scraped::parse(&encode_text(r.registry()));
    assert_eq!(
        s.samples(DECLARED).count(),
        1,
        "the gauge shows the current hints only"
    );
}

/// Past the tool cap a tool gets no series of its own, and `__unknown__` gets no zero series:
/// only the violations counted under it.
#[test]
fn the_tool_cap_holds_for_zero_series() {
    let r = PrometheusRecorder::builder()
        .with_max_tools(1)
        .build()
        .unwrap();
    r.declare_tool("first", DeclaredHints::new(T, U, U, F));
    r.record(&AuditEvent::Declared {
        tool: "second",
        hints: DeclaredHints::new(T, U, U, F),
    });
    let s = Scraped::parse(&encode_text(r.registry()));
    let tools = s.label_values("tool");
    assert_eq!(tools, ["first", UNKNOWN_TOOL].map(String::from).into());
    assert_eq!(violations_of(&r, "first").len(), 3 + 4);
    assert!(violations_of(&r, UNKNOWN_TOOL).is_empty());
    let f = vec![finding("second", Rule::ReadOnlyWrite, Hint::ReadOnly)];
    let (e, h) = (Effect::default(), DeclaredHints::new(T, U, U, F));
    call(&r, "second", true, h, CallStatus::Ok, 1, &e, f, &[]);
    let unknown = violations_of(&r, UNKNOWN_TOOL);
    let want: BTreeMap<String, f64> =
        [("read_only_write/readOnlyHint/critical".into(), 1.0)].into();
    assert_eq!(unknown, want);
}

fn observed(op: Operation, table: &str) -> StatementEffect {
    let mut s = StatementEffect::new(op, vec![table.to_owned()]);
    s.observed = true;
    s
}

/// A call that does everything a rule can see: deletes a row, inserts a row and reaches a
/// host outside the closed world.
fn everything() -> Effect {
    let mut e = Effect {
        statements: vec![
            observed(Operation::Delete, "slots"),
            observed(Operation::Insert, "slots"),
        ],
        outbound: vec![OutboundReach::new("POST", "maps.example.com", None)],
        ..Default::default()
    };
    let mut change = |op, statement| {
        let mut c = row("slots", op, true);
        c.statement = Some(statement);
        e.row_changes.push(c);
    };
    change(RowOperation::Delete, 0);
    change(RowOperation::Insert, 1);
    e
}

/// The real judge, every combination of declared hints, calls that break every rule and a
/// listing whose hints change: every violation it counts lands on a series that existed, at
/// 0, since the tool was declared. No new series appears.
#[test]
fn every_finding_of_the_judge_lands_on_an_existing_series() {
    let r = PrometheusRecorder::new();
    let judge = Judge::new(Policy::default());
    let values = [T, F, U];
    let mut all = Vec::new();
    for ro in values {
        for d in values {
            for i in values {
                for ow in values {
                    all.push(DeclaredHints::new(ro, d, i, ow));
                }
            }
        }
    }
    for (n, h) in all.iter().enumerate() {
        let tool = format!("tool{n}");
        r.record(&AuditEvent::Declared {
            tool: &tool,
            hints: *h,
        });
    }
    let before = Scraped::parse(&encode_text(r.registry())).series_by_labels(VIOLATIONS);
    assert!(before.values().all(|v| *v == 0.0));
    let args = json!({"id": 1});
    let attempt = Effect {
        statements: vec![observed(Operation::Update, "slots")],
        ..Default::default()
    };
    let mut counted = 0;
    for (n, h) in all.iter().enumerate() {
        let tool = format!("tool{n}");
        for effect in [everything(), everything(), attempt.clone()] {
            let call = ToolCall {
                tool: &tool,
                hints: *h,
                arguments: Some(&args),
                effect: &effect,
            };
            let verdict = judge.judge(&call);
            counted += verdict.findings.len();
            let report = CallReport {
                tool: &tool,
                known_tool: true,
                hints: *h,
                status: CallStatus::Ok,
                duration: std::time::Duration::from_millis(1),
                effect: &effect,
                verdict: &verdict,
            };
            r.record(&AuditEvent::Call(&report));
        }
        // The listing a client gets: the first hints, no change.
        listing(&r, &tool, *h, &judge.judge_listing(&tool, *h));
    }
    let after = Scraped::parse(&encode_text(r.registry())).series_by_labels(VIOLATIONS);
    let keys = |m: &BTreeMap<String, f64>| m.keys().cloned().collect::<BTreeSet<_>>();
    assert_eq!(keys(&after), keys(&before), "no violation series appeared");
    let total: f64 = after.values().sum();
    assert_eq!(total, counted as f64, "every finding was counted");
    assert!(counted > 81, "the calls broke rules: {counted}");

    // Then every tool's listed hints change: the hints_changed finding lands on a series
    // that existed before any call.
    for (n, h) in all.iter().enumerate() {
        let tool = format!("tool{n}");
        let changed = DeclaredHints {
            open_world: Some(h.open_world != Some(true)),
            ..*h
        };
        let findings = judge.judge_listing(&tool, changed);
        let f = findings.iter().find(|f| f.rule == Rule::HintsChanged);
        let f = f.unwrap_or_else(|| panic!("{h:?} -> {changed:?}: no hints_changed"));
        let key = format!(
            "hint={},rule={},severity={},tool={tool}",
            f.hint.spec_name(),
            f.rule.as_str(),
            f.severity.as_str()
        );
        assert_eq!(before.get(&key), Some(&0.0), "{key}");
        listing(&r, &tool, changed, &findings);
        let now = Scraped::parse(&encode_text(r.registry())).series_by_labels(VIOLATIONS);
        assert_eq!(now.get(&key), Some(&1.0), "{key}");
    }
}

/// The layer: learn_tools at start-up declares every tool to the Prometheus recorder, so the
/// zero series exist before any client; a client's call then increments one of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn learn_tools_exports_the_zero_series_before_any_client() {
    let recorder = PrometheusRecorder::new();
    let layer = HintAuditLayer::new().with_recorder(recorder.clone());
    let server = layer.layer(Clinic::default());
    let tools = Clinic::tools();
    assert_eq!(server.learn_tools(&tools), 3);
    let mut want = zeros(&[
        "read_only_write/readOnlyHint/critical",
        "read_only_write_attempt/readOnlyHint/warning",
        "undeclared_open_world/openWorldHint/warning",
    ]);
    assert_eq!(violations_of(&recorder, "get_booking"), want);
    assert_eq!(violations_of(&recorder, "list_bookings"), want);
    assert_eq!(violations_of(&recorder, "broken"), zeros(&[]));
    let before = Scraped::parse(&encode_text(recorder.registry()));
    assert_eq!(before.samples(DECLARED).count(), 3);
    assert!(before.samples(CALLS).all(|x| before.number(x) == 0.0));

    let client = connect(server).await;
    let args = secret_args();
    client
        .call_tool(call_params("get_booking", Some(args), None))
        .await
        .unwrap();
    client.cancel().await.ok();
    want.insert("read_only_write/readOnlyHint/critical".into(), 1.0);
    assert_eq!(violations_of(&recorder, "get_booking"), want);
    let after = Scraped::parse(&encode_text(recorder.registry()));
    let keys = |s: &Scraped| {
        s.series_by_labels(VIOLATIONS)
            .into_keys()
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(keys(&after), keys(&before));
}

/// A deterministic stream of random-looking names.
fn random_names(n: usize) -> impl Iterator<Item = String> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..n).map(move |_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        format!("tool_{x:016x}")
    })
}

#[test]
fn ten_thousand_unknown_tools_add_one_label_value() {
    let r = PrometheusRecorder::new();
    let declared = ["a", "b", "c", "d", "e"];
    for t in declared {
        listing(&r, t, DeclaredHints::new(Some(true), None, None, None), &[]);
    }
    let mut e = Effect::default();
    e.statements.push(statement(Operation::Delete, "bookings"));
    e.row_changes
        .push(row("bookings", RowOperation::Delete, true));
    let names: Vec<String> = random_names(10_000).collect();
    assert_eq!(names.iter().collect::<BTreeSet<_>>().len(), 10_000);
    for name in &names {
        let f = vec![finding(name, Rule::ReadOnlyWrite, Hint::ReadOnly)];
        let none = DeclaredHints::default();
        call(
            &r,
            name,
            false,
            none,
            CallStatus::ProtocolError,
            1,
            &e,
            f,
            &[],
        );
    }
    let s = Scraped::parse(&encode_text(r.registry()));
    let mut want: BTreeSet<String> = declared.iter().map(|t| t.to_string()).collect();
    want.insert(UNKNOWN_TOOL.to_owned());
    assert_eq!(s.label_values("tool"), want);
    let unknown = [("tool", UNKNOWN_TOOL), ("status", "protocol_error")];
    assert_eq!(s.value(CALLS, &unknown), Some(10_000.0));
    let rows = [
        ("tool", UNKNOWN_TOOL),
        ("table", "bookings"),
        ("operation", "delete"),
    ];
    assert_eq!(s.value(ROWS, &rows), Some(10_000.0));
    // The exposition stays small: no series per random name.
    assert!(
        s.scrape.samples.len() < 200,
        "{} samples",
        s.scrape.samples.len()
    );
}

#[test]
fn tables_past_the_cap_are_other_and_tools_past_the_cap_unknown() {
    let r = PrometheusRecorder::builder()
        .with_max_tables(2)
        .with_max_tools(2)
        .build()
        .unwrap();
    for t in ["one", "two", "three"] {
        listing(&r, t, DeclaredHints::default(), &[]);
    }
    let mut e = Effect::default();
    for table in ["t1", "t2", "t3", "t4", "t1"] {
        e.row_changes.push(row(table, RowOperation::Insert, true));
    }
    let none = DeclaredHints::default();
    for tool in ["one", "three"] {
        call(&r, tool, true, none, CallStatus::Ok, 1, &e, vec![], &[]);
    }
    let s = Scraped::parse(&encode_text(r.registry()));
    let tables: BTreeSet<String> = s.label_values("table");
    let want: BTreeSet<String> = ["t1", "t2", OTHER_TABLE].map(String::from).into();
    assert_eq!(tables, want);
    let rows = |tool, table| {
        s.value(
            ROWS,
            &[("tool", tool), ("table", table), ("operation", "insert")],
        )
    };
    assert_eq!(rows("one", "t1"), Some(2.0));
    assert_eq!(rows("one", OTHER_TABLE), Some(2.0));
    // "three" was declared past the tool cap: it counts as unknown, without declared hints.
    assert_eq!(rows(UNKNOWN_TOOL, "t2"), Some(1.0));
    let tools = s.label_values("tool");
    let want: BTreeSet<String> = ["one", "two", UNKNOWN_TOOL].map(String::from).into();
    assert_eq!(tools, want);
    assert_eq!(s.samples(DECLARED).count(), 2);
}
