//! SQLite database files inside a watched tree: found by their header, and a copy of one
//! with its `-wal` and `-shm` that is put back whole.
//!
//! A database in WAL mode is three files: the database, its write-ahead log (`-wal`, with
//! committed pages not yet checkpointed into the database) and the log's index (`-shm`).
//! A copy taken of the database alone loses the log's commits; one put back under an open
//! connection corrupts it (the connection's page cache and the `-shm` index no longer
//! match the files). So [`SqliteCopy`] copies the three together, and puts them back
//! (removing those that did not exist, and a rollback `-journal`) only while no process has
//! the database open: the caller stops the server first.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use hintaudit_core::files::{SQLITE_HEADER, is_sqlite};

use crate::error::StateError;

/// The companion files a copy keeps with its database.
const KEPT: [&str; 2] = ["-wal", "-shm"];

/// The SQLite database files under `root` (itself not included), recognised by their
/// first 16 bytes (`SQLite format 3\0`), in path order; git directories and symbolic links
/// are not followed, unreadable files skipped.
pub fn find_sqlite_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut walk = walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter();
    while let Some(entry) = walk.next() {
        let Ok(entry) = entry else { continue };
        if entry.file_type().is_dir() && crate::git::is_git_dir(entry.path()) {
            walk.skip_current_dir();
            continue;
        }
        if entry.file_type().is_file() && starts_like_sqlite(entry.path()) {
            out.push(entry.into_path());
        }
    }
    out
}

fn starts_like_sqlite(path: &Path) -> bool {
    let mut head = [0u8; SQLITE_HEADER.len()];
    fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| is_sqlite(&head))
}

/// A database file copied with its `-wal` and `-shm` at one moment, to be put back whole.
#[derive(Debug)]
pub struct SqliteCopy {
    database: PathBuf,
    store: tempfile::TempDir,
    /// Which of [`KEPT`] existed (and were copied).
    had: [bool; 2],
}

impl SqliteCopy {
    /// Copies `database` and those of its `-wal` and `-shm` that exist. Take it while no
    /// write is in flight (a checkpoint between two copies would pair a log with a database
    /// it does not belong to): before the server starts, or between calls. Errors: a file
    /// that cannot be read, no temporary directory.
    pub fn save(database: &Path) -> Result<SqliteCopy, StateError> {
        let store = tempfile::Builder::new()
            .prefix("hintaudit-sqlite-")
            .tempdir()
            .map_err(|e| StateError::io("making a temporary directory", database, e))?;
        let copy = |from: &Path, to: &str| {
            fs::copy(from, store.path().join(to)).map_err(|e| StateError::io("copying", from, e))
        };
        copy(database, "db")?;
        let mut had = [false; 2];
        for (i, suffix) in KEPT.iter().enumerate() {
            let companion = companion(database, suffix);
            match companion.symlink_metadata() {
                Ok(_) => {
                    copy(&companion, suffix)?;
                    had[i] = true;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(StateError::io("reading", &companion, e)),
            }
        }
        Ok(SqliteCopy {
            database: database.to_path_buf(),
            store,
            had,
        })
    }

    /// The database this copy is of.
    pub fn database(&self) -> &Path {
        &self.database
    }

    /// Puts the database back as it was copied: the database, `-wal` and `-shm` written
    /// back (each through a temporary file and a rename), those that did not exist removed,
    /// and a `-journal` removed. Only with no connection open on the database (the server
    /// stopped): under an open connection this corrupts it. Errors: a file that cannot be
    /// written or removed.
    pub fn restore(&self) -> Result<(), StateError> {
        self.put("db", &self.database)?;
        for (i, suffix) in KEPT.iter().enumerate() {
            let target = companion(&self.database, suffix);
            match self.had[i] {
                true => self.put(suffix, &target)?,
                false => remove(&target)?,
            }
        }
        remove(&companion(&self.database, "-journal"))
    }

    fn put(&self, stored: &str, target: &Path) -> Result<(), StateError> {
        let tmp = companion(target, ".hintaudit-restore");
        fs::copy(self.store.path().join(stored), &tmp)
            .and_then(|_| fs::rename(&tmp, target))
            .map_err(|e| StateError::io("writing back", target, e))
    }
}

fn companion(database: &Path, suffix: &str) -> PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn remove(path: &Path) -> Result<(), StateError> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(StateError::io("removing", path, e))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
