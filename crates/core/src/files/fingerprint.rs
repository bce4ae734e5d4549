//! What is kept of a file's content to judge how a later content changed it: its size, its
//! xxh3-128 hash, and, for a file of at most [`LINES_MAX_BYTES`], a 64-bit hash per line
//! plus, per line that is a JSON value, the hashes of its leaves.

use std::collections::HashMap;

use xxhash_rust::xxh3::{xxh3_64, xxh3_128};

use super::ChangeKind;
use super::records::Records;

/// The largest file whose lines a [`Fingerprint::of`] keeps (1 MiB). A larger file keeps
/// its size and hash only: a later content that starts with it is still judged appended,
/// any other rewrite is judged overwritten (the cautious reading: destructive).
pub const LINES_MAX_BYTES: u64 = 1 << 20;

/// A file's content as far as judging a change needs it, without the content: size,
/// xxh3-128, and (up to [`LINES_MAX_BYTES`]) the multiset of its non-empty lines' xxh3-64
/// hashes, each JSON line with the sorted hashes of its leaves (JSON pointer, type, scalar).
/// About 8 bytes per line plus 8 per JSON leaf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    size: u64,
    hash: u128,
    lines: Option<Lines>,
}

/// The non-empty lines of the old content: one hash each, and the leaves of those that are
/// JSON values (by line index), in boxed slices (no spare capacity).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Lines {
    hashes: Box<[u64]>,
    json: Box<[(u32, Box<[u64]>)]>,
}

impl Fingerprint {
    /// The fingerprint of `content`, its lines kept when it is at most
    /// [`LINES_MAX_BYTES`] long.
    pub fn of(content: &[u8]) -> Fingerprint {
        Fingerprint::bounded(content, LINES_MAX_BYTES)
    }

    /// The fingerprint of `content`, its lines kept when it is at most `bound` bytes long.
    pub fn bounded(content: &[u8], bound: u64) -> Fingerprint {
        let lines = (content.len() as u64 <= bound).then(|| {
            let mut hashes = Vec::new();
            let mut json = Vec::new();
            for l in content.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                if let Some(leaves) = json_leaves(l) {
                    let at = u32::try_from(hashes.len()).unwrap_or(u32::MAX);
                    json.push((at, leaves.into_boxed_slice()));
                }
                hashes.push(xxh3_64(l));
            }
            Lines {
                hashes: hashes.into_boxed_slice(),
                json: json.into_boxed_slice(),
            }
        });
        Fingerprint {
            size: content.len() as u64,
            hash: xxh3_128(content),
            lines,
        }
    }

    /// The content's length in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The content's xxh3-128 hash.
    pub fn hash(&self) -> u128 {
        self.hash
    }

    /// Whether its lines were kept (the content was at most the bound).
    pub fn has_lines(&self) -> bool {
        self.lines.is_some()
    }

    /// How `new` changed the content this fingerprint was taken of, or `None` when it is
    /// the same content. Appended when `new` starts with it; lines kept when every old line
    /// is in `new` at least as often, or is a JSON value that a line of `new` extends (every
    /// key kept with a value that keeps the old one, array items kept in place: a JSONL
    /// record given another key or item); else overwritten (also for an old content over
    /// the bound that is not a prefix of `new`).
    pub fn change_to(&self, new: &[u8]) -> Option<ChangeKind> {
        if new.len() as u64 == self.size && xxh3_128(new) == self.hash {
            return None;
        }
        let size = usize::try_from(self.size).unwrap_or(usize::MAX);
        if new.len() >= size && xxh3_128(&new[..size]) == self.hash {
            return Some(ChangeKind::Appended);
        }
        let Some(old) = &self.lines else {
            return Some(ChangeKind::Overwritten);
        };
        Some(lines_change(old, new))
    }
}

/// Lines kept or overwritten: `old`'s lines against `new`'s.
fn lines_change(old: &Lines, new: &[u8]) -> ChangeKind {
    let mut counts: HashMap<u64, (usize, &[u8])> = HashMap::new();
    for l in new.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        counts.entry(xxh3_64(l)).or_insert((0, l)).0 += 1;
    }
    let mut lost: Vec<usize> = Vec::new();
    for (i, h) in old.hashes.iter().enumerate() {
        match counts.get_mut(h) {
            Some((n, _)) if *n > 0 => *n -= 1,
            _ => lost.push(i),
        }
    }
    if lost.is_empty() {
        return ChangeKind::LinesKept;
    }
    // The new lines not matched yet, in a fixed order, with their leaves once read.
    let mut spare: Vec<(u64, &[u8])> = counts
        .iter()
        .flat_map(|(h, (n, l))| std::iter::repeat_n((*h, *l), *n))
        .collect();
    spare.sort_unstable_by_key(|(h, _)| *h);
    let mut spare: Vec<Option<Vec<u64>>> = spare.into_iter().map(|(_, l)| json_leaves(l)).collect();
    for i in lost {
        let at = u32::try_from(i).unwrap_or(u32::MAX);
        let Ok(j) = old.json.binary_search_by_key(&at, |(k, _)| *k) else {
            return ChangeKind::Overwritten;
        };
        let old_leaves = &old.json[j].1;
        let found = spare.iter().position(|s| {
            s.as_ref()
                .is_some_and(|new_leaves| is_subset(old_leaves, new_leaves))
        });
        match found {
            Some(i) => {
                spare.remove(i);
            }
            None => return ChangeKind::Overwritten,
        }
    }
    ChangeKind::LinesKept
}

/// Whether every item of sorted `small` is in sorted `big`.
fn is_subset(small: &[u64], big: &[u64]) -> bool {
    small.iter().all(|x| big.binary_search(x).is_ok())
}

/// The sorted hashes of a JSON line's leaves: per node, its JSON pointer with its type (an
/// object, an array) or its scalar value. A value extends another (every key kept with a
/// value that extends the old one, every array item kept in place, scalars equal) exactly
/// when its leaves include the other's. `None` when the line is not JSON.
fn json_leaves(line: &[u8]) -> Option<Vec<u64>> {
    let first = line.iter().find(|b| !b.is_ascii_whitespace())?;
    if !matches!(first, b'{' | b'[') {
        return None;
    }
    let value: serde_json::Value = serde_json::from_slice(line).ok()?;
    let mut out = Vec::new();
    leaves(&value, &mut String::new(), &mut out);
    out.sort_unstable();
    out.dedup();
    Some(out)
}

fn leaves(value: &serde_json::Value, pointer: &mut String, out: &mut Vec<u64>) {
    use serde_json::Value;
    let here = pointer.len();
    let mut node = |tag: &str, text: &str| {
        out.push(xxh3_64(
            format!("{pointer}\u{0}{tag}\u{0}{text}").as_bytes(),
        ));
    };
    match value {
        Value::Object(map) => {
            node("o", "");
            for (k, v) in map {
                pointer.push('/');
                pointer.push_str(&k.replace('~', "~0").replace('/', "~1"));
                leaves(v, pointer, out);
                pointer.truncate(here);
            }
        }
        Value::Array(items) => {
            node("a", "");
            for (i, v) in items.iter().enumerate() {
                pointer.push_str(&format!("/{i}"));
                leaves(v, pointer, out);
                pointer.truncate(here);
            }
        }
        scalar => node("s", &scalar.to_string()),
    }
}

/// How a file's content changed from `old` to `new` (which differ), whatever their size:
/// appended when `new` starts with `old`; when both are JSON or JSONL documents, their
/// records' change ([`ChangeKind::Records`], with no record changed for a reformatting or a
/// reordering); else the line rules of [`Fingerprint::change_to`].
///
/// The proxy's watch keeps a [`Fingerprint`], whose judgement is the line rules alone for
/// now: documents are judged by records in verify only (design.md, *Kinds of state inside
/// watched trees*).
pub fn content_change(old: &[u8], new: &[u8]) -> ChangeKind {
    if new.starts_with(old) {
        return ChangeKind::Appended;
    }
    if let (Some(o), Some(n)) = (Records::of(old), Records::of(new))
        && let Some(change) = o.change_to(&n)
    {
        return ChangeKind::Records(change);
    }
    Fingerprint::bounded(old, u64::MAX)
        .change_to(new)
        .unwrap_or(ChangeKind::LinesKept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::RecordsChange;

    /// One row per rewrite: the change the full judgement and the fingerprint give.
    /// Documents are judged by their records by `content_change`.
    #[test]
    fn documents_judged_by_records() {
        let records = |changed, items_added, items_removed, replaced| {
            ChangeKind::Records(RecordsChange {
                changed,
                items_added,
                items_removed,
                replaced,
                ..Default::default()
            })
        };
        let rows: [(&str, &str, ChangeKind); 5] = [
            (
                "{\"name\":\"A\",\"o\":[\"x\"]}\n{\"r\":1}\n",
                "{\"r\":1}\n{\"name\":\"A\",\"o\":[\"x\",\"y\"]}\n",
                records(1, 1, 0, 0),
            ),
            (
                "{\"name\":\"A\",\"o\":[\"x\",\"y\"]}\n{\"r\":1}\n",
                "{\"name\":\"A\",\"o\":[\"y\"]}\n{\"r\":1}\n",
                records(1, 0, 1, 0),
            ),
            ("{\"a\":[1]}\n", "{\"a\":{\"0\":1}}\n", records(1, 0, 0, 1)),
            (
                "{\"a\":1}\n{\"b\":2}\n",
                "{\"b\":2}\n{\"a\":1}\n",
                records(0, 0, 0, 0),
            ),
            (
                "{\"a\":1}\n",
                "{\"a\":1}\n{\"b\":2}\n",
                ChangeKind::Appended,
            ),
        ];
        for (old, new, want) in rows {
            assert_eq!(
                content_change(old.as_bytes(), new.as_bytes()),
                want,
                "{old:?} → {new:?}"
            );
        }
    }

    /// One row per rewrite: the change the line rules give, in full and from the
    /// fingerprint.
    #[test]
    fn rewrites_judged_on_content() {
        let rows: [(&str, &str, ChangeKind); 9] = [
            ("a\n", "a\nb\n", ChangeKind::Appended),
            ("", "x", ChangeKind::Appended),
            ("a\nb\n", "b\na\n", ChangeKind::LinesKept),
            ("a", "b\na\n", ChangeKind::LinesKept),
            ("a\nb\n", "a\n", ChangeKind::Overwritten),
            ("a\na\n", "a\nb\n", ChangeKind::Overwritten),
            (
                "{\"n\":\"A\",\"o\":[\"x\"]}\n{\"r\":1}\n",
                "{\"r\":1}\n{\"n\":\"A\",\"o\":[\"x\",\"y\"]}\n",
                ChangeKind::LinesKept,
            ),
            (
                "{\"n\":\"A\",\"o\":[\"x\",\"y\"]}\n",
                "{\"n\":\"A\",\"o\":[\"y\"]}\n",
                ChangeKind::Overwritten,
            ),
            (
                "{\"a\":[1]}\n",
                "{\"a\":{\"0\":1}}\n",
                ChangeKind::Overwritten,
            ),
        ];
        for (old, new, want) in rows {
            assert_eq!(
                Fingerprint::bounded(old.as_bytes(), u64::MAX).change_to(new.as_bytes()),
                Some(want.clone()),
                "{old:?} → {new:?}"
            );
            assert_eq!(
                Fingerprint::of(old.as_bytes()).change_to(new.as_bytes()),
                Some(want)
            );
        }
        assert_eq!(Fingerprint::of(b"same").change_to(b"same"), None);
    }

    /// Past the bound only the prefix is told: an append stays additive, a reordering is
    /// an overwrite.
    #[test]
    fn past_the_bound_only_a_prefix_is_additive() {
        let f = Fingerprint::bounded(b"a\nb\n", 2);
        assert!(!f.has_lines());
        assert_eq!(f.change_to(b"a\nb\nc\n"), Some(ChangeKind::Appended));
        assert_eq!(f.change_to(b"b\na\n"), Some(ChangeKind::Overwritten));
    }
}
