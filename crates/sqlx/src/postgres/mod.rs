//! The PostgreSQL backend: rows affected from the driver, and the transaction oracle (see
//! `oracle`).
//!
//! # Autocommit statements
//!
//! Under [`PgOracle::Writes`] (the default), an autocommit statement that may write (a write
//! operation, unparseable text, `CALL`, or any statement calling a function that is not a
//! known pure built-in, such as `SELECT mark_viewed($1)`) pays for the oracle only where a
//! write can hide:
//!
//! - A *direct write* (see `catalog`): one `INSERT`, `UPDATE`, `DELETE` or `INSERT ... ON
//!   CONFLICT DO NOTHING` on one plain table (no triggers, rules, inheritance, cascading
//!   foreign keys, or user functions in defaults, constraints, indexes or policies; from
//!   the catalog, cached per pool). It runs as it is; its command tag (rows affected) is
//!   recorded as the [`hintaudit_core::TransactionObservation`] the oracle would have
//!   made. No extra round trip once the table's catalog facts are cached (one, the first
//!   time and after [`catalog::TTL`] or DDL).
//! - Any other statement runs wrapped on one connection (see `wrap`): the flush of pending
//!   statistics, `BEGIN`, the statement, `SAVEPOINT` with a snapshot of the relations the
//!   transaction locked, `COMMIT` (`ROLLBACK` when it fails), each independent of the
//!   schema's size. Straight on the pool, `BEGIN` is a raw simple query and the savepoint,
//!   snapshot and `COMMIT` go as one: 2 extra round trips where the pool's test of the
//!   connection was the flush (a pool hintaudit opened, see `acquire`), 3 otherwise. On a
//!   held connection, sqlx's `BEGIN` and `COMMIT` (its rollback of a statement dropped
//!   part-way is kept for the connection's next use): 4.
//!
//! Plain `SELECT`s, `SELECT ... FOR UPDATE`, transaction control and session statements run
//! unwrapped at no cost.
//!
//! Statements that cannot run in a transaction block (`VACUUM`, `CLUSTER`, `REINDEX`,
//! `CREATE INDEX CONCURRENTLY`, `CREATE`/`DROP DATABASE` or `TABLESPACE`, subscriptions,
//! `DISCARD ALL`, texts holding their own `BEGIN`/`COMMIT`) and statements issued while the
//! connection is inside a transaction opened with a raw `BEGIN` run unwrapped and unobserved.
//! A `COMMIT` failure (deferred constraints) is returned as the statement's error, as
//! autocommit would have. A wrapped statement run straight on the pool (`fetch(&pool)`)
//! streams its rows as they arrive; its `COMMIT` and the observation come after the stream
//! ends, and a stream dropped early is finished in a spawned task (the rest of the answer
//! read and discarded, `COMMIT`, the observation), so that what the statement wrote stays,
//! as in autocommit (without a tokio runtime to spawn on, the oracle's transaction is
//! rolled back, the connection closed, and the statement recorded as failed). A failing
//! `COMMIT` then ends the stream with its error after the rows, as autocommit's implicit
//! commit does. On a held connection the stream
//! cannot be finished after a drop (the connection is borrowed), so a wrapped statement's
//! rows there are buffered until `COMMIT` answers. Direct writes and plain reads stream as
//! they arrive.
//!
//! # Audited transactions
//!
//! In an [`crate::AuditedTransaction`] the statements run as they are. Right before
//! `BEGIN` the server is asked to flush this backend's pending statistics (PostgreSQL 15 and
//! later, unless the oracle is [`PgOracle::Off`]; one round trip, none on a connection
//! straight from a pool hintaudit opened, whose test of it did so: see `acquire`): counts of earlier
//! transactions are only flushed between transactions, and after the flush the
//! transaction's counts start from zero. The oracle then reads, right before `COMMIT` or
//! `ROLLBACK` (savepoint and snapshot, one round trip), only the relations the transaction
//! locked, as in autocommit: its cost does not grow with the schema. It asks only when a
//! statement that may write and is not a direct write ran; direct writes before it are
//! recorded from their command tags (or counted by the oracle, when it asks). Before
//! PostgreSQL 15, the oracle's first snapshot (inside a released savepoint, one round trip)
//! is taken before the first such statement and both read every user relation. Nothing
//! more for a read-only transaction
//! or one that only writes directly. [`PgOracle::Always`] runs the oracle for reads too;
//! [`PgOracle::Off`] never. The savepoints make sure an oracle failure can never abort the
//! caller's transaction. A transaction dropped without `commit()`/`rollback()` cannot be
//! asked; its write statements are marked failed (rolled back). A statement that fails
//! aborts the transaction, and the oracle then does not ask at its end, unless a savepoint
//! opened before the failure is rolled back with `rollback()` (which revives the
//! transaction); a savepoint merely dropped is rolled back by sqlx later, unseen, so the
//! transaction stays unobserved and the judge falls back to statement analysis for it.
//!
//! # Catalog names
//!
//! The audited session's `search_path` is the server's to set, and its temporary schema is
//! searched first for relations: a temporary view `pg_locks`, or a schema placed before
//! `pg_catalog` with a function `pg_stat_get_xact_tuples_inserted` or an operator `>`, would
//! blind unqualified names. So every text hintaudit sends on an audited connection names
//! relations, functions and types in `pg_catalog` and spells operators
//! `OPERATOR(pg_catalog.=)` (`IN` as `= ANY`). Only the caller's relation name, in
//! `to_regclass($1)`, resolves through the session's `search_path`, as the caller's
//! statement does.

/// Connections handed out already flushed, by the pool's test of each one.
mod acquire;
mod catalog;
mod lost;
mod oracle;
/// Whether reading a relation can write: plain tables, and views proved read-only.
mod reads;
/// Which way a statement goes: wrapped in the oracle's transaction, a direct write, or past;
/// [`Backend::before`] of every statement.
mod route;
mod tx;
mod wrap;

use std::sync::Arc;

use catalog::{Catalog, Direct};
use futures_core::future::BoxFuture;
use futures_util::FutureExt;
use hintaudit_core::{AuditStage, DatabaseKind, StatementOutcome, stats};
use sqlx::error::DatabaseError;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnection, Postgres};
use sqlx::{Connection, Error};
pub use tx::PgTxState;

use crate::backend::{Answer, Backend, Ctx, InTransaction, Read, ReadOnlySql, Step, TxEnd, sealed};
use crate::classify::{SqlDialect, TxControl};
use crate::drive::Live;
use crate::execute::{Attribution, AuditedQuery, StatementEnd};
use crate::pool::options::{AuditedPoolOptions, PgOracle};
use crate::stream::Yielder;
use wrap::Opened;

/// A PostgreSQL pool's audit state: when the oracle runs, and the catalog facts of the
/// tables its statements write.
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct PgPoolState {
    catalog: Arc<Catalog>,
    oracle: PgOracle,
    /// The pool's test of the connections it hands out flushes their statistics.
    flush_on_acquire: acquire::FlushOnAcquire,
    /// Your `before_acquire`, run after that test.
    before_acquire: acquire::Kept,
}

/// A held PostgreSQL connection's audit state: whether the caller opened a transaction with
/// a raw `BEGIN` (the oracle must not wrap statements then), and whether the oracle's own
/// transaction may still be open on it (see `wrap`).
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct PgConnState {
    raw_transaction: bool,
    /// A statement taken from the pool for it alone was dropped between the oracle's raw
    /// `BEGIN` and the answer to its `COMMIT`: the connection must not go back to the pool
    /// ([`Backend::release`] closes it; the server rolls back).
    left_open: bool,
}

impl sealed::Sealed for Postgres {}

/// A statement that succeeded: `rows` affected (recorded only where the command tag is the
/// write's own, [`crate::Classification::own_row_count`]), `observed` by the oracle or not.
fn succeeded(att: &Attribution, rows: u64, observed: bool) -> StatementEnd {
    StatementEnd {
        outcome: StatementOutcome::Ok,
        rows_affected: att.class.own_row_count.then_some(rows),
        observed,
    }
}

/// Records the end of a statement ([`Attribution::finish`]), the connection's raw
/// transaction state, and for a direct write that succeeded, its evidence: at once in
/// autocommit, when the transaction ends inside one. Clears the catalog cache after DDL.
fn finish(st: &mut Rest<'_>, att: &Attribution, end: StatementEnd) {
    let ok = end.outcome == StatementOutcome::Ok;
    let mut end = end;
    if let (Some(d), true) = (&st.direct, ok) {
        let rows = end.rows_affected.unwrap_or(0);
        match st.tx.as_deref_mut() {
            Some(tx) => {
                if let Some(sink) = &att.sink {
                    tx.direct.push((sink.clone(), d.clone(), rows));
                }
            }
            None => {
                if let Some(sink) = &att.sink {
                    let obs = catalog::observation(&d.table, d.operation, rows, true);
                    sink.effects.record_transaction(obs);
                }
                end.observed = true;
            }
        }
    }
    att.finish(end);
    if catalog::changes_catalog(&att.class) {
        st.pool.catalog.clear();
        if let Some(tx) = st.tx.as_deref_mut() {
            tx.ddl = Some(st.pool.catalog.clone());
        }
    }
    if let Some(tx) = st.tx.as_deref_mut() {
        tx.aborted |= !ok;
    } else if ok {
        match att.class.tx_control {
            Some(TxControl::Begin) => *st.raw_transaction = true,
            Some(TxControl::Commit | TxControl::Rollback) => *st.raw_transaction = false,
            _ => {}
        }
    }
}

/// A PostgreSQL statement from [`Backend::before`] to [`Backend::after`] ([`Backend::Route`]):
/// its way, its attribution with the rows counted, and what [`finish`] updates.
#[doc(hidden)]
pub struct PgRoute<'e> {
    way: Way<'e>,
    /// Finishes the statement when dropped part-way, as its way says (see `route::before`).
    live: Live<u64>,
    rest: Rest<'e>,
}

/// Which way a statement runs.
enum Way<'e> {
    /// As it is, on the connection: a plain read, a direct write, inside a transaction, or
    /// the oracle off.
    Past(&'e mut PgConnection),
    /// In the oracle's transaction (see `wrap`); streamed to the caller's stream as it
    /// arrives when that stream can be finished after a drop ([`Yielder::detachable`]).
    Wrapped(Opened<'e>, Option<&'e Yielder<Step<Postgres>>>),
}

/// What [`finish`] updates when a statement ends.
struct Rest<'e> {
    /// A direct write: its command tag is the evidence, no oracle.
    direct: Option<Direct>,
    /// [`PgConnState`]'s: the caller opened a transaction with a raw `BEGIN`.
    raw_transaction: &'e mut bool,
    tx: Option<&'e mut PgTxState>,
    pool: &'e PgPoolState,
}

impl Backend for Postgres {
    const KIND: DatabaseKind = DatabaseKind::Postgres;
    const DIALECT: SqlDialect = SqlDialect::Postgres;
    type PoolState = PgPoolState;
    type ConnState = PgConnState;
    type TxState = PgTxState;
    type Route<'e> = PgRoute<'e>;
    type Rows = u64;
    const OPTIONAL_AS_STREAM: bool = true;
    const READ_ONLY: ReadOnlySql = ReadOnlySql {
        begin: Some("BEGIN READ ONLY"),
        probe: None,
        // `CASE` orders the evaluation; `OFFSET 0` keeps the old value's subquery apart.
        on: "SELECT 1 FROM (SELECT pg_catalog.current_setting('default_transaction_read_only') \
             AS old OFFSET 0) AS s WHERE CASE WHEN s.old OPERATOR(pg_catalog.=) 'off' THEN \
             pg_catalog.set_config('default_transaction_read_only', 'on', false) \
             OPERATOR(pg_catalog.=) 'on' \
             AND pg_catalog.set_config('hintaudit.read_only_set', 'on', false) \
             OPERATOR(pg_catalog.=) 'on' ELSE false END",
        off: "SELECT pg_catalog.set_config('default_transaction_read_only', 'off', false), \
              pg_catalog.set_config('hintaudit.read_only_set', '', false)",
        reset: "SELECT CASE WHEN pg_catalog.current_setting('hintaudit.read_only_set', true) \
                OPERATOR(pg_catalog.=) 'on' \
                THEN pg_catalog.set_config('default_transaction_read_only', 'off', false) \
                OPERATOR(pg_catalog.||) pg_catalog.set_config('hintaudit.read_only_set', '', false) \
                END",
        in_tx: InTransaction::Statement("SET TRANSACTION READ ONLY"),
    };

    /// `read_only_sql_transaction`, SQLSTATE `25006`.
    fn is_read_only_refusal(e: &dyn DatabaseError) -> bool {
        crate::backend::sqlstate_read_only(e)
    }

    fn pool_state(options: &AuditedPoolOptions<Self>) -> PgPoolState {
        PgPoolState {
            catalog: Arc::default(),
            oracle: options.oracle,
            flush_on_acquire: acquire::FlushOnAcquire::default(),
            before_acquire: acquire::Kept(options.before_acquire.clone()),
        }
    }

    fn on_connect(
        options: sqlx::pool::PoolOptions<Self>,
        state: &Arc<PgPoolState>,
        after_connect: Option<crate::AfterConnect<Self>>,
    ) -> sqlx::pool::PoolOptions<Self> {
        acquire::on_connect(options, state, after_connect)
    }

    async fn before<'e, 'q>(
        ctx: Ctx<'e, Self>,
        _query: &'q AuditedQuery<Self>,
        answer: &'q Answer<'e, Self>,
    ) -> Result<(PgRoute<'e>, Read), Error>
    where
        'e: 'q,
    {
        route::before(ctx, answer).await
    }

    fn statement<'r>(route: &'r mut PgRoute<'_>) -> (&'r mut PgConnection, &'r mut u64) {
        let conn = match &mut route.way {
            Way::Past(conn) => &mut **conn,
            Way::Wrapped(opened, _) => opened.conn(),
        };
        (conn, &mut route.live.rows)
    }

    async fn after<'e>(route: PgRoute<'e>, result: Result<(), Error>) -> Result<(), Error>
    where
        Self: 'e,
    {
        let PgRoute {
            way,
            mut live,
            mut rest,
        } = route;
        let (opened, y) = match way {
            Way::Past(_) => {
                live.defuse();
                let end = match &result {
                    Ok(()) => succeeded(&live.att, live.rows, false),
                    Err(_) => StatementEnd::FAILED,
                };
                finish(&mut rest, &live.att, end);
                return result;
            }
            Way::Wrapped(opened, y) => (opened, y),
        };
        let end = match result {
            Ok(()) => opened.commit(&live.att).await,
            Err(e) => {
                opened.rollback().await;
                Err(e)
            }
        };
        if let Some(y) = y {
            y.finish_on_drop(false);
        }
        live.defuse();
        match end {
            Ok(observed) => {
                finish(
                    &mut rest,
                    &live.att,
                    succeeded(&live.att, live.rows, observed),
                );
                Ok(())
            }
            Err(e) => {
                finish(&mut rest, &live.att, StatementEnd::FAILED);
                Err(e)
            }
        }
    }

    fn before_begin<'e>(
        conn: &'e mut PgConnection,
        pool: &'e PgPoolState,
        pooled: bool,
    ) -> BoxFuture<'e, Result<PgTxState, Error>> {
        async move {
            let mut tx = PgTxState::default();
            tx.oracle = pool.oracle;
            if tx.oracle == PgOracle::Off || conn.is_in_transaction() {
                return Ok(tx);
            }
            if pooled && pool.flush_on_acquire.done(conn) {
                // Flushed by the pool's test of the connection, right before.
                tx.flushed = true;
            } else if acquire::flushes(conn) {
                match oracle::flush(conn).await {
                    Ok(()) => tx.flushed = true,
                    // `BEGIN` would have read this error: it is `begin`'s (see `lost`).
                    Err(e) if lost::connection_lost(&e) => return Err(e),
                    // Not available (a privilege, say): the oracle reads every relation.
                    Err(_) => {}
                }
            }
            Ok(tx)
        }
        .boxed()
    }

    fn after_begin<'e>(conn: &'e mut PgConnection, tx: &'e mut PgTxState) -> BoxFuture<'e, ()> {
        async move {
            if tx.oracle == PgOracle::Always {
                match tx::first_snapshot(conn, tx).await {
                    Ok(s) => tx.before = Some(s),
                    Err(e) => {
                        stats().audit_error(AuditStage::Oracle, &e);
                        tx.failed = true;
                        if lost::connection_lost(&e) {
                            tx.lost = Some(e);
                        }
                    }
                }
            }
        }
        .boxed()
    }

    fn before_end<'e>(
        conn: &'e mut PgConnection,
        tx: &'e mut PgTxState,
        _state: &'e mut PgConnState,
        _pool: &'e PgPoolState,
        end: TxEnd,
    ) -> BoxFuture<'e, Option<Error>> {
        async move {
            if let Some(e) = tx.lost.take() {
                return Some(e);
            }
            let before = tx.before.take()?;
            if tx.failed || tx.aborted {
                return None; // the transaction is aborted: nothing can be asked
            }
            match oracle::snapshot_protected(conn, tx::last_scope(tx), false).await {
                Ok(after) => {
                    let committed = end == TxEnd::Commit;
                    tx.observation = Some(oracle::observe(&before, &after, committed));
                    None
                }
                Err(e) => {
                    stats().audit_error(AuditStage::Oracle, &e);
                    lost::connection_lost(&e).then_some(e)
                }
            }
        }
        .boxed()
    }

    fn savepoint_rolled_back(tx: &mut PgTxState) {
        // A savepoint exists only if `SAVEPOINT` succeeded, so the transaction was not
        // aborted when it was opened: rolling back to it revives the transaction.
        tx.aborted = false;
    }

    fn after_end(tx: &mut PgTxState, end: TxEnd, answer: &Result<(), Error>) {
        tx::ended(tx, end == TxEnd::Commit && answer.is_ok());
    }

    fn dropped_unended(tx: &mut PgTxState) {
        tx.mark_rolled_back();
    }

    /// Closes the connection instead of returning it when the oracle's raw transaction may
    /// still be open on it (see `wrap`): PostgreSQL rolls back a closed session's
    /// transaction, and the pool opens another connection in its place.
    fn release(state: &mut PgConnState, conn: &mut PoolConnection<Postgres>) {
        if std::mem::take(&mut state.left_open) {
            conn.close_on_drop();
        }
    }
}
