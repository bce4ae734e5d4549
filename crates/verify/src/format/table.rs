//! A plain text table for terminals and CI logs.

use std::fmt::Write;

use crate::report::{Report, ToolReport, ToolStatus};
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

/// The table: the run's header, one row per tool, the findings, the notes per tool, the
/// suggested annotations, what the run watched, and the totals; each section its own
/// function, empty when it has nothing to say.
pub(super) fn render(report: &Report) -> String {
    [
        header(report),
        tools(report),
        findings(report),
        notes(report),
        suggestions(report),
        watched(report),
        run_end(report),
        totals(report),
    ]
    .concat()
}

fn header(report: &Report) -> String {
    let database = match report.database.as_str() {
        "" => "none (files only: --watch)",
        d => d,
    };
    format!("server: {}\ndatabase: {database}\n\n", report.server)
}

/// One row per tool: name, hints, status, cases, calls, findings.
fn tools(report: &Report) -> String {
    let head = ["TOOL", "HINTS", "STATUS", "CASES", "CALLS", "FINDINGS"];
    let mut rows = vec![head.map(str::to_owned).to_vec()];
    rows.extend(report.tools.iter().map(|t| {
        let calls: usize = t.cases.iter().map(|c| c.calls.len()).sum();
        vec![
            t.name.clone(),
            t.hints.compact(),
            t.status.as_str().replace('_', " "),
            t.cases.len().to_string(),
            calls.to_string(),
            t.findings.len().to_string(),
        ]
    }));
    pad(&rows)
}

/// One row per finding: severity, tool, rule, hint, confidence, evidence.
fn findings(report: &Report) -> String {
    let rows: Vec<Vec<String>> = report
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
    if rows.is_empty() {
        return String::new();
    }
    format!("\nFindings:\n{}", pad(&rows))
}

/// Per tool: why it was not exercised, its advice, its notes, the arguments generated for
/// it, the outbound requests its calls sent.
fn notes(report: &Report) -> String {
    let notes: String = report.tools.iter().map(tool_notes).collect();
    if notes.is_empty() {
        return notes;
    }
    format!("\n{notes}")
}

fn tool_notes(t: &ToolReport) -> String {
    let mut out = String::new();
    if let ToolStatus::NotExercised(why) = &t.status {
        let _ = writeln!(out, "not exercised  {}  {why}", t.name);
    }
    for a in &t.advice {
        let _ = writeln!(
            out,
            "advice         {}  {} (from cases: {})",
            t.name,
            advice_text(*a),
            t.advice_basis.join(", ")
        );
    }
    for n in &t.notes {
        let _ = writeln!(out, "note           {}  {n}", t.name);
    }
    out.push_str(&generated_arguments(t));
    out.push_str(&outbound(t));
    out
}

/// Where the generated arguments of a tool's cases came from, each once.
fn generated_arguments(t: &ToolReport) -> String {
    let mut generated: Vec<String> = Vec::new();
    for (argument, from) in t.cases.iter().flat_map(|c| c.generated.iter()) {
        let line = format!("{argument} from {from}");
        if !generated.contains(&line) {
            generated.push(line);
        }
    }
    if generated.is_empty() {
        return String::new();
    }
    format!(
        "arguments      {}  generated: {}\n",
        t.name,
        generated.join("; ")
    )
}

/// The requests a tool's calls sent, each once, with how many times.
fn outbound(t: &ToolReport) -> String {
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
    let mut out = String::new();
    for (line, n) in sent {
        let times = if n > 1 {
            format!(" ({n} times)")
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "outbound       {}  {line}{times}, not forwarded",
            t.name
        );
    }
    out
}

/// The suggested annotations as rmcp attributes, with their evidence, and the JSON patch.
fn suggestions(report: &Report) -> String {
    let suggestions: Vec<_> = report
        .tools
        .iter()
        .filter_map(|t| Some((t, t.suggestion.as_ref()?)))
        .collect();
    if suggestions.is_empty() {
        return String::new();
    }
    let mut out = "\nSuggested annotations:\n".to_owned();
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
    out
}

/// What the run watched: the database check, and outbound HTTP with the requests no call
/// was in flight for.
fn watched(report: &Report) -> String {
    let mut out = format!("\ndatabase check: {}\n", report.database_check);
    if !report.watched.is_empty() {
        let _ = writeln!(
            out,
            "files: {} (snapshotted around every call, put back at the end)",
            report.watched.join(", ")
        );
    }
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
    out
}

/// The database copy, the server's last stderr lines, an early end.
fn run_end(report: &Report) -> String {
    let mut out = String::new();
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
    out
}

fn totals(report: &Report) -> String {
    let (passed, failed, not_exercised) = report.status_counts();
    format!(
        "\ntools {}; passed {passed}; failed {failed}; not exercised {not_exercised}; findings {}; {:.1} s\n",
        report.tools.len(),
        report.findings().count(),
        report.elapsed_seconds
    )
}
