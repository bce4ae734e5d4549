//! `--suggest`: the annotations the evidence supports, for every tool whose calls
//! contradict its hints or show a hint could be tightened.
//!
//! The corrections are [`SuggestedHints::from_evidence`] of hintaudit-core (the live layer
//! offers the same through its recorder).
//!
//! Each suggestion cites the findings and cases it rests on, and comes as a JSON patch
//! (RFC 6902) over the tools/list answer and as the `#[tool(annotations(...))]` text of an
//! rmcp server.

use hintaudit_core::{SuggestedHints, SuggestionEvidence};
use serde_json::Value;

use crate::client::ToolInfo;
use crate::report::{CallRecord, Report, ToolReport, ToolStatus};
use crate::suggestion::Suggestion;

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
    let calls = || report.cases.iter().flat_map(|c| c.calls.iter());
    let advice_basis = format!("cases: {}", report.advice_basis.join(", "));
    let passed = format!("cases: {}", labels(report));
    let s = SuggestedHints::from_evidence(
        tool.hints,
        &SuggestionEvidence {
            findings: &report.findings,
            advice: &report.advice,
            advice_basis: &advice_basis,
            destroyed: calls().any(CallRecord::destroyed),
            wrote: calls().any(CallRecord::changed),
            passed: (report.status == ToolStatus::Passed).then_some(passed.as_str()),
        },
    )?;
    Some(Suggestion {
        index: tool.index,
        annotated: tool.annotated,
        declared: s.declared,
        corrected: s.corrected,
        evidence: s.evidence,
    })
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
    use hintaudit_core::{DeclaredHints, Hint};
    use serde_json::json;

    fn set(h: &mut DeclaredHints, hint: Hint, value: bool) {
        match hint {
            Hint::ReadOnly => h.read_only = Some(value),
            Hint::Destructive => h.destructive = Some(value),
            Hint::Idempotent => h.idempotent = Some(value),
            Hint::OpenWorld => h.open_world = Some(value),
        }
    }

    #[test]
    fn patch_and_rmcp_text_name_the_same_hints() {
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
                json!({"op": "add", "path": "/tools/2/annotations/openWorldHint", "value": false}),
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
                        "value": {"readOnlyHint": false, "destructiveHint": true,
                                  "openWorldHint": false}})]
        );
    }
}
