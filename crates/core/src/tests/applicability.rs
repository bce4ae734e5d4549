//! `Rule::applies_to` and `Rule::hints`: the rules a tool's hints allow, one row per hints
//! case, and a cross-check against the judge over every combination of declared hints.

use std::collections::BTreeSet;

use serde_json::json;

use super::*;

fn applicable(h: DeclaredHints) -> Vec<&'static str> {
    Rule::ALL
        .into_iter()
        .filter(|r| r.applies_to(h))
        .map(Rule::as_str)
        .collect()
}

#[test]
fn rules_that_apply_to_hints() {
    let rows = [
        (
            // destructiveHint and idempotentHint mean nothing for a read-only tool: not missing.
            hints(T, U, U, F),
            vec![
                "read_only_write",
                "read_only_write_attempt",
                "undeclared_open_world",
                "hints_changed",
                "enforced",
            ],
        ),
        (
            hints(T, U, U, U),
            vec![
                "read_only_write",
                "read_only_write_attempt",
                "hint_missing",
                "hints_changed",
                "enforced",
            ],
        ),
        (
            // readOnlyHint true makes destructive and idempotent meaningless: nothing of theirs.
            hints(T, F, T, T),
            vec![
                "read_only_write",
                "read_only_write_attempt",
                "hints_changed",
                "enforced",
            ],
        ),
        (
            hints(T, T, U, F),
            vec![
                "read_only_write",
                "read_only_write_attempt",
                "undeclared_open_world",
                "hint_contradiction",
                "hints_changed",
                "enforced",
            ],
        ),
        (
            hints(F, F, T, F),
            vec![
                "undeclared_destructive",
                "idempotency_broken",
                "undeclared_open_world",
                "hints_changed",
                "enforced",
            ],
        ),
        (
            // readOnlyHint unset is not true: the write rules of non-read-only tools apply.
            hints(U, F, T, U),
            vec![
                "undeclared_destructive",
                "idempotency_broken",
                "hint_missing",
                "hints_changed",
                "enforced",
            ],
        ),
        (hints(F, T, F, T), vec!["hints_changed"]),
        (
            // Unset destructive and idempotent: clients assume the cautious defaults, nothing
            // to break.
            hints(F, U, U, T),
            vec!["hint_missing", "hints_changed"],
        ),
        (hints(U, U, U, U), vec!["hint_missing", "hints_changed"]),
    ];
    for (h, want) in rows {
        assert_eq!(applicable(h), want, "{h:?}");
    }
}

#[test]
fn every_rule_names_its_hints() {
    let rows: [(Rule, &[Hint]); 9] = [
        (Rule::ReadOnlyWrite, &[Hint::ReadOnly]),
        (Rule::ReadOnlyWriteAttempt, &[Hint::ReadOnly]),
        (Rule::UndeclaredDestructive, &[Hint::Destructive]),
        (Rule::IdempotencyBroken, &[Hint::Idempotent]),
        (Rule::UndeclaredOpenWorld, &[Hint::OpenWorld]),
        (Rule::HintMissing, &Hint::ALL),
        (Rule::HintContradiction, &[Hint::Destructive]),
        (Rule::HintsChanged, &Hint::ALL),
        (
            Rule::Enforced,
            &[Hint::ReadOnly, Hint::Destructive, Hint::OpenWorld],
        ),
    ];
    for (rule, want) in rows {
        assert_eq!(rule.hints(), want, "{rule}");
    }
}

/// Every combination of declared hints: 3^4.
fn all_hints() -> Vec<DeclaredHints> {
    let values = [T, F, U];
    let mut all = Vec::new();
    for ro in values {
        for d in values {
            for i in values {
                for ow in values {
                    all.push(hints(ro, d, i, ow));
                }
            }
        }
    }
    all
}

/// A call that does everything a rule can see: deletes a row, inserts a row (a net change on
/// a repeat) and reaches a host outside the closed world.
fn everything() -> Effect {
    let mut e = Effect {
        statements: vec![
            stmt(Operation::Delete, "slots"),
            stmt(Operation::Insert, "slots"),
        ],
        outbound: vec![OutboundReach::new("POST", "maps.example.com", None)],
        ..Default::default()
    };
    e.row_changes
        .extend(rows("slots", RowOperation::Delete, 1, 0, true));
    e.row_changes
        .extend(rows("slots", RowOperation::Insert, 1, 1, true));
    e
}

/// A read-only tool's write that changed nothing.
fn attempt() -> Effect {
    Effect {
        statements: vec![stmt(Operation::Update, "slots")],
        ..Default::default()
    }
}

/// The judge reports a rule only where it applies, with one of the rule's hints and its
/// severity; and every call rule that applies is reported by some call that breaks it. So a
/// series pre-created from `applies_to` and `hints` is the one a finding later increments.
#[test]
fn the_judge_reports_exactly_the_rules_that_apply() {
    let args = json!({"id": 1});
    let call_rules = [
        Rule::ReadOnlyWrite,
        Rule::ReadOnlyWriteAttempt,
        Rule::UndeclaredDestructive,
        Rule::IdempotencyBroken,
        Rule::UndeclaredOpenWorld,
    ];
    for h in all_hints() {
        let judge = Judge::new(Policy::default());
        let mut seen: BTreeSet<Rule> = BTreeSet::new();
        let mut findings = Vec::new();
        for effect in [everything(), everything(), attempt()] {
            let call = ToolCall {
                tool: "t",
                hints: h,
                arguments: Some(&args),
                effect: &effect,
            };
            findings.extend(judge.judge(&call).findings);
        }
        let changed = DeclaredHints {
            open_world: Some(h.open_world != Some(true)),
            ..h
        };
        judge.judge_listing("t", h);
        findings.extend(judge.judge_listing("t", changed));
        findings.retain(|f| f.rule != Rule::HintMissing && f.rule != Rule::HintContradiction);
        findings.extend(judge.judge_listing("u", h));
        for f in &findings {
            let hints_now = if f.rule == Rule::HintsChanged {
                changed
            } else {
                h
            };
            assert!(f.rule.applies_to(hints_now), "{h:?}: {f:?}");
            assert!(f.rule.hints().contains(&f.hint), "{h:?}: {f:?}");
            assert_eq!(f.severity, f.rule.severity(), "{f:?}");
            seen.insert(f.rule);
        }
        for rule in call_rules.into_iter().filter(|r| r.applies_to(h)) {
            assert!(
                seen.contains(&rule),
                "{h:?}: {rule} applies but never fired"
            );
        }
        assert!(seen.contains(&Rule::HintsChanged), "{h:?}");
    }
}
