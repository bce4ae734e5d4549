//! The follower's commits in the capture's shape, and its positions as the ledger's.
//!
//! A commit's per-table rows become [`TableWrites`] counts, and each update's old and new
//! row images (value hashes, never values) are compared by images.rs, the one comparison
//! every capture makes: so repeats, ignored columns and the rest of the judge read SQLite's
//! commits as they read PostgreSQL's and MariaDB's. Pure: no I/O.

use hintaudit_core::RowImage;
use hintaudit_sqlite_log::{Changes, LogPosition, Row};

use crate::capture::commit::{CommitBuilder, RowChange};
use crate::capture::images::{Column, RowImages, ValueHasher};
use crate::capture::ledger::{Commit, Lsn};

/// A position of the WAL as the ledger orders it: `(generation + 1) << 32 | frame`. The
/// positions below `1 << 32` are the rollback-journal mode's ([`rollback_lsn`]), before the
/// database was first seen in WAL mode.
pub(crate) fn lsn(p: LogPosition) -> Lsn {
    ((u64::from(p.generation) + 1) << 32) | u64::from(p.frame)
}

/// A position while the database is not in WAL mode (or not created): its header's change
/// counter, which a write in rollback-journal mode moves on. Below every WAL position.
pub(crate) fn rollback_lsn(counter: u32) -> Lsn {
    u64::from(counter)
}

/// The change counter of a database header's first bytes (offset 24, big-endian); 0 when the
/// header is shorter (no database yet).
pub(crate) fn change_counter(header: &[u8]) -> u32 {
    header
        .get(24..28)
        .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Compares updates' row images (keeps no row: the log carries both images).
#[derive(Debug)]
pub(crate) struct Converter {
    images: RowImages,
}

impl Default for Converter {
    fn default() -> Self {
        Converter {
            images: RowImages::new(ValueHasher::random(), 1),
        }
    }
}

impl Converter {
    /// The commit the follower read at `at`, as the capture's [`Commit`]; `None` when it
    /// changed no row (a table created empty, SQLite's own tables only).
    ///
    /// A table whose pages the commit wrote with every row as it was
    /// ([`Changes::unchanged`]) counts one update with an unchanged image: PostgreSQL logs
    /// such an update with equal images, and the judge reads both alike.
    pub(crate) fn commit(&mut self, at: Lsn, changes: &Changes) -> Option<Commit> {
        let mut b = CommitBuilder::default();
        for t in &changes.tables {
            let n = |rows: usize| rows as u64;
            if !t.inserted.is_empty() {
                b.rows(t.table.clone(), RowChange::Insert, n(t.inserted.len()));
            }
            if !t.updated.is_empty() {
                b.rows(t.table.clone(), RowChange::Update, n(t.updated.len()));
                for u in &t.updated {
                    let (old, new) = (columns(&u.old), columns(&u.new));
                    let image = self.images.updated(&t.table, None, None, Some(&old), &new);
                    b.image(&t.table, image);
                }
            }
            if !t.deleted.is_empty() {
                b.rows(t.table.clone(), RowChange::Delete, n(t.deleted.len()));
            }
        }
        for table in &changes.unchanged {
            b.rows(table.clone(), RowChange::Update, 1);
            b.image(table, RowImage::Unchanged);
        }
        (!b.is_empty()).then(|| b.finish(at))
    }
}

/// A row's columns as images.rs compares them (the follower names and hashes them).
fn columns(row: &Row) -> Vec<Column> {
    row.columns
        .iter()
        .map(|c| Column {
            name: c.name.clone(),
            value: c.value,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hintaudit_core::TableWrites;
    use hintaudit_sqlite_log::{Position, TableChanges, Update};

    fn row(rowid: i64, cols: &[(&str, u64)]) -> Row {
        Row {
            key: vec![rowid as u64],
            rowid: Some(rowid),
            columns: cols
                .iter()
                .map(|(n, v)| hintaudit_sqlite_log::Column {
                    name: (*n).to_owned(),
                    value: Some(*v),
                })
                .collect(),
        }
    }

    fn changes(tables: Vec<TableChanges>, unchanged: &[&str]) -> Changes {
        Changes {
            position: Position { salt1: 7, frame: 3 },
            db_pages: 4,
            pages_written: 2,
            bytes_read: 0,
            tables,
            unchanged: unchanged.iter().map(|t| (*t).to_owned()).collect(),
            created: Vec::new(),
            dropped: Vec::new(),
        }
    }

    #[test]
    fn positions_order_rollback_mode_before_every_wal_generation() {
        let at = |generation, frame| LogPosition {
            generation,
            salt1: 99,
            frame,
        };
        assert!(lsn(at(0, 0)) > rollback_lsn(u32::MAX));
        assert!(lsn(at(1, 1)) > lsn(at(0, u32::MAX)));
        assert!(lsn(at(0, 5)) > lsn(at(0, 4)));
        let mut header = vec![0u8; 100];
        header[24..28].copy_from_slice(&41u32.to_be_bytes());
        assert_eq!(change_counter(&header), 41);
        assert_eq!(change_counter(&header[..20]), 0, "no header yet");
    }

    #[test]
    fn rows_become_counts_and_updates_their_images() {
        let items = TableChanges {
            table: "items".into(),
            inserted: vec![row(5, &[("id", 5), ("views", 0)])],
            updated: vec![Update {
                old: row(1, &[("id", 1), ("views", 10)]),
                new: row(1, &[("id", 1), ("views", 11)]),
            }],
            deleted: vec![row(2, &[("id", 2), ("views", 0)]), row(3, &[("id", 3)])],
        };
        let mut c = Converter::default();
        let got = c
            .commit(9, &changes(vec![items], &["notes"]))
            .expect("a commit");
        assert_eq!(got.lsn, 9);
        assert_eq!(
            got.tables,
            vec![
                TableWrites {
                    table: "items".into(),
                    inserted: 1,
                    updated: 1,
                    deleted: 2,
                },
                TableWrites {
                    table: "notes".into(),
                    inserted: 0,
                    updated: 1,
                    deleted: 0,
                },
            ]
        );
        let images: Vec<_> = got.images.iter().map(|u| u.image.clone()).collect();
        assert_eq!(
            images,
            vec![RowImage::Changed(vec!["views".into()]), RowImage::Unchanged]
        );
        assert!(got.writer.is_none(), "SQLite names no writer");
        assert_eq!(c.commit(10, &changes(Vec::new(), &[])), None, "no row");
    }
}
