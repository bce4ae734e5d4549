//! The wal-index (`-shm`) read as a hint, never as the log: SQLite's own header of the WAL
//! (wal.c, `WalIndexHdr` twice, then `WalCkptInfo`), in the writer's byte order. It tells
//! whether a checkpoint has touched the database file in this generation, and which frame is
//! the last committed, so that a chain that stops short of it is known corrupt.

use std::fs::File;
use std::path::{Path, PathBuf};

/// What the wal-index says, when its two header copies agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hint {
    /// The WAL generation's salts, as the WAL header's bytes 16..24.
    pub salts: [u8; 8],
    /// The last committed frame.
    pub max_frame: u32,
    /// Frames a checkpoint started to copy into the database file in this generation.
    pub backfill_attempted: u32,
}

/// Whether `hint` is of the WAL generation `header` starts.
pub(crate) fn of(hint: &Hint, header: &crate::wal::WalHeader) -> bool {
    hint.salts[..4] == header.salt1.to_be_bytes() && hint.salts[4..] == header.salt2.to_be_bytes()
}

/// The `-shm` file beside `db`.
pub(crate) fn shm_path(db: &Path) -> PathBuf {
    let mut path = db.as_os_str().to_owned();
    path.push("-shm");
    PathBuf::from(path)
}

/// The wal-index in `shm` (a descriptor kept open: see [`super::files::open_kept`]), when it
/// reads as one.
pub(crate) fn hint(shm: Option<&File>) -> Option<Hint> {
    parse(&super::files::read_at_most(shm?, 0, 136).ok()?)
}

fn parse(bytes: &[u8]) -> Option<Hint> {
    let (first, second) = (bytes.get(..48)?, bytes.get(48..96)?);
    let u32_at = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    };
    if first != second || first[12] != 1 || u32_at(0)? != 3_007_000 {
        return None;
    }
    let mut salts = [0u8; 8];
    salts.copy_from_slice(&first[32..40]);
    Some(Hint {
        salts,
        max_frame: u32_at(16)?,
        backfill_attempted: u32_at(128)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_or_uninitialised_index_is_no_hint() {
        let mut bytes = vec![0u8; 136];
        bytes[..4].copy_from_slice(&3_007_000u32.to_ne_bytes());
        bytes[12] = 1;
        bytes[16..20].copy_from_slice(&9u32.to_ne_bytes());
        bytes[32..40].copy_from_slice(b"saltsalt");
        bytes[128..132].copy_from_slice(&4u32.to_ne_bytes());
        let copy: Vec<u8> = bytes[..48].to_vec();
        bytes[48..96].copy_from_slice(&copy);
        let h = parse(&bytes).expect("a hint");
        assert_eq!(
            (h.max_frame, h.backfill_attempted, &h.salts),
            (9, 4, b"saltsalt")
        );
        bytes[60] ^= 1;
        assert_eq!(parse(&bytes), None, "the copies differ: being written");
        assert_eq!(parse(&bytes[..100]), None, "short");
    }
}
