//! What changed between two snapshots of the watched trees, path by path, judged on content.

use std::collections::{BTreeMap, HashMap};

use super::tree::{Entry, Kind, TreeSnapshot, Trees};

/// How one path of a watched tree changed, judged on content
/// ([design: file effects](../../../docs/design.md#file-effects)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChangeKind {
    /// It did not exist (a file, a directory or a link): an insert.
    Created,
    /// A file's new content starts with its old content (or the old one was empty):
    /// additive.
    Appended,
    /// A file was rewritten and every old line is still there, as often, or extended as a
    /// JSON value (a JSONL store written whole to add a record or an item): additive.
    LinesKept,
    /// A file lost old content, or a link points elsewhere: destructive.
    Overwritten,
    /// Only its permission bits changed: destructive (the old mode is gone), as an update
    /// of a row is.
    ModeChanged,
    /// A path became another kind (a file made a directory): destructive.
    Replaced,
    /// It was removed: destructive.
    Deleted,
    /// A file moved away from it, to this path (shown as findings name paths): destructive.
    RenamedTo(String),
}

impl ChangeKind {
    /// `created`, `appended`, `lines_kept`, `overwritten`, `mode_changed`, `replaced`,
    /// `deleted` or `renamed`, as reports name the change.
    pub fn as_str(&self) -> &'static str {
        match self {
            ChangeKind::Created => "created",
            ChangeKind::Appended => "appended",
            ChangeKind::LinesKept => "lines_kept",
            ChangeKind::Overwritten => "overwritten",
            ChangeKind::ModeChanged => "mode_changed",
            ChangeKind::Replaced => "replaced",
            ChangeKind::Deleted => "deleted",
            ChangeKind::RenamedTo(_) => "renamed",
        }
    }

    /// Whether the change loses something that was there (deletes or overwrites).
    pub fn is_destructive(&self) -> bool {
        !matches!(
            self,
            ChangeKind::Created | ChangeKind::Appended | ChangeKind::LinesKept
        )
    }
}

/// One path of a watched tree that a call changed (`hintaudit verify --watch`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// The path as findings show it: relative to its root (prefixed with the root's label
    /// when several are watched).
    pub path: String,
    /// How it changed.
    pub kind: ChangeKind,
}

/// Every change between two snapshots, bookkeeping apart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FileDiff {
    /// Changes outside `ignored_paths`, by root and path.
    pub changes: Vec<FileChange>,
    /// Paths under `ignored_paths` that changed: bookkeeping, no effect.
    pub bookkeeping: usize,
}

/// What changed from `before` to `after` under `trees` (whose store holds both sides'
/// contents). A file that left one path while a file of the same content appeared at
/// another is a rename; a path rewritten with the same content (a write through a
/// temporary file and a rename) is no change.
pub(crate) fn diff(trees: &Trees, before: &TreeSnapshot, after: &TreeSnapshot) -> FileDiff {
    let mut out = FileDiff::default();
    let empty = BTreeMap::new();
    let n = before.roots.len().max(after.roots.len());
    for root in 0..n {
        let b = before.roots.get(root).unwrap_or(&empty);
        let a = after.roots.get(root).unwrap_or(&empty);
        diff_root(trees, root, b, a, &mut out);
    }
    out
}

fn diff_root(
    trees: &Trees,
    root: usize,
    before: &BTreeMap<String, Entry>,
    after: &BTreeMap<String, Entry>,
    out: &mut FileDiff,
) {
    let mut changed: Vec<(&str, ChangeKind)> = Vec::new();
    let mut created_files: HashMap<u128, Vec<&str>> = HashMap::new();
    for (path, new) in after {
        if !before.contains_key(path)
            && let Kind::File { hash, .. } = new.kind
        {
            created_files.entry(hash).or_default().push(path);
        }
    }
    let mut renamed_to: Vec<&str> = Vec::new();
    for (path, old) in before {
        let kind = match after.get(path) {
            Some(new) => match change(trees, old, new) {
                Some(k) => k,
                None => continue,
            },
            None => match old.kind {
                Kind::File { hash, .. } => match created_files.get_mut(&hash).and_then(Vec::pop) {
                    Some(to) if !trees.is_ignored(to) => {
                        renamed_to.push(to);
                        ChangeKind::RenamedTo(trees.shown(root, to))
                    }
                    _ => ChangeKind::Deleted,
                },
                _ => ChangeKind::Deleted,
            },
        };
        changed.push((path, kind));
    }
    for path in after.keys() {
        if !before.contains_key(path) && !renamed_to.contains(&path.as_str()) {
            changed.push((path, ChangeKind::Created));
        }
    }
    changed.sort_by(|x, y| x.0.cmp(y.0));
    for (path, kind) in changed {
        if trees.is_ignored(path) {
            out.bookkeeping += 1;
        } else {
            out.changes.push(FileChange {
                path: trees.shown(root, path),
                kind,
            });
        }
    }
}

/// How a path present in both snapshots changed, if it did.
fn change(trees: &Trees, old: &Entry, new: &Entry) -> Option<ChangeKind> {
    let content = match (old.kind, new.kind) {
        (Kind::Dir, Kind::Dir) => None,
        (Kind::File { hash: h1, .. }, Kind::File { hash: h2, .. }) if h1 == h2 => None,
        (Kind::File { hash: h1, .. }, Kind::File { hash: h2, .. }) => {
            Some(match (trees.content(h1), trees.content(h2)) {
                (Ok(o), Ok(n)) => content_change(&o, &n),
                // A store that cannot be read again: the cautious reading.
                _ => ChangeKind::Overwritten,
            })
        }
        (Kind::Symlink { hash: h1 }, Kind::Symlink { hash: h2 }) if h1 == h2 => None,
        (Kind::Symlink { .. }, Kind::Symlink { .. }) => Some(ChangeKind::Overwritten),
        _ => Some(ChangeKind::Replaced),
    };
    match content {
        Some(k) if k.is_destructive() => Some(k),
        _ if old.mode != new.mode => Some(ChangeKind::ModeChanged),
        k => k,
    }
}

/// How a file's content changed from `old` to `new` (which differ): appended when `new`
/// starts with `old`; lines kept when every line of `old` is in `new` at least as often, or
/// is a JSON value that a line of `new` extends (a JSONL record given another key or array
/// item: the memory server's `add_observations`); else overwritten.
pub(crate) fn content_change(old: &[u8], new: &[u8]) -> ChangeKind {
    if new.starts_with(old) {
        return ChangeKind::Appended;
    }
    let mut lines: HashMap<&[u8], usize> = HashMap::new();
    for l in new.split(|b| *b == b'\n') {
        *lines.entry(l).or_default() += 1;
    }
    // A last line without its newline may have gained one: `a` then `a\nb\n` kept `a`.
    let mut lost: Vec<&[u8]> = Vec::new();
    for l in old.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        match lines.get_mut(l) {
            Some(n) if *n > 0 => *n -= 1,
            _ => lost.push(l),
        }
    }
    let mut spare: Vec<&[u8]> = lines
        .iter()
        .filter(|(l, n)| **n > 0 && !l.is_empty())
        .map(|(l, _)| *l)
        .collect();
    spare.sort();
    for l in lost {
        match spare.iter().position(|n| json_extends(l, n)) {
            Some(i) => {
                spare.remove(i);
            }
            None => return ChangeKind::Overwritten,
        }
    }
    ChangeKind::LinesKept
}

/// Whether line `new` is a JSON value that keeps everything line `old` holds.
fn json_extends(old: &[u8], new: &[u8]) -> bool {
    match (
        serde_json::from_slice::<serde_json::Value>(old),
        serde_json::from_slice::<serde_json::Value>(new),
    ) {
        (Ok(o), Ok(n)) => extends(&o, &n),
        _ => false,
    }
}

/// Whether `new` keeps all of `old`: every key of an object with a value that keeps the old
/// one, every item of an array at the same place (items added after it), a scalar equal.
fn extends(old: &serde_json::Value, new: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => o
            .iter()
            .all(|(k, v)| n.get(k).is_some_and(|w| extends(v, w))),
        (Value::Array(o), Value::Array(n)) => {
            o.len() <= n.len() && o.iter().zip(n).all(|(v, w)| extends(v, w))
        }
        _ => old == new,
    }
}
