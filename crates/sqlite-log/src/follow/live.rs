//! The follower's live state ([`Live`]): its first snapshot, the reads from a generation's
//! first frame, the decoder reopened, and the PASSIVE checkpoint after a read.

use std::fs::File;
use std::path::Path;

use hashbrown::HashMap;

use super::files::{Before, db_header, open_kept, read_from, wal_path};
use super::shm;
use super::snapshot::Snapshot;
use super::{Event, FollowError, Gap, GapReason, Live, LogPosition, Stats};
use crate::decoder::Decoder;
use crate::wal::{Chain, CommitFrames, WalHeader, commits};

impl Live {
    pub(super) fn position(&self) -> LogPosition {
        let p = self.chain.map(|c| c.position());
        LogPosition {
            generation: self.generation,
            salt1: p.map_or(0, |p| p.salt1),
            frame: p.map_or(0, |p| p.frame),
        }
    }

    /// The first snapshot, and the database as it shows it.
    pub(super) fn start(
        path: &Path,
        wal: &Path,
        db: File,
        seed: u64,
        waited: bool,
        stats: &mut Stats,
        events: &mut Vec<Event>,
    ) -> Result<Live, FollowError> {
        let sqlite = |source| FollowError::Sqlite {
            path: path.to_path_buf(),
            source,
        };
        let mut held = Snapshot::connect(path).map_err(sqlite)?;
        held.begin().map_err(sqlite)?;
        let idle = Snapshot::connect(path).map_err(sqlite)?;
        let shm_path = shm::shm_path(path);
        let shm = open_kept(&shm_path).map_err(|source| FollowError::Io {
            path: shm_path,
            source,
        })?;
        let bytes = read_from(wal, 0, usize::MAX, &mut stats.frame_bytes).map_err(|source| {
            FollowError::Io {
                path: wal.to_path_buf(),
                source,
            }
        })?;
        let mut live = Live {
            held,
            idle,
            db,
            shm,
            chain: None,
            generation: 0,
            latest: HashMap::new(),
            decoder: Decoder::empty(4096, seed),
            wal_path: wal.to_path_buf(),
            pending_reopen: None,
            broken: false,
            checkpointed: LogPosition {
                generation: 0,
                salt1: 0,
                frame: 0,
            },
            read_whole: true,
        };
        let empty = live.db.metadata().map(|m| m.len() == 0).unwrap_or(false);
        let mut found = Vec::new();
        if let Ok(header) = WalHeader::parse(&bytes) {
            let mut chain = Chain::start(header);
            found = commits(&mut chain, &bytes[crate::wal::WAL_HEADER_SIZE..]);
            live.chain = Some(chain);
            live.decoder = Decoder::empty(header.page_size, seed);
        }
        if empty {
            // Everything is in the WAL: read from its first frame.
            live.apply(&found, stats, events);
            live.settle(path, seed, stats)?;
        } else if waited
            && !found.is_empty()
            && !live.read_from_first_frame(path, seed, &found, stats, events)?
        {
            events.push(Event::Gap(Gap {
                at: live.position(),
                reason: GapReason::StartedLate {
                    commits: found.len(),
                },
            }));
        } else if !waited || found.is_empty() {
            for c in &found {
                live.remember(c);
            }
            live.reopen(path, found.last().map(|c| c.db_pages), seed, stats)?;
        }
        Ok(live)
    }

    /// After a commit that did not decode, the decoder opened again at the last commit read.
    /// Kept when opening fails: the next read tries again, and counts what it skips.
    pub(super) fn settle(
        &mut self,
        path: &Path,
        seed: u64,
        stats: &mut Stats,
    ) -> Result<(), FollowError> {
        if let Some(pending) = self.pending_reopen {
            self.reopen(path, Some(pending), seed, stats)?;
            self.pending_reopen = None;
        }
        Ok(())
    }

    /// The commits `found` in the WAL when the database was first seen in WAL mode, decoded
    /// from the first frame when no checkpoint has touched the database file in this
    /// generation (the wal-index says so before and after: a hint, checked twice). Whether
    /// they were; if not, the decoder starts after them.
    pub(super) fn read_from_first_frame(
        &mut self,
        path: &Path,
        seed: u64,
        found: &[CommitFrames<'_>],
        stats: &mut Stats,
        events: &mut Vec<Event>,
    ) -> Result<bool, FollowError> {
        let header = self.chain.map(|c| *c.header());
        let untouched = |shm: Option<&File>| {
            shm::hint(shm).is_some_and(|h| {
                h.backfill_attempted == 0 && header.is_some_and(|w| shm::of(&h, &w))
            })
        };
        let mut decoded = Vec::new();
        if untouched(self.shm.as_ref()) {
            self.reopen(path, None, seed, stats)?;
            self.apply(found, stats, &mut decoded);
            self.settle(path, seed, stats)?;
        }
        if !decoded.is_empty() && untouched(self.shm.as_ref()) {
            events.append(&mut decoded);
            return Ok(true);
        }
        self.latest.clear();
        for c in found {
            self.remember(c);
        }
        self.reopen(path, found.last().map(|c| c.db_pages), seed, stats)?;
        Ok(false)
    }

    /// Notes the pages `c` wrote as the latest images.
    pub(super) fn remember(&mut self, c: &CommitFrames<'_>) {
        for ((page, _), frame) in c.pages.iter().zip(&c.page_frames) {
            self.latest.insert(*page, *frame);
        }
    }

    /// A new decoder over the database as the held snapshot shows it, at the last commit read
    /// (`db_pages` after it; `None`: from the database file).
    pub(super) fn reopen(
        &mut self,
        path: &Path,
        db_pages: Option<u32>,
        seed: u64,
        stats: &mut Stats,
    ) -> Result<(), FollowError> {
        let io = |source| FollowError::Io {
            path: path.to_path_buf(),
            source,
        };
        let wal = open_kept(&wal_path(path)).map_err(io)?;
        let header = db_header(&self.db).map_err(io)?;
        let page_size = self
            .chain
            .map(|c| c.header().page_size)
            .or_else(|| header.map(|h| page_size_of(&h)))
            .unwrap_or(4096);
        let db_pages = match db_pages {
            Some(n) => n,
            None => pages_in_file(&self.db, header.as_ref(), page_size).map_err(io)?,
        };
        if db_pages == 0 {
            self.decoder = Decoder::empty(page_size, seed);
            return Ok(());
        }
        let mut before = Before {
            db: &self.db,
            wal: wal.as_ref(),
            latest: &self.latest,
            page_size,
            bytes: 0,
        };
        let opened = Decoder::open(&mut before, db_pages, seed);
        stats.page_bytes += before.bytes;
        self.decoder = opened.map_err(|source| FollowError::Decode {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(())
    }
}

/// The page size a database header gives.
pub(super) fn page_size_of(h: &[u8; 100]) -> u32 {
    match u32::from(u16::from_be_bytes([h[16], h[17]])) {
        1 => 65536,
        n => n,
    }
}

/// The database's size in pages: the header's, when it is valid (its version-valid-for
/// number is the change counter), else the file's.
pub(super) fn pages_in_file(
    db: &File,
    header: Option<&[u8; 100]>,
    page_size: u32,
) -> std::io::Result<u32> {
    if let Some(h) = header {
        let be = |at: usize| u32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
        if be(28) != 0 && be(92) == be(24) {
            return Ok(be(28));
        }
    }
    Ok(u32::try_from(db.metadata()?.len() / u64::from(page_size)).unwrap_or(u32::MAX))
}
