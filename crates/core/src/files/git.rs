//! git repositories inside watched trees, judged by what they mean: history kept is no
//! loss ([design: kinds of state](../../../../docs/design.md#kinds-of-state-inside-watched-trees)).
//!
//! The judgement works on facts a reader gathers (hintaudit-state reads them with gix):
//! each side's refs, HEAD and index entries as object ids ([`RepoFacts`]), and a
//! [`RepoOracle`] that answers questions about the repository after the call (is this
//! commit reachable from a ref, is this blob in history). [`judge_repository`] compares two
//! sides; [`git_path`] says how a path inside a git directory is judged; and
//! [`fold_repository`] puts a repository's judgement in place of its paths' file changes.
//!
//! - New objects and new refs are inserts.
//! - A ref move is destructive only when its old commit becomes unreachable from every ref
//!   and HEAD; a fast-forward, or a move that leaves the old commit reachable elsewhere, is
//!   additive. A ref deleted is destructive (the name is gone), whatever its commits.
//! - HEAD switched to another branch is an update, not a loss; a detached HEAD moved away
//!   from commits nothing else reaches loses them.
//! - An index entry replaced or removed, or a working-tree file overwritten or deleted, is
//!   not a loss when its old content is kept: a blob reachable from a ref or HEAD, in the
//!   index after the call, or equal to the working-tree file. A dangling blob does not
//!   count (`git gc` prunes it).
//! - Repository bookkeeping is no effect: reflogs, `ORIG_HEAD`, `FETCH_HEAD`,
//!   `COMMIT_EDITMSG`, lock files, in-progress operation state, packing refs
//!   (`packed-refs`) or objects (loose to packed).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::{ChangeKind, PathsDiff};

/// A git object id: 20 bytes (SHA-1) or 32 (SHA-256), as the repository names objects.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId {
    len: u8,
    bytes: [u8; 32],
}

impl ObjectId {
    /// The id of these bytes; `None` unless 20 or 32 long.
    pub fn from_bytes(id: &[u8]) -> Option<ObjectId> {
        if id.len() != 20 && id.len() != 32 {
            return None;
        }
        let mut bytes = [0u8; 32];
        bytes[..id.len()].copy_from_slice(id);
        Some(ObjectId {
            len: id.len() as u8,
            bytes,
        })
    }

    /// The raw bytes (20 or 32).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl fmt::Display for ObjectId {
    /// Lower-case hex, as git prints ids.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_bytes()
            .iter()
            .try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectId({self})")
    }
}

/// Where HEAD points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    /// At a branch, by its full name (`refs/heads/main`), which may not exist yet (unborn).
    Branch(String),
    /// At a commit directly.
    Detached(ObjectId),
}

/// One index entry: the blob staged for a path, and its mode (`0o100644`, `0o100755`,
/// `0o120000`, `0o160000`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntry {
    /// The staged blob (a commit for a submodule).
    pub id: ObjectId,
    /// The entry's mode.
    pub mode: u32,
}

/// A repository's state as the judgement needs it, read at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepoFacts {
    /// Where HEAD points; `None` when it could not be read.
    pub head: Option<Head>,
    /// Every ref but HEAD, loose or packed alike, by full name (`refs/heads/main`,
    /// `refs/tags/v1`, `refs/stash`), with the object it names (an annotated tag's tag
    /// object, not peeled).
    pub refs: BTreeMap<String, ObjectId>,
    /// The index entries by path (relative to the work tree, `/`-separated) and stage
    /// (0, or 1 to 3 during a conflict).
    pub index: BTreeMap<(String, u8), IndexEntry>,
    /// Every object id in the object store (loose and packed), sorted. About 33 bytes an
    /// object.
    pub objects: Vec<ObjectId>,
}

/// Questions about the repository after the call, answered by the reader.
pub trait RepoOracle {
    /// Whether commit `id` is reachable from a ref or HEAD (its ancestors included).
    fn reachable(&self, id: &ObjectId) -> bool;
    /// Whether `old` is `new` or one of its ancestors: a fast-forward from `old` to `new`.
    fn is_ancestor(&self, old: &ObjectId, new: &ObjectId) -> bool;
    /// Whether blob `id` is in the tree of a commit reachable from a ref or HEAD.
    fn blob_in_history(&self, id: &ObjectId) -> bool;
    /// The blob id of the working-tree file at `path` (relative to the work tree), `None`
    /// when there is none (a bare repository, a path that is not a file).
    fn worktree_blob(&self, path: &str) -> Option<ObjectId>;
}

/// How a ref changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefChange {
    /// It did not exist: an insert.
    Created,
    /// It was deleted: destructive. `lost`: its commit is reachable from no ref or HEAD now.
    Deleted {
        /// Whether its commit is reachable from nothing now.
        lost: bool,
    },
    /// It moved to a descendant of its old commit: additive.
    FastForward,
    /// It moved elsewhere. `lost`: its old commit is reachable from no ref or HEAD now
    /// (destructive); else additive.
    Moved {
        /// Whether its old commit is reachable from nothing now.
        lost: bool,
    },
}

/// How HEAD changed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HeadChange {
    /// Switched to another branch (full name), or detached (`None`), leaving nothing
    /// unreachable: an update.
    Switched(Option<String>),
    /// A detached HEAD moved (or switched) away from a commit nothing else reaches:
    /// destructive.
    Lost,
}

/// How a repository's index changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct IndexChange {
    /// Entries added: inserts.
    pub added: u32,
    /// Entries replaced (another blob or mode) or removed whose old content is kept.
    pub kept: u32,
    /// Paths of entries replaced or removed whose old content is kept nowhere:
    /// destructive.
    pub lost: Vec<String>,
}

/// How one repository changed: its refs, HEAD, index and object store.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct RepoChange {
    /// Refs that changed, by full name, in name order.
    pub refs: Vec<(String, RefChange)>,
    /// How HEAD changed, if it did.
    pub head: Option<HeadChange>,
    /// How the index changed.
    pub index: IndexChange,
    /// Objects in the store after the call that were not before: inserts.
    pub objects_added: u32,
}

impl RepoChange {
    /// Whether nothing changed that counts (bookkeeping, packing).
    pub fn is_empty(&self) -> bool {
        *self == RepoChange::default()
    }

    /// Whether something was lost: a ref deleted, a commit or staged content left
    /// unreachable.
    pub fn is_destructive(&self) -> bool {
        self.refs.iter().any(|(_, c)| {
            matches!(
                c,
                RefChange::Deleted { .. } | RefChange::Moved { lost: true }
            )
        }) || self.head == Some(HeadChange::Lost)
            || !self.index.lost.is_empty()
    }

    /// The change as evidence says it: `branch feature created, branch main moved
    /// forward, HEAD switched to feature, 1 index entry added, 3 objects written`. Ref names
    /// are shown (as paths are); contents and ids never.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .refs
            .iter()
            .map(|(name, c)| format!("{} {}", shown_ref(name), ref_verb(c)))
            .collect();
        match &self.head {
            Some(HeadChange::Switched(Some(to))) => {
                parts.push(format!("HEAD switched to {}", short_ref(to)));
            }
            Some(HeadChange::Switched(None)) => parts.push("HEAD detached".to_owned()),
            Some(HeadChange::Lost) => {
                parts.push("HEAD moved off commits nothing else reaches".to_owned());
            }
            None => {}
        }
        let i = &self.index;
        if i.added > 0 {
            parts.push(format!(
                "{} added",
                plural(i.added, "index entry", "index entries")
            ));
        }
        if i.kept > 0 {
            let entries = plural(i.kept, "index entry", "index entries");
            parts.push(format!("{entries} replaced or removed, old content kept"));
        }
        if !i.lost.is_empty() {
            parts.push(format!(
                "staged content lost for {}",
                super::at_most(&i.lost, " ")
            ));
        }
        if self.objects_added > 0 {
            parts.push(plural(self.objects_added, "object", "objects") + " written");
        }
        parts.join(", ")
    }
}

fn plural(n: u32, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn ref_verb(c: &RefChange) -> &'static str {
    match c {
        RefChange::Created => "created",
        RefChange::Deleted { lost: false } => "deleted (its commits kept by other refs)",
        RefChange::Deleted { lost: true } => "deleted (commits left unreachable)",
        RefChange::FastForward => "moved forward",
        RefChange::Moved { lost: false } => "moved (its old commit kept by other refs)",
        RefChange::Moved { lost: true } => "moved (commits left unreachable)",
    }
}

/// `branch main`, `tag v1`, `remote-tracking branch origin/main`, else the full name.
fn shown_ref(name: &str) -> String {
    for (prefix, what) in [
        ("refs/heads/", "branch"),
        ("refs/tags/", "tag"),
        ("refs/remotes/", "remote-tracking branch"),
    ] {
        if let Some(short) = name.strip_prefix(prefix) {
            return format!("{what} {short}");
        }
    }
    name.to_owned()
}

fn short_ref(name: &str) -> &str {
    name.strip_prefix("refs/heads/").unwrap_or(name)
}

/// How a repository changed from `old` to `new`, `after` answering for the state after.
pub fn judge_repository(old: &RepoFacts, new: &RepoFacts, after: &dyn RepoOracle) -> RepoChange {
    RepoChange {
        refs: refs_change(old, new, after),
        head: head_change(old, new, after),
        index: index_change(old, new, after),
        objects_added: objects_added(&old.objects, &new.objects),
    }
}

fn refs_change(
    old: &RepoFacts,
    new: &RepoFacts,
    after: &dyn RepoOracle,
) -> Vec<(String, RefChange)> {
    let names: BTreeSet<&String> = old.refs.keys().chain(new.refs.keys()).collect();
    names
        .into_iter()
        .filter_map(|name| {
            let change = match (old.refs.get(name), new.refs.get(name)) {
                (None, Some(_)) => RefChange::Created,
                (Some(o), None) => RefChange::Deleted {
                    lost: !after.reachable(o),
                },
                (Some(o), Some(n)) if o == n => return None,
                (Some(o), Some(n)) if after.is_ancestor(o, n) => RefChange::FastForward,
                (Some(o), Some(_)) => RefChange::Moved {
                    lost: !after.reachable(o),
                },
                (None, None) => return None,
            };
            Some((name.clone(), change))
        })
        .collect()
}

fn head_change(old: &RepoFacts, new: &RepoFacts, after: &dyn RepoOracle) -> Option<HeadChange> {
    let (Some(o), Some(n)) = (&old.head, &new.head) else {
        return None;
    };
    if o == n {
        return None;
    }
    if let Head::Detached(id) = o
        && !after.reachable(id)
    {
        return Some(HeadChange::Lost);
    }
    Some(HeadChange::Switched(match n {
        Head::Branch(b) => Some(b.clone()),
        Head::Detached(_) => None,
    }))
}

fn index_change(old: &RepoFacts, new: &RepoFacts, after: &dyn RepoOracle) -> IndexChange {
    let added = new.index.keys().filter(|k| !old.index.contains_key(*k));
    let mut change = IndexChange {
        added: count(added.count()),
        ..Default::default()
    };
    let staged: BTreeSet<ObjectId> = new.index.values().map(|e| e.id).collect();
    for ((path, stage), o) in &old.index {
        if new.index.get(&(path.clone(), *stage)) == Some(o) {
            continue;
        }
        match kept(&o.id, path, |id| staged.contains(id), after) {
            true => change.kept += 1,
            false => change.lost.push(path.clone()),
        }
    }
    change
}

/// How many of `new`'s ids `old` lacks (both sorted).
fn objects_added(old: &[ObjectId], new: &[ObjectId]) -> u32 {
    count(
        new.iter()
            .filter(|id| old.binary_search(id).is_err())
            .count(),
    )
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Whether the old content `id` of a working-tree file at `path` is kept after the call: a
/// blob in history, in the index, or the file itself (`after` answers).
pub fn content_kept(id: &ObjectId, path: &str, new: &RepoFacts, after: &dyn RepoOracle) -> bool {
    kept(
        id,
        path,
        |id| new.index.values().any(|e| e.id == *id),
        after,
    )
}

/// Whether content `id`, once at `path`, is kept: staged (`staged`), the working-tree file,
/// or a blob in history; the cheap questions first.
fn kept(
    id: &ObjectId,
    path: &str,
    staged: impl Fn(&ObjectId) -> bool,
    after: &dyn RepoOracle,
) -> bool {
    staged(id) || after.worktree_blob(path) == Some(*id) || after.blob_in_history(id)
}

/// How a path inside a git directory (relative to it, `/`-separated) is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitPath {
    /// Refs, HEAD, the index or the object store: judged by [`judge_repository`].
    Repository,
    /// Bookkeeping: no effect.
    Bookkeeping,
    /// Configuration, hooks, `info/`, `description`: judged by the file rules.
    File,
}

/// How `path` (relative to a git directory) is judged: `HEAD`, `refs/**`, `packed-refs`,
/// `index` and `objects/**` by the repository's judgement; reflogs (`logs/**`),
/// `ORIG_HEAD`, `FETCH_HEAD`, `COMMIT_EDITMSG`, lock files (`*.lock`), in-progress
/// operation state (`MERGE_*`, `AUTO_MERGE`, `CHERRY_PICK_HEAD`, `REVERT_HEAD`,
/// `REBASE_HEAD`, `BISECT_*`, `rebase-merge/`, `rebase-apply/`, `sequencer/`) and `gc.*` as
/// bookkeeping; anything else by the file rules.
pub fn git_path(path: &str) -> GitPath {
    let first = path.split('/').next().unwrap_or(path);
    if path.ends_with(".lock") {
        return GitPath::Bookkeeping;
    }
    match first {
        "HEAD" | "refs" | "packed-refs" | "index" | "objects" => GitPath::Repository,
        "logs" | "ORIG_HEAD" | "FETCH_HEAD" | "COMMIT_EDITMSG" | "AUTO_MERGE"
        | "CHERRY_PICK_HEAD" | "REVERT_HEAD" | "REBASE_HEAD" | "rebase-merge" | "rebase-apply"
        | "sequencer" | "gc.pid" | "gc.log" => GitPath::Bookkeeping,
        f if f.starts_with("MERGE_") || f.starts_with("BISECT_") => GitPath::Bookkeeping,
        _ => GitPath::File,
    }
}

/// The file changes of one watched root with a repository's judgement in place of its
/// paths: `git_dir` is the repository's git directory relative to the root (`.git`,
/// `proj/.git`, or a bare repository's own path), `work_tree` its work tree (`""`, `proj`;
/// `None` for a bare repository), `change` the repository's judgement. Paths the
/// repository judges are replaced by one change of `git_dir` (none when `change` is
/// empty); bookkeeping paths are counted as bookkeeping; a destructive change of a
/// work-tree file whose old content is kept (`kept(path relative to the work tree)`)
/// becomes [`ChangeKind::ContentKept`].
pub fn fold_repository(
    diff: PathsDiff,
    git_dir: &str,
    work_tree: Option<&str>,
    change: RepoChange,
    kept: impl Fn(&str) -> bool,
) -> PathsDiff {
    let mut out = PathsDiff {
        changes: Vec::new(),
        bookkeeping: diff.bookkeeping,
    };
    for (path, kind) in diff.changes {
        if let Some(inner) = under(&path, git_dir) {
            match git_path(inner) {
                GitPath::Repository => continue,
                GitPath::Bookkeeping => out.bookkeeping += 1,
                GitPath::File => out.changes.push((path, kind)),
            }
            continue;
        }
        let in_tree = work_tree.and_then(|w| under(&path, w));
        match in_tree {
            Some(rel) if kind.is_destructive() && kept(rel) => {
                out.changes
                    .push((path, ChangeKind::ContentKept(Box::new(kind))));
            }
            _ => out.changes.push((path, kind)),
        }
    }
    if !change.is_empty() {
        out.changes
            .push((git_dir.to_owned(), ChangeKind::Repository(Box::new(change))));
        out.changes.sort_by(|a, b| a.0.cmp(&b.0));
    }
    out
}

/// `path` relative to `dir` (both relative to one root; `""` is the root), when under it.
fn under<'p>(path: &'p str, dir: &str) -> Option<&'p str> {
    if dir.is_empty() {
        return Some(path);
    }
    match path.strip_prefix(dir)? {
        "" => Some(""),
        rest => rest.strip_prefix('/'),
    }
}

#[cfg(test)]
mod tests;
