//! The contract (docs/design.md) and the code say the same: its rule table matches
//! `hintaudit_core::Rule` (ids, the hint each names, severities) and its metric table matches
//! `MetricName` (names, types, labels), row for row.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

use std::path::Path;

use hintaudit_core::{Advice, Rule};
use hintaudit_telemetry::MetricName;

fn design() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/design.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The rows of the first Markdown table under the heading `heading`, as trimmed cells, the
/// header row first.
fn table(doc: &str, heading: &str, header_starts: &str) -> Vec<Vec<String>> {
    let section = doc
        .split_once(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("no heading {heading:?}"))
        .1;
    let section = section.split("\n## ").next().unwrap_or(section);
    let start = section
        .find(&format!("\n| {header_starts}"))
        .unwrap_or_else(|| panic!("no table starting '| {header_starts}' under {heading}"));
    section[start + 1..]
        .lines()
        .take_while(|l| l.starts_with('|'))
        .filter(|l| !l.starts_with("|---"))
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().trim_matches('`').to_owned())
                .collect()
        })
        .collect()
}

#[test]
fn the_rule_table_matches_rule() {
    let rows = table(&design(), "## 2. Rules", "rule |");
    assert_eq!(
        rows[0],
        ["rule", "hint", "applies when", "found when", "severity"]
    );
    let rows = &rows[1..];
    assert_eq!(rows.len(), Rule::ALL.len(), "one row per rule");
    for (row, rule) in rows.iter().zip(Rule::ALL) {
        assert_eq!(row[0], rule.as_str(), "rules in Rule::ALL order");
        assert_eq!(row[4], rule.severity().as_str(), "{rule:?}");
        match rule.hints() {
            [one] => assert_eq!(row[1], one.spec_name(), "{rule:?}"),
            _ => assert!(
                !row[1].ends_with("Hint"),
                "{rule:?} can name any hint; the table says {}",
                row[1]
            ),
        }
    }
}

#[test]
fn the_advice_list_matches_advice() {
    let doc = design();
    for advice in Advice::ALL {
        assert!(
            doc.contains(&format!("`{}`", advice.as_str())),
            "{advice:?} is not in docs/design.md"
        );
    }
}

#[test]
fn the_metric_table_matches_metric_name() {
    let rows = table(&design(), "## 5. Telemetry names", "metric |");
    assert_eq!(rows[0], ["metric", "type", "labels", "what"]);
    let rows = &rows[1..];
    assert_eq!(rows.len(), MetricName::ALL.len(), "one row per metric");
    for (row, metric) in rows.iter().zip(MetricName::ALL) {
        assert_eq!(row[0], metric.as_str(), "metrics in MetricName::ALL order");
        assert_eq!(row[1], metric.kind().as_str(), "{metric}");
        let labels: Vec<&str> = row[2].split(',').map(str::trim).collect();
        assert_eq!(labels, metric.labels(), "{metric}");
    }
}
