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
//! - [`file_evidence`]: the evidence text of a call's changes, paths only, never content.

mod fingerprint;
mod ignored;

pub use fingerprint::{Fingerprint, LINES_MAX_BYTES, content_change};
pub use ignored::IgnoredPaths;

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

/// How many paths of one kind an evidence text names before `+N more`.
const SHOWN: usize = 5;

/// The evidence text of file changes seen by `source` (`snapshot` for verify, `watched`
/// for the proxy): `files (snapshot): created a.txt; appended to log.txt`. Paths only,
/// never content; at most 5 per kind of change, then `(+N more)`.
pub fn file_evidence(source: &str, changes: &[FileChange]) -> String {
    let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
    for c in changes {
        let (verb, shown) = match &c.kind {
            ChangeKind::Created => ("created", c.path.clone()),
            ChangeKind::Appended => ("appended to", c.path.clone()),
            ChangeKind::LinesKept => ("rewrote, every old line kept,", c.path.clone()),
            ChangeKind::Overwritten => ("overwrote (old content lost)", c.path.clone()),
            ChangeKind::ModeChanged => ("changed the mode of", c.path.clone()),
            ChangeKind::Replaced => ("replaced (another kind of file)", c.path.clone()),
            ChangeKind::Deleted => ("deleted", c.path.clone()),
            ChangeKind::RenamedTo(to) => ("renamed", format!("{} to {to}", c.path)),
        };
        match groups.iter_mut().find(|(v, _)| *v == verb) {
            Some((_, paths)) => paths.push(shown),
            None => groups.push((verb, vec![shown])),
        }
    }
    let parts: Vec<String> = groups
        .into_iter()
        .map(|(verb, paths)| {
            let more = paths.len().saturating_sub(SHOWN);
            let mut text = format!("{verb} {}", paths[..paths.len().min(SHOWN)].join(", "));
            if more > 0 {
                text.push_str(&format!(" (+{more} more)"));
            }
            text
        })
        .collect();
    format!("files ({source}): {}", parts.join("; "))
}
