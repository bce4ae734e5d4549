//! What changed between two snapshots of the watched trees, path by path, judged on content
//! by hintaudit-core's rules (`hintaudit_core::files`, which the proxy's live watch uses too).

use std::collections::{BTreeMap, BTreeSet};

pub use hintaudit_core::files::{ChangeKind, FileChange};
use hintaudit_core::files::{Node, content_change, diff_paths};

use super::repos::RepoSides;
use super::tree::{Entry, TreeSnapshot, Trees};

/// Every change between two snapshots, bookkeeping apart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FileDiff {
    /// Changes outside `ignored_paths`, by root and path.
    pub changes: Vec<FileChange>,
    /// Paths under `ignored_paths` that changed: bookkeeping, no effect.
    pub bookkeeping: usize,
}

/// What changed from `before` to `after` under `trees` (whose store holds both sides'
/// contents), every path by the file rules. A file that left one path while a file of the
/// same content appeared at another is a rename; a path rewritten with the same content (a
/// write through a temporary file and a rename) is no change.
pub(crate) fn diff(trees: &Trees, before: &TreeSnapshot, after: &TreeSnapshot) -> FileDiff {
    diff_folded(trees, before, after, None)
}

/// As [`diff`], with the git repositories of `repos` (their facts read before the call,
/// `after` the state after it) judged by meaning in place of their paths.
pub(crate) fn diff_folded(
    trees: &Trees,
    before: &TreeSnapshot,
    after: &TreeSnapshot,
    repos: Option<&RepoSides>,
) -> FileDiff {
    let mut out = FileDiff::default();
    let empty = BTreeMap::new();
    let n = before.roots.len().max(after.roots.len());
    for root in 0..n {
        let b = before.roots.get(root).unwrap_or(&empty);
        let a = after.roots.get(root).unwrap_or(&empty);
        let paths: BTreeSet<&str> = b.keys().chain(a.keys()).map(String::as_str).collect();
        let node = |e: &Entry| Node {
            kind: e.kind,
            mode: e.mode,
        };
        let d = diff_paths(
            paths
                .into_iter()
                .map(|p| (p, b.get(p).map(node), a.get(p).map(node))),
            |_, h1, h2| match (trees.content(h1), trees.content(h2)) {
                (Ok(o), Ok(n)) => content_change(&o, &n),
                // A store that cannot be read again: the cautious reading.
                _ => ChangeKind::Overwritten,
            },
            |p| trees.is_ignored(p),
        );
        let d = match repos {
            Some(repos) => repos.fold(root, d, trees, b),
            None => d,
        };
        out.bookkeeping += d.bookkeeping;
        out.changes
            .extend(d.changes.into_iter().map(|(path, kind)| FileChange {
                path: trees.shown(root, &path),
                kind: match kind {
                    ChangeKind::RenamedTo(to) => ChangeKind::RenamedTo(trees.shown(root, &to)),
                    k => k,
                },
            }));
    }
    out
}
