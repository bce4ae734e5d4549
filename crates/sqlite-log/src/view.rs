//! The database's pages as one commit sees them: before it (the caller's [`PageSource`]) and
//! after it (its own frames over the pages before), each page read at most once per commit,
//! and payloads assembled along their overflow chains.

use std::rc::Rc;

use hashbrown::HashMap;

use crate::error::DecodeError;
use crate::page::{Payload, be32};

/// The database's pages as of one state: the file and the WAL frames before a commit (the
/// follower's), or an image in memory (the fuzz target's).
pub trait PageSource {
    /// Page `number` (1-based): its image, `None` when the database has no such page.
    ///
    /// # Errors
    /// The I/O error reading it.
    fn page(&mut self, number: u32) -> std::io::Result<Option<Vec<u8>>>;
}

/// Which side of a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Old,
    New,
}

/// A page image: borrowed from the commit's frames, or read.
#[derive(Debug, Clone)]
pub(crate) enum Image<'c> {
    Written(&'c [u8]),
    Read(Rc<[u8]>),
}

impl std::ops::Deref for Image<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Image::Written(b) => b,
            Image::Read(b) => b,
        }
    }
}

/// The pages around one commit.
pub(crate) struct View<'s, 'c> {
    source: &'s mut dyn PageSource,
    cache: HashMap<u32, Option<Rc<[u8]>>>,
    written: &'c [(u32, &'c [u8])],
    old_pages: u32,
    new_pages: u32,
    usable: usize,
    /// Bytes read from the source.
    pub bytes_read: u64,
    /// Every overflow page read, with its side and the page of the cell that owns it.
    pub chains: Vec<(Side, u32, u32)>,
}

impl<'s, 'c> View<'s, 'c> {
    /// `written`: the commit's pages (sorted by number); the database had `old_pages` pages
    /// before and `new_pages` after.
    pub(crate) fn new(
        source: &'s mut dyn PageSource,
        written: &'c [(u32, &'c [u8])],
        old_pages: u32,
        new_pages: u32,
        usable: usize,
    ) -> View<'s, 'c> {
        View {
            source,
            cache: HashMap::new(),
            written,
            old_pages,
            new_pages,
            usable,
            bytes_read: 0,
            chains: Vec::new(),
        }
    }

    /// Bytes per page less the reserved bytes.
    pub(crate) fn usable(&self) -> usize {
        self.usable
    }

    /// Whether the commit wrote page `n`.
    pub(crate) fn is_written(&self, n: u32) -> bool {
        self.written.binary_search_by_key(&n, |(p, _)| *p).is_ok()
    }

    /// The pages the commit wrote.
    pub(crate) fn written(&self) -> impl Iterator<Item = u32> + 'c {
        self.written.iter().map(|(p, _)| *p)
    }

    /// Page `n` on `side`.
    ///
    /// # Errors
    /// [`DecodeError::Missing`] past the database's end on that side; a read error.
    pub(crate) fn page(&mut self, side: Side, n: u32) -> Result<Image<'c>, DecodeError> {
        let end = if side == Side::Old {
            self.old_pages
        } else {
            self.new_pages
        };
        if n == 0 || n > end {
            return Err(DecodeError::Missing(n));
        }
        if side == Side::New
            && let Ok(i) = self.written.binary_search_by_key(&n, |(p, _)| *p)
        {
            return Ok(Image::Written(self.written[i].1));
        }
        self.read(n)?
            .map(Image::Read)
            .ok_or(DecodeError::Missing(n))
    }

    fn read(&mut self, n: u32) -> Result<Option<Rc<[u8]>>, DecodeError> {
        if let Some(hit) = self.cache.get(&n) {
            return Ok(hit.clone());
        }
        let got = self
            .source
            .page(n)
            .map_err(|source| DecodeError::Read { page: n, source })?
            .map(Rc::<[u8]>::from);
        self.bytes_read += got.as_ref().map_or(0, |p| p.len() as u64);
        self.cache.insert(n, got.clone());
        Ok(got)
    }

    /// The whole payload of `p` on `side`: its local bytes and its overflow chain's.
    ///
    /// # Errors
    /// A chain that ends early, points past the database or is longer than the database.
    pub(crate) fn payload(
        &mut self,
        side: Side,
        page: u32,
        p: &Payload<'_>,
    ) -> Result<Vec<u8>, DecodeError> {
        let mut out = p.local.to_vec();
        let Some(mut next) = p.overflow else {
            return Ok(out);
        };
        let per_page = (self.usable - 4) as u64;
        let pages = if side == Side::Old {
            self.old_pages
        } else {
            self.new_pages
        };
        let spill = p.size - p.local.len() as u64;
        if spill > u64::from(pages) * per_page {
            return Err(DecodeError::corrupt(
                page,
                "a payload longer than the database",
            ));
        }
        let mut left = spill as usize;
        // A chain visits each page once: a loop in a corrupt chain would grow `out` without end.
        let mut seen: hashbrown::HashSet<u32> = hashbrown::HashSet::new();
        while left > 0 {
            if next == 0 {
                return Err(DecodeError::corrupt(
                    page,
                    "an overflow chain that ends early",
                ));
            }
            if !seen.insert(next) {
                return Err(DecodeError::corrupt(next, "an overflow chain that loops"));
            }
            let img = self.page(side, next)?;
            self.chains.push((side, page, next));
            let take = left.min(self.usable - 4);
            let bytes = img
                .get(4..4 + take)
                .ok_or(DecodeError::corrupt(next, "a short overflow page"))?;
            out.extend_from_slice(bytes);
            left -= take;
            next = be32(&img, 0).unwrap_or(0);
        }
        Ok(out)
    }
}
