//! One read of the WAL under the new snapshot: the generation checked, the new frames read
//! along the chain, each commit decoded against the pages before it.

use std::fs::File;
use std::path::Path;

use super::files::{Before, read_from};
use super::{Event, FollowError, Gap, GapReason, Live, Stats};
use crate::wal::{Chain, CommitFrames, FRAME_HEADER_SIZE, WAL_HEADER_SIZE, WalHeader, commits};

/// What the WAL's header says of the generation followed.
enum Generation {
    /// The same generation (or still no header): read on.
    Same,
    /// The WAL restarted once, as it may when everything was read: read the new generation
    /// from its first frame.
    Next(WalHeader),
    /// A restart not seen: read again from the new snapshot.
    Lost(WalHeader),
}

impl Live {
    /// Reads what the WAL holds past the last commit read. `held`: a snapshot was held
    /// without a break since the last read, which read the chain to its end.
    pub(super) fn catch_up(
        &mut self,
        (path, wal): (&Path, &Path),
        seed: u64,
        held: bool,
        stats: &mut Stats,
        events: &mut Vec<Event>,
    ) -> Result<(), FollowError> {
        let io = |source| FollowError::Io {
            path: wal.to_path_buf(),
            source,
        };
        let head = read_from(wal, 0, WAL_HEADER_SIZE, &mut stats.frame_bytes).map_err(io)?;
        match self.generation_of(&head, held) {
            Generation::Same => {}
            Generation::Next(header) => {
                self.generation += u32::from(self.chain.is_some());
                self.chain = Some(Chain::start(header));
                self.latest.clear();
                if std::mem::take(&mut self.broken) {
                    // Frames were skipped: the database file holds the old generation whole.
                    self.reopen(path, None, seed, stats)?;
                }
            }
            Generation::Lost(header) => {
                return self.restart_not_seen(header, (path, wal), seed, stats, events);
            }
        }
        let Some(chain) = self.chain.as_mut().filter(|_| !self.broken) else {
            return Ok(());
        };
        // Read before the frames: every frame up to it was committed before they were read.
        let committed = super::shm::hint(self.shm.as_ref())
            .filter(|h| super::shm::of(h, chain.header()))
            .map(|h| h.max_frame);
        // Up to the last committed frame when the wal-index says which: a WAL reused after a
        // restart keeps its old length, and its stale frames past the chain are not read.
        let frame = u64::from(chain.header().page_size) + FRAME_HEADER_SIZE as u64;
        let len = committed.map_or(usize::MAX, |m| {
            let end = WAL_HEADER_SIZE as u64 + u64::from(m) * frame;
            usize::try_from(end.saturating_sub(chain.next_offset())).unwrap_or(usize::MAX)
        });
        let tail = read_from(wal, chain.next_offset(), len, &mut stats.frame_bytes).map_err(io)?;
        let found = commits(chain, &tail);
        let end = chain.position().frame;
        self.apply(&found, stats, events);
        self.settle(path, seed, stats)?;
        if committed.is_some_and(|m| m > end) {
            self.broken = true;
            events.push(Event::Gap(Gap {
                at: self.position(),
                reason: GapReason::Corrupt { frame: end + 1 },
            }));
        }
        Ok(())
    }

    /// A restart of the WAL not seen (`header` starts the new generation): reads the new
    /// generation's commits to know the database's size, reopens the snapshot, and reports
    /// the frames lost between the two as a gap.
    fn restart_not_seen(
        &mut self,
        header: WalHeader,
        (path, wal): (&Path, &Path),
        seed: u64,
        stats: &mut Stats,
        events: &mut Vec<Event>,
    ) -> Result<(), FollowError> {
        let from = self.chain.map_or(0, |c| c.header().checkpoint_seq);
        self.generation += 1;
        self.chain = Some(Chain::start(header));
        self.latest.clear();
        self.broken = false;
        let tail = read_from(
            wal,
            WAL_HEADER_SIZE as u64,
            usize::MAX,
            &mut stats.frame_bytes,
        )
        .map_err(|source| FollowError::Io {
            path: wal.to_path_buf(),
            source,
        })?;
        let found = self
            .chain
            .as_mut()
            .map(|c| commits(c, &tail))
            .unwrap_or_default();
        for c in &found {
            self.remember(c);
        }
        self.reopen(path, found.last().map(|c| c.db_pages), seed, stats)?;
        events.push(Event::Gap(Gap {
            at: self.position(),
            reason: GapReason::Restart {
                from,
                to: header.checkpoint_seq,
            },
        }));
        Ok(())
    }

    /// The generation the WAL header `head` starts. While a snapshot was `held` since a read
    /// that read the chain to its end, any new generation is the next one and loses nothing:
    /// SQLite restarts the WAL only once every frame is copied into the database file and no
    /// reader uses one, and copies none past a reader's snapshot (none at all while a reader
    /// reads the database file only), so at most one restart passes between two reads, over
    /// frames read. Its salts and checkpoint sequence are no test of that: a connection that
    /// writes the first frame after another connection's RESTART or TRUNCATE checkpoint draws
    /// new salts, and each connection counts checkpoints from 0 (servers that open a
    /// connection per statement do both). Without such a snapshot, the header must carry the
    /// sequence number and salt-1 one higher; any other change is a restart not seen.
    fn generation_of(&self, head: &[u8], held: bool) -> Generation {
        let Ok(header) = WalHeader::parse(head) else {
            // No header: the WAL not written yet, or truncated by a checkpoint after
            // everything was read. The next header starts the next generation.
            return Generation::Same;
        };
        let Some(chain) = self.chain else {
            return Generation::Next(header);
        };
        let was = chain.header();
        if header.salt1 == was.salt1 && header.salt2 == was.salt2 {
            return Generation::Same;
        }
        let next = held
            || (header.checkpoint_seq == was.checkpoint_seq.wrapping_add(1)
                && header.salt1 == was.salt1.wrapping_add(1));
        if next {
            Generation::Next(header)
        } else {
            Generation::Lost(header)
        }
    }

    /// Decodes `found` in order. After a commit that does not decode, the rest are only
    /// remembered, and the decoder is opened again at the last of them.
    pub(super) fn apply(
        &mut self,
        found: &[CommitFrames<'_>],
        stats: &mut Stats,
        events: &mut Vec<Event>,
    ) {
        let wal = self.wal_file();
        if self.pending_reopen.is_some() && !found.is_empty() {
            // The page map could not be read again after an earlier gap: these are skipped.
            let reason = GapReason::Decode(format!(
                "{} commit(s) not decoded: the page map is being read again",
                found.len()
            ));
            events.push(Event::Gap(Gap {
                at: self.position_of(&found[found.len() - 1]),
                reason,
            }));
        }
        for (i, c) in found.iter().enumerate() {
            if self.pending_reopen.is_some() {
                self.remember(c);
                continue;
            }
            let page_size = self.decoder.page_size();
            let mut before = Before {
                db: &self.db,
                wal: wal.as_ref(),
                latest: &self.latest,
                page_size,
                bytes: 0,
            };
            let decoded = self.decoder.apply(c, &mut before);
            stats.page_bytes += before.bytes;
            self.remember(c);
            let at = self.position_of(c);
            match decoded {
                Ok(changes) => events.push(Event::Commit { at, changes }),
                Err(e) => {
                    events.push(Event::Gap(Gap {
                        at,
                        reason: GapReason::Decode(format!(
                            "{e} (and {} commit(s) after it)",
                            found.len() - i - 1
                        )),
                    }));
                    self.pending_reopen = Some(found.last().map_or(c.db_pages, |l| l.db_pages));
                }
            }
        }
    }

    fn wal_file(&self) -> Option<File> {
        File::open(&self.wal_path).ok()
    }

    fn position_of(&self, c: &CommitFrames<'_>) -> super::LogPosition {
        super::LogPosition {
            generation: self.generation,
            salt1: c.position.salt1,
            frame: c.position.frame,
        }
    }
}
