//! The follower's two connections to the database (rusqlite, on the libsqlite3-sys sqlx
//! links): one holds a read transaction (the snapshot) between reads, the other opens the next
//! one before the first closes, and runs the PASSIVE checkpoint once it is idle.
//!
//! Neither connection writes: no statement but `BEGIN`, a `SELECT` from `sqlite_schema`,
//! `COMMIT` of the read transaction, and `PRAGMA wal_checkpoint(PASSIVE)`. The last connection
//! to close a WAL database normally checkpoints and deletes the WAL; these are told not to
//! (`SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`).

use std::path::Path;
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

/// How long a statement waits on a lock before SQLITE_BUSY: opening a read transaction waits
/// only while another connection rebuilds the WAL index (recovery).
const BUSY_TIMEOUT: Duration = Duration::from_millis(200);

/// One connection of the follower.
pub(crate) struct Snapshot {
    conn: Connection,
    open: bool,
}

impl Snapshot {
    /// A connection to `path`, read-write (a checkpoint writes the database file), never
    /// creating it.
    pub(crate) fn connect(path: &Path) -> rusqlite::Result<Snapshot> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(path, flags)?;
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        Ok(Snapshot { conn, open: false })
    }

    /// Opens a read transaction: from here on no checkpoint copies frames past its snapshot
    /// into the database file, and the WAL is not restarted over them.
    pub(crate) fn begin(&mut self) -> rusqlite::Result<()> {
        self.end()?;
        self.conn.execute_batch("BEGIN DEFERRED")?;
        self.open = true;
        // A deferred transaction takes its snapshot at its first read.
        let read: rusqlite::Result<Option<i64>> = self
            .conn
            .query_row("SELECT 1 FROM sqlite_schema LIMIT 1", [], |r| r.get(0))
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(e),
            });
        if let Err(e) = read {
            let _ = self.end();
            return Err(e);
        }
        Ok(())
    }

    /// Whether it holds a read transaction.
    pub(crate) fn is_open(&self) -> bool {
        self.open
    }

    /// Closes its read transaction, if open.
    pub(crate) fn end(&mut self) -> rusqlite::Result<()> {
        if self.open {
            self.open = false;
            self.conn.execute_batch("COMMIT")?;
        }
        Ok(())
    }

    /// A PASSIVE checkpoint: copies into the database file the frames no reader still needs,
    /// without waiting on any lock; never FULL, RESTART or TRUNCATE. Returns (frames in the
    /// WAL, frames checkpointed), or `None` when the WAL is busy.
    pub(crate) fn checkpoint_passive(&mut self) -> rusqlite::Result<Option<(i64, i64)>> {
        self.end()?;
        self.conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                let busy: i64 = r.get(0)?;
                Ok((busy == 0).then_some((r.get(1)?, r.get(2)?)))
            })
    }
}
