//! tools/list lint, advice, verdict labels and evidence summaries.
#![allow(clippy::type_complexity)]

use serde_json::json;

use super::*;

#[test]
fn listing_rules() {
    let judge = Judge::new(Policy::default());
    let cases = [
        (hints(T, U, U, F), vec![]),
        (
            hints(U, U, U, U),
            vec![
                ("hint_missing", Hint::ReadOnly),
                ("hint_missing", Hint::Destructive),
                ("hint_missing", Hint::Idempotent),
                ("hint_missing", Hint::OpenWorld),
            ],
        ),
        (
            hints(T, T, U, F),
            vec![("hint_contradiction", Hint::Destructive)],
        ),
        (hints(F, F, U, F), vec![("hint_missing", Hint::Idempotent)]),
    ];
    for (i, (h, want)) in cases.into_iter().enumerate() {
        let tool = format!("tool{i}");
        let got: Vec<(&str, Hint)> = judge
            .judge_listing(&tool, h)
            .iter()
            .map(|f| (f.rule.as_str(), f.hint))
            .collect();
        assert_eq!(got, want, "{h:?}");
        // Listing again with the same hints: same findings, no hints_changed.
        assert_eq!(judge.judge_listing(&tool, h).len(), want.len());
    }
    // The hints of tool0 change: hints_changed on the changed hint, every time they differ.
    let changed = judge.judge_listing("tool0", hints(F, T, U, F));
    let hc: Vec<&Finding> = changed
        .iter()
        .filter(|f| f.rule == Rule::HintsChanged)
        .collect();
    assert_eq!(hc.len(), 1);
    assert_eq!(hc[0].hint, Hint::ReadOnly);
    assert_eq!(hc[0].severity, Severity::Warning);
    assert!(
        hc[0].evidence.contains("ro=true") && hc[0].evidence.contains("ro=false"),
        "{}",
        hc[0].evidence
    );
}

#[test]
fn advice_after_enough_quiet_calls() {
    let judge = Judge::new(Policy::default().with_advice_after_calls(3));
    let cautious = hints(U, U, U, U);
    let reads = read("appointments");
    let inserts = hooked(Operation::Insert, RowOperation::Insert, "log", 1);
    let noop_update = Effect {
        statements: vec![stmt(Operation::Update, "appointments")],
        ..Default::default()
    };
    for i in 0..2 {
        judge.judge(&ToolCall {
            tool: "reader",
            hints: cautious,
            arguments: Some(&json!(i)),
            effect: &reads,
        });
    }
    assert!(
        judge.advice("reader", cautious).is_empty(),
        "before the threshold"
    );
    judge.judge(&ToolCall {
        tool: "reader",
        hints: cautious,
        arguments: None,
        effect: &reads,
    });
    assert_eq!(
        judge.advice("reader", cautious),
        vec![Advice::CouldBeReadOnly, Advice::CouldBeClosedWorld]
    );
    // A declared read-only, closed-world tool gets none.
    assert!(judge.advice("reader", hints(T, U, U, F)).is_empty());

    for i in 0..3 {
        judge.judge(&ToolCall {
            tool: "appender",
            hints: cautious,
            arguments: Some(&json!(i)),
            effect: &inserts,
        });
    }
    assert_eq!(
        judge.advice("appender", cautious),
        vec![Advice::CouldBeNonDestructive, Advice::CouldBeClosedWorld]
    );

    // A tool whose repeats change nothing, and that writes (attempts count as writes).
    for _ in 0..3 {
        judge.judge(&ToolCall {
            tool: "setter",
            hints: cautious,
            arguments: None,
            effect: &noop_update,
        });
    }
    assert!(
        judge
            .advice("setter", cautious)
            .contains(&Advice::CouldBeIdempotent)
    );
    assert!(
        !judge
            .advice("setter", cautious)
            .contains(&Advice::CouldBeReadOnly)
    );

    // Each verdict carries the advice the judge gives right after the call (what the
    // layer records): none before the threshold, the same as `Judge::advice` after it.
    let fresh = Judge::new(Policy::default().with_advice_after_calls(2));
    for (n, tool, effect) in [
        (1, "reader", &reads),
        (2, "reader", &reads),
        (2, "appender", &inserts),
    ] {
        for _ in 0..n {
            let v = fresh.judge(&ToolCall {
                tool,
                hints: cautious,
                arguments: None,
                effect,
            });
            assert_eq!(v.advice, fresh.advice(tool, cautious), "{tool}");
        }
    }
    assert_eq!(
        fresh.advice("reader", cautious),
        vec![Advice::CouldBeReadOnly, Advice::CouldBeClosedWorld]
    );
}

#[test]
fn verdict_label_is_the_worst_severity() {
    let judge = Judge::new(Policy::default());
    let e = hooked(Operation::Delete, RowOperation::Delete, "appointments", 1);
    let v = judge.judge(&ToolCall {
        tool: "t",
        hints: hints(T, U, U, F),
        arguments: None,
        effect: &e,
    });
    assert_eq!(v.label(), "critical");
    let v = judge.judge(&ToolCall {
        tool: "t",
        hints: hints(F, U, U, U),
        arguments: None,
        effect: &e,
    });
    assert_eq!(v.label(), "clean");
}

#[test]
fn evidence_is_summarized_and_bounded() {
    let mut e = Effect::default();
    for (i, t) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        e.statements.push(stmt(Operation::Delete, t));
        e.row_changes
            .extend(rows(t, RowOperation::Delete, 2, i, true));
    }
    let judge = Judge::new(Policy::default());
    let v = judge.judge(&ToolCall {
        tool: "t",
        hints: hints(F, F, U, F),
        arguments: None,
        effect: &e,
    });
    assert_eq!(v.findings.len(), 1);
    assert_eq!(
        v.findings[0].evidence,
        "2 rows deleted from a; 2 rows deleted from b; 2 rows deleted from c (+2 more)"
    );
}
