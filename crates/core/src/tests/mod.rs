//! Table-driven tests of the judge: one row per (hints, effect) case, the expected rules in
//! the row. Helpers here; cases by concern in the submodules.
#![allow(clippy::type_complexity)]

use crate::*;

mod applicability;
mod calls;
mod evidence_texts;
mod listing;
mod own_rows;
mod readings;
mod repeats;
mod requests;

/// Short for [`DeclaredHints::new`] in table rows: `hints(T, U, U, F)`.
pub(super) const fn hints(
    ro: Option<bool>,
    d: Option<bool>,
    i: Option<bool>,
    ow: Option<bool>,
) -> DeclaredHints {
    DeclaredHints::new(ro, d, i, ow)
}

pub(super) fn stmt(op: Operation, table: &str) -> StatementEffect {
    let mut s = StatementEffect::new(op, vec![table.to_owned()]);
    s.observed = true;
    s
}

pub(super) fn rows(
    table: &str,
    op: RowOperation,
    n: usize,
    stmt: usize,
    committed: bool,
) -> Vec<RowChange> {
    (0..n)
        .map(|_| RowChange {
            table: table.into(),
            operation: op,
            statement: Some(stmt),
            committed,
            image: RowImage::Unknown,
            nested: None,
            row_id: None,
        })
        .collect()
}

/// An effect of one statement on `table` with `n` hooked rows.
pub(super) fn hooked(op: Operation, row_op: RowOperation, table: &str, n: usize) -> Effect {
    Effect {
        statements: vec![stmt(op, table)],
        row_changes: rows(table, row_op, n, 0, true),
        ..Default::default()
    }
}

pub(super) fn read(table: &str) -> Effect {
    let mut s = StatementEffect::new(Operation::Select, vec![]);
    s.read_tables = vec![table.into()].into();
    Effect {
        statements: vec![s],
        ..Default::default()
    }
}

/// A case of one call: its name, the policy, the hints, the effect, the rules expected, and
/// the confidence of the first finding.
pub(super) type Case = (
    &'static str,
    Policy,
    DeclaredHints,
    Effect,
    Vec<&'static str>,
    Option<Confidence>,
);

/// Judges each case's call with a judge of its own: the rules and the first finding's
/// confidence are the row's, every finding has evidence, and both readings of openWorldHint
/// agree on the rest.
pub(super) fn judge_cases(cases: Vec<Case>) {
    for (name, policy, h, effect, want, conf) in cases {
        let judge = Judge::new(policy);
        let v = judge.judge(&ToolCall {
            tool: "t",
            hints: h,
            arguments: None,
            effect: &effect,
        });
        assert_eq!(rules(&v), want, "case: {name}\nfindings: {:#?}", v.findings);
        assert_eq!(
            v.findings.first().map(|f| f.confidence),
            conf,
            "confidence, case: {name}"
        );
        for f in &v.findings {
            assert!(!f.evidence.is_empty(), "case {name}: empty evidence");
        }
        readings::readings_agree(name, &effect, judge.policy(), h);
    }
}

pub(super) fn rules(v: &Verdict) -> Vec<&'static str> {
    v.findings.iter().map(|f| f.rule.as_str()).collect()
}

pub(super) const T: Option<bool> = Some(true);
pub(super) const F: Option<bool> = Some(false);
pub(super) const U: Option<bool> = None;
