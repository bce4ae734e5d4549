//! What can stop a commit's decoding: the decoder reports it as the commit's gap, never panics.

use thiserror::Error;

/// Why a commit (or the first image of the database) could not be decoded. The follower
/// counts it as a gap and starts its page map again from the next snapshot.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// A page that does not read as the file format says (fileformat2.html, "B-tree Pages",
    /// "Record Format"): a truncated or corrupt image.
    #[error("page {page}: {what}")]
    Corrupt {
        /// The page number.
        page: u32,
        /// What does not hold.
        what: &'static str,
    },
    /// A page the b-trees point to that the database does not have.
    #[error("page {0} is past the end of the database")]
    Missing(u32),
    /// The database header (page 1's first 100 bytes) is not one this reader knows.
    #[error("the database header: {0}")]
    Header(&'static str),
    /// Reading a page failed.
    #[error("reading page {page}: {source}")]
    Read {
        /// The page number.
        page: u32,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl DecodeError {
    pub(crate) fn corrupt(page: u32, what: &'static str) -> DecodeError {
        DecodeError::Corrupt { page, what }
    }
}
