//! SQLite database files inside the watched trees, judged by row
//! ([design: kinds of state](../../../docs/design.md#kinds-of-state-inside-watched-trees)):
//! each file found by its header (hintaudit-state's `find_sqlite_files`) is snapshotted
//! before and after each call through a read-only connection of its own, by the same
//! snapshots verify takes for `--database sqlite:`; its row changes join the call's
//! database changes, and the file's own path and its `-wal`, `-shm` and `-journal`
//! companions become bookkeeping instead of byte changes.
//!
//! A file that cannot be opened or read on either side keeps the file rules (the cautious
//! reading, never an error of the run); so does one under `ignored_paths` (bookkeeping) and
//! one a call created.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use hintaudit_core::Policy;
use hintaudit_core::files::{relative, sqlite_companion};

use super::diff::FileDiff;
use super::tree::Trees;
use crate::db::{Database, Snapshotter};
use crate::snapshot::{Diff, Snapshot, TableDiff};

/// One database file: how findings name it, its snapshots, the one before the call.
struct RowsFile {
    shown: String,
    snaps: Snapshotter,
    before: Option<Arc<Snapshot>>,
}

/// The SQLite files of the watched trees, by canonical path, each with a read-only
/// connection kept from call to call.
#[derive(Default)]
pub(crate) struct SqliteRows {
    files: BTreeMap<PathBuf, RowsFile>,
    /// `--database`'s own file, judged by its snapshots; how findings name it once found
    /// in a tree.
    skipped: Option<(PathBuf, Option<String>)>,
}

impl std::fmt::Debug for SqliteRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.files.keys()).finish()
    }
}

impl SqliteRows {
    /// Before a call: finds the SQLite files under the roots of `trees` (not under
    /// `ignored_paths`), opens those not open yet (read-only), and snapshots each.
    pub async fn before_call(&mut self, trees: &Trees, policy: &Policy) {
        for (i, root) in trees.roots().iter().enumerate() {
            for path in hintaudit_state::find_sqlite_files(root) {
                let rel = relative(root, &path);
                if let Some((db, shown)) = &mut self.skipped
                    && *db == path
                {
                    *shown = Some(trees.shown(i, &rel));
                    continue;
                }
                if self.files.contains_key(&path) || trees.is_ignored(&rel) {
                    continue;
                }
                let url = format!("sqlite://{}?mode=ro", path.display());
                if let Ok(db) = Database::connect(&url).await {
                    let file = RowsFile {
                        shown: trees.shown(i, &rel),
                        snaps: Snapshotter::new(db, policy.clone()),
                        before: None,
                    };
                    self.files.insert(path, file);
                }
            }
        }
        for file in self.files.values_mut() {
            file.before = file.snaps.take().await.ok();
        }
    }

    /// After a call: each file's row changes since [`SqliteRows::before_call`], and, in
    /// `files`, the file's path and its companions moved from changes to bookkeeping. A file
    /// not read on both sides is left to the file rules.
    pub async fn after_call(&mut self, files: &mut FileDiff) -> Vec<TableDiff> {
        let mut rows = Vec::new();
        for file in self.files.values_mut() {
            let Some(before) = file.before.take() else {
                continue;
            };
            let Ok(after) = file.snaps.take().await else {
                continue;
            };
            rows.extend(Diff::between(&before, &after).tables);
            to_bookkeeping(files, &file.shown);
        }
        if let Some((_, Some(shown))) = &self.skipped {
            to_bookkeeping(files, shown);
        }
        rows
    }

    /// Leaves `database` (canonical) to `--database`, which judges its rows: here its paths
    /// are bookkeeping.
    pub fn skip(&mut self, database: PathBuf) {
        self.files.remove(&database);
        self.skipped = Some((database, None));
    }

    /// Forgets every file's last snapshot: the tree was put back under the connections,
    /// which the change marker may not see.
    pub fn invalidate(&mut self) {
        self.files.values_mut().for_each(|f| f.snaps.invalidate());
    }
}

/// Moves the changes of database file `shown` and of its companions to bookkeeping.
fn to_bookkeeping(files: &mut FileDiff, shown: &str) {
    let own = |p: &str| p == shown || sqlite_companion(p) == Some(shown);
    let n = files.changes.len();
    files.changes.retain(|c| !own(&c.path));
    files.bookkeeping += n - files.changes.len();
}

#[cfg(test)]
mod tests {
    use hintaudit_core::Policy;
    use sqlx::Connection;

    use super::super::watch::FileWatch;

    /// An insert into a SQLite file of the tree is one row added to its table, and the
    /// file's byte changes (itself, its journal) are bookkeeping; a delete is a row removed.
    #[tokio::test]
    async fn a_sqlite_file_in_the_tree_is_judged_by_row() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/notes.db?mode=rwc", dir.path().display());
        let mut server = sqlx::SqliteConnection::connect(&url).await.unwrap();
        let schema = "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); \
                      INSERT INTO notes VALUES (1, 'a')";
        sqlx::raw_sql(schema).execute(&mut server).await.unwrap();
        let mut watch =
            FileWatch::start(&[dir.path().to_path_buf()], &[], &Policy::default()).unwrap();
        for (q, added, removed) in [
            ("INSERT INTO notes VALUES (2, 'b')", 1, 0),
            ("DELETE FROM notes WHERE id = 1", 0, 1),
        ] {
            watch.before_call().await.unwrap();
            sqlx::raw_sql(q).execute(&mut server).await.unwrap();
            let (files, rows) = watch.after_call().await.unwrap();
            assert_eq!(files.changes, [], "{q}");
            assert!(files.bookkeeping >= 1, "{q}: {files:?}");
            assert_eq!(rows.len(), 1, "{q}: {rows:?}");
            assert_eq!(
                (rows[0].table.as_str(), rows[0].added, rows[0].removed),
                ("notes", added, removed)
            );
        }
        let db = std::fs::canonicalize(dir.path().join("notes.db")).unwrap();
        let mut watch =
            FileWatch::start(&[dir.path().to_path_buf()], &[], &Policy::default()).unwrap();
        watch.skip_database(db);
        watch.before_call().await.unwrap();
        sqlx::raw_sql("INSERT INTO notes VALUES (3, 'c')")
            .execute(&mut server)
            .await
            .unwrap();
        let (files, rows) = watch.after_call().await.unwrap();
        assert_eq!(
            (files.changes, rows.len()),
            (vec![], 0),
            "--database's own file"
        );
        assert!(files.bookkeeping >= 1);
    }
}
