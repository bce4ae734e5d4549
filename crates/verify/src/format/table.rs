//! A plain text table for terminals and CI logs.

use std::fmt::Write;

use crate::report::{Report, ToolStatus};
use crate::verifier::advice_text;

fn pad(rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..rows.first().map_or(0, Vec::len))
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    out
}

pub(super) fn render(report: &Report) -> String {
    let mut rows = vec![vec![
        "TOOL".to_owned(),
        "HINTS".to_owned(),
        "STATUS".to_owned(),
        "CASES".to_owned(),
        "CALLS".to_owned(),
        "FINDINGS".to_owned(),
    ]];
    for t in &report.tools {
        rows.push(vec![
            t.name.clone(),
            t.hints.compact(),
            t.status.as_str().replace('_', " "),
            t.cases.len().to_string(),
            t.cases
                .iter()
                .map(|c| c.calls.len())
                .sum::<usize>()
                .to_string(),
            t.findings.len().to_string(),
        ]);
    }
    let mut out = pad(&rows);
    let findings: Vec<Vec<String>> = report
        .findings()
        .map(|f| {
            vec![
                f.severity.as_str().to_owned(),
                f.tool.clone(),
                f.rule.as_str().to_owned(),
                f.hint.spec_name().to_owned(),
                f.confidence.as_str().to_owned(),
                f.evidence.clone(),
            ]
        })
        .collect();
    if !findings.is_empty() {
        out.push_str("\nFindings:\n");
        out.push_str(&pad(&findings));
    }
    let mut notes = String::new();
    for t in &report.tools {
        if let ToolStatus::NotExercised(why) = &t.status {
            let _ = writeln!(notes, "not exercised  {}  {why}", t.name);
        }
        for a in &t.advice {
            let _ = writeln!(notes, "advice         {}  {}", t.name, advice_text(*a));
        }
    }
    if !notes.is_empty() {
        out.push('\n');
        out.push_str(&notes);
    }
    let (passed, failed, not_exercised) = report.status_counts();
    let _ = writeln!(
        out,
        "\ntools {}; passed {passed}; failed {failed}; not exercised {not_exercised}; findings {}; {:.1} s",
        report.tools.len(),
        report.findings().count(),
        report.elapsed_seconds
    );
    out
}
