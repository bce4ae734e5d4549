//! Row images and the column names that make them readable: what the preupdate hook saw of a
//! row (column indices), and the per-pool cache of column names per table that turns them
//! into names when the change is recorded. Used by `hooks`, which records row changes, and
//! by `images` (the `preupdate-hook` feature), which makes the images and learns the names.

use parking_lot::{Mutex, MutexGuard};
use std::collections::HashMap;
use std::sync::Arc;

use hintaudit_core::RowImage;

/// What the preupdate hook saw of an updated row; column indices are turned into names when
/// the change is recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(not(feature = "preupdate-hook"), allow(dead_code))]
pub(crate) enum Image {
    /// No row images (the `preupdate-hook` feature is off, or not an update).
    Unknown,
    /// Old and new rows are equal.
    Unchanged,
    /// These column indices differ.
    Changed(Vec<u16>),
}

/// Column names per table (lower-cased), filled by the executor with `PRAGMA table_info`
/// outside the hooks (a hook must not run SQL on its own connection).
#[derive(Debug, Default)]
pub(crate) struct Columns {
    by_table: Mutex<HashMap<String, Arc<[String]>>>,
}

impl Columns {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<[String]>>> {
        self.by_table.lock()
    }

    /// The column names of `table`, if known.
    pub(crate) fn get(&self, table: &str) -> Option<Arc<[String]>> {
        self.lock().get(table).cloned()
    }

    #[cfg_attr(not(feature = "preupdate-hook"), allow(dead_code))]
    /// Remembers the column names of `table` (at most 1024 tables are kept).
    pub(crate) fn put(&self, table: String, names: Vec<String>) {
        let mut m = self.lock();
        if m.len() < 1024 || m.contains_key(&table) {
            m.insert(table, names.into());
        }
    }

    #[cfg_attr(not(feature = "preupdate-hook"), allow(dead_code))]
    /// Forgets `table` after DDL.
    pub(crate) fn forget(&self, table: &str) {
        self.lock().remove(table);
    }

    /// The row image of a change to `table`: column indices turned into names (none when
    /// the names are unknown or do not fit).
    pub(crate) fn resolve(&self, table: &str, image: Image) -> RowImage {
        match image {
            Image::Unknown => RowImage::Unknown,
            Image::Unchanged => RowImage::Unchanged,
            Image::Changed(idx) => {
                let names = self.get(table);
                let cols = match names {
                    Some(n) if idx.iter().all(|i| usize::from(*i) < n.len()) => {
                        idx.iter().map(|i| n[usize::from(*i)].clone()).collect()
                    }
                    _ => Vec::new(),
                };
                RowImage::Changed(cols)
            }
        }
    }
}
