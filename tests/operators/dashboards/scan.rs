//! Readers and scanners for the dashboard tests: template-variable substitution, a PromQL
//! skeleton that finds metric names and the call around each, the rules file's expressions,
//! and the Explore state inside data-link URLs. Not a PromQL parser: good enough for the
//! expressions we ship, and the stack test runs every one against a real Prometheus.

use std::collections::{BTreeSet, HashMap};

use hintaudit_telemetry::{MetricKind, MetricName};
use serde_json::Value;

use super::{RULES, str_of};
use crate::support::repo_path;

pub(super) fn substitute(expr: &str, vars: &HashMap<&str, &str>) -> String {
    let mut out = String::with_capacity(expr.len());
    let mut rest = expr;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, len) = match after.strip_prefix('{') {
            Some(braced) => match braced.find('}') {
                Some(end) => (braced[..end].split(':').next().unwrap_or(""), end + 2),
                None => ("", 0),
            },
            None => {
                let end = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                (&after[..end], end)
            }
        };
        match vars.get(name) {
            Some(value) if len > 0 => out.push_str(value),
            _ => out.push_str(&rest[i..i + 1 + len]),
        }
        rest = &after[len..];
    }
    out.push_str(rest);
    out
}

/// `expr` with string literals, label matchers and range/subquery brackets blanked (same
/// byte length), so only names, functions, operators and parentheses remain.
pub(super) fn skeleton(expr: &str) -> String {
    let mut out = String::with_capacity(expr.len());
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut depth = 0usize; // inside {...} or [...]
    for c in expr.chars() {
        let keep = match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
                false
            }
            None if matches!(c, '"' | '\'' | '`') => {
                quote = Some(c);
                false
            }
            None if matches!(c, '{' | '[') => {
                depth += 1;
                false
            }
            None if matches!(c, '}' | ']') => {
                depth = depth.saturating_sub(1);
                false
            }
            None => depth == 0,
        };
        out.extend(std::iter::repeat_n(
            if keep { c } else { ' ' },
            c.len_utf8(),
        ));
    }
    out
}

const KEYWORDS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "inf",
    "nan",
];
const GROUPING: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];

/// The metric names an expression selects, with their byte offsets.
pub(super) fn metric_names(expr: &str) -> Vec<(usize, String)> {
    let s = skeleton(expr);
    let b = s.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b':';
    let next_non_space = |mut j: usize| {
        while j < b.len() && b[j] == b' ' {
            j += 1;
        }
        j
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = (b[i].is_ascii_alphabetic() || b[i] == b'_' || b[i] == b':')
            && (i == 0 || !(ident(b[i - 1]) || b[i - 1] == b'.'));
        if !starts {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && ident(b[i]) {
            i += 1;
        }
        let word = &s[start..i];
        let j = next_non_space(i);
        // A call, or an aggregation with its modifier first: sum by (tool) (...).
        let call = j < b.len() && b[j] == b'('
            || ["by", "without"]
                .iter()
                .any(|m| s[j..].starts_with(m) && matches!(b.get(j + m.len()), Some(b' ' | b'(')));
        if GROUPING.contains(&word) && call {
            // Skip the label list: by (tool, le).
            i = s[j..].find(')').map_or(b.len(), |k| j + k + 1);
        } else if !call && !KEYWORDS.contains(&word) {
            out.push((start, word.to_owned()));
        }
    }
    out
}

/// The function or aggregation whose parentheses directly enclose byte `pos` (`sum` for
/// `sum by (tool) (x)`; `""` for plain grouping parentheses).
pub(super) fn enclosing_call(skel: &str, pos: usize) -> Option<&str> {
    let open = |end: usize| {
        let mut depth = 0;
        skel[..end].bytes().rposition(|c| {
            depth += i32::from(c == b')') - i32::from(c == b'(');
            depth < 0
        })
    };
    let mut before = skel[..open(pos)?].trim_end();
    if before.ends_with(')') {
        // Skip an aggregation's modifier: sum by (tool) (...).
        let list = open(before.len() - 1)?;
        before = skel[..list].trim_end();
        before = before
            .strip_suffix("by")
            .or(before.strip_suffix("without"))?;
        before = before.trim_end();
    }
    let start = before
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |k| k + 1);
    Some(&before[start..])
}

pub(super) fn is_counter_series(name: &str) -> bool {
    MetricName::ALL
        .iter()
        .any(|m| m.kind() != MetricKind::Gauge && m.series_names().iter().any(|s| s == name))
        || name.ends_with("_total")
        || name.ends_with("_bucket")
}

pub(super) fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (b[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).expect("utf-8 link")
}

/// Every expression of the rules file (recording and alerting), and the recorded names.
pub(super) fn rules() -> (Vec<String>, BTreeSet<String>) {
    let path = repo_path(RULES);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{RULES} (written with deploy/prometheus): {e}"));
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).expect(RULES);
    let (mut exprs, mut records) = (Vec::new(), BTreeSet::new());
    for group in doc["groups"].as_sequence().expect("groups") {
        for rule in group["rules"].as_sequence().expect("rules") {
            exprs.push(rule["expr"].as_str().expect("expr").to_owned());
            if let Some(r) = rule["record"].as_str() {
                records.insert(r.to_owned());
            }
        }
    }
    (exprs, records)
}

/// The decoded Explore state (`left=`) of every Explore link on a panel, overrides included.
pub(super) fn explore_links(p: &Value) -> Vec<Value> {
    let mut links: Vec<&Value> = Vec::new();
    links.extend(
        p["fieldConfig"]["defaults"]["links"]
            .as_array()
            .into_iter()
            .flatten(),
    );
    for o in p["fieldConfig"]["overrides"]
        .as_array()
        .into_iter()
        .flatten()
    {
        for prop in o["properties"].as_array().into_iter().flatten() {
            if prop["id"] == "links" {
                links.extend(prop["value"].as_array().into_iter().flatten());
            }
        }
    }
    links
        .into_iter()
        .filter_map(|l| str_of(l, "url").strip_prefix("/explore?"))
        .filter_map(|q| q.split('&').find_map(|kv| kv.strip_prefix("left=")))
        .map(|left| serde_json::from_str(&percent_decode(left)).expect("left= is JSON"))
        .collect()
}

#[test]
fn the_scanners_see_names_calls_and_bare_counters() {
    let e = r#"histogram_quantile(0.95, sum by (tool, le) (rate(x_bucket{a="sum(y_total)"}[5m]))) / on (tool) group_left (rule) z"#;
    let names: Vec<String> = metric_names(e).into_iter().map(|(_, n)| n).collect();
    assert_eq!(names, ["x_bucket", "z"]);
    let skel = skeleton(e);
    let (pos, _) = metric_names(e)[0].clone();
    assert_eq!(enclosing_call(&skel, pos), Some("rate"));
    let bare = "sum by (tool) (hintaudit_tool_calls_total) or vector(0)";
    let (pos, name) = metric_names(bare).remove(0);
    assert!(is_counter_series(&name));
    assert_eq!(enclosing_call(&skeleton(bare), pos), Some("sum"));
    assert_eq!(enclosing_call(&skeleton("(x_total) / 2"), 1), Some(""));
    assert_eq!(enclosing_call(&skeleton("x_total"), 0), None);
    let summed = "sum(hintaudit_tool_call_duration_seconds_count)";
    let (pos, name) = metric_names(summed).remove(0);
    assert!(is_counter_series(&name));
    assert_eq!(enclosing_call(&skeleton(summed), pos), Some("sum"));
    assert!(!is_counter_series(
        "tool_status:hintaudit_tool_calls:rate5m"
    ));
    assert_eq!(
        percent_decode("%7B%22a%22%3A%22${x}%22%7D"),
        "{\"a\":\"${x}\"}"
    );
}
