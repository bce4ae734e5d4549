//! `--suggest`: the annotations the evidence supports, for every tool whose calls
//! contradict its hints or show a hint could be tightened.
//!
//! From the findings and advice of a tool:
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
//! Each suggestion cites the findings and cases it rests on, and comes as a JSON patch
//! (RFC 6902) over the tools/list answer and as the `#[tool(annotations(...))]` text of an
//! rmcp server.

use hintaudit_core::{Advice, DeclaredHints, Hint, Rule};
use serde_json::{Value, json};

use crate::client::ToolInfo;
use crate::report::{Report, ToolReport, ToolStatus};

/// Corrected annotations for one tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Suggestion {
    /// The tool's position in tools/list (pages concatenated), for the JSON patch.
    pub index: usize,
    /// Whether tools/list gave the tool an `annotations` object.
    pub annotated: bool,
    /// The hints as declared.
    pub declared: DeclaredHints,
    /// The hints the evidence supports: the declared ones with the corrections applied.
    pub corrected: DeclaredHints,
    /// Why, one line per correction: the finding or advice and the cases it comes from.
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

impl Suggestion {
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

    /// RFC 6902 operations over the tools/list result (`/tools/<index>/annotations/...`).
    pub fn json_patch(&self) -> Vec<Value> {
        let base = format!("/tools/{}/annotations", self.index);
        if !self.annotated {
            let value: serde_json::Map<String, Value> = self
                .changes()
                .into_iter()
                .map(|(h, v)| (h.spec_name().to_owned(), json!(v)))
                .collect();
            return vec![json!({"op": "add", "path": base, "value": value})];
        }
        self.changes()
            .into_iter()
            .map(|(h, v)| json!({"op": "add", "path": format!("{base}/{}", h.spec_name()), "value": v}))
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

/// The JSON patch of every suggestion of a report, in tool order.
pub fn json_patch(report: &Report) -> Value {
    Value::Array(
        report
            .tools
            .iter()
            .filter_map(|t| t.suggestion.as_ref())
            .flat_map(Suggestion::json_patch)
            .collect(),
    )
}

/// The suggestion for one tool, when its evidence supports a change.
pub(crate) fn suggest(tool: &ToolInfo, report: &ToolReport) -> Option<Suggestion> {
    let mut corrected = tool.hints;
    let mut evidence = Vec::new();
    let changes = || {
        report
            .cases
            .iter()
            .flat_map(|c| c.calls.iter())
            .flat_map(|c| c.changes.iter())
    };
    let destroyed = changes().any(|d| d.removed > 0 || d.changed > 0 || d.dropped || d.altered);
    let wrote = changes().next().is_some();
    for f in &report.findings {
        let cite = format!("{}: {}", f.rule.as_str(), f.evidence);
        match f.rule {
            Rule::ReadOnlyWrite => {
                set(&mut corrected, Hint::ReadOnly, false);
                evidence.push(format!("readOnlyHint false: {cite}"));
                if destroyed && tool.hints.destructive != Some(true) {
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
            Rule::HintContradiction if report.status == ToolStatus::Passed && !wrote => {
                set(&mut corrected, Hint::Destructive, false);
                evidence.push(format!(
                    "destructiveHint false: {cite}; no call wrote (cases: {})",
                    labels(report)
                ));
            }
            _ => {}
        }
    }
    let basis = report.advice_basis.join(", ");
    for a in &report.advice {
        match a {
            Advice::CouldBeReadOnly => {
                set(&mut corrected, Hint::ReadOnly, true);
                evidence.push(format!(
                    "readOnlyHint true: could_be_read_only, no call wrote (cases: {basis})"
                ));
            }
            Advice::CouldBeNonDestructive => {
                set(&mut corrected, Hint::Destructive, false);
                evidence.push(format!(
                    "destructiveHint false: could_be_non_destructive, writes only added rows \
                     (cases: {basis})"
                ));
            }
            _ => {}
        }
    }
    let s = Suggestion {
        index: tool.index,
        annotated: tool.annotated,
        declared: tool.hints,
        corrected,
        evidence,
    };
    (!s.changes().is_empty()).then_some(s)
}

fn labels(report: &ToolReport) -> String {
    report
        .cases
        .iter()
        .map(|c| c.label.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_and_rmcp_text_carry_only_the_corrections() {
        let declared = DeclaredHints {
            read_only: Some(true),
            open_world: Some(false),
            ..Default::default()
        };
        let mut corrected = declared;
        set(&mut corrected, Hint::ReadOnly, false);
        set(&mut corrected, Hint::Destructive, true);
        let s = Suggestion {
            index: 2,
            annotated: true,
            declared,
            corrected,
            evidence: vec![],
        };
        assert_eq!(
            s.json_patch(),
            vec![
                json!({"op": "add", "path": "/tools/2/annotations/readOnlyHint", "value": false}),
                json!({"op": "add", "path": "/tools/2/annotations/destructiveHint", "value": true}),
            ]
        );
        assert_eq!(
            s.rmcp_attribute(),
            "#[tool(annotations(read_only_hint = false, destructive_hint = true, open_world_hint = false))]"
        );
        let bare = Suggestion {
            annotated: false,
            ..s
        };
        assert_eq!(
            bare.json_patch(),
            vec![json!({"op": "add", "path": "/tools/2/annotations",
                        "value": {"readOnlyHint": false, "destructiveHint": true}})]
        );
    }
}
