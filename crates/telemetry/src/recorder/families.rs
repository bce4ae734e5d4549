//! The metric families ([design: telemetry names](../../../../docs/design.md#5-telemetry-names))
//! and the cached label handles of one `tool` label value, including the violation series a
//! declared tool's hints allow, created at 0.

use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use hintaudit_core::{
    Advice, CallStatus, DeclaredHints, EvidenceSource, Hint, Operation, RowOperation, Rule,
    Severity,
};
use prometheus::{
    Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry,
};

use crate::metric_name::MetricName;

/// The rules `hintaudit_hint_violations_total` counts: the call rules and `hints_changed`.
/// `hint_missing` and `hint_contradiction` describe a state, which the declared-hints gauge
/// shows; every tools/list would repeat them.
pub(crate) const VIOLATION_RULES: [Rule; 6] = [
    Rule::ReadOnlyWrite,
    Rule::ReadOnlyWriteAttempt,
    Rule::UndeclaredDestructive,
    Rule::IdempotencyBroken,
    Rule::UndeclaredOpenWorld,
    Rule::HintsChanged,
];

/// The `rule`, `hint` and `severity` labels of one `hintaudit_hint_violations_total` series of
/// a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ViolationKey {
    pub(crate) rule: Rule,
    pub(crate) hint: Hint,
    pub(crate) severity: Severity,
}

/// The `table` and `operation` labels of one `hintaudit_tool_row_changes_total` series of a
/// tool.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct RowKey {
    table: Arc<str>,
    operation: RowOperation,
}

/// The label sets of the violation series a tool declaring `hints` can increment: every
/// counted rule that [applies](Rule::applies_to) to them, with each hint a finding of the
/// rule can name and the rule's severity.
pub(crate) fn violation_labels(hints: DeclaredHints) -> impl Iterator<Item = ViolationKey> {
    VIOLATION_RULES
        .into_iter()
        .filter(move |rule| rule.applies_to(hints))
        .flat_map(|rule| {
            rule.hints().iter().map(move |hint| ViolationKey {
                rule,
                hint: *hint,
                severity: rule.severity(),
            })
        })
}

pub(crate) const STATUSES: [CallStatus; 3] = [
    CallStatus::Ok,
    CallStatus::ToolError,
    CallStatus::ProtocolError,
];

pub(crate) fn status_index(status: CallStatus) -> usize {
    STATUSES.iter().position(|s| *s == status).unwrap_or(0)
}

/// The metric families the recorder registers (the process-wide counters are a collector of
/// their own).
#[derive(Debug)]
pub(crate) struct Families {
    pub(crate) calls: IntCounterVec,
    pub(crate) duration: HistogramVec,
    pub(crate) violations: IntCounterVec,
    pub(crate) statements: IntCounterVec,
    pub(crate) rows: IntCounterVec,
    pub(crate) declared: IntGaugeVec,
    pub(crate) advice: IntGaugeVec,
    pub(crate) hints_changed: IntCounterVec,
    pub(crate) hints_corrected: IntCounterVec,
    /// `hintaudit_evidence_incomplete_total`, one series per source in
    /// [`EvidenceSource::ALL`] order, each at 0 from the start.
    pub(crate) incomplete: Vec<IntCounter>,
    incomplete_vec: IntCounterVec,
}

fn opts(name: MetricName) -> Opts {
    Opts::new(name.as_str(), name.help())
}

impl Families {
    pub(crate) fn new(buckets: Vec<f64>) -> prometheus::Result<Self> {
        let counter = |m: MetricName| IntCounterVec::new(opts(m), m.labels());
        let gauge = |m: MetricName| IntGaugeVec::new(opts(m), m.labels());
        let d = MetricName::ToolCallDuration;
        let incomplete_vec = counter(MetricName::EvidenceIncomplete)?;
        let incomplete = EvidenceSource::ALL
            .iter()
            .map(|s| incomplete_vec.with_label_values(&[s.as_str()]))
            .collect();
        Ok(Families {
            calls: counter(MetricName::ToolCalls)?,
            duration: HistogramVec::new(
                HistogramOpts::new(d.as_str(), d.help()).buckets(buckets),
                d.labels(),
            )?,
            violations: counter(MetricName::HintViolations)?,
            statements: counter(MetricName::ToolStatements)?,
            rows: counter(MetricName::ToolRowChanges)?,
            declared: gauge(MetricName::ToolDeclaredHints)?,
            advice: gauge(MetricName::ToolAdvice)?,
            hints_changed: counter(MetricName::ToolHintsChanged)?,
            hints_corrected: counter(MetricName::ToolHintsCorrected)?,
            incomplete,
            incomplete_vec,
        })
    }

    pub(crate) fn register(&self, registry: &Registry) -> prometheus::Result<()> {
        registry.register(Box::new(self.calls.clone()))?;
        registry.register(Box::new(self.duration.clone()))?;
        registry.register(Box::new(self.violations.clone()))?;
        registry.register(Box::new(self.statements.clone()))?;
        registry.register(Box::new(self.rows.clone()))?;
        registry.register(Box::new(self.declared.clone()))?;
        registry.register(Box::new(self.advice.clone()))?;
        registry.register(Box::new(self.hints_changed.clone()))?;
        registry.register(Box::new(self.hints_corrected.clone()))?;
        registry.register(Box::new(self.incomplete_vec.clone()))?;
        Ok(())
    }
}

/// Per-tool state of what a declared tool serves.
#[derive(Debug, Default)]
pub(crate) struct HintState {
    /// The hints the declared-hints gauge shows.
    pub(crate) current: Option<DeclaredHints>,
    /// The hints of the last listing, for counting changes.
    pub(crate) listed: Option<DeclaredHints>,
}

/// What only a declared tool has: advice gauges in [`Advice::ALL`] order, its hint state and
/// its hints-changed and hints-corrected counters.
#[derive(Debug)]
pub(crate) struct Declared {
    pub(crate) advice: [IntGauge; 4],
    pub(crate) state: Mutex<HintState>,
    pub(crate) changed: IntCounter,
    pub(crate) corrected: IntCounter,
}

/// Cached label handles of one `tool` label value.
#[derive(Debug)]
pub(crate) struct ToolMetrics {
    label: Arc<str>,
    pub(crate) calls: [IntCounter; 3],
    pub(crate) duration: Histogram,
    statements: [OnceLock<IntCounter>; Operation::ALL.len()],
    rows: RwLock<HashMap<RowKey, IntCounter>>,
    violations: RwLock<HashMap<ViolationKey, IntCounter>>,
    /// `None` for `__unknown__`.
    pub(crate) declared: Option<Declared>,
}

impl ToolMetrics {
    pub(crate) fn new(f: &Families, label: Arc<str>, declared: bool) -> Self {
        let l: &str = &label;
        let calls = STATUSES.map(|s| f.calls.with_label_values(&[l, s.as_str()]));
        let declared = declared.then(|| Declared {
            advice: Advice::ALL.map(|a| f.advice.with_label_values(&[l, a.as_str()])),
            state: Mutex::new(HintState::default()),
            changed: f.hints_changed.with_label_values(&[l]),
            corrected: f.hints_corrected.with_label_values(&[l]),
        });
        ToolMetrics {
            duration: f.duration.with_label_values(&[l]),
            calls,
            statements: [const { OnceLock::new() }; Operation::ALL.len()],
            rows: RwLock::default(),
            violations: RwLock::default(),
            declared,
            label,
        }
    }

    pub(crate) fn statement(&self, f: &Families, op: Operation) -> &IntCounter {
        self.statements[op.index()]
            .get_or_init(|| f.statements.with_label_values(&[&self.label, op.as_str()]))
    }

    pub(crate) fn rows(&self, f: &Families, table: &Arc<str>, op: RowOperation, n: u64) {
        if n == 0 {
            return;
        }
        let key = RowKey {
            table: table.clone(),
            operation: op,
        };
        if let Some(c) = self.rows.read().get(&key) {
            c.inc_by(n);
            return;
        }
        let mut map = self.rows.write();
        map.entry(key)
            .or_insert_with(|| f.rows.with_label_values(&[&self.label, table, op.as_str()]))
            .inc_by(n);
    }

    /// Counts one correction of the tool's served hints (`correct_hints`); none for
    /// `__unknown__`.
    pub(crate) fn corrected(&self) {
        if let Some(d) = &self.declared {
            d.corrected.inc();
        }
    }

    /// Counts one violation.
    pub(crate) fn violation(&self, f: &Families, key: ViolationKey) {
        if let Some(c) = self.violations.read().get(&key) {
            c.inc();
            return;
        }
        self.violation_series(&mut self.violations.write(), f, key)
            .inc();
    }

    /// The violation counter of `key`, created (at 0) if it does not exist yet.
    fn violation_series<'m>(
        &self,
        map: &'m mut HashMap<ViolationKey, IntCounter>,
        f: &Families,
        key: ViolationKey,
    ) -> &'m IntCounter {
        map.entry(key).or_insert_with(|| {
            f.violations.with_label_values(&[
                &self.label,
                key.rule.as_str(),
                key.hint.spec_name(),
                key.severity.as_str(),
            ])
        })
    }

    /// Points the declared-hints gauge at `hints`, removing the previous series, and creates
    /// at 0 every violation series these hints allow. Violation series are never removed: a
    /// counter that vanished and came back would read as a reset.
    pub(crate) fn show_hints(&self, f: &Families, state: &mut HintState, hints: DeclaredHints) {
        if state.current == Some(hints) {
            return;
        }
        if let Some(old) = state.current {
            let _ = f
                .declared
                .remove_label_values(&hint_labels(&self.label, &old));
        }
        f.declared
            .with_label_values(&hint_labels(&self.label, &hints))
            .set(1);
        state.current = Some(hints);
        let mut violations = self.violations.write();
        for key in violation_labels(hints) {
            self.violation_series(&mut violations, f, key);
        }
    }
}

fn hint_labels<'a>(tool: &'a str, h: &DeclaredHints) -> [&'a str; 5] {
    [
        tool,
        h.label(Hint::ReadOnly),
        h.label(Hint::Destructive),
        h.label(Hint::Idempotent),
        h.label(Hint::OpenWorld),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Option<bool> = Some(true);
    const F: Option<bool> = Some(false);
    const U: Option<bool> = None;

    /// One row per hints case: the non-`hints_changed` series, `rule/hint/severity`.
    #[test]
    fn violation_labels_follow_the_rules_that_apply() {
        let h = DeclaredHints::new;
        let rows: [(DeclaredHints, &[&str]); 5] = [
            (
                h(T, U, U, F),
                &[
                    "read_only_write/readOnlyHint/critical",
                    "read_only_write_attempt/readOnlyHint/warning",
                    "undeclared_open_world/openWorldHint/warning",
                ],
            ),
            (
                h(F, F, T, F),
                &[
                    "undeclared_destructive/destructiveHint/critical",
                    "idempotency_broken/idempotentHint/warning",
                    "undeclared_open_world/openWorldHint/warning",
                ],
            ),
            (
                h(U, F, U, T),
                &["undeclared_destructive/destructiveHint/critical"],
            ),
            (
                h(T, F, T, T),
                &[
                    "read_only_write/readOnlyHint/critical",
                    "read_only_write_attempt/readOnlyHint/warning",
                ],
            ),
            (h(U, U, U, U), &[]),
        ];
        for (hints, want) in rows {
            let got: Vec<String> = violation_labels(hints)
                .filter(|k| k.rule != Rule::HintsChanged)
                .map(|k| format!("{}/{}/{}", k.rule, k.hint.spec_name(), k.severity.as_str()))
                .collect();
            assert_eq!(got, want, "{hints:?}");
            let changed: Vec<Hint> = violation_labels(hints)
                .filter(|k| k.rule == Rule::HintsChanged)
                .map(|k| {
                    assert_eq!(k.severity, Severity::Warning);
                    k.hint
                })
                .collect();
            assert_eq!(changed, Hint::ALL, "hints_changed can name any hint");
        }
    }
}
