//! Readers for the dashboard tests: Grafana template-variable substitution (before the PromQL
//! parser sees a query), the rules file's expressions, and the Explore state inside data-link
//! URLs. The PromQL itself is parsed by crate::promql.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use super::{RULES, str_of};
use crate::support::repo_path;

/// `expr` with `$name`, `${name}` and `${name:format}` replaced from `vars`; unknown
/// variables stay as written.
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

/// `s` with its `%XX` escapes decoded.
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
fn percent_decoding_keeps_template_variables() {
    assert_eq!(
        percent_decode("%7B%22a%22%3A%22${x}%22%7D"),
        "{\"a\":\"${x}\"}"
    );
}
