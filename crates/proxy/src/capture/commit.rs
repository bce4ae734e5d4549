//! One commit builder for both backends: a transaction's row changes, counted per table as
//! its decoder reads them, then finished at its commit's log position into a [`Commit`].

use std::collections::BTreeMap;

use hintaudit_core::{ImagedUpdates, RowImage, TableWrites};

use crate::capture::ledger::{Commit, Lsn};
use crate::capture::writer::Writer;

/// The kind of a row change the log shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowChange {
    /// A row inserted.
    Insert,
    /// A row updated.
    Update,
    /// A row deleted.
    Delete,
}

/// Rows one transaction changed in one table.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Rows inserted.
    pub inserted: u64,
    /// Rows updated.
    pub updated: u64,
    /// Rows deleted.
    pub deleted: u64,
}

/// A transaction being read: rows per table (unqualified, lower-cased), the tables it
/// truncated, in the order first seen, what its updates' row images say, and its writer once
/// named.
#[derive(Debug, Default)]
pub struct CommitBuilder {
    tables: BTreeMap<String, Counts>,
    truncated: Vec<String>,
    truncated_empty: Vec<String>,
    images: Vec<ImagedUpdates>,
    writer: Option<Writer>,
}

impl CommitBuilder {
    /// `n` rows of `table` changed as `change`.
    pub fn rows(&mut self, table: String, change: RowChange, n: u64) {
        let counts = self.tables.entry(table).or_default();
        match change {
            RowChange::Insert => counts.inserted += n,
            RowChange::Update => counts.updated += n,
            RowChange::Delete => counts.deleted += n,
        }
    }

    /// `table` truncated (once per transaction however often); `empty`: the log showed it
    /// empty already ([`EmptyTables`](crate::capture::images::EmptyTables)).
    pub fn truncate(&mut self, table: String, empty: bool) {
        if self.truncated.contains(&table) || self.truncated_empty.contains(&table) {
            return;
        }
        if empty {
            self.truncated_empty.push(table);
        } else {
            self.truncated.push(table);
        }
    }

    /// An update of `table` (counted with [`CommitBuilder::rows`]) whose row images say
    /// `image`; nothing for [`RowImage::Unknown`].
    pub fn image(&mut self, table: &str, image: RowImage) {
        if image == RowImage::Unknown {
            return;
        }
        match self
            .images
            .iter_mut()
            .find(|u| u.table == table && u.image == image)
        {
            Some(u) => u.rows += 1,
            None => self.images.push(ImagedUpdates {
                table: table.to_owned(),
                image,
                rows: 1,
            }),
        }
    }

    /// The database named the transaction's writer (the first naming counts: a transaction
    /// has one backend).
    pub fn writer(&mut self, writer: Writer) {
        self.writer.get_or_insert(writer);
    }

    /// Whether it holds no change.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty() && self.truncated.is_empty() && self.truncated_empty.is_empty()
    }

    /// The transaction committed at `lsn` (the end of its commit record).
    pub fn finish(self, lsn: Lsn) -> Commit {
        Commit {
            lsn,
            tables: self
                .tables
                .into_iter()
                .map(|(table, c)| TableWrites {
                    table,
                    inserted: c.inserted,
                    updated: c.updated,
                    deleted: c.deleted,
                })
                .collect(),
            truncated: self.truncated,
            truncated_empty: self.truncated_empty,
            images: self.images,
            writer: self.writer,
        }
    }
}
