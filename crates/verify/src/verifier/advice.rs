//! Advice that loosens a hint, from trusted calls only.
//!
//! A call supports advice only when it ran (no error, no error text) and its arguments were
//! not made up: they came from the cases file, the schema (examples, defaults, enums) or
//! the database. A generated placeholder (`hintaudit` as SQL text, say) that changed
//! nothing shows nothing about what the tool does with real arguments.

use hintaudit_core::{Advice, Hint};

use crate::client::ToolInfo;
use crate::report::CaseReport;

/// Advice for a passed tool and the labels of the cases it rests on: `could_be_read_only`
/// when no call wrote and a trusted call ran; `could_be_non_destructive` when a trusted
/// call wrote and no call removed or overwrote rows or dropped or altered a table.
pub(super) fn advice(tool: &ToolInfo, cases: &[CaseReport]) -> (Vec<Advice>, Vec<String>) {
    let e = tool.hints.effective();
    let changes = || {
        cases
            .iter()
            .flat_map(|c| c.calls.iter())
            .flat_map(|c| c.changes.iter())
    };
    let wrote = changes().next().is_some();
    let destroyed = changes().any(|d| d.removed > 0 || d.changed > 0 || d.dropped || d.altered);
    let trusted: Vec<&CaseReport> = cases
        .iter()
        .filter(|c| c.made_up.is_empty() && c.calls.iter().any(|call| call.error.is_none()))
        .collect();
    let trusted_wrote: Vec<&CaseReport> = trusted
        .iter()
        .copied()
        .filter(|c| c.calls.iter().any(|call| !call.changes.is_empty()))
        .collect();
    let mut out = Vec::new();
    let mut basis: Vec<&CaseReport> = Vec::new();
    if !e.read_only && !wrote && !trusted.is_empty() {
        out.push(Advice::CouldBeReadOnly);
        basis.extend(&trusted);
    }
    if !e.read_only && e.destructive && wrote && !destroyed && !trusted_wrote.is_empty() {
        out.push(Advice::CouldBeNonDestructive);
        basis.extend(&trusted_wrote);
    }
    let mut labels: Vec<String> = basis.iter().map(|c| c.label.clone()).collect();
    labels.dedup();
    (out, labels)
}

/// The hint an advice is about, spelled for reports.
pub(crate) fn advice_text(a: Advice) -> String {
    let value = match a.hint() {
        Hint::ReadOnly => "true",
        _ => "false",
    };
    format!("{}: {} could be {value}", a.as_str(), a.hint())
}
