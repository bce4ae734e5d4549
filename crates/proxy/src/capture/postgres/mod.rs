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

pub mod decode;
mod install;
mod keys;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgConnection, Row};

use crate::capture::writer::enable_child_names;
use crate::capture::{CaptureError, Commit, Lsn, Shared, capture_error, lock};
use decode::{Decoder, format_lsn, parse_lsn};

/// Reads the log positions around calls, on connections of their own.
#[derive(Debug)]
pub(crate) struct Positions {
    pool: PgPool,
}

impl Positions {
    /// The position a call ended at: the WAL flush position (every commit that had returned
    /// to its client, with synchronous_commit on, ends at or before it).
    pub(crate) async fn end(&self) -> Result<Lsn, sqlx::Error> {
        self.read("SELECT pg_current_wal_flush_lsn()::text").await
    }

    async fn read(&self, sql: &'static str) -> Result<Lsn, sqlx::Error> {
        let text: String = sqlx::query_scalar(sql).fetch_one(&self.pool).await?;
        parse_lsn(&text).ok_or_else(|| sqlx::Error::Protocol(format!("bad LSN {text:?}")))
    }
}

/// The slot's session, and where it started.
pub(crate) struct Source {
    options: PgConnectOptions,
    conn: PgConnection,
    slot: String,
    start: Lsn,
    /// When the slot's lag was last read: at most once per [`CaptureOptions::interval`].
    ///
    /// [`CaptureOptions::interval`]: super::CaptureOptions
    lag_read: Option<tokio::time::Instant>,
}

impl Source {
    pub(crate) fn start(&self) -> Lsn {
        self.start
    }
}

static SLOTS: AtomicU64 = AtomicU64::new(0);

fn db_error(what: &'static str) -> impl FnOnce(sqlx::Error) -> CaptureError {
    move |source| CaptureError::Database { what, source }
}

/// Connects, checks the prerequisites and creates the slot.
pub(crate) async fn open(url: &str) -> Result<(Positions, Source), CaptureError> {
    let options: PgConnectOptions = url
        .parse()
        .map_err(db_error("parsing the --database URL"))?;
    let options = options.application_name("hintaudit-proxy");
    let (source, superuser) = open_slot(&options).await?;
    // No ping before each position read (sqlx's default test on acquire): it doubled the
    // round trips a call's start may wait for (settle.rs), and a broken connection fails the
    // read itself, which the reader counts and retries.
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .test_before_acquire(false)
        .acquire_timeout(Duration::from_secs(5))
        .connect_with(options.clone())
        .await
        .map_err(db_error("connecting to PostgreSQL"))?;
    name_writers(&pool, superuser).await;
    Ok((Positions { pool }, source))
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
async fn open_slot(options: &PgConnectOptions) -> Result<(Source, bool), CaptureError> {
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
    let source = Source {
        options: options.clone(),
        conn,
        slot,
        start,
        lag_read: None,
    };
    Ok((source, superuser))
}

/// Reads the slot until stopped; on a lost session (terminated backend, restart), opens a
/// new slot, records the gap and goes on.
pub(crate) async fn run(mut source: Source, shared: Arc<Shared>) {
    let mut decoder = Decoder::default();
    let mut last_read: Option<tokio::time::Instant> = None;
    loop {
        tokio::select! {
            () = shared.stop.cancelled() => break,
            () = shared.wake.notified() => {}
            () = tokio::time::sleep(shared.options.interval) => {}
        }
        // Calls that end within the gap share the next read (CaptureOptions::read_gap).
        if let Some(at) = last_read {
            tokio::select! {
                () = shared.stop.cancelled() => break,
                () = tokio::time::sleep_until(at + shared.options.read_gap) => {}
            }
        }
        shared.unheld().await;
        last_read = Some(tokio::time::Instant::now());
        match poll(&mut source, &mut decoder, &shared).await {
            Ok(()) => {}
            Err(e) => {
                capture_error("reading the slot", &e);
                source = match reopen(&source.options, &shared).await {
                    Some(s) => s,
                    None => break,
                };
                decoder = Decoder::default();
                shared.reopened.fetch_add(1, Ordering::Relaxed);
                let from = shared.skip_to(source.start);
                tracing::warn!(
                    target: "hintaudit::proxy",
                    "capture: the slot was lost and a new one made; changes committed \
                     between {from:#x} and {:#x} were not read (calls in flight then are \
                     marked incomplete)",
                    source.start
                );
            }
        }
    }
    let _ = source.conn.close().await;
}

/// Reopens the slot, retrying every second until it works or the capture stops.
async fn reopen(options: &PgConnectOptions, shared: &Shared) -> Option<Source> {
    loop {
        match open_slot(options).await {
            Ok((s, _)) => return Some(s),
            Err(e) => capture_error("reopening the slot", &e),
        }
        tokio::select! {
            () = shared.stop.cancelled() => return None,
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

/// One read: everything committed up to a flush position (at most a batch), into the
/// ledger; then the lag, at most once per interval. The position is the one calls wait for
/// ([`Shared::want`], read at their ends) when the capture has not read that far, so a
/// call's read costs one query; else (the timer's read) the flush position now.
async fn poll(
    source: &mut Source,
    decoder: &mut Decoder,
    shared: &Shared,
) -> Result<(), sqlx::Error> {
    let upto_lsn = upto(source, shared).await?;
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
        .bind(&source.slot)
        .bind(&upto)
        .bind(shared.options.batch as i32)
        .fetch_all(&mut source.conn)
        .await?;
        let full = rows.len() >= shared.options.batch as usize;
        let unknown = decoder.unknown_tables(rows.iter().map(|r| r.get::<&str, _>(1)));
        if !unknown.is_empty() {
            keys::learn(&mut source.conn, decoder, unknown).await;
        }
        let commits: Vec<Commit> = rows
            .iter()
            .filter_map(|row| {
                let lsn = parse_lsn(&row.get::<String, _>(0)).unwrap_or(0);
                if let Some(at) = row.get::<Option<f64>, _>(2) {
                    shared.times.logged(lsn, at);
                }
                decoder.row(lsn, &row.get::<String, _>(1))
            })
            .collect();
        let last_commit = commits.last().map(|c| c.lsn);
        // Whose each commit is, before the ledger is locked: it may read /proc.
        let origins: Vec<_> = commits
            .iter()
            .map(|c| shared.identify.origin(c.writer.as_ref()))
            .collect();
        {
            let mut ledger = lock(&shared.ledger);
            for (commit, origin) in commits.into_iter().zip(origins) {
                ledger.decoded(commit, origin);
            }
        }
        let through = if full {
            last_commit.unwrap_or(0)
        } else {
            upto_lsn
        };
        let before = *shared.decoded.borrow();
        shared
            .read_bytes
            .fetch_add(through.saturating_sub(before), Ordering::Relaxed);
        shared.decoded.send_modify(|d| *d = (*d).max(through));
        if !full {
            break;
        }
    }
    read_lag(source, shared).await
}

/// How far a read goes: the position calls wait for, when the capture has not read that far;
/// else the flush position now.
async fn upto(source: &mut Source, shared: &Shared) -> Result<Lsn, sqlx::Error> {
    let wanted = shared.wanted.load(Ordering::Acquire);
    if wanted > *shared.decoded.borrow() {
        return Ok(wanted);
    }
    let now: String = sqlx::query_scalar("SELECT pg_current_wal_flush_lsn()::text")
        .fetch_one(&mut source.conn)
        .await?;
    Ok(parse_lsn(&now).unwrap_or(0))
}

/// The slot's lag (`hintaudit_capture_lag_bytes`), read at most once per interval.
async fn read_lag(source: &mut Source, shared: &Shared) -> Result<(), sqlx::Error> {
    if source
        .lag_read
        .is_some_and(|at| at.elapsed() < shared.options.interval)
    {
        return Ok(());
    }
    source.lag_read = Some(tokio::time::Instant::now());
    let lag: Option<i64> = sqlx::query_scalar(
        "SELECT (pg_current_wal_lsn() - confirmed_flush_lsn)::bigint FROM pg_replication_slots \
         WHERE slot_name = $1",
    )
    .bind(&source.slot)
    .fetch_optional(&mut source.conn)
    .await?
    .flatten();
    shared
        .lag
        .store(lag.unwrap_or(0).max(0) as u64, Ordering::Relaxed);
    Ok(())
}
