//! The findings table and the summary line.

use comfy_table::{Cell, ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use hintaudit_core::{Finding, Rule, Severity};

use super::collect::Collected;

/// Counts of distinct findings (one per tool and rule: the four `hint_missing` findings of an
/// unannotated tool count once) by severity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Tools listed.
    pub tools: usize,
    /// Calls judged.
    pub calls: usize,
    /// Critical findings.
    pub critical: usize,
    /// Warnings.
    pub warning: usize,
    /// Info findings.
    pub info: usize,
    /// Tools with no finding at all.
    pub clean_tools: usize,
}

/// Per tool, its distinct findings: the first finding of each rule (with its call's effect).
pub fn distinct_findings(c: &Collected) -> Vec<(String, Vec<(Finding, String)>)> {
    let mut tools: Vec<String> = c.listings.iter().map(|(t, _, _)| t.clone()).collect();
    for call in &c.calls {
        if !tools.contains(&call.tool) {
            tools.push(call.tool.clone());
        }
    }
    tools
        .into_iter()
        .map(|tool| {
            let mut found: Vec<(Finding, String)> = Vec::new();
            let mut add = |f: &Finding, effect: &str| {
                if !found
                    .iter()
                    .any(|(g, _)| g.rule == f.rule && g.hint == f.hint)
                {
                    // hint_missing keeps one finding per hint; the table folds them.
                    found.push((f.clone(), effect.to_owned()));
                }
            };
            for call in c.calls.iter().filter(|call| call.tool == tool) {
                for f in &call.findings {
                    add(f, &call.effect);
                }
            }
            for (_, _, findings) in c.listings.iter().filter(|(t, _, _)| *t == tool) {
                for f in findings {
                    add(f, "(tools/list)");
                }
            }
            found.sort_by(|a, b| {
                b.0.severity
                    .cmp(&a.0.severity)
                    .then(a.0.rule.cmp(&b.0.rule))
            });
            (tool, found)
        })
        .collect()
}

/// Counts findings.
pub fn tally(c: &Collected) -> Tally {
    let per_tool = distinct_findings(c);
    let mut t = Tally {
        tools: per_tool.len(),
        calls: c.calls.len(),
        ..Default::default()
    };
    for (_, findings) in &per_tool {
        if findings.is_empty() {
            t.clean_tools += 1;
        }
        let mut rules: Vec<&Finding> = Vec::new();
        for (f, _) in findings {
            if !rules.iter().any(|g| g.rule == f.rule) {
                rules.push(f);
            }
        }
        for f in rules {
            match f.severity {
                Severity::Critical => t.critical += 1,
                Severity::Warning => t.warning += 1,
                Severity::Info => t.info += 1,
            }
        }
    }
    t
}

/// Renders the findings table: tool, declared hints, calls, observed effect, finding,
/// evidence. `hint_missing` findings of one tool are folded into one row.
pub fn render(c: &Collected) -> String {
    let mut table = Table::new();
    table
        .load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(190)
        .set_header([
            "tool",
            "declared hints",
            "calls",
            "observed effect",
            "finding",
            "evidence",
        ]);
    for (tool, findings) in distinct_findings(c) {
        let hints = c
            .listings
            .iter()
            .find(|(t, _, _)| *t == tool)
            .map(|(_, h, _)| *h)
            .or_else(|| {
                c.calls
                    .iter()
                    .find(|call| call.tool == tool)
                    .map(|call| call.hints)
            })
            .unwrap_or_default();
        let calls: Vec<_> = c.calls.iter().filter(|call| call.tool == tool).collect();
        let last_effect = calls
            .last()
            .map_or("(not called)".to_owned(), |call| call.effect.clone());
        let n = calls.len().to_string();
        if findings.is_empty() {
            table.add_row([&tool, &hints.compact(), &n, &last_effect, "clean", ""].map(Cell::new));
            continue;
        }
        let missing: Vec<&str> = findings
            .iter()
            .filter(|(f, _)| f.rule == Rule::HintMissing)
            .map(|(f, _)| f.hint.spec_name())
            .collect();
        for (f, effect) in findings.iter().filter(|(f, _)| f.rule != Rule::HintMissing) {
            let finding = format!(
                "{} ({}, {})",
                f.rule,
                f.severity.as_str(),
                f.confidence.as_str()
            );
            let effect = if effect.starts_with('(') {
                last_effect.clone()
            } else {
                effect.clone()
            };
            table.add_row(
                [&tool, &hints.compact(), &n, &effect, &finding, &f.evidence].map(Cell::new),
            );
        }
        if !missing.is_empty() {
            let evidence = format!(
                "{} unset: clients assume the cautious defaults",
                missing.join(", ")
            );
            table.add_row(
                [
                    &tool,
                    &hints.compact(),
                    &n,
                    &last_effect,
                    "hint_missing (info)",
                    &evidence,
                ]
                .map(Cell::new),
            );
        }
    }
    table.to_string()
}

/// The summary line.
pub fn summary_line(t: &Tally) -> String {
    format!(
        "hintaudit: {} tools, {} calls judged: {} critical, {} warning, {} info; {} tools clean",
        t.tools, t.calls, t.critical, t.warning, t.info, t.clean_tools
    )
}
