//! The WAL file (fileformat2.html, "The Write-Ahead Log"): a 32-byte header, then frames of a
//! 24-byte header and one page image each. A frame is valid when its salts are the header's
//! and its checksum continues the chain from the header through every frame before it; a frame
//! whose header gives the database size is a commit frame and ends a transaction. Frames after
//! the last commit frame on the chain are a transaction not committed yet (or one rolled back,
//! to be written over); the first frame off the chain ends the log.
//!
//! Pure: the caller reads the bytes.

use thiserror::Error;

/// The WAL header's magic number with little-endian checksum words; `+ 1`: big-endian.
const MAGIC: u32 = 0x377f_0682;
/// The only WAL format version.
const VERSION: u32 = 3_007_000;
/// Bytes of the WAL header.
pub const WAL_HEADER_SIZE: usize = 32;
/// Bytes of a frame's header.
pub const FRAME_HEADER_SIZE: usize = 24;

/// Why bytes are no WAL header.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum WalError {
    /// Fewer than 32 bytes (a WAL file not written yet, or reset by a TRUNCATE checkpoint).
    #[error("the WAL header is {0} bytes, not 32")]
    Short(usize),
    /// Not a WAL file's magic number.
    #[error("the WAL header's magic number is {0:#010x}, not 0x377f0682 or 0x377f0683")]
    Magic(u32),
    /// A format version this reader does not know.
    #[error("the WAL format version is {0}, not 3007000")]
    Version(u32),
    /// A page size that is not a power of two from 512 to 65536.
    #[error("the WAL's page size {0} is not a power of two from 512 to 65536")]
    PageSize(u32),
    /// The header's own checksum does not match (a header being written, or corrupt).
    #[error("the WAL header's checksum does not match")]
    Checksum,
}

/// A WAL header: the page size, the checkpoint sequence number (one more at each restart of
/// the log) and the salts every valid frame repeats (salt-1 one more at each restart, salt-2
/// random).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalHeader {
    /// Checksum words are big-endian (magic 0x377f0683).
    pub big_endian: bool,
    /// Bytes per page.
    pub page_size: u32,
    /// The checkpoint sequence number.
    pub checkpoint_seq: u32,
    /// Salt-1.
    pub salt1: u32,
    /// Salt-2.
    pub salt2: u32,
    checksum: (u32, u32),
}

fn be32(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    if let Some(b) = bytes.get(at..at + 4) {
        word.copy_from_slice(b);
    }
    u32::from_be_bytes(word)
}

impl WalHeader {
    /// The header at the start of `bytes` (a WAL file's first 32 bytes or more).
    ///
    /// # Errors
    /// [`WalError`]: too short, another magic number or version, a page size out of range, or
    /// a checksum that does not match.
    pub fn parse(bytes: &[u8]) -> Result<WalHeader, WalError> {
        let bytes = bytes
            .get(..WAL_HEADER_SIZE)
            .ok_or(WalError::Short(bytes.len()))?;
        let magic = be32(bytes, 0);
        if magic & !1 != MAGIC {
            return Err(WalError::Magic(magic));
        }
        let version = be32(bytes, 4);
        if version != VERSION {
            return Err(WalError::Version(version));
        }
        let page_size = be32(bytes, 8);
        if !(512..=65536).contains(&page_size) || !page_size.is_power_of_two() {
            return Err(WalError::PageSize(page_size));
        }
        let big_endian = magic & 1 == 1;
        let checksum = (be32(bytes, 24), be32(bytes, 28));
        if checksum_of(big_endian, (0, 0), &bytes[..24]) != checksum {
            return Err(WalError::Checksum);
        }
        Ok(WalHeader {
            big_endian,
            page_size,
            checkpoint_seq: be32(bytes, 12),
            salt1: be32(bytes, 16),
            salt2: be32(bytes, 20),
            checksum,
        })
    }

    /// Bytes per frame: its header and one page.
    pub fn frame_size(&self) -> usize {
        FRAME_HEADER_SIZE + self.page_size as usize
    }
}

/// SQLite's WAL checksum (wal.c, `walChecksumBytes`) over `bytes` (a multiple of 8 bytes; a
/// tail shorter than 8 is left out), continuing from `s`.
fn checksum_of(big_endian: bool, s: (u32, u32), bytes: &[u8]) -> (u32, u32) {
    let (mut s0, mut s1) = s;
    let word = |b: &[u8]| {
        let w = [b[0], b[1], b[2], b[3]];
        if big_endian {
            u32::from_be_bytes(w)
        } else {
            u32::from_le_bytes(w)
        }
    };
    for pair in bytes.chunks_exact(8) {
        s0 = s0.wrapping_add(word(&pair[..4])).wrapping_add(s1);
        s1 = s1.wrapping_add(word(&pair[4..])).wrapping_add(s0);
    }
    (s0, s1)
}

/// Rewrites the header checksum, then every whole frame's salts and checksum in `wal` (a WAL
/// file's bytes) so that each frame continues the chain: a WAL whose page images were edited
/// reads again, frame for frame (the fuzz target's way past the checksums to the pages, and
/// tests'). Does nothing to bytes that do not start with a WAL header's magic, version and
/// page size.
pub fn reseal(wal: &mut [u8]) {
    let Some(head) = wal.get_mut(..WAL_HEADER_SIZE) else {
        return;
    };
    let magic = be32(head, 0);
    let page_size = be32(head, 8);
    if magic & !1 != MAGIC || !(512..=65536).contains(&page_size) || !page_size.is_power_of_two() {
        return;
    }
    let big_endian = magic & 1 == 1;
    let sum = checksum_of(big_endian, (0, 0), &head[..24]);
    head[24..28].copy_from_slice(&sum.0.to_be_bytes());
    head[28..32].copy_from_slice(&sum.1.to_be_bytes());
    let salts: [u8; 8] = head[16..24].try_into().unwrap_or_default();
    let mut s = sum;
    let (_, frames) = wal.split_at_mut(WAL_HEADER_SIZE);
    for frame in frames.chunks_exact_mut(FRAME_HEADER_SIZE + page_size as usize) {
        frame[8..16].copy_from_slice(&salts);
        s = checksum_of(big_endian, s, &frame[..8]);
        s = checksum_of(big_endian, s, &frame[FRAME_HEADER_SIZE..]);
        frame[16..20].copy_from_slice(&s.0.to_be_bytes());
        frame[20..24].copy_from_slice(&s.1.to_be_bytes());
    }
}

/// A position in the log: the WAL generation's salt-1 and a frame number in it (1-based).
/// Ordered within one generation only: the follower numbers generations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Position {
    /// Salt-1 of the WAL generation.
    pub salt1: u32,
    /// The frame number (0: before the first frame).
    pub frame: u32,
}

/// One valid frame: the page it holds an image of, the database size in pages when it is a
/// commit frame, and the page image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Its frame number (1-based).
    pub number: u32,
    /// The page number (1-based).
    pub page: u32,
    /// The database size in pages after the transaction, on a commit frame; else `None`.
    pub commit: Option<u32>,
    /// The page image.
    pub data: &'a [u8],
}

/// The checksum chain followed so far: where the next frame must continue it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chain {
    header: WalHeader,
    checksum: (u32, u32),
    next: u32,
}

impl Chain {
    /// The chain from the header: the next frame is frame 1.
    pub fn start(header: WalHeader) -> Chain {
        Chain {
            header,
            checksum: header.checksum,
            next: 1,
        }
    }

    /// The header this chain started from.
    pub fn header(&self) -> &WalHeader {
        &self.header
    }

    /// The position of the last frame accepted (frame 0 at the start).
    pub fn position(&self) -> Position {
        Position {
            salt1: self.header.salt1,
            frame: self.next - 1,
        }
    }

    /// The byte offset in the WAL file of the next frame.
    pub fn next_offset(&self) -> u64 {
        WAL_HEADER_SIZE as u64 + u64::from(self.next - 1) * self.header.frame_size() as u64
    }

    /// `bytes` as the next frame: `Some` and the chain moved past it when it is valid (whole,
    /// the header's salts, a page number, the checksum continuing the chain); `None` when the
    /// chain ends before it.
    pub fn accept<'a>(&mut self, bytes: &'a [u8]) -> Option<Frame<'a>> {
        let frame = bytes.get(..self.header.frame_size())?;
        let (head, data) = frame.split_at(FRAME_HEADER_SIZE);
        let page = be32(head, 0);
        let db_pages = be32(head, 4);
        if page == 0 || be32(head, 8) != self.header.salt1 || be32(head, 12) != self.header.salt2 {
            return None;
        }
        let s = checksum_of(self.header.big_endian, self.checksum, &head[..8]);
        let s = checksum_of(self.header.big_endian, s, data);
        if s != (be32(head, 16), be32(head, 20)) {
            return None;
        }
        let number = self.next;
        self.checksum = s;
        self.next = self.next.checked_add(1)?;
        Some(Frame {
            number,
            page,
            commit: (db_pages != 0).then_some(db_pages),
            data,
        })
    }
}

/// One committed transaction's frames: the page images it wrote (the last frame of each page),
/// in page order, and its commit frame's position and database size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitFrames<'a> {
    /// The position of its commit frame.
    pub position: Position,
    /// The database size in pages after it.
    pub db_pages: u32,
    /// Frames it holds (pages written more than once count once each time).
    pub frames: u32,
    /// The pages written: (page number, image), sorted by page number.
    pub pages: Vec<(u32, &'a [u8])>,
    /// The frame number of each of `pages`' images, in the same order.
    pub page_frames: Vec<u32>,
}

/// The committed transactions in `bytes`, consecutive frames from the chain's next frame on,
/// until the chain ends; `chain` moves to the last commit frame read (frames after it are a
/// transaction still open, read again next time).
pub fn commits<'a>(chain: &mut Chain, bytes: &'a [u8]) -> Vec<CommitFrames<'a>> {
    let size = chain.header.frame_size();
    let mut done = Vec::new();
    let mut open: Vec<(u32, u32, &'a [u8])> = Vec::new();
    let mut frames = 0u32;
    let mut at = *chain;
    let mut committed = *chain;
    for bytes in bytes.chunks(size) {
        let Some(frame) = at.accept(bytes) else { break };
        frames += 1;
        open.push((frame.page, frame.number, frame.data));
        if let Some(db_pages) = frame.commit {
            let (pages, page_frames) = last_per_page(std::mem::take(&mut open));
            done.push(CommitFrames {
                position: at.position(),
                db_pages,
                frames,
                pages,
                page_frames,
            });
            frames = 0;
            committed = at;
        }
    }
    *chain = committed;
    done
}

/// The last image of each page, sorted by page number, and its frame number.
type Written<'a> = (Vec<(u32, &'a [u8])>, Vec<u32>);

fn last_per_page(mut frames: Vec<(u32, u32, &[u8])>) -> Written<'_> {
    // Stable: among frames of one page, the last written stays last.
    frames.sort_by_key(|(page, _, _)| *page);
    let mut pages: Vec<(u32, &[u8])> = Vec::with_capacity(frames.len());
    let mut numbers: Vec<u32> = Vec::with_capacity(frames.len());
    for (page, number, data) in frames {
        if pages.last().is_some_and(|last| last.0 == page) {
            pages.pop();
            numbers.pop();
        }
        pages.push((page, data));
        numbers.push(number);
    }
    (pages, numbers)
}

#[cfg(test)]
mod tests;
