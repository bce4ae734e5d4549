//! The binary log's events, one at a time, into [`Commit`]s: the row events of the watched
//! database counted per table and transaction, the transaction closed by its `XID` event (or
//! a `COMMIT` query, for non-transactional tables) at its end position; a `TRUNCATE`, logged
//! as a statement even in ROW format, commits by itself. Only the table and the kind of each
//! change are kept: never a value.

use mysql_async::binlog::events::{EventData, RowsEventData, TableMapEvent};

use crate::capture::commit::{CommitBuilder, RowChange};
use crate::capture::ledger::{Commit, Lsn};

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
}

impl BinlogDecoder {
    /// A decoder for a stream that starts now, watching `database`.
    pub(crate) fn new(database: String) -> Self {
        BinlogDecoder {
            database,
            open: CommitBuilder::default(),
            described: false,
            mapped: false,
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
                    let mut truncated = CommitBuilder::default();
                    truncated.truncate(truncated_table(&text));
                    return Step::Commit(truncated.finish(at));
                }
            }
            _ => {}
        }
        Step::Nothing
    }

    fn rows(&mut self, rows: &RowsEventData<'_>, tme: Option<&TableMapEvent<'_>>) {
        let Some(tme) = tme else {
            return;
        };
        if tme.database_name() != self.database {
            return;
        }
        let n = rows.rows(tme).count() as u64;
        let change = match rows {
            RowsEventData::WriteRowsEventV1(_) | RowsEventData::WriteRowsEvent(_) => {
                RowChange::Insert
            }
            RowsEventData::DeleteRowsEventV1(_) | RowsEventData::DeleteRowsEvent(_) => {
                RowChange::Delete
            }
            _ => RowChange::Update,
        };
        self.open.rows(tme.table_name().to_lowercase(), change, n);
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
