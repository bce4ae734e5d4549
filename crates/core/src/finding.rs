//! Findings: what the judge concludes, with rule, hint, severity, confidence and evidence.

use crate::hints::{DeclaredHints, Hint};

/// How serious a finding is ([design: rules](../../../docs/design.md#2-rules)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// Worth knowing: missing hints, contradictions.
    Info,
    /// Probably wrong: attempted writes, broken idempotency, undeclared reach.
    Warning,
    /// A client would run something unasked that it should have asked about.
    Critical,
}

impl Severity {
    /// `info`, `warning` or `critical`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }

    /// Parses `info`, `warning` or `critical` (case-insensitive).
    pub fn parse(s: &str) -> Option<Severity> {
        match s.to_ascii_lowercase().as_str() {
            "info" => Some(Severity::Info),
            "warning" => Some(Severity::Warning),
            "critical" => Some(Severity::Critical),
            _ => None,
        }
    }
}

/// How strong the evidence is ([design: rules](../../../docs/design.md#2-rules)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Confidence {
    /// It rests on statement analysis alone.
    Likely,
    /// A committed row change or a database oracle shows it.
    Confirmed,
}

impl Confidence {
    /// `likely` or `confirmed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Likely => "likely",
            Confidence::Confirmed => "confirmed",
        }
    }
}

/// A rule of the [design: rules](../../../docs/design.md#2-rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Rule {
    /// readOnlyHint true, and a committed change, DDL, or a mutating outbound request.
    ReadOnlyWrite,
    /// readOnlyHint true, and a write that changed nothing, rolled back, or was blocked.
    ReadOnlyWriteAttempt,
    /// destructiveHint false, and rows deleted or overwritten, TRUNCATE or DROP.
    UndeclaredDestructive,
    /// idempotentHint true, and a clean repeat made a net change.
    IdempotencyBroken,
    /// openWorldHint false, and an outbound connection outside the closed world.
    UndeclaredOpenWorld,
    /// A meaningful hint is unset.
    HintMissing,
    /// readOnlyHint and destructiveHint both explicitly true.
    HintContradiction,
    /// The hints served for a tool differ from those first seen.
    HintsChanged,
    /// Enforce mode refused what a declared hint rules out (a write, a destructive
    /// statement, an outbound request outside the closed world).
    Enforced,
    /// Action metadata `outcome` benign, and the call wrote or deleted.
    UndeclaredOutcome,
    /// Action metadata `inputMetadata.destination` internal, and a request outside the
    /// closed world.
    UndeclaredDestination,
    /// Action metadata declared without `outcome` or `inputMetadata.destination`.
    ActionMetadataMissing,
    /// Action metadata that contradicts the hints: `outcome` benign with destructiveHint
    /// true, or `inputMetadata.destination` external with openWorldHint false.
    ActionMetadataContradiction,
}

impl Rule {
    /// Every rule.
    pub const ALL: [Rule; 13] = [
        Rule::ReadOnlyWrite,
        Rule::ReadOnlyWriteAttempt,
        Rule::UndeclaredDestructive,
        Rule::IdempotencyBroken,
        Rule::UndeclaredOpenWorld,
        Rule::HintMissing,
        Rule::HintContradiction,
        Rule::HintsChanged,
        Rule::Enforced,
        Rule::UndeclaredOutcome,
        Rule::UndeclaredDestination,
        Rule::ActionMetadataMissing,
        Rule::ActionMetadataContradiction,
    ];

    /// The rule id, e.g. `read_only_write`.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::ReadOnlyWrite => "read_only_write",
            Rule::ReadOnlyWriteAttempt => "read_only_write_attempt",
            Rule::UndeclaredDestructive => "undeclared_destructive",
            Rule::IdempotencyBroken => "idempotency_broken",
            Rule::UndeclaredOpenWorld => "undeclared_open_world",
            Rule::HintMissing => "hint_missing",
            Rule::HintContradiction => "hint_contradiction",
            Rule::HintsChanged => "hints_changed",
            Rule::Enforced => "enforced",
            Rule::UndeclaredOutcome => "undeclared_outcome",
            Rule::UndeclaredDestination => "undeclared_destination",
            Rule::ActionMetadataMissing => "action_metadata_missing",
            Rule::ActionMetadataContradiction => "action_metadata_contradiction",
        }
    }

    /// The severity the [design: rules](../../../docs/design.md#2-rules) give it.
    pub fn severity(self) -> Severity {
        match self {
            Rule::ReadOnlyWrite | Rule::UndeclaredDestructive | Rule::UndeclaredOutcome => {
                Severity::Critical
            }
            Rule::ReadOnlyWriteAttempt
            | Rule::IdempotencyBroken
            | Rule::UndeclaredOpenWorld
            | Rule::HintsChanged
            | Rule::Enforced
            | Rule::UndeclaredDestination => Severity::Warning,
            Rule::HintMissing
            | Rule::HintContradiction
            | Rule::ActionMetadataMissing
            | Rule::ActionMetadataContradiction => Severity::Info,
        }
    }

    /// Parses a rule id.
    pub fn parse(s: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// Whether the judge can report this rule for a tool that declares `hints`: the rule's
    /// condition on the declared hints
    /// ([design: rules](../../../docs/design.md#2-rules)), without any evidence.
    ///
    /// - `read_only_write`, `read_only_write_attempt`: `readOnlyHint` true;
    /// - `undeclared_destructive`: `readOnlyHint` not true and `destructiveHint` false;
    /// - `idempotency_broken`: `readOnlyHint` not true and `idempotentHint` true;
    /// - `undeclared_open_world`: `openWorldHint` false;
    /// - `hint_missing`: a meaningful hint is unset; `hint_contradiction`: `readOnlyHint` and
    ///   `destructiveHint` both true;
    /// - `hints_changed`: always (any tool's hints can change);
    /// - `enforced`: a hint enforce mode can enforce is explicit (`readOnlyHint` true,
    ///   `destructiveHint` false, or `openWorldHint` false); whether the tool runs in enforce
    ///   mode is configuration, not a hint, so metrics make no zero series for it;
    /// - the action-metadata rules (`undeclared_outcome`, `undeclared_destination`,
    ///   `action_metadata_missing`, `action_metadata_contradiction`): never by the hints
    ///   alone. They apply by the tool's [`ActionMetadata`](crate::ActionMetadata), which
    ///   [`Judge::judge_action`](crate::Judge::judge_action) and
    ///   [`lint_action`](crate::lint_action) read; metrics make no zero series for them.
    ///
    /// A finding of a rule that does not apply is never reported. Metrics use this to export
    /// the violation series a tool can produce at 0 before its first violation.
    ///
    /// ```
    /// use hintaudit_core::{DeclaredHints, Rule};
    /// let read_only = DeclaredHints { read_only: Some(true), ..Default::default() };
    /// assert!(Rule::ReadOnlyWrite.applies_to(read_only));
    /// assert!(!Rule::UndeclaredDestructive.applies_to(read_only));
    /// assert!(Rule::HintsChanged.applies_to(DeclaredHints::default()));
    /// ```
    pub fn applies_to(self, hints: DeclaredHints) -> bool {
        let read_only = hints.read_only == Some(true);
        match self {
            Rule::ReadOnlyWrite | Rule::ReadOnlyWriteAttempt => read_only,
            Rule::UndeclaredDestructive => !read_only && hints.destructive == Some(false),
            Rule::IdempotencyBroken => !read_only && hints.idempotent == Some(true),
            Rule::UndeclaredOpenWorld => hints.open_world == Some(false),
            Rule::HintMissing => hints.missing().next().is_some(),
            Rule::HintContradiction => read_only && hints.destructive == Some(true),
            Rule::HintsChanged => true,
            Rule::Enforced => {
                read_only || hints.destructive == Some(false) || hints.open_world == Some(false)
            }
            Rule::UndeclaredOutcome
            | Rule::UndeclaredDestination
            | Rule::ActionMetadataMissing
            | Rule::ActionMetadataContradiction => false,
        }
    }

    /// The hints a finding of this rule can name (its `hint` field, the `hint` label of
    /// `hintaudit_hint_violations_total`): one for each call rule; for `hint_missing` and
    /// `hints_changed`, any of the four (the hint that is unset, the first that changed); for
    /// the action-metadata rules, the hint that states the same as the field: readOnlyHint
    /// (a write) or destructiveHint (a deletion) for `outcome`, openWorldHint for
    /// `inputMetadata.destination`.
    ///
    /// ```
    /// use hintaudit_core::{Hint, Rule};
    /// assert_eq!(Rule::UndeclaredDestructive.hints(), &[Hint::Destructive]);
    /// assert_eq!(Rule::HintsChanged.hints(), &Hint::ALL);
    /// ```
    pub fn hints(self) -> &'static [Hint] {
        match self {
            Rule::ReadOnlyWrite | Rule::ReadOnlyWriteAttempt => &[Hint::ReadOnly],
            Rule::UndeclaredDestructive | Rule::HintContradiction => &[Hint::Destructive],
            Rule::IdempotencyBroken => &[Hint::Idempotent],
            Rule::UndeclaredOpenWorld => &[Hint::OpenWorld],
            Rule::HintMissing | Rule::HintsChanged => &Hint::ALL,
            Rule::Enforced => &[Hint::ReadOnly, Hint::Destructive, Hint::OpenWorld],
            Rule::UndeclaredOutcome => &[Hint::ReadOnly, Hint::Destructive],
            Rule::UndeclaredDestination => &[Hint::OpenWorld],
            Rule::ActionMetadataMissing => &[Hint::ReadOnly, Hint::OpenWorld],
            Rule::ActionMetadataContradiction => &[Hint::Destructive, Hint::OpenWorld],
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One conclusion of the judge about one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The tool name.
    pub tool: String,
    /// The rule.
    pub rule: Rule,
    /// The hint concerned.
    pub hint: Hint,
    /// The rule's severity.
    pub severity: Severity,
    /// How strong the evidence is.
    pub confidence: Confidence,
    /// One line of evidence, e.g. `UPDATE appointments: 1 row updated (committed)`. Never
    /// contains argument values or SQL literals.
    pub evidence: String,
}

impl Finding {
    /// A finding for `rule`, with the rule's severity.
    pub fn new(
        tool: impl Into<String>,
        rule: Rule,
        hint: Hint,
        confidence: Confidence,
        evidence: impl Into<String>,
    ) -> Self {
        Finding {
            tool: tool.into(),
            rule,
            hint,
            severity: rule.severity(),
            confidence,
            evidence: evidence.into(),
        }
    }
}

/// Advice: a hint that could be less cautious
/// ([design: rules](../../../docs/design.md#2-rules)). Never an alert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Advice {
    /// No write seen: readOnlyHint could be true.
    CouldBeReadOnly,
    /// Writes seen, none destructive: destructiveHint could be false.
    CouldBeNonDestructive,
    /// Clean repeats made no net change: idempotentHint could be true.
    CouldBeIdempotent,
    /// No outbound reach seen: openWorldHint could be false.
    CouldBeClosedWorld,
}

impl Advice {
    /// Every advice.
    pub const ALL: [Advice; 4] = [
        Advice::CouldBeReadOnly,
        Advice::CouldBeNonDestructive,
        Advice::CouldBeIdempotent,
        Advice::CouldBeClosedWorld,
    ];

    /// The advice id, e.g. `could_be_read_only`.
    pub fn as_str(self) -> &'static str {
        match self {
            Advice::CouldBeReadOnly => "could_be_read_only",
            Advice::CouldBeNonDestructive => "could_be_non_destructive",
            Advice::CouldBeIdempotent => "could_be_idempotent",
            Advice::CouldBeClosedWorld => "could_be_closed_world",
        }
    }

    /// The hint the advice concerns.
    pub fn hint(self) -> Hint {
        match self {
            Advice::CouldBeReadOnly => Hint::ReadOnly,
            Advice::CouldBeNonDestructive => Hint::Destructive,
            Advice::CouldBeIdempotent => Hint::Idempotent,
            Advice::CouldBeClosedWorld => Hint::OpenWorld,
        }
    }
}
