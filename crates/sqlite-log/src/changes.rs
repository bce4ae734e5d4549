//! What one commit changed, as the other captures report it: per table, the rows inserted,
//! updated and deleted, each with its key and its row image as per-column hashes (never a
//! value).

use crate::wal::Position;

/// One column of a row image: its name, lower-cased (`@` and its position when the table's
/// `CREATE TABLE` was not read), and the hash of its value (xxh3 with the decoder's seed over
/// the value's storage class and bytes; a REAL column's integral values as reals); `None`
/// when the value is not known (a column added by `ALTER TABLE … ADD COLUMN` with a DEFAULT
/// that is an expression, read from a row written before).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// The column's name.
    pub name: String,
    /// The hash of its value.
    pub value: Option<u64>,
}

/// One row's image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Its key as value hashes: a rowid table's rowid (one hash, as an integer value), a
    /// WITHOUT ROWID table's primary key columns in key order.
    pub key: Vec<u64>,
    /// Its rowid (rowid tables).
    pub rowid: Option<i64>,
    /// Its columns in declaration order (VIRTUAL generated columns, which are not stored, left
    /// out).
    pub columns: Vec<Column>,
}

/// A row updated: its image before and after (the same key, or for a rowid table the same
/// rowid).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    /// Before the commit.
    pub old: Row,
    /// After the commit.
    pub new: Row,
}

/// The rows one commit changed in one table, each list in key order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableChanges {
    /// The table, lower-cased.
    pub table: String,
    /// Rows inserted.
    pub inserted: Vec<Row>,
    /// Rows updated (some value differs).
    pub updated: Vec<Update>,
    /// Rows deleted, with their last image.
    pub deleted: Vec<Row>,
}

/// One commit read from the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changes {
    /// Its commit frame's position.
    pub position: Position,
    /// The database's size in pages after it.
    pub db_pages: u32,
    /// Pages it wrote.
    pub pages_written: usize,
    /// Bytes of pages read to decode it besides its own frames (old page images, overflow
    /// pages), from the database file and earlier frames.
    pub bytes_read: u64,
    /// Tables with rows changed, by name. SQLite's own tables (`sqlite_` prefix:
    /// `sqlite_schema`, `sqlite_sequence`, `sqlite_stat1`) are left out.
    pub tables: Vec<TableChanges>,
    /// Tables whose pages it wrote with every row as it was: an `UPDATE` that set the values
    /// the row held leaves no other trace in the log.
    pub unchanged: Vec<String>,
    /// Tables it created (`CREATE TABLE`; rows a `CREATE TABLE … AS SELECT` wrote are in
    /// `tables` as inserted).
    pub created: Vec<String>,
    /// Tables it dropped (their rows are not listed as deleted).
    pub dropped: Vec<String>,
}

impl Changes {
    /// Whether it changed no row and no table.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty() && self.created.is_empty() && self.dropped.is_empty()
    }
}
