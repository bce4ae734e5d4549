//! The watched trees over one verification run: the pristine snapshot taken before the
//! first call, the last one, and what each call changed.

use std::path::PathBuf;

use super::arguments::{PathField, PathValues, path_values};
use super::diff::{FileDiff, diff, diff_folded};
use super::repos::RepoSides;
use super::sqlite_rows::SqliteRows;
use super::tree::{TreeSnapshot, Trees};
use crate::error::VerifyError;
use crate::snapshot::TableDiff;

/// The watched trees of a run (`--watch`).
#[derive(Debug)]
pub(crate) struct FileWatch {
    trees: Trees,
    pristine: TreeSnapshot,
    last: TreeSnapshot,
    /// The git repositories' facts read by [`FileWatch::before_call`].
    repos: RepoSides,
    /// The SQLite files, judged by row.
    rows: SqliteRows,
    policy: hintaudit_core::Policy,
}

impl FileWatch {
    /// Starts watching `roots` (directories) with `ignored` globs: the pristine snapshot,
    /// which [`FileWatch::restore`] puts back. Errors: a root that is not a readable
    /// directory, a bad glob.
    /// `policy` says which tables of a SQLite file in the trees are watched.
    pub fn start(
        roots: &[PathBuf],
        ignored: &[String],
        policy: &hintaudit_core::Policy,
    ) -> Result<FileWatch, VerifyError> {
        let mut trees = Trees::new(roots, ignored).map_err(VerifyError::Files)?;
        let pristine = trees.take(None).map_err(files_error)?;
        Ok(FileWatch {
            trees,
            last: pristine.clone(),
            pristine,
            repos: RepoSides::default(),
            rows: SqliteRows::default(),
            policy: policy.clone(),
        })
    }

    /// Leaves the SQLite file `database` (canonical) to `--database`'s snapshots: it is not
    /// judged by row here too, and its paths (with its companions) are bookkeeping.
    pub fn skip_database(&mut self, database: PathBuf) {
        self.rows.skip(database);
    }

    /// The watched roots, canonical, in `--watch` order.
    pub fn roots(&self) -> &[PathBuf] {
        self.trees.roots()
    }

    /// Snapshots the trees before a call (what changed since the last snapshot, between
    /// calls, is no call's doing), reads the facts of the git repositories in them and
    /// snapshots the rows of their SQLite files.
    pub async fn before_call(&mut self) -> Result<(), VerifyError> {
        self.last = self.trees.take(Some(&self.last)).map_err(files_error)?;
        self.repos = RepoSides::before(&self.trees);
        self.rows.before_call(&self.trees, &self.policy).await;
        Ok(())
    }

    /// Snapshots the trees after a call: what the call changed since
    /// [`FileWatch::before_call`], each git repository found then judged by meaning in place
    /// of its paths (see [`super::repos`]), and each SQLite file's row changes, its paths
    /// then bookkeeping (see [`super::sqlite_rows`]).
    pub async fn after_call(&mut self) -> Result<(FileDiff, Vec<TableDiff>), VerifyError> {
        let now = self.trees.take(Some(&self.last)).map_err(files_error)?;
        let repos = std::mem::take(&mut self.repos);
        let mut d = diff_folded(&self.trees, &self.last, &now, Some(&repos));
        self.last = now;
        let rows = self.rows.after_call(&mut d).await;
        Ok((d, rows))
    }

    /// Whether the trees differ from the pristine snapshot, bookkeeping included.
    pub fn changed_since_start(&self) -> bool {
        let d = diff(&self.trees, &self.pristine, &self.last);
        !d.changes.is_empty() || d.bookkeeping > 0
    }

    /// Puts the trees back as they were before the first call; returns how many paths it
    /// removed or wrote.
    pub fn restore(&mut self) -> Result<usize, VerifyError> {
        let n = self.trees.restore(&self.pristine).map_err(files_error)?;
        self.rows.invalidate();
        self.last = self.trees.take(Some(&self.pristine)).map_err(files_error)?;
        Ok(n)
    }

    /// The sets of values to try for a tool's path-like fields (see
    /// [`super::arguments`]), with where each came from.
    pub fn path_values(&self, tool: &str, fields: &[PathField]) -> Vec<PathValues> {
        path_values(&self.trees, &self.last, tool, fields)
    }
}

fn files_error(e: std::io::Error) -> VerifyError {
    VerifyError::Files(e.to_string())
}
