//! SQLite: the database's write-ahead log, read from the proxy's process as Litestream reads
//! it (hintaudit-sqlite-log's [`Follower`]: a read snapshot held between reads, the new
//! frames read along the checksum chain after each commit, PASSIVE checkpoints only).
//!
//! Positions are the follower's: `(generation + 1) << 32 | frame` in WAL mode (convert.rs);
//! while the database is not in WAL mode yet (the `--stdio` child may create it or switch it
//! when it connects), the header's change counter, below every WAL position, so that a
//! write in rollback-journal mode is a gap over the calls in flight. A call's end is the
//! last committed frame the wal-index shows (`Follower::log_end`: one 136-byte read, no lock,
//! no statement); the commits up to it are decoded by the next read.
//!
//! The follower is synchronous (rusqlite, positioned file reads): each read runs on a
//! blocking thread, and the end position waits for a read in progress (at most as long as
//! the read takes). Readers never block SQLite's writers in WAL mode. SQLite names no writer,
//! so every commit is settled by position among the calls in flight.

mod convert;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hintaudit_core::DatabaseKind;
use hintaudit_sqlite_log::{Event, FollowError, Follower, Gap, LogPosition};
use tokio::sync::Mutex;

use crate::capture::feed::Feed;
use crate::capture::source::{LogError, LogSource, Opened};
use crate::capture::trouble::Retry;
use crate::capture::{CaptureError, Commit, Lsn};
use convert::{Converter, change_counter, lsn, rollback_lsn};

/// Tries of the wal-index header (two copies compared) before its end position counts as
/// unreadable: a copy being written reads torn for microseconds.
const HINT_TRIES: usize = 8;

/// SQLite's WAL beside the database file, followed in the proxy's process.
#[derive(Debug)]
pub(crate) struct WalLog {
    path: PathBuf,
    follower: Arc<Mutex<Follower>>,
}

impl LogSource for WalLog {
    const KIND: DatabaseKind = DatabaseKind::Sqlite;
    type Reader = Reader;

    /// Refuses a network filesystem or a directory the proxy cannot write, then takes the
    /// first snapshot (or starts waiting for the file and for WAL mode).
    async fn open(path: &str) -> Result<Opened<WalLog>, CaptureError> {
        open(PathBuf::from(path)).await
    }

    /// The last committed frame the wal-index shows (WAL mode), or the database header's
    /// change counter (before it): every commit that returned to its client before this was
    /// asked is at or before it.
    async fn end(&self) -> Result<Lsn, LogError> {
        let follower = self.follower.lock().await;
        if !follower.following() {
            return rollback_position(&self.path).map_err(|source| LogError::Sqlite {
                what: "reading the database header's change counter",
                source: FollowError::Io {
                    path: self.path.clone(),
                    source,
                },
            });
        }
        for _ in 0..HINT_TRIES {
            if let Some(end) = follower.log_end() {
                return Ok(lsn(end));
            }
            std::hint::spin_loop();
        }
        Err(LogError::Position {
            what: "reading the WAL index's last committed frame",
            text: format!("{}-shm", self.path.display()),
        })
    }

    async fn read(self: Arc<WalLog>, reader: Reader, feed: Feed) {
        run(&self, reader, feed).await;
    }
}

/// The database header's change counter now, as a position. Opened and closed here only
/// while the follower holds no connection: a process loses its POSIX locks on a file when
/// it closes any descriptor of it, and SQLite's locks are those (files.rs in the follower).
fn rollback_position(path: &Path) -> std::io::Result<Lsn> {
    use std::os::unix::fs::FileExt;
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(rollback_lsn(0)),
        Err(e) => return Err(e),
    };
    let mut header = [0u8; 28];
    let n = file.read_at(&mut header, 0)?;
    Ok(rollback_lsn(change_counter(&header[..n])))
}

/// What the reader loop owns: the row image comparison.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    converter: Converter,
}

/// `FollowError` as the capture's refusal: its message names what is wrong (a network
/// filesystem, a directory not writable) and why.
fn refused(e: FollowError) -> CaptureError {
    CaptureError::Prerequisite(format!("--database sqlite: {e}"))
}

async fn open(path: PathBuf) -> Result<Opened<WalLog>, CaptureError> {
    // The follower's value hashes never leave the process: a seed drawn for it.
    let seed = {
        let mut s = [0u8; 8];
        let _ = getrandom::fill(&mut s);
        u64::from_le_bytes(s)
    };
    let mut follower = Follower::new(&path, seed).map_err(refused)?;
    let first = {
        let path = path.clone();
        tokio::task::spawn_blocking(move || {
            let counter = rollback_position(&path).unwrap_or(0);
            // The first snapshot: what the log holds already is history.
            let read = follower.read().map(|_| ());
            (follower, counter, read)
        })
        .await
    };
    let (follower, counter, read) =
        first.map_err(|e| CaptureError::Unsupported(format!("--database sqlite: {e}")))?;
    read.map_err(refused)?;
    let start = follower.position().map_or(counter, lsn);
    tracing::info!(
        target: "hintaudit::proxy",
        path = %path.display(),
        wal = follower.following(),
        "capture: SQLite WAL followed from {start:#x}{}",
        if follower.following() { "" } else { " (waiting for WAL mode)" }
    );
    Ok(Opened {
        start,
        source: WalLog {
            path,
            follower: Arc::new(Mutex::new(follower)),
        },
        reader: Reader::default(),
    })
}

/// Reads the WAL every [`CaptureOptions::interval`](crate::capture::CaptureOptions) and
/// whenever a call waits for a position not read yet, until stopped. A failed read keeps the
/// snapshot where it was (nothing is lost): counted once per outage, tried again on a
/// backoff.
async fn run(log: &WalLog, mut reader: Reader, feed: Feed) {
    let mut retry = Retry::new();
    let mut failing = false;
    let mut pause = None;
    loop {
        tokio::select! {
            () = feed.stopped() => break,
            () = feed.woken() => {}
            () = tokio::time::sleep(pause.unwrap_or(feed.interval())) => {}
        }
        feed.unheld().await;
        match read(log, &mut reader, &feed).await {
            Ok(()) => {
                pause = None;
                if std::mem::take(&mut failing) {
                    retry.reset();
                    feed.worked();
                }
            }
            Err(e) => {
                failing = true;
                pause = Some(retry.next_delay());
                feed.failed("reading the SQLite WAL", &e);
            }
        }
    }
}

/// What one read of the follower found, taken off its blocking thread.
struct Read {
    events: Vec<Event>,
    /// Where the log is read through now.
    through: Lsn,
    /// Bytes of the WAL and database read.
    bytes: u64,
    /// Bytes of committed WAL frames past what was read (0 while not in WAL mode).
    lag: u64,
    /// The database was seen in WAL mode for the first time: its first snapshot was taken.
    started: bool,
}

/// One read: the commits fed to the capture, then its gaps (each over the calls in flight
/// since the last position read), then how far it has read.
async fn read(log: &WalLog, reader: &mut Reader, feed: &Feed) -> Result<(), LogError> {
    let follower = log.follower.clone();
    let path = log.path.clone();
    let read = tokio::task::spawn_blocking(move || read_blocking(&follower, &path))
        .await
        .map_err(|e| LogError::Position {
            what: "reading the SQLite WAL",
            text: e.to_string(),
        })?
        .map_err(|source| LogError::Sqlite {
            what: "reading the SQLite WAL",
            source,
        })?;
    let mut commits: Vec<Commit> = Vec::new();
    let mut gaps: Vec<&Gap> = Vec::new();
    for event in &read.events {
        match event {
            Event::Commit { at, changes } => {
                tracing::debug!(
                    target: "hintaudit::proxy",
                    lsn = lsn(*at),
                    pages = changes.pages_written,
                    tables = changes.tables.len(),
                    "capture: SQLite commit read"
                );
                commits.extend(reader.converter.commit(lsn(*at), changes));
            }
            Event::Gap(gap) => gaps.push(gap),
        }
    }
    if read.started {
        tracing::info!(
            target: "hintaudit::proxy",
            "capture: {} is in WAL mode: its WAL is followed from {:#x}",
            log.path.display(),
            read.through
        );
    }
    feed.commits(commits);
    for gap in gaps {
        let from = feed.gap(read.through);
        tracing::warn!(
            target: "hintaudit::proxy",
            "capture: {} (calls in flight between {from:#x} and {:#x} are marked incomplete)",
            gap.reason,
            read.through
        );
    }
    feed.read_bytes(read.bytes);
    feed.read_through(read.through);
    feed.lag(read.lag);
    Ok(())
}

/// The follower's read, on a blocking thread, holding it from the end position meanwhile.
fn read_blocking(follower: &Mutex<Follower>, path: &Path) -> Result<Read, FollowError> {
    let mut follower = follower.blocking_lock();
    let io = |source| FollowError::Io {
        path: path.to_path_buf(),
        source,
    };
    // Before the read, and only while no connection is open (rollback_position): every
    // write that moved the counter up to here is seen by this read or was by an earlier one.
    let before = if follower.following() {
        None
    } else {
        Some(rollback_position(path).map_err(io)?)
    };
    let was = follower.stats();
    let waiting = !follower.following();
    let events = follower.read()?;
    let now = follower.stats();
    let bytes = (now.frame_bytes + now.page_bytes).saturating_sub(was.frame_bytes + was.page_bytes);
    let gap = events.iter().any(|e| matches!(e, Event::Gap(_)));
    let (through, lag) = match (follower.position(), before) {
        (Some(p), _) => (lsn(p), lag(&follower, p, path)),
        // A write seen in rollback mode: the gap runs to the counter as it is now, past every
        // write the follower saw.
        (None, Some(_)) if gap => (rollback_position(path).map_err(io)?, 0),
        (None, before) => (before.unwrap_or(0), 0),
    };
    Ok(Read {
        events,
        through,
        bytes,
        lag,
        started: waiting && follower.following(),
    })
}

/// Bytes of WAL frames committed past `read`, as the wal-index shows them (frames of the
/// database's page size, from the WAL's header, each with its 24-byte frame header).
fn lag(follower: &Follower, read: LogPosition, path: &Path) -> u64 {
    let Some(end) = follower.log_end() else {
        return 0;
    };
    if end.generation != read.generation {
        return 0;
    }
    let frames = u64::from(end.frame.saturating_sub(read.frame));
    if frames == 0 {
        return 0;
    }
    frames * (u64::from(wal_page_size(path).unwrap_or(4096)) + 24)
}

/// The page size the WAL's header gives (bytes 8..12). The WAL is opened and closed freely:
/// SQLite locks the database file and the `-shm`, never the WAL.
fn wal_page_size(path: &Path) -> Option<u32> {
    use std::os::unix::fs::FileExt;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let mut head = [0u8; 12];
    std::fs::File::open(PathBuf::from(wal))
        .ok()?
        .read_exact_at(&mut head, 0)
        .ok()?;
    Some(u32::from_be_bytes([head[8], head[9], head[10], head[11]]))
}
