//! MySQL and MariaDB: the binary log in ROW format, streamed as a replica would read it
//! (mysql_async's binlog stream, `COM_BINLOG_DUMP`).
//!
//! Positions are the binary log's own: a file's sequence number and an offset in it, folded
//! into one number (`file << 32 | offset`; a binary log file is at most 1 GiB). The row
//! events of the database the URL names are counted per table and transaction; a
//! transaction's commit (its `XID` event, or a `COMMIT` query for non-transactional tables)
//! carries its end position. Nothing is kept on the server for the stream: the binary log
//! is the server's own, rotated and purged by its own settings, and a lost stream (a server
//! restart) resumes from the last position read outside a transaction (from the log's end,
//! a counted gap, when that file was purged meanwhile).
//!
//! Each commit names its writer through the row the writer triggers (install.rs) put in
//! `hintaudit.writers` inside the transaction, matched to the upstream's connections by
//! identify.rs as on PostgreSQL.

mod decode;
mod install;

use std::sync::Arc;

use futures_util::StreamExt;
use hintaudit_core::DatabaseKind;
use mysql_async::binlog::events::{Event, EventData};
use mysql_async::prelude::Queryable;
use mysql_async::{BinlogStream, BinlogStreamRequest, Conn, Opts, Pool};

use crate::capture::feed::Feed;
use crate::capture::source::{LogError, LogSource, Opened};
use crate::capture::trouble::{Part, Retry};
use crate::capture::{CaptureError, Lsn};
use decode::{BinlogDecoder, Step};
use install::Installer;

/// MySQL's and MariaDB's binary log, streamed as a replica reads it; its end position read on
/// connections of its own.
#[derive(Debug)]
pub(crate) struct BinaryLog {
    pool: Pool,
    /// The statement this server answers with the end of its binary log.
    status: &'static str,
}

impl LogSource for BinaryLog {
    const KIND: DatabaseKind = DatabaseKind::MySql;
    type Reader = Stream;

    async fn open(url: &str) -> Result<Opened<BinaryLog>, CaptureError> {
        open(url).await
    }

    /// The end of the binary log now: every commit written after this read ends beyond it,
    /// every commit that returned to its client before it ends at or before it.
    async fn end(&self) -> Result<Lsn, LogError> {
        let (file, pos) = self.end_of_log().await.map_err(|source| LogError::MySql {
            what: "reading the end of the binary log",
            source,
        })?;
        Ok(fold(&file, pos))
    }

    async fn read(self: Arc<BinaryLog>, stream: Stream, feed: Feed) {
        run(stream, feed, &self).await;
    }
}

impl BinaryLog {
    /// The end of the binary log now, as its file and offset.
    async fn end_of_log(&self) -> Result<(String, u64), mysql_async::Error> {
        let mut conn = self.pool.get_conn().await?;
        log_status(&mut conn, self.status).await
    }
}

/// `file.000042` at `pos` → one ordered number.
/// The file's sequence number is the digits after its last `.` (a rotate event's name may
/// carry a trailing NUL: only the digits count).
pub(crate) fn fold(file: &str, pos: u64) -> Lsn {
    let digits: String = file
        .rsplit('.')
        .next()
        .unwrap_or_default()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let n = digits.parse::<u64>().unwrap_or(0);
    (n << 32) | (pos & 0xFFFF_FFFF)
}

/// Bytes between two folded positions: exact in one file; across a rotation, the offset in
/// the newer file (the older file's rest is not known here): a lower bound.
pub(crate) fn behind(now: Lsn, read: Lsn) -> u64 {
    if now >> 32 == read >> 32 {
        now.saturating_sub(read)
    } else if now > read {
        now & 0xFFFF_FFFF
    } else {
        0
    }
}

/// The statements that give the end of the binary log (file, position), newest first:
/// MySQL 8.2 and later (`SHOW MASTER STATUS` was removed in 8.4), MariaDB 10.5.2 and later,
/// and the older servers of both.
const LOG_STATUS: [&str; 3] = [
    "SHOW BINARY LOG STATUS",
    "SHOW BINLOG STATUS",
    "SHOW MASTER STATUS",
];

/// MySQL's and MariaDB's `ER_PARSE_ERROR`: the server does not know the statement.
const ER_PARSE_ERROR: u16 = 1064;

/// MySQL's and MariaDB's error 1236: the server cannot send the binary log from the position
/// asked for (the file was purged).
const ER_MASTER_FATAL_ERROR_READING_BINLOG: u16 = 1236;

/// The first of [`LOG_STATUS`] this server knows, with its answer. A statement the server
/// does not parse moves on to the next; any other error (a missing privilege) is returned.
async fn pick_log_status(
    conn: &mut Conn,
) -> Result<(&'static str, (String, u64)), mysql_async::Error> {
    let mut last = None;
    for statement in LOG_STATUS {
        match log_status(conn, statement).await {
            Ok(at) => return Ok((statement, at)),
            Err(mysql_async::Error::Server(e)) if e.code == ER_PARSE_ERROR => {
                last = Some(mysql_async::Error::Server(e));
            }
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| mysql_async::Error::Other("no binary log status".into())))
}

async fn log_status(conn: &mut Conn, statement: &str) -> Result<(String, u64), mysql_async::Error> {
    let row: Option<mysql_async::Row> = conn.query_first(statement).await?;
    let row = row.ok_or_else(|| {
        mysql_async::Error::Other(
            format!("{statement} returned nothing: the binary log is off").into(),
        )
    })?;
    let file: String = row.get(0).unwrap_or_default();
    let pos: u64 = row.get(1).unwrap_or(0);
    Ok((file, pos))
}

/// Where the stream is: the file it reads and the position after the last event.
pub(crate) struct Stream {
    opts: Opts,
    database: String,
    file: String,
    pos: u64,
    /// Gives the database's tables the writer triggers, again as they are created (MariaDB).
    installer: Option<Arc<Installer>>,
    /// The stream was lost: the next one that reads an event counts as reopened.
    lost: bool,
}

fn db_error(what: &'static str) -> impl FnOnce(mysql_async::Error) -> CaptureError {
    move |e| CaptureError::Prerequisite(format!("{what}: {e}"))
}

/// Connects, checks the binary log is on and in ROW format, and reads where it ends.
async fn open(url: &str) -> Result<Opened<BinaryLog>, CaptureError> {
    // `url` is the driver's (`mysql://`, whatever scheme the user wrote): DatabaseUrl.
    let opts =
        Opts::from_url(url).map_err(|e| CaptureError::Unsupported(format!("--database: {e}")))?;
    let database = opts.db_name().map(str::to_owned).ok_or_else(|| {
        CaptureError::Unsupported(
            "--database mysql://…: name the server's database in the URL \
             (mysql://user@host:3306/app): the binary log covers every database"
                .into(),
        )
    })?;
    let pool = Pool::new(opts.clone());
    let mut conn = pool
        .get_conn()
        .await
        .map_err(db_error("connecting to MySQL/MariaDB"))?;
    let (log_bin, format, version): (Option<i64>, Option<String>, Option<String>) = conn
        .query_first("SELECT @@log_bin, @@binlog_format, VERSION()")
        .await
        .map_err(db_error("reading log_bin and binlog_format"))?
        .unwrap_or((None, None, None));
    if log_bin != Some(1) {
        return Err(CaptureError::Prerequisite(
            "the binary log is off (log_bin): the proxy reads changes from it; start the \
             server with log_bin and binlog_format = ROW (a user with REPLICATION SLAVE and \
             BINLOG MONITOR, or REPLICATION CLIENT on MySQL)"
                .into(),
        ));
    }
    let format = format.unwrap_or_default();
    if !format.eq_ignore_ascii_case("ROW") {
        return Err(CaptureError::Prerequisite(format!(
            "binlog_format is {format}: the proxy needs binlog_format = ROW to see rows \
             (SET GLOBAL binlog_format = 'ROW' and in the server's configuration)"
        )));
    }
    let (status, (file, pos)) = pick_log_status(&mut conn).await.map_err(db_error(
        "reading the end of the binary log (SHOW BINARY LOG STATUS or SHOW BINLOG STATUS; \
         needs REPLICATION CLIENT on MySQL, BINLOG MONITOR on MariaDB)",
    ))?;
    drop(conn);
    tracing::info!(target: "hintaudit::proxy", "capture: binary log from {file}:{pos} ({status})");
    let installer = writer_triggers(&pool, &database, version.as_deref()).await;
    Ok(Opened {
        start: fold(&file, pos),
        source: BinaryLog { pool, status },
        reader: Stream {
            opts,
            database,
            file,
            pos,
            installer,
            lost: false,
        },
    })
}

/// On MariaDB, the writer triggers, installed now. MySQL has no `@@last_gtid`, which they
/// need: there commits are settled by position (its `BEGIN` events name the thread, not
/// read yet), as it is logged.
async fn writer_triggers(
    pool: &Pool,
    database: &str,
    version: Option<&str>,
) -> Option<Arc<Installer>> {
    if !version.is_some_and(|v| v.contains("MariaDB")) {
        tracing::info!(
            target: "hintaudit::proxy",
            "capture: MySQL: no writer triggers (they need MariaDB); commits are settled by \
             position among every call in flight"
        );
        return None;
    }
    let installer = Arc::new(Installer::new(pool.clone(), database.to_owned()));
    name_writers(&installer).await;
    Some(installer)
}

/// Gives the tables that lack them the writer triggers; without them (no `CREATE` or
/// `TRIGGER` privilege) commits are settled by position, as it is logged and counted.
async fn name_writers(installer: &Installer) {
    match installer.install().await {
        Ok(done) => {
            installer.outage.worked(Part::Triggers);
            if done.triggers > 0 || !done.refused.is_empty() {
                tracing::info!(
                    target: "hintaudit::proxy",
                    triggers = done.triggers,
                    refused = ?done.refused,
                    "capture: writer triggers installed (commits name their writer)"
                );
            }
        }
        Err(e) => installer.outage.failed(
            Part::Triggers,
            "installing the writer triggers (commits are settled by position)",
            &e,
        ),
    }
}

/// Installs the triggers again whenever the binary log shows a table created, altered or
/// renamed, and every [`install::RESCAN_EVERY`], until the capture stops.
async fn keep_naming_writers(installer: Arc<Installer>, feed: Feed) {
    loop {
        tokio::select! {
            () = feed.stopped() => return,
            () = installer.rescan.notified() => {}
            () = tokio::time::sleep(install::RESCAN_EVERY) => {}
        }
        // While the database cannot be read an install would fail too, and count an error
        // of its own: the next rescan makes up for it.
        if !feed.in_outage() {
            name_writers(&installer).await;
        }
    }
}

/// Streams the binary log until stopped; a lost stream (a server restart) resumes, on a
/// [`Retry`]'s backoff until the server answers, from the last position read outside a
/// transaction: nothing is lost while the server keeps that file. When the server cannot
/// send from there (the file was purged meanwhile: `ERROR 1236`), the stream goes on from
/// the log's end and the part between is a gap, counted, as a lost slot is on PostgreSQL.
async fn run(mut stream: Stream, feed: Feed, log: &BinaryLog) {
    let server_id = 0x4841_0000 | (std::process::id() & 0xFFFF);
    if let Some(installer) = &stream.installer {
        tokio::spawn(keep_naming_writers(installer.clone(), feed.clone()));
    }
    let mut retry = Retry::new();
    loop {
        let e = match read_stream(&mut stream, &feed, log, server_id, &mut retry).await {
            Ok(()) => break,
            Err(e) => e,
        };
        stream.lost = true;
        feed.failed(
            "reading the binary log",
            &format_args!("{e} (resuming from {:?} at {})", stream.file, stream.pos),
        );
        if matches!(&e, LogError::MySql { source: mysql_async::Error::Server(s), .. } if s.code == ER_MASTER_FATAL_ERROR_READING_BINLOG)
        {
            skip_to_end(&mut stream, &feed, log).await;
        }
        tokio::select! {
            () = feed.stopped() => break,
            () = tokio::time::sleep(retry.next_delay()) => {}
        }
    }
}

/// The stream cannot resume where it stopped: it goes on from the log's end, and what lies
/// between is a gap (counted; the calls overlapping it are marked incomplete).
async fn skip_to_end(stream: &mut Stream, feed: &Feed, log: &BinaryLog) {
    let Ok((file, pos)) = log.end_of_log().await else {
        return;
    };
    tracing::warn!(
        target: "hintaudit::proxy",
        "capture: the binary log from {}:{} is gone; going on from {file}:{pos}: changes \
         committed between were not read (calls in flight then are marked incomplete)",
        stream.file,
        stream.pos
    );
    feed.gap(fold(&file, pos));
    (stream.file, stream.pos) = (file, pos);
}

/// Reads the stream from where it stands until it fails or the capture stops. The outage
/// ends (and `retry` starts over) at the first event read.
async fn read_stream(
    stream: &mut Stream,
    feed: &Feed,
    log: &BinaryLog,
    server_id: u32,
    retry: &mut Retry,
) -> Result<(), LogError> {
    let failed = |what| move |source| LogError::MySql { what, source };
    let conn = Conn::new(stream.opts.clone())
        .await
        .map_err(failed("connecting"))?;
    let request = BinlogStreamRequest::new(server_id)
        .with_filename(stream.file.as_bytes())
        .with_pos(stream.pos);
    let mut events = conn
        .get_binlog_stream(request)
        .await
        .map_err(failed("asking for the binary log"))?;
    let mut decoder = BinlogDecoder::new(stream.database.clone());
    let mut tick = tokio::time::interval(feed.interval());
    let mut first = true;
    loop {
        let event = tokio::select! {
            () = feed.stopped() => return Ok(()),
            _ = tick.tick() => {
                record_lag(feed, log).await;
                continue;
            }
            e = events.next() => e,
        };
        let Some(event) = event else {
            return Err(LogError::Ended("binary log stream"));
        };
        let event = event.map_err(failed("reading an event"))?;
        if std::mem::take(&mut first) {
            retry.reset();
            feed.worked();
            if std::mem::take(&mut stream.lost) {
                feed.reopened();
            }
        }
        read_event(&event, &events, &mut decoder, stream, feed);
    }
}

/// The lag: bytes between the log's end and what was read.
async fn record_lag(feed: &Feed, log: &BinaryLog) {
    if let Ok(now) = LogSource::end(log).await {
        feed.lag(behind(now, feed.through()));
    }
}

/// One event: decoded, its commit handed to the capture, and the read position moved on.
fn read_event(
    event: &Event,
    events: &BinlogStream,
    decoder: &mut BinlogDecoder,
    stream: &mut Stream,
    feed: &Feed,
) {
    let log_pos = u64::from(event.header().log_pos());
    feed.read_bytes(u64::from(event.header().event_size()));
    tracing::trace!(
        target: "hintaudit::proxy",
        event_type = event.header().event_type_raw(),
        log_pos,
        "capture: binary log event"
    );
    let Ok(Some(data)) = event.read_data() else {
        return;
    };
    let tme = match &data {
        EventData::RowsEvent(rows) => events.get_tme(rows.table_id()),
        _ => None,
    };
    match decoder.event(data, tme, fold(&stream.file, log_pos)) {
        Step::Rotate { file, pos } => {
            (stream.file, stream.pos) = (file, pos);
            return;
        }
        Step::Unplaced => return,
        Step::Commit(c) => feed.commits(vec![c]),
        Step::TablesChanged => {
            if let Some(installer) = &stream.installer {
                installer.rescan.notify_one();
            }
        }
        Step::Nothing => {}
    }
    // The format description event at a file's start has its own small position: never
    // move back. Inside a transaction the resume position stays before it.
    if log_pos > stream.pos {
        if !decoder.inside_transaction() {
            stream.pos = log_pos;
        }
        feed.read_through(fold(&stream.file, log_pos));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_fold_in_order() {
        assert!(fold("mariadb-bin.000002", 4) > fold("mariadb-bin.000001", 900_000));
        assert!(fold("mariadb-bin.000001", 500) > fold("mariadb-bin.000001", 499));
        assert_eq!(fold("mariadb-bin.000003", 7), (3 << 32) | 7);
        assert_eq!(fold("mariadb-bin.000003\0", 7), (3 << 32) | 7);
        assert_eq!(behind(fold("b.000003", 90), fold("b.000003", 40)), 50);
        assert_eq!(behind(fold("b.000004", 90), fold("b.000003", 40)), 90);
        assert_eq!(behind(fold("b.000003", 40), fold("b.000003", 90)), 0);
    }
}
