//! A WAL file's commits decoded against a database file's image, in memory: what the follower
//! does beside a live database, here over bytes (offline reading, the fuzz target). Pure.

use hashbrown::HashMap;

use crate::changes::Changes;
use crate::decoder::Decoder;
use crate::error::DecodeError;
use crate::view::PageSource;
use crate::wal::{Chain, WAL_HEADER_SIZE, WalError, WalHeader, commits};

/// A database image with frames over it.
struct Memory<'a> {
    db: &'a [u8],
    page_size: usize,
    frames: HashMap<u32, &'a [u8]>,
}

impl PageSource for Memory<'_> {
    fn page(&mut self, number: u32) -> std::io::Result<Option<Vec<u8>>> {
        if let Some(f) = self.frames.get(&number) {
            return Ok(Some(f.to_vec()));
        }
        let Some(index) = (number as usize).checked_sub(1) else {
            return Ok(None);
        };
        let start = index.saturating_mul(self.page_size);
        Ok(self
            .db
            .get(start..start.saturating_add(self.page_size))
            .map(<[u8]>::to_vec))
    }
}

/// Why nothing of a WAL could be replayed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The WAL's header.
    #[error("the WAL: {0}")]
    Wal(#[from] WalError),
    /// The database image before the WAL's first frame.
    #[error("the database image: {0}")]
    Open(#[from] DecodeError),
}

/// The commits of `wal` (a WAL file's bytes) over `db` (the database file's bytes as they were
/// before its first frame: nothing checkpointed), each decoded or the error that stopped it;
/// after an error the decoder is opened again at the next commit's state, as the follower
/// does. Values are hashed with `seed`.
///
/// # Errors
/// [`ReplayError`]: the WAL header, or the database image, does not read.
pub fn replay(
    db: &[u8],
    wal: &[u8],
    seed: u64,
) -> Result<Vec<Result<Changes, DecodeError>>, ReplayError> {
    let header = WalHeader::parse(wal)?;
    let page_size = header.page_size as usize;
    let mut chain = Chain::start(header);
    let found = commits(&mut chain, &wal[WAL_HEADER_SIZE..]);
    let mut memory = Memory {
        db,
        page_size,
        frames: HashMap::new(),
    };
    let mut db_pages = u32::try_from(db.len() / page_size).unwrap_or(u32::MAX);
    let mut decoder = Some(open_at(&mut memory, db_pages, header.page_size, seed)?);
    let mut out = Vec::with_capacity(found.len());
    for c in &found {
        if decoder.is_none() {
            decoder = open_at(&mut memory, db_pages, header.page_size, seed).ok();
        }
        let got = match decoder.as_mut() {
            Some(d) => d.apply(c, &mut memory),
            None => Err(DecodeError::Header(
                "the database before this commit does not read",
            )),
        };
        if got.is_err() {
            decoder = None;
        }
        out.push(got);
        memory.frames.extend(c.pages.iter().copied());
        db_pages = c.db_pages;
    }
    Ok(out)
}

/// A decoder over `memory` as a database of `db_pages` pages.
fn open_at(
    memory: &mut Memory<'_>,
    db_pages: u32,
    page_size: u32,
    seed: u64,
) -> Result<Decoder, DecodeError> {
    match db_pages {
        0 => Ok(Decoder::empty(page_size, seed)),
        n => Decoder::open(memory, n, seed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wal::{Chain, WAL_HEADER_SIZE, WalHeader, commits};

    #[test]
    fn a_wal_replays_over_the_database_it_was_written_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        let db = rusqlite::Connection::open(&path).unwrap();
        db.execute_batch(
            "PRAGMA page_size=512; PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;
             CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t(v) VALUES ('a');
             PRAGMA wal_checkpoint(TRUNCATE);",
        )
        .unwrap();
        let base = std::fs::read(&path).unwrap();
        db.execute_batch("INSERT INTO t(v) VALUES ('b'); UPDATE t SET v = 'c' WHERE id = 1; DELETE FROM t WHERE id = 2;")
            .unwrap();
        let wal = std::fs::read(dir.path().join("r.db-wal")).unwrap();
        let got: Vec<(usize, usize, usize)> = replay(&base, &wal, 1)
            .unwrap()
            .into_iter()
            .map(|c| {
                let c = c.unwrap();
                c.tables.first().map_or((0, 0, 0), |t| {
                    (t.inserted.len(), t.updated.len(), t.deleted.len())
                })
            })
            .collect();
        assert_eq!(got, [(1, 0, 0), (0, 1, 0), (0, 0, 1)]);
        let mut torn = base.clone();
        torn.truncate(600);
        assert!(
            replay(&torn, &wal, 1).is_err(),
            "a database image missing its table's root page"
        );
        assert!(matches!(
            replay(&base, &wal[..20], 1),
            Err(ReplayError::Wal(_))
        ));
    }

    /// A page that passes the checksum but does not read as a b-tree page: the commit is an
    /// error value, and the decoder, opened again, reads the next one.
    #[test]
    fn a_corrupt_page_in_a_commit_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let db = rusqlite::Connection::open(&path).unwrap();
        db.execute_batch(
            "PRAGMA page_size=512; PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;
             CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT); PRAGMA wal_checkpoint(TRUNCATE);",
        )
        .unwrap();
        let base = std::fs::read(&path).unwrap();
        db.execute_batch("INSERT INTO t(v) VALUES ('a'); INSERT INTO t(v) VALUES ('b');")
            .unwrap();
        let wal = std::fs::read(dir.path().join("c.db-wal")).unwrap();
        let mut chain = Chain::start(WalHeader::parse(&wal).unwrap());
        let found = commits(&mut chain, &wal[WAL_HEADER_SIZE..]);
        let mut memory = Memory {
            db: &base,
            page_size: 512,
            frames: HashMap::new(),
        };
        let mut decoder = Decoder::open(&mut memory, 2, 1).unwrap();
        for (byte, value) in [(0usize, 0x07u8), (3, 0xff), (8, 0xff)] {
            let mut images: Vec<Vec<u8>> = found[0].pages.iter().map(|(_, d)| d.to_vec()).collect();
            let leaf = found[0]
                .pages
                .iter()
                .position(|(p, _)| *p == 2)
                .expect("the table's page");
            images[leaf][byte] = value;
            let mut bad = found[0].clone();
            bad.pages = found[0]
                .pages
                .iter()
                .zip(&images)
                .map(|((p, _), d)| (*p, d.as_slice()))
                .collect();
            assert!(
                decoder.clone().apply(&bad, &mut memory).is_err(),
                "byte {byte} = {value:#x}"
            );
        }
        assert!(
            decoder.apply(&found[0], &mut memory).is_ok(),
            "the page as written reads"
        );
    }

    /// The fuzz target's seeds (fuzz/corpus/sqlite_wal/seed-*), real SQLite files: every
    /// commit decodes, so that the fuzzer starts from inputs that reach every decoding step.
    #[test]
    fn the_fuzz_seeds_decode_whole() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/sqlite_wal");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).expect("the seed corpus") {
            let path = entry.unwrap().path();
            if !path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("seed-")
            {
                continue;
            }
            let data = std::fs::read(&path).unwrap();
            let len = u32::from_le_bytes(data[..4].try_into().unwrap());
            let (db, wal) = data[4..].split_at((len & 0x7fff_ffff) as usize);
            let mut wal = wal.to_vec();
            if len & 0x8000_0000 != 0 {
                crate::wal::reseal(&mut wal);
            }
            let commits = replay(db, &wal, 0).unwrap_or_else(|e| panic!("{path:?}: {e}"));
            assert!(!commits.is_empty(), "{path:?}");
            for c in commits {
                let c = c.unwrap_or_else(|e| panic!("{path:?}: {e}"));
                assert!(!c.is_empty() || c.pages_written > 0, "{path:?}");
            }
            seen += 1;
        }
        assert!(seen >= 9, "{seen} seeds");
    }
}
