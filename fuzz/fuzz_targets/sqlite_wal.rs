//! The SQLite log decoder over any bytes: a database image and a WAL file (the WAL header and
//! frames along the checksum chain, b-tree pages, overflow chains, records, `CREATE TABLE`
//! text in `sqlite_schema`) never panics, never loops without end, and never allocates by a
//! size it read; a corrupt or truncated input is an error value. The seed corpus
//! (`fuzz/corpus/sqlite_wal`) holds real SQLite files, 512-byte pages: a little-endian u32,
//! the database image's length (its top bit: reseal the WAL), the image, then the WAL.
//! Resealed, every mutated frame passes the checksum chain, so the mutations reach the
//! per-commit decoding (page maps, diffs, schema changes) and not only the chain's end.
#![no_main]

use hintaudit_sqlite_log::{replay, reseal};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((len, rest)) = data.split_first_chunk::<4>() else { return };
    let len = u32::from_le_bytes(*len);
    let (db, wal) = rest.split_at(((len & 0x7fff_ffff) as usize).min(rest.len()));
    let mut wal = wal.to_vec();
    if len & 0x8000_0000 != 0 {
        reseal(&mut wal);
    }
    // A commit decoded or not, never a panic; an image that does not read, an error.
    if let Ok(commits) = replay(db, &wal, 0) {
        for c in commits.into_iter().flatten() {
            assert!(c.tables.windows(2).all(|w| w[0].table < w[1].table), "tables sorted");
        }
    }
});
