//! The judge's action-metadata rules ([design: action
//! metadata](../../../../docs/design.md#action-metadata)): a tool's declared `outcome` and
//! `inputMetadata.destination` against the same facts its hints are judged by
//! (`undeclared_outcome`, `undeclared_destination`), and its listing linted against its hints
//! (`action_metadata_missing`, `action_metadata_contradiction`).
//!
//! ```
//! use hintaudit_core::*;
//! let judge = Judge::new(Policy::default());
//! let action = ActionMetadata { outcome: Some(ActionOutcome::Benign), destination: None };
//! let mut effect = Effect::default();
//! effect.statements.push(StatementEffect::new(Operation::Delete, vec!["items".into()]));
//! effect.row_changes.push(RowChange {
//!     table: "items".into(), operation: RowOperation::Delete, statement: Some(0),
//!     committed: true, image: RowImage::Unknown, nested: None, row_id: None,
//! });
//! let findings = judge.judge_action("tidy_items", action, &effect);
//! assert_eq!(findings[0].rule, Rule::UndeclaredOutcome);
//! assert_eq!(findings[0].hint, Hint::Destructive);
//! ```

use crate::action::{ActionMetadata, ActionOutcome, InputDestination};
use crate::effect::Effect;
use crate::facts::{Evidence, Facts, Wanted, summarize};
use crate::finding::{Confidence, Finding, Rule};
use crate::hints::{DeclaredHints, Hint};

use super::{Judge, Verdict};

impl Judge {
    /// The action-metadata findings of one finished call of a tool that declares `action`:
    /// `undeclared_outcome` (critical) when `outcome` is benign and the call wrote (the
    /// evidence of `read_only_write`; named destructiveHint, with the evidence of
    /// `undeclared_destructive`, when it deleted or overwrote), `undeclared_destination`
    /// (warning) when `inputMetadata.destination` is internal and the call sent a request
    /// outside the closed world (the evidence of `undeclared_open_world`, under either
    /// reading: the inputs left). Other values are never judged. No state: add the findings
    /// to the call's verdict with [`Verdict::with_findings`].
    pub fn judge_action(
        &self,
        tool: &str,
        action: ActionMetadata,
        effect: &Effect,
    ) -> Vec<Finding> {
        let benign = action.outcome == Some(ActionOutcome::Benign);
        let internal = action.destination == Some(InputDestination::Internal);
        if !benign && !internal {
            return Vec::new();
        }
        let outline = Facts::outline(effect, &self.policy);
        let wrote = benign && (outline.writes > 0 || outline.destructive > 0);
        let left = internal && outline.outside > 0;
        if !wrote && !left {
            return Vec::new();
        }
        let want = Wanted {
            writes: wrote,
            attempts: false,
            destructive: wrote,
            net_changes: false,
        };
        let facts = Facts::build(effect, &self.policy, want);
        let mut findings = Vec::new();
        let mut push = |rule: Rule, hint: Hint, evidence: &[Evidence]| {
            if let Some(e) = summarize(evidence) {
                let text = format!("{}: {}", field_of(rule), e.text);
                findings.push(Finding::new(tool, rule, hint, e.confidence, text));
            }
        };
        if wrote && !facts.destructive.is_empty() {
            push(
                Rule::UndeclaredOutcome,
                Hint::Destructive,
                &facts.destructive,
            );
        } else if wrote {
            push(Rule::UndeclaredOutcome, Hint::ReadOnly, &facts.writes);
        }
        if left {
            push(Rule::UndeclaredDestination, Hint::OpenWorld, &facts.outside);
        }
        findings
    }
}

/// What a finding of `rule` contradicts, as its evidence starts.
fn field_of(rule: Rule) -> &'static str {
    match rule {
        Rule::UndeclaredDestination => "inputMetadata.destination internal",
        _ => "outcome benign",
    }
}

impl Verdict {
    /// This verdict with `more` findings (the action-metadata rules'), most severe first as
    /// the judge orders them.
    pub fn with_findings(mut self, more: Vec<Finding>) -> Verdict {
        if !more.is_empty() {
            self.findings.extend(more);
            self.findings
                .sort_by(|a, b| b.severity.cmp(&a.severity).then(a.rule.cmp(&b.rule)));
        }
        self
    }
}

/// The listing rules of a tool's action metadata, which need no state:
/// `action_metadata_missing` for `outcome` (named readOnlyHint) or
/// `inputMetadata.destination` (named openWorldHint) unset, and
/// `action_metadata_contradiction` for `outcome` benign with destructiveHint true (readOnlyHint
/// not true) or `inputMetadata.destination` external with openWorldHint false, both explicit.
/// Values the draft does not define are tolerated: neither missing nor contradicting.
///
/// ```
/// use hintaudit_core::*;
/// let hints = DeclaredHints::new(Some(false), Some(true), None, Some(false));
/// let action = ActionMetadata { outcome: Some(ActionOutcome::Benign), destination: None };
/// let rules: Vec<_> = lint_action("t", hints, action).iter().map(|f| f.rule).collect();
/// assert_eq!(rules, [Rule::ActionMetadataMissing, Rule::ActionMetadataContradiction]);
/// ```
pub fn lint_action(tool: &str, hints: DeclaredHints, action: ActionMetadata) -> Vec<Finding> {
    let finding = |rule: Rule, hint: Hint, evidence: &str| {
        Finding::new(tool, rule, hint, Confidence::Confirmed, evidence)
    };
    let mut findings = Vec::new();
    if action.outcome.is_none() {
        findings.push(finding(
            Rule::ActionMetadataMissing,
            Hint::ReadOnly,
            "action metadata without outcome",
        ));
    }
    if action.destination.is_none() {
        findings.push(finding(
            Rule::ActionMetadataMissing,
            Hint::OpenWorld,
            "action metadata without inputMetadata.destination",
        ));
    }
    if action.outcome == Some(ActionOutcome::Benign)
        && hints.read_only != Some(true)
        && hints.destructive == Some(true)
    {
        findings.push(finding(
            Rule::ActionMetadataContradiction,
            Hint::Destructive,
            "outcome benign and destructiveHint true",
        ));
    }
    if action.destination == Some(InputDestination::External) && hints.open_world == Some(false) {
        findings.push(finding(
            Rule::ActionMetadataContradiction,
            Hint::OpenWorld,
            "inputMetadata.destination external and openWorldHint false",
        ));
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effect::StatementEffect;
    use crate::effect::{Operation, OutboundReach, RowChange, RowImage, RowOperation};
    use crate::policy::Policy;

    /// The rules and hints of the findings a row expects.
    type Found = &'static [(Rule, Hint)];

    const BENIGN: Option<ActionOutcome> = Some(ActionOutcome::Benign);
    const INTERNAL: Option<InputDestination> = Some(InputDestination::Internal);

    fn committed(op: Operation, row: RowOperation) -> Effect {
        Effect {
            statements: vec![StatementEffect::new(op, vec!["items".into()])],
            row_changes: vec![RowChange {
                table: "items".into(),
                operation: row,
                statement: Some(0),
                committed: true,
                image: RowImage::Unknown,
                nested: None,
                row_id: None,
            }],
            ..Default::default()
        }
    }

    fn outbound(method: &str, host: &str) -> Effect {
        Effect {
            outbound: vec![OutboundReach::new(method, host, None)],
            ..Default::default()
        }
    }

    /// One row per (declared action metadata, effect): the rules and hints found.
    #[test]
    fn the_outcome_and_the_destination_against_the_evidence() {
        use ActionOutcome as O;
        use InputDestination as D;
        let insert = committed(Operation::Insert, RowOperation::Insert);
        let delete = committed(Operation::Delete, RowOperation::Delete);
        let outside = outbound("GET", "api.example.com");
        let inside = outbound("POST", "127.0.0.1");
        let rows: [(Option<O>, Option<D>, &Effect, Found); 10] = [
            (
                BENIGN,
                None,
                &insert,
                &[(Rule::UndeclaredOutcome, Hint::ReadOnly)],
            ),
            (
                BENIGN,
                None,
                &delete,
                &[(Rule::UndeclaredOutcome, Hint::Destructive)],
            ),
            (BENIGN, INTERNAL, &Effect::default(), &[]),
            (Some(O::Consequential), None, &delete, &[]),
            (Some(O::Other), None, &delete, &[]),
            (
                None,
                INTERNAL,
                &outside,
                &[(Rule::UndeclaredDestination, Hint::OpenWorld)],
            ),
            (None, INTERNAL, &inside, &[]),
            (None, Some(D::External), &outside, &[]),
            (None, Some(D::Other), &outside, &[]),
            // A mutating request outside: a write and an outbound destination at once.
            (
                BENIGN,
                INTERNAL,
                &outbound("POST", "api.example.com"),
                &[
                    (Rule::UndeclaredOutcome, Hint::ReadOnly),
                    (Rule::UndeclaredDestination, Hint::OpenWorld),
                ],
            ),
        ];
        let judge = Judge::new(Policy::default());
        for (outcome, destination, effect, want) in rows {
            let action = ActionMetadata {
                outcome,
                destination,
            };
            let got: Vec<(Rule, Hint)> = judge
                .judge_action("t", action, effect)
                .iter()
                .map(|f| (f.rule, f.hint))
                .collect();
            assert_eq!(got, want, "{action:?} {effect:?}");
        }
    }

    #[test]
    fn the_evidence_names_the_field_and_what_was_seen() {
        let judge = Judge::new(Policy::default());
        let action = ActionMetadata {
            outcome: BENIGN,
            destination: INTERNAL,
        };
        let findings = judge.judge_action("t", action, &outbound("GET", "api.example.com"));
        assert_eq!(findings.len(), 1);
        let e = &findings[0].evidence;
        assert!(e.starts_with("inputMetadata.destination internal: "), "{e}");
        assert!(e.contains("api.example.com"), "{e}");
        let delete = committed(Operation::Delete, RowOperation::Delete);
        let e = &judge.judge_action("t", action, &delete)[0].evidence;
        assert!(e.starts_with("outcome benign: "), "{e}");
        assert!(e.contains("items"), "{e}");
    }

    #[test]
    fn listing_lints_missing_and_contradicting_values() {
        use ActionOutcome as O;
        use InputDestination as D;
        let (t, f, u) = (Some(true), Some(false), None);
        let h = DeclaredHints::new;
        let rows: [(DeclaredHints, Option<O>, Option<D>, Found); 7] = [
            (h(f, f, u, f), BENIGN, INTERNAL, &[]),
            (
                h(f, f, u, f),
                None,
                None,
                &[
                    (Rule::ActionMetadataMissing, Hint::ReadOnly),
                    (Rule::ActionMetadataMissing, Hint::OpenWorld),
                ],
            ),
            (
                h(f, t, u, f),
                BENIGN,
                INTERNAL,
                &[(Rule::ActionMetadataContradiction, Hint::Destructive)],
            ),
            // readOnlyHint true makes destructiveHint meaningless: hint_contradiction's case.
            (h(t, t, u, f), BENIGN, INTERNAL, &[]),
            (
                h(f, f, u, f),
                Some(O::Consequential),
                Some(D::External),
                &[(Rule::ActionMetadataContradiction, Hint::OpenWorld)],
            ),
            (h(f, t, u, u), Some(O::Other), Some(D::External), &[]),
            (h(f, t, u, f), Some(O::Other), Some(D::Other), &[]),
        ];
        for (hints, outcome, destination, want) in rows {
            let action = ActionMetadata {
                outcome,
                destination,
            };
            let got: Vec<(Rule, Hint)> = lint_action("t", hints, action)
                .iter()
                .map(|f| (f.rule, f.hint))
                .collect();
            assert_eq!(got, want, "{hints:?} {action:?}");
        }
    }
}
