//! JSON: the whole report, findings with rule ids, severities, confidence and evidence.

use hintaudit_core::{Finding, Hint};
use serde_json::{Value, json};

use crate::files::{ChangeKind, FileChange};
use crate::report::{Report, ToolStatus};
use crate::verifier::advice_text;

pub(super) fn finding(f: &Finding) -> Value {
    json!({
        "tool": f.tool,
        "rule": f.rule.as_str(),
        "hint": f.hint.spec_name(),
        "severity": f.severity.as_str(),
        "confidence": f.confidence.as_str(),
        "evidence": f.evidence,
    })
}

/// A changed path: `{"path", "change"}`, and `"to"` for a rename; never content.
fn file_json(f: &FileChange) -> Value {
    match &f.kind {
        ChangeKind::RenamedTo(to) => json!({"path": f.path, "change": f.kind.as_str(), "to": to}),
        k => json!({"path": f.path, "change": k.as_str()}),
    }
}

pub(super) fn render(report: &Report) -> String {
    let (passed, failed, not_exercised) = report.status_counts();
    let tools: Vec<Value> = report
        .tools
        .iter()
        .map(|t| {
            let hints: serde_json::Map<String, Value> = Hint::ALL
                .iter()
                .map(|h| (h.spec_name().to_owned(), json!(t.hints.label(*h))))
                .collect();
            json!({
                "name": t.name,
                "hints": hints,
                "status": t.status.as_str(),
                "not_exercised_reason": match &t.status {
                    ToolStatus::NotExercised(why) => json!(why),
                    _ => Value::Null,
                },
                "findings": t.findings.iter().map(finding).collect::<Vec<_>>(),
                "advice": t.advice.iter().map(|a| json!({"advice": a.as_str(), "hint": a.hint().spec_name(), "text": advice_text(*a), "cases": t.advice_basis})).collect::<Vec<_>>(),
                "notes": t.notes,
                "suggestion": t.suggestion.as_ref().map(|s| json!({
                    "annotations": s.corrected,
                    "json_patch": s.json_patch(),
                    "rmcp": s.rmcp_attribute(),
                    "evidence": s.evidence,
                })),
                "cases": t.cases.iter().map(|c| json!({
                    "label": c.label,
                    "from_cases_file": c.from_file,
                    "made_up_arguments": c.made_up,
                    "generated_arguments": c.generated.iter().map(|(a, from)| json!({"argument": a, "from": from})).collect::<Vec<_>>(),
                    "calls": c.calls.iter().map(|call| json!({
                        "error": call.error,
                        "changes": call.changes,
                        "outbound": call.outbound.iter().map(super::reach_json).collect::<Vec<_>>(),
                        "files": call.files.iter().map(file_json).collect::<Vec<_>>(),
                    })).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let doc = json!({
        "server": report.server,
        "database": report.database,
        "summary": {
            "tools": report.tools.len(),
            "passed": passed,
            "failed": failed,
            "not_exercised": not_exercised,
            "findings": report.findings().count(),
        },
        "tools": tools,
        "json_patch": crate::suggest::json_patch(report),
        "database_check": report.database_check,
        "database_copy": report.database_copy,
        "database_resets": report.database_resets,
        "incomplete": report.incomplete,
        "server_stderr": report.server_stderr,
        "outbound": super::outbound_json(report),
        "watched": report.watched,
        "snapshots": report.stats,
        "elapsed_seconds": report.elapsed_seconds,
    });
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}
