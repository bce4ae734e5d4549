//! The binary log's events, one at a time, into [`Commit`]s: the row events of the watched
//! database counted per table and transaction, the transaction closed by its `XID` event (or
//! a `COMMIT` query, for non-transactional tables) at its end position; a `TRUNCATE`, logged
//! as a statement even in ROW format, commits by itself. An update's before and after images
//! (`binlog_row_image = FULL`, the default) are compared column by column as hashes
//! (images.rs): only what changed is kept, never a value, but for the row the writer
//! triggers put in `hintaudit.writers` (install.rs), which names the transaction's writer.

use mysql_async::Value;
use mysql_async::binlog::events::{EventData, RowsEventData, TableMapEvent};
use mysql_async::binlog::row::BinlogRow;
use mysql_async::binlog::value::BinlogValue;

use crate::capture::commit::{CommitBuilder, RowChange};
use crate::capture::images::{Column, EmptyTables, RowImages, ValueHasher};
use crate::capture::ledger::{Commit, Lsn};
use crate::capture::mysql::install;
use crate::capture::writer::Writer;

/// What one event means for the stream.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The stream goes on in `file` at `pos` (a rotate event after the format description).
    Rotate {
        /// The binary log file it reads now.
        file: String,
        /// The position in it.
        pos: u64,
    },
    /// A transaction committed (or a `TRUNCATE` ran) with changes to the watched database.
    Commit(Commit),
    /// A table was created, altered or renamed: it may lack the writer triggers.
    TablesChanged,
    /// Nothing to hand on.
    Nothing,
    /// An event that moves no position: the rotate event a stream opens with.
    Unplaced,
}

/// Folds one stream's events into commits.
#[derive(Debug)]
pub(crate) struct BinlogDecoder {
    /// The database the URL names: the log covers every database of the server.
    database: String,
    open: CommitBuilder,
    /// A format description was read. The stream opens with a rotate event naming the file
    /// asked for, sent before any format description: read without knowing the checksum,
    /// its name ends in the checksum's 4 bytes. Only rotates after a format description
    /// name a file.
    described: bool,
    /// A table map read and its transaction's commit not yet.
    mapped: bool,
    /// Compares each update's before and after images (no row is kept: the binary log
    /// carries the before image).
    images: RowImages,
    empty: EmptyTables,
}

impl BinlogDecoder {
    /// A decoder for a stream that starts now, watching `database`.
    pub(crate) fn new(database: String) -> Self {
        BinlogDecoder {
            database,
            open: CommitBuilder::default(),
            described: false,
            mapped: false,
            images: RowImages::new(ValueHasher::random(), 1),
            empty: EmptyTables::default(),
        }
    }

    /// Whether a transaction is being read (a table map read, its commit not yet): the
    /// stream's resume position stays before it, so a transaction cut by a lost stream is
    /// read again whole.
    pub(crate) fn inside_transaction(&self) -> bool {
        self.mapped
    }

    /// One event, ending at `at` (the folded position of its end); `tme` is the table map
    /// of a rows event's table.
    pub(crate) fn event(
        &mut self,
        data: EventData<'_>,
        tme: Option<&TableMapEvent<'_>>,
        at: Lsn,
    ) -> Step {
        match data {
            EventData::RotateEvent(r) if self.described => {
                return Step::Rotate {
                    file: r.name().trim_end_matches('\0').to_owned(),
                    pos: r.position(),
                };
            }
            EventData::RotateEvent(_) => return Step::Unplaced,
            EventData::FormatDescriptionEvent(_) => self.described = true,
            EventData::TableMapEvent(_) => self.mapped = true,
            EventData::RowsEvent(rows) => self.rows(&rows, tme),
            EventData::XidEvent(_) => return self.commit(at),
            EventData::QueryEvent(q) => {
                let text = q.query();
                let upper = text.trim_start().to_ascii_uppercase();
                if upper.starts_with("COMMIT") {
                    return self.commit(at);
                }
                if upper.starts_with("TRUNCATE") && q.schema() == self.database {
                    let table = truncated_table(&text);
                    let empty = self.empty.truncated(&table);
                    let mut truncated = CommitBuilder::default();
                    truncated.truncate(table, empty);
                    return Step::Commit(truncated.finish(at));
                }
                if changes_tables(&upper)
                    && (q.schema() == self.database || text.contains(self.database.as_str()))
                {
                    return Step::TablesChanged;
                }
            }
            _ => {}
        }
        Step::Nothing
    }

    /// A rows event: its rows counted, inserts ending a table's emptiness, and each update's
    /// before and after images compared.
    fn rows(&mut self, rows: &RowsEventData<'_>, tme: Option<&TableMapEvent<'_>>) {
        let Some(tme) = tme else {
            return;
        };
        if tme.database_name() == install::SCHEMA && tme.table_name() == install::TABLE {
            if let Some(writer) = writer(rows, tme) {
                self.open.writer(writer);
            }
            return;
        }
        if tme.database_name() != self.database {
            return;
        }
        let change = match rows {
            RowsEventData::WriteRowsEventV1(_) | RowsEventData::WriteRowsEvent(_) => {
                RowChange::Insert
            }
            RowsEventData::DeleteRowsEventV1(_) | RowsEventData::DeleteRowsEvent(_) => {
                RowChange::Delete
            }
            _ => RowChange::Update,
        };
        let table = tme.table_name().to_lowercase();
        let mut n = 0;
        for row in rows.rows(tme) {
            n += 1;
            match (change, row) {
                (RowChange::Insert, _) => self.empty.inserted(&table),
                (RowChange::Update, Ok((Some(before), Some(after)))) => {
                    let h = self.images.hasher();
                    let image = self.images.updated(
                        &table,
                        None,
                        None,
                        Some(&columns(h, &before)),
                        &columns(h, &after),
                    );
                    self.open.image(&table, image);
                }
                _ => {}
            }
        }
        self.open.rows(table, change, n);
    }

    fn commit(&mut self, at: Lsn) -> Step {
        self.mapped = false;
        let done = std::mem::take(&mut self.open);
        if done.is_empty() {
            return Step::Nothing;
        }
        Step::Commit(done.finish(at))
    }
}

/// A binary log row as [`Column`]s: each value's hash, never the value. The table map names
/// the columns with `binlog_row_metadata = FULL`; else they are `@` and their position.
fn columns(h: ValueHasher, row: &BinlogRow) -> Vec<Column> {
    row.columns_ref()
        .iter()
        .enumerate()
        .map(|(i, c)| Column {
            name: c.name_str().to_lowercase(),
            value: row.as_ref(i).map(|v| h.hash(format!("{v:?}").as_bytes())),
        })
        .collect()
}

/// The writer a rows event on `hintaudit.writers` names: the after image of its first row
/// (`thread`, `host`, `session`, as install.rs makes the table; the columns that are not in
/// the after image, with `binlog_row_image = MINIMAL`, from the before image). A delete (the
/// table pruned) names none.
fn writer(rows: &RowsEventData<'_>, tme: &TableMapEvent<'_>) -> Option<Writer> {
    if matches!(
        rows,
        RowsEventData::DeleteRowsEventV1(_) | RowsEventData::DeleteRowsEvent(_)
    ) {
        return None;
    }
    let (before, after) = rows.rows(tme).next()?.ok()?;
    let column = |i: usize| {
        [after.as_ref(), before.as_ref()]
            .into_iter()
            .flatten()
            .find_map(|row| value(row, i))
    };
    let thread = number(column(0)?)?;
    let host = match column(1)? {
        Value::Bytes(b) => String::from_utf8_lossy(&b).into_owned(),
        _ => String::new(),
    };
    let session = number(column(2)?)?;
    Some(Writer::mysql(thread, session, &host))
}

fn value(row: &BinlogRow, i: usize) -> Option<Value> {
    match row.as_ref(i)? {
        BinlogValue::Value(v) => Some(v.clone()),
        _ => None,
    }
}

fn number(v: Value) -> Option<u64> {
    match v {
        Value::UInt(n) => Some(n),
        Value::Int(n) => u64::try_from(n).ok(),
        Value::Bytes(b) => std::str::from_utf8(&b).ok()?.parse().ok(),
        _ => None,
    }
}

/// Whether a statement (upper-cased) creates, alters or renames a table.
fn changes_tables(upper: &str) -> bool {
    let words: Vec<&str> = upper.split_whitespace().take(4).collect();
    matches!(
        words.as_slice(),
        ["CREATE", "TABLE", ..]
            | ["CREATE", "OR", "REPLACE", "TABLE"]
            | ["ALTER", "TABLE", ..]
            | ["RENAME", "TABLE", ..]
    )
}

/// The table a `TRUNCATE [TABLE] [db.]t` names: unquoted, without its database, lower-cased.
fn truncated_table(text: &str) -> String {
    text.split_whitespace()
        .last()
        .unwrap_or_default()
        .trim_matches('`')
        .rsplit('.')
        .next()
        .unwrap_or_default()
        .trim_matches('`')
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_that_change_tables() {
        for (text, want) in [
            ("CREATE TABLE t (id INT)", true),
            ("create or replace table t (id int)", true),
            ("ALTER TABLE t RENAME TO u", true),
            ("RENAME TABLE t TO u", true),
            ("CREATE TEMPORARY TABLE t (id INT)", false),
            (
                "CREATE TRIGGER x AFTER INSERT ON t FOR EACH ROW BEGIN END",
                false,
            ),
            ("DROP TABLE t", false),
        ] {
            assert_eq!(changes_tables(&text.to_ascii_uppercase()), want, "{text}");
        }
    }

    #[test]
    fn truncated_tables() {
        for (text, want) in [
            ("TRUNCATE items", "items"),
            ("truncate table `app`.`Items`", "items"),
            ("TRUNCATE TABLE app.notes", "notes"),
        ] {
            assert_eq!(truncated_table(text), want, "{text}");
        }
    }
}
