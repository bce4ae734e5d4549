//! Connections handed out already flushed: in a pool hintaudit opens, on PostgreSQL 15 and
//! later, the test sqlx makes of each idle connection it hands out (`test_before_acquire`,
//! on by default: a `Sync` round trip) becomes `SELECT pg_stat_force_next_flush()`, one
//! round trip as well. The server flushes the session's pending statistics when it goes idle
//! at the end of that query, outside a transaction (see `oracle::flush`), so a statement or
//! a transaction on a connection straight from the pool starts from zero without a flush of
//! its own: the oracle's `BEGIN` is its first round trip ([design: evidence]).
//!
//! A new connection is handed out without that test: it has no pending counts, unless your
//! `after_connect` wrote, so a flush follows your callback when there is one. A pool hintaudit
//! did not open ([`crate::AuditedPoolOptions::wrap`]), one whose `test_before_acquire` is
//! off, a held connection (your statements through [`crate::AuditedConnection::inner_mut`]
//! are not seen) and PostgreSQL before 15 keep the flush right before `BEGIN`.
//!
//! [design: evidence]: ../../../../docs/design.md#3-evidence

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::FutureExt;
use hintaudit_core::{AuditStage, stats};
use sqlx::pool::PoolOptions;
use sqlx::postgres::{PgConnection, Postgres};
use sqlx::{Connection, Error};

use super::PgPoolState;
use super::oracle;
use crate::pool::options::{AfterConnect, BeforeAcquire, PgOracle};

/// Whether a pool's test of the connections it hands out flushes their statistics.
#[derive(Debug, Default)]
pub(super) struct FlushOnAcquire(AtomicBool);

impl FlushOnAcquire {
    /// Whether `conn`, straight from the pool, holds no pending counts of earlier
    /// transactions: the pool flushes on acquire, and the server can (15 and later).
    pub(super) fn done(&self, conn: &PgConnection) -> bool {
        self.0.load(Ordering::Relaxed) && flushes(conn)
    }
}

/// PostgreSQL 15 and later: `pg_stat_force_next_flush()` exists.
pub(super) fn flushes(conn: &PgConnection) -> bool {
    conn.server_version_num().is_some_and(|v| v >= 150_000)
}

/// [`crate::Backend::on_connect`] for PostgreSQL: where the pool tests the connections it
/// hands out and the oracle is on, that test made a flush, then your
/// [`crate::AuditedPoolOptions::before_acquire`] (kept in `state`); and your `after_connect`,
/// followed by a flush when the pool's test flushes.
pub(super) fn on_connect(
    options: PoolOptions<Postgres>,
    state: &Arc<PgPoolState>,
    after_connect: Option<AfterConnect<Postgres>>,
) -> PoolOptions<Postgres> {
    let options = match after_connect {
        Some(callback) => {
            let state = state.clone();
            options.after_connect(move |conn, meta| {
                let (callback, state) = (callback.clone(), state.clone());
                async move {
                    callback(conn, meta).await?;
                    // What your callback wrote must not count in the first statement's
                    // reading, where that statement counts on the pool's flush.
                    if !state.flush_on_acquire.done(conn) {
                        return Ok(());
                    }
                    flush(conn, &state.flush_on_acquire).await.map(|_| ())
                }
                .boxed()
            })
        }
        None => options,
    };
    if state.oracle == PgOracle::Off || !options.get_test_before_acquire() {
        return options;
    }
    state.flush_on_acquire.0.store(true, Ordering::Relaxed);
    let state = state.clone();
    options
        .test_before_acquire(false)
        .before_acquire(move |conn, meta| {
            let state = state.clone();
            async move {
                test(conn, &state.flush_on_acquire).await?;
                match &state.before_acquire.0 {
                    Some(callback) => callback(conn, meta).await,
                    None => Ok(true),
                }
            }
            .boxed()
        })
}

/// The test of an idle connection about to be handed out: the flush where the server has
/// it, sqlx's ping otherwise. An error when the connection is gone (the pool then closes it
/// and takes another, as after a failed ping).
async fn test(conn: &mut PgConnection, on: &FlushOnAcquire) -> Result<(), Error> {
    if !flushes(conn) {
        return conn.ping().await;
    }
    flush(conn, on).await.map(|_| ())
}

/// [`oracle::flush`], a failure that leaves the connection usable counted and not returned
/// (a revoked privilege, say: the pool stops counting on its flush, `on` turned off).
/// `Ok(false)` when it did not flush.
async fn flush(conn: &mut PgConnection, on: &FlushOnAcquire) -> Result<bool, Error> {
    if !flushes(conn) {
        return Ok(false);
    }
    match oracle::flush(conn).await {
        Ok(()) => Ok(true),
        Err(e) if super::lost::connection_lost(&e) => Err(e),
        Err(e) => {
            stats().audit_error(AuditStage::Oracle, &e);
            on.0.store(false, Ordering::Relaxed);
            Ok(false)
        }
    }
}

/// The kept [`BeforeAcquire`] callback, shown only as being there.
#[derive(Default, Clone)]
pub(super) struct Kept(pub(super) Option<BeforeAcquire<Postgres>>);

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Some(..)" } else { "None" })
    }
}
