//! File effects: how a path of a watched directory changed, judged on content, the same way
//! for `hintaudit verify --watch` (snapshots before and after each call) and for
//! `hintaudit proxy --watch` (inotify, live)
//! ([design: file effects](../../../../docs/design.md#file-effects)).
//!
//! A file system is not a database (no `db.system.name`): file changes are an evidence kind
//! of their own, [`Effect::files`](crate::Effect::files), read by the facts' file step.
//!
//! - [`diff_paths`]: each path's change from its old [`Node`] to its new one, with renames
//!   (a file gone from one path while the same content appeared at another) and bookkeeping
//!   (paths under `ignored_paths`, [`IgnoredPaths`]).
//! - [`Fingerprint`]: what is kept of a file's old content to judge a rewrite (size, hash,
//!   per-line hashes up to [`LINES_MAX_BYTES`]); [`content_change`] judges two contents.
//! - [`Records`]: a JSON or JSONL document's records; [`content_change`] judges a rewrite of
//!   one by what records and items it added, removed or replaced ([`RecordsChange`]).
//! - [`judge_repository`]: a git repository's refs, HEAD, index and objects judged together
//!   (history kept is no loss), over facts and an oracle a reader provides;
//!   [`fold_repository`] puts that judgement in place of the repository's paths.
//! - [`is_sqlite`], [`sqlite_companion`]: SQLite files recognised by their header, their
//!   `-wal`, `-shm` and `-journal` files as bookkeeping.
//! - [`file_evidence`]: the evidence text of a call's changes, paths and counts only, never
//!   content.

mod fingerprint;
mod git;
mod ignored;
mod records;
mod sqlite;

pub use fingerprint::{Fingerprint, LINES_MAX_BYTES, content_change};
pub use git::{
    GitPath, Head, HeadChange, IndexChange, IndexEntry, ObjectId, RefChange, RepoChange, RepoFacts,
    RepoOracle, content_kept, fold_repository, git_path, judge_repository,
};
pub use ignored::IgnoredPaths;
pub use records::{IDENTIFYING_FIELDS, Records, RecordsChange};
pub use sqlite::{SQLITE_HEADER, is_sqlite, sqlite_companion};

/// How one path of a watched tree changed, judged on content.
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
    /// A JSON or JSONL document rewritten, judged by its records ([`Records`]): additive
    /// when records and items were only added, destructive when one was removed or a value
    /// replaced. With no record changed (a reformatting, a reordering) it is no change:
    /// [`diff_paths`] leaves it out.
    Records(RecordsChange),
    /// A git repository's refs, HEAD, index and object store, judged together
    /// ([`judge_repository`]) in place of their paths: destructive only when history or
    /// staged content was lost.
    Repository(Box<RepoChange>),
    /// A work-tree file's destructive change (`Overwritten`, `Deleted`…) whose old content
    /// its git repository keeps (in history, the index, or the file itself): an update,
    /// not a loss ([`fold_repository`]).
    ContentKept(Box<ChangeKind>),
}

impl ChangeKind {
    /// `created`, `appended`, `lines_kept`, `overwritten`, `mode_changed`, `replaced`,
    /// `deleted`, `renamed`, `records`, `repository` or `content_kept`, as reports name
    /// the change.
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
            ChangeKind::Records(_) => "records",
            ChangeKind::Repository(_) => "repository",
            ChangeKind::ContentKept(_) => "content_kept",
        }
    }

    /// Whether the change loses something that was there (deletes or overwrites).
    pub fn is_destructive(&self) -> bool {
        match self {
            ChangeKind::Created | ChangeKind::Appended | ChangeKind::LinesKept => false,
            ChangeKind::ContentKept(_) => false,
            ChangeKind::Records(c) => c.is_destructive(),
            ChangeKind::Repository(c) => c.is_destructive(),
            _ => true,
        }
    }

    /// Whether it is no change at all: a document whose records are all as they were, a
    /// repository whose refs, HEAD, index and objects are.
    pub fn is_none(&self) -> bool {
        match self {
            ChangeKind::Records(c) => c.is_empty(),
            ChangeKind::Repository(c) => c.is_empty(),
            _ => false,
        }
    }
}

/// One path of a watched tree that a call changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// The path as findings show it: relative to its root (prefixed with the root's label
    /// when several are watched).
    pub path: String,
    /// How it changed.
    pub kind: ChangeKind,
}

/// What a path is, with what a change is judged on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// A regular file: its size in bytes and the xxh3-128 hash of its content.
    File {
        /// Bytes.
        size: u64,
        /// xxh3-128 of the content.
        hash: u128,
    },
    /// A directory.
    Dir,
    /// A symbolic link (never followed): the xxh3-128 hash of its target's text.
    Symlink {
        /// xxh3-128 of the target's text.
        hash: u128,
    },
}

/// A path's kind and permission bits (`st_mode & 0o7777`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Node {
    /// What it is.
    pub kind: NodeKind,
    /// Its permission bits.
    pub mode: u32,
}

/// Every change of a set of paths, bookkeeping apart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathsDiff {
    /// Changes outside `ignored_paths`, by path (relative to the root; a rename names the
    /// path it went to, relative too), in path order.
    pub changes: Vec<(String, ChangeKind)>,
    /// Paths under `ignored_paths` that changed: bookkeeping, no effect.
    pub bookkeeping: usize,
}

/// How the paths of one root changed: `paths` gives each path (relative to its root) with
/// what it was before (`None`: absent) and what it is now. `content(path, old, new)` judges
/// a file whose hash moved from `old` to `new` (see [`content_change`]); `ignored` says
/// whether a path is bookkeeping. A file that left one path while a file of the same
/// content appeared at another (not ignored) is a rename; a file rewritten with the same
/// content, or a directory left a directory, is no change.
pub fn diff_paths<'p>(
    paths: impl IntoIterator<Item = (&'p str, Option<Node>, Option<Node>)>,
    mut content: impl FnMut(&str, u128, u128) -> ChangeKind,
    ignored: impl Fn(&str) -> bool,
) -> PathsDiff {
    let paths: Vec<(&str, Option<Node>, Option<Node>)> = paths.into_iter().collect();
    let mut created_files: std::collections::HashMap<u128, Vec<&str>> = Default::default();
    for (path, old, new) in &paths {
        if let (
            None,
            Some(Node {
                kind: NodeKind::File { hash, .. },
                ..
            }),
        ) = (old, new)
        {
            created_files.entry(*hash).or_default().push(path);
        }
    }
    let mut changed: Vec<(&str, ChangeKind)> = Vec::new();
    let mut renamed_to: Vec<&str> = Vec::new();
    for (path, old, new) in &paths {
        let kind = match (old, new) {
            (Some(o), Some(n)) => match change(path, o, n, &mut content) {
                Some(k) => k,
                None => continue,
            },
            (Some(o), None) => match o.kind {
                NodeKind::File { hash, .. } => {
                    match created_files.get_mut(&hash).and_then(Vec::pop) {
                        Some(to) if !ignored(to) => {
                            renamed_to.push(to);
                            ChangeKind::RenamedTo(to.to_owned())
                        }
                        _ => ChangeKind::Deleted,
                    }
                }
                _ => ChangeKind::Deleted,
            },
            (None, Some(_)) => continue,
            (None, None) => continue,
        };
        changed.push((path, kind));
    }
    for (path, old, new) in &paths {
        if old.is_none() && new.is_some() && !renamed_to.contains(path) {
            changed.push((path, ChangeKind::Created));
        }
    }
    changed.sort_by(|x, y| x.0.cmp(y.0));
    let mut out = PathsDiff::default();
    for (path, kind) in changed {
        if ignored(path) {
            out.bookkeeping += 1;
        } else {
            out.changes.push((path.to_owned(), kind));
        }
    }
    out
}

/// How a path present before and after changed, if it did.
fn change(
    path: &str,
    old: &Node,
    new: &Node,
    content: &mut impl FnMut(&str, u128, u128) -> ChangeKind,
) -> Option<ChangeKind> {
    let changed = match (old.kind, new.kind) {
        (NodeKind::Dir, NodeKind::Dir) => None,
        (NodeKind::File { hash: h1, .. }, NodeKind::File { hash: h2, .. }) if h1 == h2 => None,
        (NodeKind::File { hash: h1, .. }, NodeKind::File { hash: h2, .. }) => {
            Some(content(path, h1, h2))
        }
        (NodeKind::Symlink { hash: h1 }, NodeKind::Symlink { hash: h2 }) if h1 == h2 => None,
        (NodeKind::Symlink { .. }, NodeKind::Symlink { .. }) => Some(ChangeKind::Overwritten),
        _ => Some(ChangeKind::Replaced),
    };
    match changed {
        Some(k) if k.is_none() && old.mode == new.mode => None,
        Some(k) if k.is_none() => Some(ChangeKind::ModeChanged),
        Some(k) if k.is_destructive() => Some(k),
        _ if old.mode != new.mode => Some(ChangeKind::ModeChanged),
        k => k,
    }
}

/// `path` relative to `root`, `/`-separated (empty for the root itself), as findings name
/// watched paths.
pub fn relative(root: &std::path::Path, path: &std::path::Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}

/// Each watched root's label in findings when several are watched: its last component
/// (`notes`), or its 1-based index (`2`) when two roots share one.
pub fn root_labels(roots: &[std::path::PathBuf]) -> Vec<String> {
    let names: Vec<String> = roots
        .iter()
        .map(|r| {
            r.file_name()
                .map_or_else(|| "/".to_owned(), |n| n.to_string_lossy().into_owned())
        })
        .collect();
    names
        .iter()
        .enumerate()
        .map(|(i, n)| match names.iter().filter(|m| *m == n).count() {
            1 => n.clone(),
            _ => format!("{}", i + 1),
        })
        .collect()
}

/// How findings name `path` of root `root` given the roots' `labels`: the path alone with
/// one root; prefixed with the root's label (`notes/a.txt`) with several.
pub fn shown(labels: &[String], root: usize, path: &str) -> String {
    match labels.len() {
        1 => path.to_owned(),
        _ => format!("{}/{path}", labels[root]),
    }
}

/// Who saw a call's file changes ([`Effect::files_source`](crate::Effect::files_source)):
/// the words of their evidence, `files (watched): …` or `files (snapshot): …`, and how strong
/// it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileSource {
    /// `hintaudit proxy --watch`'s live watch (inotify): the file system names no writer,
    /// so a change is the call's by the calls in flight when it was seen: likely.
    #[default]
    Watched,
    /// `hintaudit verify --watch`'s snapshots before and after each call, which runs alone
    /// (no other call in flight, the tree put back between cases): confirmed.
    Snapshot,
}

impl FileSource {
    /// `watched` or `snapshot`: the evidence's words.
    pub fn as_str(self) -> &'static str {
        match self {
            FileSource::Watched => "watched",
            FileSource::Snapshot => "snapshot",
        }
    }

    /// How strong a file change seen by this source is: likely from the live watch,
    /// confirmed from snapshots around a call that ran alone.
    pub fn confidence(self) -> crate::finding::Confidence {
        match self {
            FileSource::Watched => crate::finding::Confidence::Likely,
            FileSource::Snapshot => crate::finding::Confidence::Confirmed,
        }
    }
}

/// How many paths of one kind an evidence text names before `+N more`.
const SHOWN: usize = 5;

/// The evidence text of file changes seen by `source` (`snapshot` for verify, `watched`
/// for the proxy): `files (snapshot): created a.txt; appended to log.txt; memory.jsonl: 1
/// record added, 1 removed`. Paths and counts only, never content (nor a record's key); at
/// most 5 per kind of change (and 5 documents), then `(+N more)`.
pub fn file_evidence(source: &str, changes: &[FileChange]) -> String {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    let mut documents: Vec<String> = Vec::new();
    for c in changes {
        let described = match &c.kind {
            ChangeKind::Records(r) => Some(r.describe()),
            ChangeKind::Repository(r) => Some(format!("git {}", r.describe())),
            _ => None,
        };
        if let Some(text) = described {
            documents.push(format!("{}: {text}", c.path));
            continue;
        }
        let (verb, shown) = verb(&c.kind, &c.path);
        match groups.iter_mut().find(|(v, _)| *v == verb) {
            Some((_, paths)) => paths.push(shown),
            None => groups.push((verb, vec![shown])),
        }
    }
    let mut parts: Vec<String> = groups
        .into_iter()
        .map(|(verb, paths)| format!("{verb} {}", at_most(&paths, ", ")))
        .collect();
    if !documents.is_empty() {
        parts.push(at_most(&documents, "; "));
    }
    format!("files ({source}): {}", parts.join("; "))
}

/// How evidence says a change of `path` that is not a document's or a repository's: the
/// verb, and the path (with where it went for a rename).
fn verb(kind: &ChangeKind, path: &str) -> (String, String) {
    let (verb, shown) = match kind {
        ChangeKind::Created => ("created", path.to_owned()),
        ChangeKind::Appended => ("appended to", path.to_owned()),
        ChangeKind::LinesKept => ("rewrote, every old line kept,", path.to_owned()),
        ChangeKind::Overwritten => ("overwrote (old content lost)", path.to_owned()),
        ChangeKind::ModeChanged => ("changed the mode of", path.to_owned()),
        ChangeKind::Replaced => ("replaced (another kind of file)", path.to_owned()),
        ChangeKind::Deleted => ("deleted", path.to_owned()),
        ChangeKind::RenamedTo(to) => ("renamed", format!("{path} to {to}")),
        ChangeKind::ContentKept(inner) => {
            let (verb, shown) = verb(inner, path);
            let verb = verb.replace(" (old content lost)", "");
            return (format!("{verb} (old content kept by git)"), shown);
        }
        ChangeKind::Records(r) => return ("changed".into(), format!("{path}: {}", r.describe())),
        ChangeKind::Repository(r) => {
            return ("changed".into(), format!("{path}: git {}", r.describe()));
        }
    };
    (verb.to_owned(), shown)
}

/// The first [`SHOWN`] of `items` joined by `sep`, then `(+N more)`.
fn at_most(items: &[String], sep: &str) -> String {
    let more = items.len().saturating_sub(SHOWN);
    let mut text = items[..items.len().min(SHOWN)].join(sep);
    if more > 0 {
        text.push_str(&format!(" (+{more} more)"));
    }
    text
}

#[cfg(test)]
mod tests;
