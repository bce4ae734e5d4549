//! Suggested annotations: the hints the evidence supports, shared by `hintaudit verify
//! --suggest` and the live layer (through [`CallReport::suggestion`]).
//!
//! | evidence | suggestion |
//! |---|---|
//! | `read_only_write` | `readOnlyHint: false` (and `destructiveHint: true` when rows were removed or overwritten) |
//! | `undeclared_destructive` | `destructiveHint: true` |
//! | `idempotency_broken` | `idempotentHint: false` |
//! | advice `could_be_read_only` | `readOnlyHint: true` |
//! | advice `could_be_non_destructive` | `destructiveHint: false` |
//! | `hint_contradiction` on a tool that passed without writing | `destructiveHint: false` |
//!
//! The corrected hints are one consistent set: when readOnlyHint ends up true,
//! destructiveHint is never left true (`hint_contradiction`); it becomes false.

use crate::effect::{Effect, Operation, RowOperation};
use crate::finding::{Advice, Finding, Rule};
use crate::hints::{DeclaredHints, Hint};
use crate::record::CallReport;

/// What a suggestion rests on: a tool's findings and advice, and what its calls did.
#[derive(Debug, Clone, Copy, Default)]
pub struct SuggestionEvidence<'a> {
    /// The tool's findings (behaviour and listing).
    pub findings: &'a [Finding],
    /// The tool's advice.
    pub advice: &'a [Advice],
    /// Where the advice comes from, cited in parentheses (e.g. `cases: a, b`).
    pub advice_basis: &'a str,
    /// Some call removed or overwrote rows, or dropped or altered a table.
    pub destroyed: bool,
    /// Some call wrote.
    pub wrote: bool,
    /// The tool passed (no behaviour finding), with what it rests on, cited in
    /// parentheses; `None` when it did not or cannot tell (the live layer).
    pub passed: Option<&'a str>,
}

/// The hints the evidence supports for one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuggestedHints {
    /// The hints as declared.
    pub declared: DeclaredHints,
    /// The declared hints with the corrections applied.
    pub corrected: DeclaredHints,
    /// Why, one line per correction: the finding or advice it comes from.
    pub evidence: Vec<String>,
}

fn set(h: &mut DeclaredHints, hint: Hint, value: bool) {
    match hint {
        Hint::ReadOnly => h.read_only = Some(value),
        Hint::Destructive => h.destructive = Some(value),
        Hint::Idempotent => h.idempotent = Some(value),
        Hint::OpenWorld => h.open_world = Some(value),
    }
}

impl SuggestedHints {
    /// The corrections the evidence supports; `None` when nothing changes.
    pub fn from_evidence(declared: DeclaredHints, e: &SuggestionEvidence<'_>) -> Option<Self> {
        let mut corrected = declared;
        let mut evidence = Vec::new();
        for f in e.findings {
            let cite = format!("{}: {}", f.rule.as_str(), f.evidence);
            match f.rule {
                Rule::ReadOnlyWrite => {
                    set(&mut corrected, Hint::ReadOnly, false);
                    evidence.push(format!("readOnlyHint false: {cite}"));
                    if e.destroyed && declared.destructive != Some(true) {
                        set(&mut corrected, Hint::Destructive, true);
                        evidence.push(format!("destructiveHint true: {cite}"));
                    }
                }
                Rule::UndeclaredDestructive => {
                    set(&mut corrected, Hint::Destructive, true);
                    evidence.push(format!("destructiveHint true: {cite}"));
                }
                Rule::IdempotencyBroken => {
                    set(&mut corrected, Hint::Idempotent, false);
                    evidence.push(format!("idempotentHint false: {cite}"));
                }
                Rule::HintContradiction if !e.wrote => {
                    if let Some(basis) = e.passed {
                        set(&mut corrected, Hint::Destructive, false);
                        evidence.push(format!(
                            "destructiveHint false: {cite}; no call wrote ({basis})"
                        ));
                    }
                }
                _ => {}
            }
        }
        let basis = e.advice_basis;
        for a in e.advice {
            match a {
                Advice::CouldBeReadOnly => {
                    set(&mut corrected, Hint::ReadOnly, true);
                    evidence.push(format!(
                        "readOnlyHint true: could_be_read_only, no call wrote ({basis})"
                    ));
                }
                Advice::CouldBeNonDestructive => {
                    set(&mut corrected, Hint::Destructive, false);
                    evidence.push(format!(
                        "destructiveHint false: could_be_non_destructive, writes only added \
                         rows ({basis})"
                    ));
                }
                _ => {}
            }
        }
        // One consistent set: a read-only tool destroys nothing, so a suggestion never keeps
        // the pair `hint_contradiction` flags (a tool declared destructive that only read).
        if corrected.read_only == Some(true) && corrected.destructive == Some(true) {
            set(&mut corrected, Hint::Destructive, false);
            evidence.push(
                "destructiveHint false: readOnlyHint true rules out destructive updates \
                 (hint_contradiction otherwise)"
                    .to_owned(),
            );
        }
        let s = SuggestedHints {
            declared,
            corrected,
            evidence,
        };
        (!s.changes().is_empty()).then_some(s)
    }

    /// The hints that change, in schema order, with their new values.
    pub fn changes(&self) -> Vec<(Hint, bool)> {
        Hint::ALL
            .into_iter()
            .filter_map(|h| {
                let now = self.corrected.get(h)?;
                (self.declared.get(h) != Some(now)).then_some((h, now))
            })
            .collect()
    }

    /// The rmcp attribute with the corrected hints, e.g.
    /// `#[tool(annotations(read_only_hint = false, destructive_hint = true))]`.
    pub fn rmcp_attribute(&self) -> String {
        let parts: Vec<String> = Hint::ALL
            .into_iter()
            .filter_map(|h| Some(format!("{}_hint = {}", h.label(), self.corrected.get(h)?)))
            .collect();
        format!("#[tool(annotations({}))]", parts.join(", "))
    }
}

/// Whether a call's effect removed or overwrote rows, or changed the schema.
fn destroyed(effect: &Effect) -> bool {
    effect
        .row_changes
        .iter()
        .any(|r| r.committed && matches!(r.operation, RowOperation::Update | RowOperation::Delete))
        || effect.statements.iter().any(|s| {
            s.overwrites
                || s.drops
                || matches!(
                    s.operation,
                    Operation::Delete | Operation::Truncate | Operation::Ddl
                )
        })
}

impl CallReport<'_> {
    /// The annotations this call's findings and the tool's current advice support, as
    /// `hintaudit verify --suggest` computes them; `None` when they support no change.
    /// [`crate::LogRecorder`] logs it.
    pub fn suggestion(&self) -> Option<SuggestedHints> {
        let wrote = self.effect.row_changes.iter().any(|r| r.committed)
            || self
                .effect
                .statements
                .iter()
                .any(|s| s.operation.is_write());
        SuggestedHints::from_evidence(
            self.hints,
            &SuggestionEvidence {
                findings: &self.verdict.findings,
                advice: &self.verdict.advice,
                advice_basis: "calls the layer judged",
                destroyed: destroyed(self.effect),
                wrote,
                passed: None,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rmcp_text_carries_the_corrections_and_the_kept_hints() {
        let declared = DeclaredHints {
            read_only: Some(true),
            open_world: Some(false),
            ..Default::default()
        };
        let finding = Finding::new(
            "peek",
            Rule::ReadOnlyWrite,
            Hint::ReadOnly,
            crate::Confidence::Confirmed,
            "DELETE on items",
        );
        let s = SuggestedHints::from_evidence(
            declared,
            &SuggestionEvidence {
                findings: std::slice::from_ref(&finding),
                destroyed: true,
                wrote: true,
                ..Default::default()
            },
        )
        .expect("a change");
        assert_eq!(
            s.changes(),
            [(Hint::ReadOnly, false), (Hint::Destructive, true)]
        );
        assert_eq!(
            s.rmcp_attribute(),
            "#[tool(annotations(read_only_hint = false, destructive_hint = true, open_world_hint = false))]"
        );
        assert_eq!(
            s.evidence,
            [
                "readOnlyHint false: read_only_write: DELETE on items",
                "destructiveHint true: read_only_write: DELETE on items"
            ]
        );
        assert_eq!(
            SuggestedHints::from_evidence(declared, &SuggestionEvidence::default()),
            None
        );
    }

    /// (declared read_only, destructive; advice) -> corrected (read_only, destructive): never
    /// the pair `lint_hints` calls `hint_contradiction`.
    #[test]
    fn corrections_never_contradict_each_other() {
        let rows = [
            (
                (None, Some(true)),
                Advice::CouldBeReadOnly,
                (Some(true), Some(false)),
            ),
            (
                (Some(false), Some(true)),
                Advice::CouldBeReadOnly,
                (Some(true), Some(false)),
            ),
            ((None, None), Advice::CouldBeReadOnly, (Some(true), None)),
            (
                (Some(false), Some(true)),
                Advice::CouldBeNonDestructive,
                (Some(false), Some(false)),
            ),
        ];
        for ((r, d), advice, want) in rows {
            let declared = DeclaredHints {
                read_only: r,
                destructive: d,
                ..Default::default()
            };
            let s = SuggestedHints::from_evidence(
                declared,
                &SuggestionEvidence {
                    advice: &[advice],
                    advice_basis: "cases: generated",
                    ..Default::default()
                },
            )
            .expect("a change");
            assert_eq!(
                (s.corrected.read_only, s.corrected.destructive),
                want,
                "{declared:?}"
            );
            assert!(
                crate::lint_hints("t", s.corrected)
                    .iter()
                    .all(|f| f.rule != Rule::HintContradiction),
                "{declared:?} -> {}",
                s.rmcp_attribute()
            );
        }
    }
}
