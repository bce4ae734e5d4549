//! PostgreSQL: logical decoding through a temporary slot, read with the SQL interface
//! (`pg_logical_slot_get_changes`) and the `test_decoding` plugin that ships with PostgreSQL.
//!
//! Why not the streaming replication protocol, yet: its Rust clients bring a second
//! PostgreSQL driver and TLS stack (`pg_walstream`: libpq) or speak pgoutput only, which needs
//! a publication (`pgwire-replication`), for what one SQL function gives over the sqlx
//! connection the workspace already has. The SQL interface reads whole transactions, in
//! commit order, up to a position we name, which is exactly what attribution needs; it is
//! polled (every
//! [`CaptureOptions::interval`](super::CaptureOptions), and when a call's end shows the log
//! moved, at most once per [`CaptureOptions::read_gap`](super::CaptureOptions)) rather than
//! pushed. `test_decoding`'s text is parsed in decode.rs: that is the part a pgoutput library
//! would have done for us.
//!
//! Its cost: each read decodes the WAL again from the slot's `restart_lsn`, which the server
//! moves only when it logs its running transactions (every 15 s of activity, and at
//! checkpoints). Hence the gap between reads that calls wake; the streaming protocol, which
//! keeps one decoding context, is the way past it (docs/design.md, *The proxy's evidence*).
//!
//! The slot is temporary: PostgreSQL drops it when its session ends, cleanly or not, so a
//! crashed proxy leaves no slot holding WAL. Every read consumes what it returned (the slot's
//! position advances), so the database keeps only what has not been read yet: the lag,
//! exported as a metric.

mod decode;
mod install;
mod keys;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hintaudit_core::DatabaseKind;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgConnection, Row};

use crate::capture::feed::Feed;
use crate::capture::source::{LogError, LogSource, Opened};
use crate::capture::trouble::Retry;
use crate::capture::writer::enable_child_names;
use crate::capture::{CaptureError, Commit, Lsn, capture_error};
use decode::{Decoder, format_lsn, parse_lsn};

/// PostgreSQL's log, read through a temporary logical slot; the positions at calls' ends are
/// read on connections of their own.
#[derive(Debug)]
pub(crate) struct Slot {
    /// The positions' connections.
    pool: PgPool,
    /// How the slot's session connects, again when it is lost.
    options: PgConnectOptions,
}

impl LogSource for Slot {
    const KIND: DatabaseKind = DatabaseKind::Postgres;
    type Reader = SlotSession;

    /// Connects, checks the prerequisites and creates the slot.
    async fn open(url: &str) -> Result<Opened<Slot>, CaptureError> {
        let options: PgConnectOptions = url
            .parse()
            .map_err(db_error("parsing the --database URL"))?;
        let options = options.application_name("hintaudit-proxy");
        let (session, superuser) = open_slot(&options).await?;
        // No ping before each position read (sqlx's default test on acquire): it doubled the
        // round trips a call's start may wait for (settle.rs), and a broken connection fails
        // the read itself, which the reader counts and retries.
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .test_before_acquire(false)
            .acquire_timeout(Duration::from_secs(5))
            .connect_with(options.clone())
            .await
            .map_err(db_error("connecting to PostgreSQL"))?;
        name_writers(&pool, superuser).await;
        Ok(Opened {
            start: session.start,
            source: Slot { pool, options },
            reader: session,
        })
    }

    /// The WAL flush position: every commit that had returned to its client, with
    /// synchronous_commit on, ends at or before it.
    async fn end(&self) -> Result<Lsn, LogError> {
        let what = "reading the WAL flush position";
        let text: String = sqlx::query_scalar("SELECT pg_current_wal_flush_lsn()::text")
            .fetch_one(&self.pool)
            .await
            .map_err(|source| LogError::Postgres { what, source })?;
        parse_lsn(&text).ok_or(LogError::Position { what, text })
    }

    async fn read(self: Arc<Slot>, session: SlotSession, feed: Feed) {
        run(&self.options, session, feed).await;
    }
}

/// The slot's session, and where it started.
pub(crate) struct SlotSession {
    conn: PgConnection,
    slot: String,
    start: Lsn,
    /// When the slot's lag was last read: at most once per
    /// [`CaptureOptions::interval`](crate::capture::CaptureOptions).
    lag_read: Option<tokio::time::Instant>,
}

static SLOTS: AtomicU64 = AtomicU64::new(0);

fn db_error(what: &'static str) -> impl FnOnce(sqlx::Error) -> CaptureError {
    move |source| CaptureError::Database { what, source }
}

/// Installs the writer trigger and names the children by it; without it (no `CREATE` on the
/// database) every commit is settled by position, as it is logged.
async fn name_writers(pool: &PgPool, superuser: bool) {
    match install::install(pool, superuser).await {
        Ok(done) => {
            enable_child_names();
            tracing::info!(
                target: "hintaudit::proxy",
                tables = done.tables,
                refused = ?done.refused,
                new_tables = done.new_tables,
                "capture: writer trigger installed (commits name their writer)"
            );
            if !done.new_tables {
                tracing::warn!(
                    target: "hintaudit::proxy",
                    "capture: no event trigger (it needs a superuser): tables created after \
                     start-up have no writer trigger until the proxy starts again, and their \
                     commits are settled by position"
                );
            }
        }
        Err(e) => capture_error(
            "installing the writer trigger (commits are settled by position)",
            &e,
        ),
    }
}

/// Opens the slot's session and its slot; whether the role is a superuser.
async fn open_slot(options: &PgConnectOptions) -> Result<(SlotSession, bool), CaptureError> {
    let mut conn = options
        .connect()
        .await
        .map_err(db_error("connecting to PostgreSQL"))?;
    let wal_level: String = sqlx::query_scalar("SHOW wal_level")
        .fetch_one(&mut conn)
        .await
        .map_err(db_error("reading wal_level"))?;
    if wal_level != "logical" {
        return Err(CaptureError::Prerequisite(format!(
            "PostgreSQL's wal_level is {wal_level}: the proxy reads changes by logical \
             decoding, which needs wal_level = logical (ALTER SYSTEM SET wal_level = logical, \
             then restart PostgreSQL) and a role with REPLICATION"
        )));
    }
    let row = sqlx::query(
        "SELECT current_user::text, rolreplication OR rolsuper, rolsuper FROM pg_roles \
         WHERE rolname = current_user",
    )
    .fetch_one(&mut conn)
    .await
    .map_err(db_error("reading the role's attributes"))?;
    let (role, may, superuser): (String, bool, bool) = (row.get(0), row.get(1), row.get(2));
    if !may {
        return Err(CaptureError::Prerequisite(format!(
            "role {role} has no REPLICATION attribute: logical decoding needs it \
             (ALTER ROLE {role} REPLICATION), with wal_level = logical"
        )));
    }
    let slot = format!(
        "hintaudit_proxy_{}_{}",
        std::process::id(),
        SLOTS.fetch_add(1, Ordering::Relaxed)
    );
    let start: String = sqlx::query_scalar(
        "SELECT lsn::text FROM pg_create_logical_replication_slot($1, 'test_decoding', true)",
    )
    .bind(&slot)
    .fetch_one(&mut conn)
    .await
    .map_err(db_error("creating a temporary logical replication slot"))?;
    let start = parse_lsn(&start).unwrap_or(0);
    tracing::info!(target: "hintaudit::proxy", slot, "capture: logical decoding from {start:#x}");
    let session = SlotSession {
        conn,
        slot,
        start,
        lag_read: None,
    };
    Ok((session, superuser))
}

/// Reads the slot until stopped; on a lost session (terminated backend, restart), opens a
/// new slot, records the gap and goes on. The outage ends once a read works again.
async fn run(options: &PgConnectOptions, mut session: SlotSession, feed: Feed) {
    let mut decoder = Decoder::default();
    let mut last_read: Option<tokio::time::Instant> = None;
    let mut retry = Retry::new();
    let mut failing = false;
    loop {
        tokio::select! {
            () = feed.stopped() => break,
            () = feed.woken() => {}
            () = tokio::time::sleep(feed.interval()) => {}
        }
        // Calls that end within the gap share the next read (CaptureOptions::read_gap).
        if let Some(at) = last_read {
            tokio::select! {
                () = feed.stopped() => break,
                () = tokio::time::sleep_until(at + feed.read_gap()) => {}
            }
        }
        feed.unheld().await;
        last_read = Some(tokio::time::Instant::now());
        match poll(&mut session, &mut decoder, &feed).await {
            Ok(()) => {
                if failing {
                    failing = false;
                    retry.reset();
                    feed.worked();
                }
            }
            Err(e) => {
                failing = true;
                feed.failed("reading the slot", &e);
                session = match reopen(options, &feed, &mut retry).await {
                    Some(s) => s,
                    None => break,
                };
                decoder = Decoder::default();
                feed.reopened();
                let from = feed.gap(session.start);
                tracing::warn!(
                    target: "hintaudit::proxy",
                    "capture: the slot was lost and a new one made; changes committed \
                     between {from:#x} and {:#x} were not read (calls in flight then are \
                     marked incomplete)",
                    session.start
                );
            }
        }
    }
    let _ = session.conn.close().await;
}

/// Reopens the slot at once, then on `retry`'s backoff until it works or the capture stops.
async fn reopen(options: &PgConnectOptions, feed: &Feed, retry: &mut Retry) -> Option<SlotSession> {
    loop {
        match open_slot(options).await {
            Ok((s, _)) => return Some(s),
            Err(e) => feed.failed("reopening the slot", &e),
        }
        tokio::select! {
            () = feed.stopped() => return None,
            () = tokio::time::sleep(retry.next_delay()) => {}
        }
    }
}

/// One read: everything committed up to a flush position (at most a batch), fed to the
/// capture; then the lag, at most once per interval. The position is the one calls wait for
/// ([`Feed::wanted`], read at their ends) when the capture has not read that far, so a
/// call's read costs one query; else (the timer's read) the flush position now.
async fn poll(
    session: &mut SlotSession,
    decoder: &mut Decoder,
    feed: &Feed,
) -> Result<(), sqlx::Error> {
    let upto_lsn = upto(session, feed).await?;
    let upto = format_lsn(upto_lsn);
    loop {
        // A COMMIT row ends `(at TIMESTAMP)` with `include-timestamp`: read back as Unix
        // seconds by the server that wrote it, for the commit-to-finding latency.
        let rows = sqlx::query(
            "SELECT lsn::text, data, CASE WHEN data LIKE 'COMMIT %' THEN extract(epoch FROM \
             substring(data FROM '\\(at (.+)\\)$')::timestamptz)::float8 END \
             FROM pg_logical_slot_get_changes($1, $2::pg_lsn, $3, \
             'skip-empty-xacts', '1', 'include-timestamp', '1')",
        )
        .bind(&session.slot)
        .bind(&upto)
        .bind(feed.batch() as i32)
        .fetch_all(&mut session.conn)
        .await?;
        let full = rows.len() >= feed.batch() as usize;
        let unknown = decoder.unknown_tables(rows.iter().map(|r| r.get::<&str, _>(1)));
        if !unknown.is_empty() {
            keys::learn(&mut session.conn, decoder, unknown).await;
        }
        let commits: Vec<Commit> = rows
            .iter()
            .filter_map(|row| {
                let lsn = parse_lsn(&row.get::<String, _>(0)).unwrap_or(0);
                if let Some(at) = row.get::<Option<f64>, _>(2) {
                    feed.commit_time(lsn, at);
                }
                decoder.row(lsn, &row.get::<String, _>(1))
            })
            .collect();
        let last_commit = commits.last().map(|c| c.lsn);
        feed.commits(commits);
        let through = if full {
            last_commit.unwrap_or(0)
        } else {
            upto_lsn
        };
        // The WAL decoded: the slot reads the whole cluster's WAL up to `through`.
        let moved = feed.read_through(through);
        feed.read_bytes(moved);
        if !full {
            break;
        }
    }
    read_lag(session, feed).await
}

/// How far a read goes: the position calls wait for, when the capture has not read that far;
/// else the flush position now.
async fn upto(session: &mut SlotSession, feed: &Feed) -> Result<Lsn, sqlx::Error> {
    if let Some(wanted) = feed.wanted() {
        return Ok(wanted);
    }
    let now: String = sqlx::query_scalar("SELECT pg_current_wal_flush_lsn()::text")
        .fetch_one(&mut session.conn)
        .await?;
    Ok(parse_lsn(&now).unwrap_or(0))
}

/// The slot's lag (`hintaudit_capture_lag_bytes`), read at most once per interval.
async fn read_lag(session: &mut SlotSession, feed: &Feed) -> Result<(), sqlx::Error> {
    if session
        .lag_read
        .is_some_and(|at| at.elapsed() < feed.interval())
    {
        return Ok(());
    }
    session.lag_read = Some(tokio::time::Instant::now());
    let lag: Option<i64> = sqlx::query_scalar(
        "SELECT (pg_current_wal_lsn() - confirmed_flush_lsn)::bigint FROM pg_replication_slots \
         WHERE slot_name = $1",
    )
    .bind(&session.slot)
    .fetch_optional(&mut session.conn)
    .await?
    .flatten();
    feed.lag(lag.unwrap_or(0).max(0) as u64);
    Ok(())
}
