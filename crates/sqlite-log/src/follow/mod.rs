//! The follower: Litestream's loop beside a live writer, one read at a time.
//!
//! Between reads it holds a read transaction (a snapshot). SQLite's WAL then cannot be
//! restarted over frames the snapshot uses, and no checkpoint copies frames past the snapshot
//! into the database file, so the database file still shows every page as it was before the
//! first frame not read. Each [`Follower::read`]:
//!
//! 1. opens a read transaction on its second connection (the new snapshot) while the first
//!    still holds the old one: no window in which a checkpoint could pass unread frames;
//! 2. reads the WAL's new frames along the checksum chain, from the last commit read to the
//!    last commit frame on the chain, and decodes each commit against the pages before it (the
//!    latest earlier frame of this WAL generation, else the database file);
//! 3. closes the old snapshot, then runs a PASSIVE checkpoint on that idle connection (every
//!    [`CHECKPOINT_FRAMES`] frames read, and at the first read that finds nothing new): it
//!    copies what no reader needs any more and waits on nothing. Never FULL, RESTART or
//!    TRUNCATE.
//!
//! Readers never block SQLite's writers in WAL mode: the server's writes go on throughout.
//! What the snapshot does block is the server's own RESTART or TRUNCATE checkpoint: while the
//! follower holds a snapshot taken when the WAL held frames not yet checkpointed, that
//! checkpoint gets SQLITE_BUSY (`PRAGMA wal_checkpoint(TRUNCATE)` answers busy = 1) and the
//! WAL is left whole; its PASSIVE and FULL work stops at the snapshot's frame. When the
//! snapshot saw every frame checkpointed, a restart may happen, and loses nothing: the
//! follower had read every frame. So while the snapshot is held without a break, any new
//! generation is read from its first frame, whatever its salts (a connection that writes
//! after another's TRUNCATE draws new ones). After a break (a read that failed, a snapshot
//! lost), only a header with the checkpoint sequence number and salt-1 one higher is; any
//! other change is a restart not seen, a [`GapReason::Restart`].
//!
//! A database in rollback-journal mode (or not created yet) is watched without a connection
//! or a lock (its header read with plain file reads) until it is in WAL mode: a write seen
//! meanwhile (the header's change counter moved) is a [`GapReason::RollbackWrite`].
//!
//! The follower writes nothing but what a PASSIVE checkpoint copies; it never sets a journal
//! mode. Positions ([`LogPosition`]) are (salt-1, frame) of the WAL generation, read along
//! the checksum chain; the wal-index (`-shm`) is left to SQLite.

mod events;
mod files;
mod fs;
mod shm;
mod snapshot;

use std::fs::File;
use std::path::{Path, PathBuf};

use hashbrown::HashMap;

pub use events::{Event, FollowError, Gap, GapReason, LogPosition, Stats};

use crate::decoder::Decoder;
use crate::wal::{Chain, WalHeader};
use files::{db_header, open_kept, read_from, wal_path};
use snapshot::Snapshot;

/// Follows one SQLite database's WAL from another process.
pub struct Follower {
    path: PathBuf,
    wal: PathBuf,
    seed: u64,
    state: State,
    stats: Stats,
    checkpoint_frames: u32,
}

/// Frames read since the follower's last checkpoint before its next: SQLite's own automatic
/// checkpoint interval and Litestream's minimum.
pub const CHECKPOINT_FRAMES: u32 = 1000;

enum State {
    /// No database file yet, or one in rollback-journal mode: no connection, no lock.
    Waiting {
        /// The header's change counter last seen in rollback mode.
        counter: Option<u32>,
        /// Whether the database was ever seen absent or in rollback mode.
        waited: bool,
        /// The database file, once it exists (kept open: [`files::open_kept`]).
        db: Option<File>,
    },
    Following(Box<Live>),
}

/// The follower's connections and where it is in the log.
struct Live {
    // Declared first, dropped first: the connections close before the descriptors below.
    held: Snapshot,
    idle: Snapshot,
    /// The database file, kept open as long as the connections live.
    db: File,
    /// The `-shm` file, kept open likewise (read as a hint only).
    shm: Option<File>,
    /// The chain followed; `None` before the WAL has a header.
    chain: Option<Chain>,
    generation: u32,
    /// Page → the frame of its latest image in this generation, up to the last commit read.
    latest: HashMap<u32, u32>,
    decoder: Decoder,
    wal_path: PathBuf,
    /// A commit did not decode: open the decoder again at this database size once the read
    /// is done.
    pending_reopen: Option<u32>,
    /// The chain stopped short of a committed frame: nothing more is read in this generation.
    broken: bool,
    /// Where the last PASSIVE checkpoint ran (the position read when it did).
    checkpointed: LogPosition,
    /// The last read read the chain to its end (it failed on no file).
    read_whole: bool,
}

impl std::fmt::Debug for Follower {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follower")
            .field("path", &self.path)
            .field("position", &self.position())
            .field("stats", &self.stats)
            .finish()
    }
}

impl Follower {
    /// A follower of the database at `path`, hashing values with `seed`. It opens nothing yet:
    /// the first [`read`](Follower::read) takes the first snapshot, or waits for the file and
    /// for WAL mode.
    ///
    /// # Errors
    /// The database's directory is on a network filesystem or not writable
    /// ([`FollowError::NetworkFilesystem`], [`FollowError::DirectoryNotWritable`]), or cannot
    /// be resolved ([`FollowError::Io`]).
    pub fn new(path: impl AsRef<Path>, seed: u64) -> Result<Follower, FollowError> {
        let path = path.as_ref().to_path_buf();
        fs::check_directory(&path)?;
        Ok(Follower {
            wal: wal_path(&path),
            path,
            seed,
            state: State::Waiting {
                counter: None,
                waited: false,
                db: None,
            },
            stats: Stats::default(),
            checkpoint_frames: CHECKPOINT_FRAMES,
        })
    }

    /// Runs its PASSIVE checkpoint after a read once `frames` frames were read since its last
    /// ([`CHECKPOINT_FRAMES`] by default; 0: after every read that found new frames), and at
    /// the first read that finds nothing new after one that did. Each checkpoint copies pages into the database file and syncs it; the server's own automatic
    /// checkpoints go on meanwhile, up to the follower's snapshot.
    pub fn with_checkpoint_frames(mut self, frames: u32) -> Follower {
        self.checkpoint_frames = frames;
        self
    }

    /// The position of the last commit read; `None` while waiting for the database or for
    /// WAL mode.
    pub fn position(&self) -> Option<LogPosition> {
        match &self.state {
            State::Waiting { .. } => None,
            State::Following(live) => Some(live.position()),
        }
    }

    /// The end of the log as the wal-index shows it now: the last committed frame, in the
    /// generation followed (or the next one, when the WAL restarted since the last read). One
    /// 136-byte read, no lock, no statement: a call's start and end positions for the ledger
    /// (a commit at or before it is in the WAL; [`read`](Follower::read) decodes it). `None`
    /// while waiting, or when the wal-index does not read (its two header copies differ
    /// while it is written: read it again).
    pub fn log_end(&self) -> Option<LogPosition> {
        let State::Following(live) = &self.state else {
            return None;
        };
        let hint = shm::hint(live.shm.as_ref())?;
        // Other salts: the WAL restarted once since the last read (at most once: see
        // catch_up.rs), which counts it as one generation more, seen or not.
        let generation = match live.chain.map(|c| *c.header()) {
            None => live.generation,
            Some(h) if shm::of(&hint, &h) => live.generation,
            Some(_) => live.generation + 1,
        };
        let salt1 =
            u32::from_be_bytes([hint.salts[0], hint.salts[1], hint.salts[2], hint.salts[3]]);
        Some(LogPosition {
            generation,
            salt1,
            frame: hint.max_frame,
        })
    }

    /// Whether the follower holds a snapshot (the database is in WAL mode and followed).
    pub fn following(&self) -> bool {
        matches!(self.state, State::Following(_))
    }

    /// What it has read so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Reads the log: the commits since the last read and the gaps, in log order. Cheap when
    /// nothing was written: two statements and two small file reads.
    ///
    /// # Errors
    /// A file that cannot be read, a snapshot connection that fails. The follower can be read
    /// again after one; its snapshot is kept where it was.
    pub fn read(&mut self) -> Result<Vec<Event>, FollowError> {
        let mut events = Vec::new();
        if let State::Waiting { .. } = self.state {
            if let Some(live) = self.wait(&mut events)? {
                self.state = State::Following(Box::new(live));
            }
            return Ok(self.count(events));
        }
        let State::Following(live) = &mut self.state else {
            return Ok(events);
        };
        let sqlite = |source| FollowError::Sqlite {
            path: self.path.clone(),
            source,
        };
        if let Err(e) = live.idle.begin() {
            return match e.sqlite_error_code() {
                // Another connection is recovering the WAL index: read next time.
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
                    Ok(events)
                }
                _ => Err(sqlite(e)),
            };
        }
        let held = live.held.is_open() && live.read_whole;
        let caught = live.catch_up(
            (&self.path, &self.wal),
            self.seed,
            held,
            &mut self.stats,
            &mut events,
        );
        live.read_whole = caught.is_ok();
        // The new snapshot is held: the old one goes, whatever the read found.
        live.held.end().map_err(sqlite)?;
        std::mem::swap(&mut live.held, &mut live.idle);
        if let Err(e) = caught {
            // Commits already read stay read; the error is the gap after them.
            if events.is_empty() {
                return Err(e);
            }
            let at = live.position();
            events.push(Event::Gap(Gap {
                at,
                reason: GapReason::Decode(e.to_string()),
            }));
        }
        let at = live.position();
        // Also once the log goes quiet (a read that found nothing): else a server writing
        // steadily never finds every frame copied while the snapshot reads the database file
        // only, which it needs to restart the WAL, and the WAL grows without bound.
        let due = at.generation != live.checkpointed.generation
            || at.frame.saturating_sub(live.checkpointed.frame) >= self.checkpoint_frames
            || events.is_empty();
        if due && at != live.checkpointed {
            match live.idle.checkpoint_passive() {
                Ok(_) => self.stats.checkpoints += 1,
                Err(_) => self.stats.checkpoint_errors += 1,
            }
            live.checkpointed = at;
        }
        Ok(self.count(events))
    }

    fn count(&mut self, events: Vec<Event>) -> Vec<Event> {
        for e in &events {
            match e {
                Event::Commit { .. } => self.stats.commits += 1,
                Event::Gap(_) => self.stats.gaps += 1,
            }
        }
        events
    }

    /// Waiting: the database's header, read without a lock. In WAL mode, the first snapshot.
    fn wait(&mut self, events: &mut Vec<Event>) -> Result<Option<Live>, FollowError> {
        let State::Waiting {
            counter,
            waited,
            db,
        } = &mut self.state
        else {
            return Ok(None);
        };
        let io = |source| FollowError::Io {
            path: self.path.clone(),
            source,
        };
        if db.is_none() {
            *db = open_kept(&self.path).map_err(io)?;
        }
        let Some(file) = db.as_ref() else {
            *waited = true;
            return Ok(None);
        };
        let header = db_header(file).map_err(io)?;
        let in_wal = match header {
            Some(h) => h[18] == 2 && h[19] == 2,
            // A database created in WAL mode may have its first pages in the WAL only.
            None => wal_has_header(&self.wal, &mut self.stats)?,
        };
        if !in_wal {
            let now = header.map(|h| u32::from_be_bytes([h[24], h[25], h[26], h[27]]));
            if counter.is_some() && now != *counter {
                let at = LogPosition {
                    generation: 0,
                    salt1: 0,
                    frame: 0,
                };
                events.push(Event::Gap(Gap {
                    at,
                    reason: GapReason::RollbackWrite,
                }));
            }
            *counter = now;
            *waited = true;
            return Ok(None);
        }
        let (waited, db) = (*waited, db.take());
        let Some(db) = db else { return Ok(None) };
        Live::start(
            &self.path,
            &self.wal,
            db,
            self.seed,
            waited,
            &mut self.stats,
            events,
        )
        .map(Some)
    }
}

/// Whether the WAL beside the database has a header.
fn wal_has_header(wal: &Path, stats: &mut Stats) -> Result<bool, FollowError> {
    let head = read_from(wal, 0, crate::wal::WAL_HEADER_SIZE, &mut stats.frame_bytes).map_err(
        |source| FollowError::Io {
            path: wal.to_path_buf(),
            source,
        },
    )?;
    Ok(WalHeader::parse(&head).is_ok())
}

mod catch_up;
mod live;

#[cfg(test)]
mod tests;
