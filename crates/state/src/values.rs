//! Values a tool's arguments can be drawn from: the fields of JSON and JSONL documents, and a
//! git repository's refs, revisions and paths. Values are user data: they go into calls to
//! the server under test, never into a report.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use crate::error::StateError;
use crate::git::Repository;

/// How many distinct values a field keeps.
const VALUES_PER_FIELD: usize = 16;
/// How many objects (records) a harvest keeps.
const RECORDS_KEPT: usize = 256;

/// The values of JSON documents, by field name: every object's scalar members and arrays of
/// scalars (each item a value of the field), at any depth; and each object as a record of
/// such fields, for filling several arguments from one record.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JsonValues {
    /// Distinct values per field name, in the order first seen (at most 16 each).
    pub fields: BTreeMap<String, Vec<Value>>,
    /// Objects, each as its fields' values, in document order (at most 256).
    pub records: Vec<BTreeMap<String, Vec<Value>>>,
}

/// The values of `content` when it is a JSON document (one object or array) or JSONL
/// (every non-empty line an object or array); `None` otherwise. A document that is one
/// object (a map of settings or of records by key) gives its member names as values of
/// the field `key`.
pub fn json_values(content: &[u8]) -> Option<JsonValues> {
    let docs: Vec<Value> = match serde_json::from_slice::<Value>(content) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => vec![v],
        Ok(_) => return None,
        Err(_) => content
            .split(|b| *b == b'\n')
            .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
            .map(|l| match serde_json::from_slice::<Value>(l) {
                Ok(v @ (Value::Object(_) | Value::Array(_))) => Some(v),
                _ => None,
            })
            .collect::<Option<Vec<Value>>>()?,
    };
    let mut out = JsonValues::default();
    if let [Value::Object(map)] = docs.as_slice() {
        for k in map.keys() {
            out.add("key", Value::String(k.clone()));
        }
    }
    for d in &docs {
        out.visit(d);
    }
    Some(out)
}

impl JsonValues {
    /// Adds another document's values.
    pub fn extend(&mut self, other: JsonValues) {
        for (field, values) in other.fields {
            for v in values {
                self.add(&field, v);
            }
        }
        let room = RECORDS_KEPT.saturating_sub(self.records.len());
        self.records.extend(other.records.into_iter().take(room));
    }

    fn add(&mut self, field: &str, v: Value) {
        let values = self.fields.entry(field.to_owned()).or_default();
        if values.len() < VALUES_PER_FIELD && !values.contains(&v) {
            values.push(v);
        }
    }

    fn visit(&mut self, value: &Value) {
        match value {
            Value::Object(map) => {
                let mut record: BTreeMap<String, Vec<Value>> = BTreeMap::new();
                for (k, v) in map {
                    let scalars: Vec<&Value> = match v {
                        Value::Array(items) => items.iter().filter(|i| is_scalar(i)).collect(),
                        v if is_scalar(v) => vec![v],
                        _ => Vec::new(),
                    };
                    for s in scalars {
                        self.add(k, s.clone());
                        record.entry(k.clone()).or_default().push(s.clone());
                    }
                    self.visit(v);
                }
                if !record.is_empty() && self.records.len() < RECORDS_KEPT {
                    self.records.push(record);
                }
            }
            Value::Array(items) => items.iter().for_each(|i| self.visit(i)),
            _ => {}
        }
    }
}

fn is_scalar(v: &Value) -> bool {
    matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_))
}

/// What a git repository offers a tool's arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitValues {
    /// The work tree (absolute), `None` for a bare repository.
    pub work_tree: Option<PathBuf>,
    /// The branch HEAD is on (short name: `main`), if any.
    pub current_branch: Option<String>,
    /// Local branches (short names), the current one first.
    pub branches: Vec<String>,
    /// Tags (short names).
    pub tags: Vec<String>,
    /// The newest commits reachable from HEAD (full hex ids), newest first, at most 5.
    pub commits: Vec<String>,
    /// Paths in the index (relative to the work tree), at most 64.
    pub tracked: Vec<String>,
    /// Tracked paths whose work-tree file differs from its index entry, at most 16.
    pub modified: Vec<String>,
}

impl Repository {
    /// The values this repository offers. Errors: a ref or the index that cannot be read.
    pub fn values(&self) -> Result<GitValues, StateError> {
        use hintaudit_core::files::{Head, RepoOracle};
        let facts = self.facts()?;
        let oracle = self.oracle()?;
        let short = |p: &str, n: &str| n.strip_prefix(p).map(str::to_owned);
        let current_branch = match &facts.head {
            Some(Head::Branch(b)) => short("refs/heads/", b),
            _ => None,
        };
        let mut branches: Vec<String> = facts
            .refs
            .keys()
            .filter_map(|n| short("refs/heads/", n))
            .collect();
        if let Some(c) = &current_branch {
            branches.retain(|b| b != c);
            branches.insert(0, c.clone());
        }
        let tags = facts
            .refs
            .keys()
            .filter_map(|n| short("refs/tags/", n))
            .collect();
        let paths = facts.index.keys().map(|(p, _)| p.clone());
        let modified = facts
            .index
            .iter()
            .filter(|((p, _), e)| oracle.worktree_blob(p).is_some_and(|b| b != e.id))
            .map(|((p, _), _)| p.clone())
            .take(16)
            .collect();
        Ok(GitValues {
            work_tree: self.location().work_tree.clone(),
            current_branch,
            branches,
            tags,
            commits: self.head_commits(5),
            tracked: paths.take(64).collect(),
            modified,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The memory server's store: names, types and observations by field, and each line a
    /// record (a relation's `from`, `to` and `relationType` together).
    #[test]
    fn a_jsonl_store_gives_fields_and_records() {
        let store = br#"{"type":"entity","name":"Alice","entityType":"person","observations":["likes tea","plays chess"]}
{"type":"relation","from":"Alice","to":"Bob","relationType":"knows"}
"#;
        let v = json_values(store).unwrap();
        assert_eq!(v.fields["name"], [json!("Alice")]);
        assert_eq!(
            v.fields["observations"],
            [json!("likes tea"), json!("plays chess")]
        );
        assert_eq!(v.records.len(), 2);
        assert_eq!(v.records[1]["relationType"], [json!("knows")]);
        assert_eq!(v.records[1]["from"], [json!("Alice")]);
        assert!(json_values(b"plain text\n").is_none());
        let nested = json_values(br#"{"notes":[{"id":7,"tags":["a"]}]}"#).unwrap();
        assert_eq!(nested.fields["id"], [json!(7)]);
        assert_eq!(nested.fields["key"], [json!("notes")]);
        assert_eq!(
            nested.records,
            [BTreeMap::from([
                ("id".to_owned(), vec![json!(7)]),
                ("tags".to_owned(), vec![json!("a")])
            ])]
        );
    }
}
