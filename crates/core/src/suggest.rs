//! Suggested annotations: the hints the evidence supports, shared by `hintaudit verify
//! --suggest` and the live layer (through [`CallReport::suggestion`]).
//!
//! | evidence | suggestion |
//! |---|---|
//! | `read_only_write` | `readOnlyHint: false` (and `destructiveHint: true` when rows were removed or overwritten, or an API acted on a PUT, PATCH or DELETE) |
//! | `undeclared_destructive` | `destructiveHint: true` |
//! | `idempotency_broken` | `idempotentHint: false` |
//! | advice `could_be_read_only` | `readOnlyHint: true` |
//! | advice `could_be_non_destructive` | `destructiveHint: false` |
//! | `hint_contradiction` on a tool that passed without writing | `destructiveHint: false` |
//!
//! The corrected hints are one consistent set: when readOnlyHint ends up true,
//! destructiveHint is never left true (`hint_contradiction`); it becomes false.
//!
//! Written in the form that fits the server ([`AnnotationsForm`]): rmcp's
//! `#[tool(annotations(...))]` for a Rust server the layer wraps, MCP's JSON annotations for a
//! server in any language (`hintaudit proxy`).
//!
//! ```
//! use hintaudit_core::{AnnotationsForm, DeclaredHints, SuggestedHints};
//! let s = SuggestedHints {
//!     declared: DeclaredHints::new(Some(true), None, None, Some(false)),
//!     corrected: DeclaredHints::new(Some(false), Some(true), None, Some(false)),
//!     evidence: vec![],
//! };
//! assert_eq!(
//!     s.annotations(AnnotationsForm::McpJson),
//!     r#"{"readOnlyHint": false, "destructiveHint": true, "openWorldHint": false}"#
//! );
//! assert_eq!(
//!     s.annotations(AnnotationsForm::RmcpAttribute),
//!     "#[tool(annotations(read_only_hint = false, destructive_hint = true, open_world_hint = false))]"
//! );
//! ```

use serde::Serialize;

use crate::effect::{
    Effect, Operation, RowImage, RowOperation, TableWrites, TransactionObservation,
};
use crate::finding::{Advice, Finding, Rule};
use crate::hints::{AnnotationsForm, DeclaredHints, Hint};
use crate::outbound::ReadOnlyRequests;
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

    /// The corrected hints that are set (kept ones included), in schema order: what
    /// [`SuggestedHints::annotations`] writes in either form.
    pub fn named(&self) -> impl Iterator<Item = (Hint, bool)> + '_ {
        Hint::ALL
            .into_iter()
            .filter_map(|h| Some((h, self.corrected.get(h)?)))
    }

    /// The corrected hints in `form`: [`SuggestedHints::rmcp_attribute`] or
    /// [`SuggestedHints::mcp_json`].
    pub fn annotations(&self, form: AnnotationsForm) -> String {
        match form {
            AnnotationsForm::RmcpAttribute => self.rmcp_attribute(),
            AnnotationsForm::McpJson => self.mcp_json(),
        }
    }

    /// The rmcp attribute with the corrected hints, e.g.
    /// `#[tool(annotations(read_only_hint = false, destructive_hint = true))]`.
    pub fn rmcp_attribute(&self) -> String {
        let parts: Vec<String> = self
            .named()
            .map(|(h, v)| format!("{}_hint = {v}", h.label()))
            .collect();
        format!("#[tool(annotations({}))]", parts.join(", "))
    }

    /// MCP's JSON `ToolAnnotations` with the corrected hints, in schema order, e.g.
    /// `{"readOnlyHint": false, "destructiveHint": true}` (a JSON object on one line, a space
    /// after each `:` and `,`; `{}` when no hint is set): [`DeclaredHints`]' serialization.
    pub fn mcp_json(&self) -> String {
        let mut out = Vec::new();
        let mut json = serde_json::Serializer::with_formatter(&mut out, OneLine);
        // Booleans into memory: serializing cannot fail.
        match self.corrected.serialize(&mut json) {
            Ok(()) => String::from_utf8(out).unwrap_or_default(),
            Err(_) => String::new(),
        }
    }
}

/// serde_json's compact form with a space after each `:` and `,` between an object's
/// members, as people write JSON on one line: `{"a": 1, "b": 2}`.
struct OneLine;

impl serde_json::ser::Formatter for OneLine {
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}

/// Whether a call's effect removed or overwrote rows, or changed the schema: a committed
/// update or delete a hook saw, a committed transaction whose counts (oracle, rows affected,
/// the database log) updated or deleted rows, or a destructive statement; or removed or
/// overwrote something behind an API: a PUT, PATCH or DELETE the destination may have acted
/// on (a request whose path is known, the egress proxy's; [`crate::RequestChange::destructive`]).
fn destroyed(effect: &Effect) -> bool {
    let requests = effect.outbound.iter().any(|o| {
        o.path.is_some()
            && o.answer.delivered()
            && o.change(&ReadOnlyRequests::none()).destructive()
    });
    requests || destroyed_rows(effect)
}

/// [`destroyed`]'s database part.
fn destroyed_rows(effect: &Effect) -> bool {
    effect
        .row_changes
        .iter()
        .any(|r| r.committed && matches!(r.operation, RowOperation::Update | RowOperation::Delete))
        || effect
            .transactions
            .iter()
            .filter(|t| t.committed)
            .any(|t| t.tables.iter().any(|w| w.deleted + overwritten(t, w) > 0))
        || effect.statements.iter().any(|s| {
            s.overwrites
                || s.drops
                || matches!(
                    s.operation,
                    Operation::Delete | Operation::Truncate | Operation::Ddl
                )
        })
}

/// Updates of `w`'s table in `t` that may have overwritten something: all but those whose
/// row images show nothing changed.
fn overwritten(t: &TransactionObservation, w: &TableWrites) -> u64 {
    let unchanged: u64 = t
        .images
        .iter()
        .filter(|u| u.table == w.table && u.image == RowImage::Unchanged)
        .map(|u| u.rows)
        .sum();
    w.updated.saturating_sub(unchanged)
}

impl CallReport<'_> {
    /// The annotations this call's findings and the tool's current advice support, as
    /// `hintaudit verify --suggest` computes them; `None` when they support no change.
    /// [`crate::LogRecorder`] logs it.
    pub fn suggestion(&self) -> Option<SuggestedHints> {
        let wrote = self.effect.row_changes.iter().any(|r| r.committed)
            || self.effect.transactions.iter().any(|t| {
                t.committed
                    && t.tables
                        .iter()
                        .any(|w| w.inserted + w.updated + w.deleted > 0)
            })
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
mod tests;
