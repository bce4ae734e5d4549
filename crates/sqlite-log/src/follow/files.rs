//! The database and WAL files, read with positioned reads: the WAL's new frames, and pages as
//! they were before a commit (the latest earlier frame of this WAL generation, else the
//! database file).

use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use hashbrown::HashMap;

use crate::view::PageSource;
use crate::wal::{FRAME_HEADER_SIZE, WAL_HEADER_SIZE};

/// The first 100 bytes of the database file `db`, when it has them.
pub(crate) fn db_header(db: &File) -> std::io::Result<Option<[u8; 100]>> {
    let mut header = [0u8; 100];
    match db.read_exact_at(&mut header, 0) {
        Ok(()) => Ok(Some(header)),
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(e),
    }
}

/// Opens `path` to read, `None` when it does not exist. SQLite's locks are POSIX advisory
/// locks, which a process loses on *every* descriptor of a file when it closes *any*: a
/// descriptor of the database or its `-shm` opened here is kept as long as the follower's
/// connections live, never closed before them.
pub(crate) fn open_kept(path: &Path) -> std::io::Result<Option<File>> {
    match File::open(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Up to `len` bytes at `offset` of the open file `f`.
pub(crate) fn read_at_most(f: &File, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    let mut got = 0;
    while got < len {
        match f.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(got);
    Ok(buf)
}

/// The `-wal` file beside `db`.
pub(crate) fn wal_path(db: &Path) -> PathBuf {
    let mut p = db.as_os_str().to_owned();
    p.push("-wal");
    PathBuf::from(p)
}

/// Reads `len` bytes at `offset` of `path`, or fewer at its end; empty when it does not exist.
/// Adds the bytes read to `counter`. Only for the WAL: SQLite locks no byte of it, so its
/// descriptor may be closed.
pub(crate) fn read_from(
    path: &Path,
    offset: u64,
    len: usize,
    counter: &mut u64,
) -> std::io::Result<Vec<u8>> {
    let f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let left = f.metadata()?.len().saturating_sub(offset);
    let buf = read_at_most(
        &f,
        offset,
        usize::try_from(left).unwrap_or(usize::MAX).min(len),
    )?;
    *counter += buf.len() as u64;
    Ok(buf)
}

/// Pages before a commit: the latest frame of each page this WAL generation holds before it,
/// else the database file.
pub(crate) struct Before<'a> {
    pub db: &'a File,
    /// The WAL, when it exists.
    pub wal: Option<&'a File>,
    /// Page → the frame number of its latest image before the commit.
    pub latest: &'a HashMap<u32, u32>,
    pub page_size: u32,
    /// Bytes read.
    pub bytes: u64,
}

impl PageSource for Before<'_> {
    fn page(&mut self, number: u32) -> std::io::Result<Option<Vec<u8>>> {
        let size = u64::from(self.page_size);
        let (file, offset) = match self.latest.get(&number) {
            Some(&frame) => {
                let at = WAL_HEADER_SIZE as u64
                    + u64::from(frame - 1) * (FRAME_HEADER_SIZE as u64 + size);
                let wal = self
                    .wal
                    .ok_or_else(|| std::io::Error::new(ErrorKind::NotFound, "the WAL is gone"))?;
                (wal, at + FRAME_HEADER_SIZE as u64)
            }
            None => (self.db, u64::from(number - 1) * size),
        };
        let mut buf = vec![0u8; self.page_size as usize];
        match file.read_exact_at(&mut buf, offset) {
            Ok(()) => {
                self.bytes += size;
                Ok(Some(buf))
            }
            // Past the file's end: a page the database has not written to its file yet is
            // one it does not have.
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => Ok(None),
            Err(e) => Err(e),
        }
    }
}
