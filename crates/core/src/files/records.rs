//! JSON and JSONL documents judged as records: what a rewrite added, removed or replaced,
//! counted, never shown.
//!
//! A document is a JSON object or array (the whole content), or JSONL: every non-empty line
//! a JSON object or array. Its **records** are a JSONL document's lines, a top-level array's
//! items, or a top-level object's members. A record (or an array item at any depth) that is
//! an object with an identifying field ([`IDENTIFYING_FIELDS`]: `id`, `name`, `key`,
//! `uuid`…, a string or number) is matched by that field's value; other items are a multiset
//! of canonical JSON (members in any order, arrays as multisets), so that removing one line
//! is one removal and reordering or reformatting is no change. An unmatched old item that a
//! new one extends (every member kept with a value that keeps the old one, every array item
//! kept) is the same item, changed: additive.
//!
//! What is kept is hashes (xxh3-64 per JSON value, about 40 bytes each), never values: the
//! proxy keeps a [`Records`] per watched document to judge its next content against.

use std::collections::HashMap;

use serde_json::Value;
use xxhash_rust::xxh3::xxh3_64;

/// The fields that identify a record, looked for in this order in an object: the first one
/// present with a string or number value is its key. Record keys can be user data (a
/// person's name, an email): evidence counts records, it never shows a key.
pub const IDENTIFYING_FIELDS: &[&str] = &["id", "_id", "uuid", "guid", "key", "name", "slug"];

/// Past this many unmatched items on either side of one array (or document), an unmatched
/// old item is not compared with each unmatched new one to find one that extends it: it is
/// removed (the cautious reading).
const PAIRING_MAX: usize = 256;

/// A JSON or JSONL document as hashes, enough to judge how a later content changed its
/// records ([`Records::change_to`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Records {
    root: Node,
    /// How the content read: JSONL (lines), or one JSON value on one line, which is a
    /// JSONL document of one record when the other content is JSONL.
    form: Form,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// Lines, each a record.
    Lines,
    /// One JSON value over several lines.
    Document,
    /// One JSON value on one line, with its key as a record (0: none).
    Line(u64),
}

/// A JSON value: the hash of its canonical form, and its children.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Node {
    hash: u64,
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// A string, number, boolean or null.
    Scalar,
    /// Members by the hash of their name, sorted by it.
    Object(Box<[(u64, Node)]>),
    /// Items, each with the hash of its identifying field and value (0: none).
    Array(Box<[(u64, Node)]>),
}

/// How a document's records changed: counts only.
///
/// *Records* are the document's top-level units (lines, top-level array items or members);
/// a record in both contents whose value differs is *changed*, and what changed inside it
/// is counted as *items* (members or array items, at any depth) added or removed and
/// *values* (scalars, or a value turned into another type) replaced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RecordsChange {
    /// Records added: an insert.
    pub added: u32,
    /// Records removed: destructive.
    pub removed: u32,
    /// Records present before and after whose value differs.
    pub changed: u32,
    /// Members or array items added inside changed records: additive.
    pub items_added: u32,
    /// Members or array items removed inside changed records: destructive.
    pub items_removed: u32,
    /// Values replaced inside changed records: destructive.
    pub replaced: u32,
}

impl RecordsChange {
    /// Whether nothing changed: the new content only reformatted or reordered the old.
    pub fn is_empty(&self) -> bool {
        *self == RecordsChange::default()
    }

    /// Whether something that was there is gone: a record or item removed, a value
    /// replaced.
    pub fn is_destructive(&self) -> bool {
        self.removed + self.items_removed + self.replaced > 0
    }

    /// The counts as evidence says them: `1 record added, 1 removed, 2 changed (3 items
    /// added, 1 value replaced)`; empty when nothing changed.
    pub fn describe(&self) -> String {
        let top = counted(
            "record",
            "records",
            &[
                (self.added, "added"),
                (self.removed, "removed"),
                (self.changed, "changed"),
            ],
        );
        let items = counted(
            "item",
            "items",
            &[(self.items_added, "added"), (self.items_removed, "removed")],
        );
        let values = counted("value", "values", &[(self.replaced, "replaced")]);
        let inner: Vec<String> = [items, values]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect();
        match inner.is_empty() {
            true => top,
            false => format!("{top} ({})", inner.join(", ")),
        }
    }
}

/// `3 items added, 1 removed`: the noun after the first non-zero count only.
fn counted(one: &str, many: &str, counts: &[(u32, &str)]) -> String {
    let mut parts = Vec::new();
    for (n, verb) in counts.iter().filter(|(n, _)| *n > 0) {
        let noun = match (parts.is_empty(), *n) {
            (false, _) => String::new(),
            (true, 1) => format!(" {one}"),
            (true, _) => format!(" {many}"),
        };
        parts.push(format!("{n}{noun} {verb}"));
    }
    parts.join(", ")
}

impl Records {
    /// The records of `content`, or `None` when it is not a JSON document: not one JSON
    /// object or array, and not JSONL (some non-empty line is not a JSON object or array).
    /// Empty content is an empty JSONL document.
    pub fn of(content: &[u8]) -> Option<Records> {
        let first = content.iter().find(|b| !b.is_ascii_whitespace());
        match first {
            None => return Some(Records::lines(Vec::new())),
            Some(b'{' | b'[') => {}
            Some(_) => return None,
        }
        if let Ok(value) = serde_json::from_slice::<Value>(content) {
            let lines = content.split(|b| *b == b'\n');
            let one_line = lines
                .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
                .count()
                == 1;
            return Some(Records {
                root: node(&value),
                form: match one_line {
                    true => Form::Line(key(&value)),
                    false => Form::Document,
                },
            });
        }
        let mut lines = Vec::new();
        for line in content.split(|b| *b == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<Value>(line).ok()? {
                v @ (Value::Object(_) | Value::Array(_)) => lines.push(v),
                _ => return None,
            }
        }
        Some(Records::lines(lines))
    }

    fn lines(values: Vec<Value>) -> Records {
        Records {
            root: array(&values),
            form: Form::Lines,
        }
    }

    /// How the records changed from this document to `new`, or `None` when the two do not
    /// compare as records (an object's members against a list's items): the line rules
    /// judge them.
    pub fn change_to(&self, new: &Records) -> Option<RecordsChange> {
        let mut change = RecordsChange::default();
        let (old_root, new_root) = match (self.form, new.form) {
            (Form::Line(k), Form::Lines) => (&one_record(k, &self.root), &new.root),
            (Form::Lines, Form::Line(k)) => (&self.root, &one_record(k, &new.root)),
            _ => (&self.root, &new.root),
        };
        if old_root.hash == new_root.hash {
            return Some(change);
        }
        match (&old_root.kind, &new_root.kind) {
            (Kind::Object(a), Kind::Object(b)) => members(a, b, &mut change, true),
            (Kind::Array(a), Kind::Array(b)) => items(a, b, &mut change, true),
            _ => return None,
        }
        Some(change)
    }
}

/// A JSONL document of one record, `root` with key `key`.
fn one_record(key: u64, root: &Node) -> Node {
    Node {
        hash: combine(b'a', [root.hash]),
        kind: Kind::Array(Box::new([(key, root.clone())])),
    }
}

/// The hashed form of a JSON value.
fn node(value: &Value) -> Node {
    match value {
        Value::Object(map) => {
            let mut members: Vec<(u64, Node)> = map
                .iter()
                .map(|(k, v)| (xxh3_64(k.as_bytes()), node(v)))
                .collect();
            members.sort_unstable_by_key(|(k, _)| *k);
            let hash = combine(b'o', members.iter().flat_map(|(k, n)| [*k, n.hash]));
            Node {
                hash,
                kind: Kind::Object(members.into_boxed_slice()),
            }
        }
        Value::Array(values) => array(values),
        scalar => Node {
            hash: xxh3_64(format!("s{scalar}").as_bytes()),
            kind: Kind::Scalar,
        },
    }
}

/// An array's node: its items keyed, hashed as a multiset (order does not count).
fn array(values: &[Value]) -> Node {
    let items: Vec<(u64, Node)> = values.iter().map(|v| (key(v), node(v))).collect();
    let mut hashes: Vec<u64> = items.iter().map(|(_, n)| n.hash).collect();
    hashes.sort_unstable();
    Node {
        hash: combine(b'a', hashes),
        kind: Kind::Array(items.into_boxed_slice()),
    }
}

/// The hash of an object's identifying field and value, 0 when it has none.
fn key(value: &Value) -> u64 {
    let Value::Object(map) = value else {
        return 0;
    };
    IDENTIFYING_FIELDS
        .iter()
        .find_map(|f| match map.get(*f) {
            Some(v @ (Value::String(_) | Value::Number(_))) => {
                Some(xxh3_64(format!("{f}\u{0}{v}").as_bytes()).max(1))
            }
            _ => None,
        })
        .unwrap_or(0)
}

fn combine(tag: u8, parts: impl IntoIterator<Item = u64>) -> u64 {
    let mut bytes = vec![tag];
    for p in parts {
        bytes.extend_from_slice(&p.to_le_bytes());
    }
    xxh3_64(&bytes)
}

/// Compares two values inside a record: members and items recursively, a scalar or a
/// change of type as a value replaced.
fn compare(old: &Node, new: &Node, change: &mut RecordsChange) {
    if old.hash == new.hash {
        return;
    }
    match (&old.kind, &new.kind) {
        (Kind::Object(a), Kind::Object(b)) => members(a, b, change, false),
        (Kind::Array(a), Kind::Array(b)) => items(a, b, change, false),
        _ => change.replaced += 1,
    }
}

/// A pair of records (`top`) or items matched across the two contents.
fn matched(old: &Node, new: &Node, change: &mut RecordsChange, top: bool) {
    if top && old.hash != new.hash {
        change.changed += 1;
    }
    compare(old, new, change);
}

fn added(change: &mut RecordsChange, top: bool) {
    match top {
        true => change.added += 1,
        false => change.items_added += 1,
    }
}

fn removed(change: &mut RecordsChange, top: bool) {
    match top {
        true => change.removed += 1,
        false => change.items_removed += 1,
    }
}

/// Two objects' members, matched by name (both sorted by its hash).
fn members(old: &[(u64, Node)], new: &[(u64, Node)], change: &mut RecordsChange, top: bool) {
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        match (old.get(i), new.get(j)) {
            (Some((a, o)), Some((b, n))) if a == b => {
                matched(o, n, change, top);
                i += 1;
                j += 1;
            }
            (Some((a, _)), Some((b, _))) if a < b => {
                removed(change, top);
                i += 1;
            }
            (Some(_), None) => {
                removed(change, top);
                i += 1;
            }
            _ => {
                added(change, top);
                j += 1;
            }
        }
    }
}

/// Two arrays' items (or two documents' records): keyed items matched by key, the rest as
/// a multiset of canonical values, then each old item left over paired with a new one that
/// extends it.
fn items(old: &[(u64, Node)], new: &[(u64, Node)], change: &mut RecordsChange, top: bool) {
    let old_keys = unique_keys(old);
    let mut new_keyed: HashMap<u64, &Node> = HashMap::new();
    let mut new_rest: Vec<&Node> = Vec::new();
    let new_keys = unique_keys(new);
    for (k, n) in new {
        match new_keys.get(k) {
            Some(1) if *k != 0 && old_keys.get(k) == Some(&1) => {
                new_keyed.insert(*k, n);
            }
            _ => new_rest.push(n),
        }
    }
    let mut old_rest: Vec<&Node> = Vec::new();
    for (k, o) in old {
        match new_keyed.remove(k) {
            Some(n) => matched(o, n, change, top),
            None => old_rest.push(o),
        }
    }
    // Keyed new items whose key the old content did not have once: left for the multiset.
    new_rest.extend(new_keyed.into_values());
    let (old_left, mut new_left) = multiset(old_rest, new_rest);
    let pair = old_left.len() <= PAIRING_MAX && new_left.len() <= PAIRING_MAX;
    for o in old_left {
        let extended = pair
            .then(|| new_left.iter().position(|n| extends(o, n)))
            .flatten();
        match extended {
            Some(at) => matched(o, new_left.swap_remove(at), change, top),
            None => removed(change, top),
        }
    }
    for _ in new_left {
        added(change, top);
    }
}

/// How many times each key occurs among `items`.
fn unique_keys(items: &[(u64, Node)]) -> HashMap<u64, u32> {
    let mut out: HashMap<u64, u32> = HashMap::new();
    for (k, _) in items.iter().filter(|(k, _)| *k != 0) {
        *out.entry(*k).or_default() += 1;
    }
    out
}

/// The old and new items left once equal values are matched, each in its first order.
fn multiset<'a>(old: Vec<&'a Node>, new: Vec<&'a Node>) -> (Vec<&'a Node>, Vec<&'a Node>) {
    let mut spare: HashMap<u64, u32> = HashMap::new();
    for n in &new {
        *spare.entry(n.hash).or_default() += 1;
    }
    let mut old_left = Vec::new();
    for o in old {
        match spare.get_mut(&o.hash) {
            Some(c) if *c > 0 => *c -= 1,
            _ => old_left.push(o),
        }
    }
    // `spare` now counts the new values no old one matched: that many of each are left
    // (equal values are interchangeable).
    let mut new_left = Vec::new();
    for n in new {
        if let Some(c) = spare.get_mut(&n.hash).filter(|c| **c > 0) {
            *c -= 1;
            new_left.push(n);
        }
    }
    (old_left, new_left)
}

/// Whether `new` keeps everything `old` had (an object or array that only gained).
fn extends(old: &Node, new: &Node) -> bool {
    if matches!(old.kind, Kind::Scalar) || matches!(new.kind, Kind::Scalar) {
        return false;
    }
    let mut change = RecordsChange::default();
    compare(old, new, &mut change);
    !change.is_destructive()
}

#[cfg(test)]
mod tests;
