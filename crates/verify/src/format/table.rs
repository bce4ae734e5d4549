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
    let mut out = format!(
        "server: {}\ndatabase: {}\n\n",
        report.server, report.database
    );
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
    out.push_str(&pad(&rows));
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
            let _ = writeln!(
                notes,
                "advice         {}  {} (from cases: {})",
                t.name,
                advice_text(*a),
                t.advice_basis.join(", ")
            );
        }
        for n in &t.notes {
            let _ = writeln!(notes, "note           {}  {n}", t.name);
        }
        let mut generated: Vec<String> = Vec::new();
        for (argument, from) in t.cases.iter().flat_map(|c| c.generated.iter()) {
            let line = format!("{argument} from {from}");
            if !generated.contains(&line) {
                generated.push(line);
            }
        }
        if !generated.is_empty() {
            let _ = writeln!(
                notes,
                "arguments      {}  generated: {}",
                t.name,
                generated.join("; ")
            );
        }
        let mut sent: Vec<(String, usize)> = Vec::new();
        for o in t
            .cases
            .iter()
            .flat_map(|c| c.calls.iter())
            .flat_map(|c| c.outbound.iter())
        {
            let line = format!("{} {}", o.method, o.destination());
            match sent.iter_mut().find(|(l, _)| *l == line) {
                Some((_, n)) => *n += 1,
                None => sent.push((line, 1)),
            }
        }
        for (line, n) in sent {
            let times = if n > 1 {
                format!(" ({n} times)")
            } else {
                String::new()
            };
            let _ = writeln!(
                notes,
                "outbound       {}  {line}{times}, not forwarded",
                t.name
            );
        }
    }
    if !notes.is_empty() {
        out.push('\n');
        out.push_str(&notes);
    }
    let suggestions: Vec<_> = report
        .tools
        .iter()
        .filter_map(|t| Some((t, t.suggestion.as_ref()?)))
        .collect();
    if !suggestions.is_empty() {
        out.push_str("\nSuggested annotations:\n");
        for (t, s) in suggestions {
            let _ = writeln!(out, "  {}: {}", t.name, s.rmcp_attribute());
            for e in &s.evidence {
                let _ = writeln!(out, "    because {e}");
            }
        }
        let _ = writeln!(
            out,
            "  JSON patch over tools/list: {}",
            crate::suggest::json_patch(report)
        );
    }
    let _ = writeln!(out, "\ndatabase check: {}", report.database_check);
    let _ = writeln!(
        out,
        "outbound HTTP: {}",
        if report.outbound_watched {
            "recorded by verify's proxy (HTTP_PROXY, HTTPS_PROXY; HTTPS as CONNECT host:port), none forwarded"
        } else {
            "not watched (a --url server is not started by verify)"
        }
    );
    for u in &report.unattributed_outbound {
        let when = match &u.after {
            Some(t) => format!("after a call of {t}"),
            None => "before the first call".to_owned(),
        };
        let _ = writeln!(
            out,
            "  unattributed: {} {} ({when}, no call in flight)",
            u.request.method,
            u.request.destination()
        );
    }
    if let Some(copy) = &report.database_copy {
        let _ = writeln!(
            out,
            "database copy (--reset): {copy}, made again {} times between tools",
            report.database_resets
        );
    }
    if !report.server_stderr.is_empty() {
        let _ = writeln!(
            out,
            "server stderr (last {} lines):",
            report.server_stderr.len()
        );
        for l in &report.server_stderr {
            let _ = writeln!(out, "  | {l}");
        }
    }
    if let Some(why) = &report.incomplete {
        let _ = writeln!(out, "INCOMPLETE: the run ended early: {why}");
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
