//! What the follower reports: commits read at their log position, gaps where the log could
//! not be read, and the errors that stop it.

use std::path::PathBuf;

use thiserror::Error;

use crate::changes::Changes;

/// A position in the log as the follower numbers it: the WAL generations it saw (one more at
/// each restart of the WAL it followed), and in the generation its salt-1 and frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LogPosition {
    /// Restarts of the WAL seen since the follower started.
    pub generation: u32,
    /// Salt-1 of the WAL generation (0 before the WAL has a header).
    pub salt1: u32,
    /// The frame number (0: before the generation's first frame).
    pub frame: u32,
}

impl LogPosition {
    /// One number that grows with the log: the generation in the high 32 bits, the frame in
    /// the low (the proxy's ledger orders commits and calls by it).
    pub fn sequence(&self) -> u64 {
        (u64::from(self.generation) << 32) | u64::from(self.frame)
    }
}

/// Why a part of the log was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GapReason {
    /// The database was written while in rollback-journal mode, which leaves no log.
    RollbackWrite,
    /// The WAL restarted (checkpoint sequence `from` → `to`) over frames the follower had not
    /// read.
    Restart {
        /// The checkpoint sequence number of the generation followed.
        from: u32,
        /// The new one.
        to: u32,
    },
    /// The database was switched to WAL mode (or created in it) and written before the
    /// follower's first snapshot: `commits` commits already in the WAL.
    StartedLate {
        /// Commits found in the WAL.
        commits: usize,
    },
    /// The WAL's frame `frame` does not continue the checksum chain though the wal-index says
    /// it is committed: the WAL is corrupt, and nothing more of this generation is read.
    Corrupt {
        /// The first frame off the chain.
        frame: u32,
    },
    /// A commit could not be decoded (a corrupt or truncated page): it and the commits after
    /// it in the same read are not reported; the page map is read again.
    Decode(String),
}

impl std::fmt::Display for GapReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GapReason::RollbackWrite => write!(
                f,
                "the database was written in rollback-journal mode, which leaves no log to read: \
                 set PRAGMA journal_mode=WAL"
            ),
            GapReason::Restart { from, to } => write!(
                f,
                "the WAL was restarted (checkpoint sequence {from} -> {to}) over frames not read"
            ),
            GapReason::StartedLate { commits } => write!(
                f,
                "{commits} commit(s) were in the WAL before its first read (the database was \
                 switched to WAL mode and written in between)"
            ),
            GapReason::Corrupt { frame } => write!(
                f,
                "WAL frame {frame} does not continue the checksum chain though the WAL index says \
                 it is committed: the WAL is corrupt; nothing more is read until it restarts"
            ),
            GapReason::Decode(e) => write!(f, "a commit could not be decoded: {e}"),
        }
    }
}

/// A part of the log not read: the calls in flight have incomplete evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gap {
    /// Where reading went on after it.
    pub at: LogPosition,
    /// Why.
    pub reason: GapReason,
}

/// What one read of the log found, in log order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A commit and what it changed.
    Commit {
        /// Its commit frame's position.
        at: LogPosition,
        /// What it changed.
        changes: Changes,
    },
    /// A part of the log not read.
    Gap(Gap),
}

/// Why the follower cannot follow the database.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FollowError {
    /// The database's directory is on a network filesystem.
    #[error(
        "{path} is on a network filesystem ({fstype}): SQLite's WAL index is shared memory, \
         which only processes on one host and kernel share; run the proxy where the database's \
         disk is local"
    )]
    NetworkFilesystem {
        /// The directory.
        path: PathBuf,
        /// Its filesystem type, as /proc/self/mountinfo names it.
        fstype: String,
    },
    /// No write access to the database's directory.
    #[error(
        "no write access to {dir}: SQLite creates the database's -shm and -wal files there, and \
         the follower's connections need them"
    )]
    DirectoryNotWritable {
        /// The directory.
        dir: PathBuf,
    },
    /// A file could not be read.
    #[error("reading {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The database as the first snapshot shows it could not be decoded (a corrupt page, a
    /// header this reader does not know).
    #[error("reading {path} as its first snapshot shows it: {source}")]
    Decode {
        /// The database.
        path: PathBuf,
        /// The error.
        source: crate::error::DecodeError,
    },
    /// A snapshot connection failed.
    #[error("the snapshot connection to {path}: {source}")]
    Sqlite {
        /// The database.
        path: PathBuf,
        /// The error.
        source: rusqlite::Error,
    },
}

/// What the follower has read, for metrics and the cost figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Commits read.
    pub commits: u64,
    /// Gaps.
    pub gaps: u64,
    /// Bytes of the WAL read along the checksum chain: its header, each frame once (a
    /// transaction still open when read is read again).
    pub frame_bytes: u64,
    /// Bytes of pages read besides the frames: the pages before each commit (from earlier
    /// frames or the database file) and overflow pages; the first snapshot's whole read.
    pub page_bytes: u64,
    /// PASSIVE checkpoints run.
    pub checkpoints: u64,
    /// PASSIVE checkpoints that failed (the server's next checkpoint does the work).
    pub checkpoint_errors: u64,
}
