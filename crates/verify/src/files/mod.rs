//! Files as state: the directory trees `--watch` names, snapshotted before and after each
//! call and judged on content, as the database's rows are
//! ([design: file effects](../../../docs/design.md#file-effects)).
//!
//! - [`Trees`]: the watched roots and the `ignored_paths` globs; [`Trees::take`] walks every
//!   root (walkdir, no symbolic link followed) into a [`TreeSnapshot`]: per path relative to
//!   its root, its kind, size, mode, and a 128-bit xxh3 hash of its content (a symbolic
//!   link's target text). A file is read again only when its size, mtime, ctime or inode
//!   moved, or when its mtime was too close to the snapshot that read it (racily clean, as
//!   git says: a write in the same clock tick would leave every stat field as it was).
//! - Every content a snapshot reads is kept once in a content store (a private temporary
//!   directory, by hash): the old side of a diff, and what [`Trees::restore`] puts back.
//! - [`diff`] classifies each path's change ([`ChangeKind`]); a call's changes go into its
//!   `Effect::files` (source `FileSource::Snapshot`), which hintaudit-core's judge judges as
//!   it does the proxy's live watch (`read_only_write`, `undeclared_destructive`,
//!   `idempotency_broken`), confirmed, naming paths relative to the root and never content.
//! - Kinds of state inside the trees: git repositories judged by meaning in place of their
//!   paths ([`repos`]), SQLite files by row, their paths then bookkeeping ([`sqlite_rows`]).

mod arguments;
mod diff;
mod repos;
mod restore;
mod sqlite_rows;
mod tree;
mod watch;

#[cfg(test)]
mod tests;

pub(crate) use arguments::{PathField, PathRole, PathValues, path_field};
pub use diff::{ChangeKind, FileChange};
pub(crate) use watch::FileWatch;
