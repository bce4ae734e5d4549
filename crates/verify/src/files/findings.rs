//! A call's file changes judged with the core's rules and wording: hintaudit-core's judge
//! has no file effect (a file system is no `db.system.name`), so, as for moved sequences,
//! verify judges them itself, always `confirmed` (the snapshot saw the content change).

use hintaudit_core::{Confidence, DeclaredHints, Finding, Hint, Rule};

use super::diff::FileChange;

/// The findings `changes` give a call of `tool` declaring `hints`: `read_only_write` for a
/// read-only tool that changed anything; `undeclared_destructive` for a tool declaring
/// destructiveHint false whose changes deleted, overwrote, renamed away or replaced a path;
/// `idempotency_broken` for a tool declaring idempotentHint true when `repeat` (the call
/// repeated the one before it with the same arguments) and it changed anything again.
pub(crate) fn file_findings(
    tool: &str,
    hints: DeclaredHints,
    changes: &[FileChange],
    repeat: bool,
) -> Vec<Finding> {
    let mut out = Vec::new();
    if changes.is_empty() {
        return out;
    }
    let finding =
        |rule, hint, text: String| Finding::new(tool, rule, hint, Confidence::Confirmed, text);
    if hints.read_only == Some(true) {
        out.push(finding(
            Rule::ReadOnlyWrite,
            Hint::ReadOnly,
            file_evidence(changes),
        ));
        return out;
    }
    let destroyed: Vec<FileChange> = changes
        .iter()
        .filter(|c| c.kind.is_destructive())
        .cloned()
        .collect();
    if hints.destructive == Some(false) && !destroyed.is_empty() {
        out.push(finding(
            Rule::UndeclaredDestructive,
            Hint::Destructive,
            file_evidence(&destroyed),
        ));
    }
    if hints.idempotent == Some(true) && repeat {
        out.push(finding(
            Rule::IdempotencyBroken,
            Hint::Idempotent,
            format!("repeat with the same arguments: {}", file_evidence(changes)),
        ));
    }
    out
}

/// The evidence text of file changes: `files (snapshot): created a.txt; appended to
/// log.txt` (hintaudit-core's wording, which the proxy's live watch shares).
pub(crate) fn file_evidence(changes: &[FileChange]) -> String {
    hintaudit_core::files::file_evidence("snapshot", changes)
}
