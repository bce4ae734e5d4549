//! The SQLite backend: statements run as they are; the connection's hooks (see `hooks`) are
//! bound to the call for the statement's duration, and for as long as a call holds the
//! connection.
//!
//! # Binding
//!
//! The hooks run on sqlx's worker thread, where task-locals are invisible, so each connection
//! has a slot that the executor binds to (the call's effects, the statement's index) before a
//! call-scoped statement runs; every row change is tagged with the binding of its moment and
//! buffered until the commit hook (recorded `committed: true`; autocommit statements fire it
//! too, before they return) or the rollback hook (`committed: false`: attempts, not changes).
//! A failed statement's buffered rows are recorded as rolled back. A single pool statement
//! unbinds when it ends; an [`crate::AuditedConnection`] or [`crate::AuditedTransaction`]
//! stays bound while the call holds it and unbinds when dropped, so an unscoped statement
//! never lands in a stale call (its rows are counted with `stats().unattributed_rows`).
//!
//! # Where the hooks come from
//!
//! On a pool hintaudit opens, every connection gets its hooks when it connects, through
//! sqlx's `after_connect` ([`Backend::on_connect`]). A pooled statement that may write then
//! claims the pool's *writer*, which every idle connection's hooks fall back to: no round
//! trip to the connection's worker thread. The claim never waits: while one statement holds
//! the writer (a write under way, or a stream still being read), another pooled write binds
//! its own connection, as on a wrapped pool, so a caller that writes through the pool while it
//! reads a stream goes on as it would unaudited. A held connection or transaction finds its
//! own connection's slot once, with `lock_handle()` (a registry keyed by the `sqlite3` handle
//! address), on its first statement that is call-scoped or may write, and binds it; an
//! unscoped one binds it to nobody, so its rows never land in a pooled write's call. On a
//! wrapped pool, whose connections hintaudit cannot hook as they connect, each call-scoped
//! pooled write finds its connection's slot (installing the hooks the first time) with one
//! `lock_handle()` round trip. Hooks set by others on a connection are replaced. Statements
//! through the raw pool and detached connections are not audited, but their rows still reach
//! the hooks: a raw write while an audited pooled write holds the writer can be attributed to
//! that write's call.
//!
//! sqlx's `lock_handle()` must be followed by a command to the worker before the next one:
//! called back to back, its unlock requests pile up and deadlock once the command channel is
//! full (about 50 in a row). Every lookup here is followed by a statement, and a statement
//! whose arguments failed to encode is not bound at all (see `bind`).
//!
//! # Cost
//!
//! Per call-scoped statement (measured with `crates/sqlx/benches/statements.rs` and the
//! workspace's `benches/overhead/`, release build, file database, a busy 2-core machine): a
//! plain `SELECT` about +1 µs over a raw statement of about 60 µs; a pooled write on a pool
//! hintaudit opened about the same (the writer and the hooks); on a wrapped pool, or while
//! the writer is claimed, add the `lock_handle()` round trip, about 15 µs.
//!
//! # Blind spots
//!
//! A statement is recorded but not marked `observed` (the judge then falls back to statement
//! analysis) for `DELETE` without `WHERE` (SQLite's truncate optimisation skips the update
//! hook), `WITHOUT ROWID` tables (detected when `sqlite3_changes()` reports rows the hook never
//! saw), and rows that `REPLACE` deletes on conflict (the judge treats an overwriting upsert
//! by statement analysis).
//!
//! With the `preupdate-hook` feature the preupdate hook also runs (see `images`): it disables
//! the truncate optimisation, so `DELETE` without `WHERE` is observed; updates carry
//! [`hintaudit_core::RowImage`]`::Unchanged` or `Changed(columns)`, with column names from
//! `PRAGMA table_info`, run by the executor (never inside a hook) once per table: before an
//! autocommit write, and after the write inside a transaction, so that it never opens a read
//! transaction ahead of the transaction's first write (the write would then fail at once with
//! `SQLITE_BUSY` instead of waiting out the busy timeout); and `nested` tells trigger writes
//! (query depth > 0).

/// Binding a statement's row changes to its call, before it runs.
mod bind;
mod columns;
mod hooks;
#[cfg(feature = "preupdate-hook")]
mod images;

use std::sync::Arc;

use futures_core::future::BoxFuture;
use futures_util::FutureExt;
use hintaudit_core::{AuditStage, DatabaseKind, StatementOutcome, stats};
use sqlx::error::DatabaseError;
use sqlx::pool::PoolOptions;
use sqlx::sqlite::{Sqlite, SqliteConnection};
use sqlx::{Connection, Error};

use crate::backend::{Answer, Backend, Ctx, InTransaction, Read, ReadOnlySql, TxEnd, sealed};
use crate::classify::{Classification, SqlDialect, TxControl, is_dml};
use crate::execute::{Attribution, AuditedQuery, StatementEnd};
use crate::guard::Guard;
use crate::pool::options::AfterConnect;

use bind::{Bound, bind, learn_images, may_open_tx};
use hooks::{Binding, Slot};

/// A held SQLite connection's hook slot, looked up on its first call-scoped statement.
/// Dropping it unbinds the connection, so a later statement of another holder never lands
/// in this call.
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct SqliteConnState {
    slot: Option<Arc<Slot>>,
    /// The lookup failed once (worker gone): do not retry on every statement.
    failed: bool,
    /// Transaction control ran through this connection as SQL (`BEGIN`, `SAVEPOINT`), which
    /// sqlx's transaction depth does not count: it may be inside a transaction. Cleared when a
    /// `COMMIT` or `ROLLBACK` succeeds (see [`may_open_tx`]).
    raw_tx: bool,
    /// A write inside a transaction whose stream was dropped before it ended, so the column
    /// names its rows need at the commit were not learned: learned before the next statement
    /// or the commit (the transaction holds the write lock by then).
    owed: Option<Arc<Classification>>,
}

impl Drop for SqliteConnState {
    fn drop(&mut self) {
        if let Some(slot) = &self.slot {
            slot.bind(Binding::Pool);
        }
    }
}

impl sealed::Sealed for Sqlite {}

/// A statement under way ([`Backend::Route`]): its connection and state, its [`Finish`],
/// and whether row-image column names are owed once it has run.
#[doc(hidden)]
pub struct Started<'e> {
    conn: &'e mut SqliteConnection,
    state: &'e mut SqliteConnState,
    fin: Finish<'e>,
    learn_after: bool,
}

/// [`Backend::before`]: binds the statement, and opens its [`Finish`].
async fn start<'e>(ctx: Ctx<'e, Sqlite>, query: &AuditedQuery<Sqlite>) -> Started<'e> {
    let Ctx {
        conn,
        state,
        pool: registry,
        att,
        pooled,
        ..
    } = ctx;
    state.raw_tx |= may_open_tx(&att.class);
    if let Some(owed) = state.owed.take() {
        learn_images(conn, registry, &owed).await;
    }
    // Inside a transaction, column names are learned after the write: see `bind`.
    let defer = !pooled && (state.raw_tx || conn.is_in_transaction());
    let bound = bind(conn, state, registry, &att, query, pooled, defer).await;
    let learn_after = defer && matches!(bound, Bound::Slot(_));
    let fin = Finish {
        att,
        bound: Guard::new(bound, dangle),
        registry,
        pooled,
        outcome: StatementOutcome::Ok,
        rows: 0,
    };
    Started {
        conn,
        state,
        fin,
        learn_after,
    }
}

impl Started<'_> {
    /// After the statement succeeded: learns the column names it owes, and notes a `COMMIT`
    /// or `ROLLBACK` that ended a transaction begun as SQL.
    async fn succeeded(&mut self) {
        if self.learn_after {
            learn_images(self.conn, self.fin.registry, &self.fin.att.class).await;
            self.learn_after = false;
        }
        if matches!(
            self.fin.att.class.tx_control,
            Some(TxControl::Commit | TxControl::Rollback)
        ) {
            self.state.raw_tx = false;
        }
    }
}

impl Drop for Started<'_> {
    /// A statement that owed column names and did not get to learn them (its stream was
    /// dropped) leaves them owed to the next statement or the commit, when it wrote rows:
    /// only then are there rows to name, and only then does the transaction hold the write
    /// lock that makes learning them safe.
    fn drop(&mut self) {
        if let (true, Bound::Slot(slot)) = (self.learn_after, &*self.fin.bound)
            && slot.seen() > 0
        {
            self.state.owed = Some(self.fin.att.class.clone());
        }
    }
}

/// Finishes a statement when dropped: normally, or when the caller dropped the stream (not a
/// failure). Error paths set `outcome` to failed first.
struct Finish<'e> {
    att: Attribution,
    /// Defused once SQLite answered the statement to its end (or with its error); dropped
    /// armed when the caller dropped it while the worker may still run it: see [`dangle`].
    bound: Guard<Bound, fn(&mut Bound)>,
    registry: &'e hooks::Registry,
    pooled: bool,
    outcome: StatementOutcome,
    rows: u64,
}

/// A statement dropped before SQLite answered: the writer's claim must outlive it (after
/// [`Finish`] recorded it).
fn dangle(bound: &mut Bound) {
    if let Bound::Writer(guard) = std::mem::replace(bound, Bound::Nothing) {
        guard.dangle();
    }
}

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        let class = &self.att.class;
        let seen = match &*self.bound {
            Bound::Nothing => None,
            Bound::Slot(slot) => Some(slot.seen()),
            Bound::Writer(guard) => Some(guard.seen()),
        };
        let observed = seen.is_some_and(|seen| {
            let truncate = class.delete_without_where && !cfg!(feature = "preupdate-hook");
            // The hooks are blind to some writes (truncate optimisation, WITHOUT ROWID):
            // sqlite3_changes() reporting rows the hook never saw says so, for every
            // statement that is not proved read-only, parsed or not (a `DELETE` without
            // `WHERE` in a text sqlparser cannot read). After a statement that is not DML the
            // count may be stale (it is the last DML's): such a text is then unobserved
            // (likely), never passed.
            let counted = self.rows > 0 && (is_dml(class.effect.operation) || !class.parsed);
            let blind = seen == 0 && (truncate || counted);
            !blind
        });
        if let (StatementOutcome::Failed, Some(sink)) = (self.outcome, &self.att.sink) {
            match &*self.bound {
                Bound::Nothing => {}
                Bound::Slot(slot) => slot.abort_statement(sink),
                Bound::Writer(_) => self.registry.abort_statement(sink),
            }
        }
        // Rows affected stay `None`: SQLite's count is stale after a statement that changed
        // none.
        self.att.finish(StatementEnd {
            outcome: self.outcome,
            rows_affected: None,
            observed,
        });
        // A pooled statement releases its binding (or the pool's writer) here; a held
        // connection stays bound until its next statement or until it is dropped.
        if let (true, Bound::Slot(slot)) = (self.pooled, &*self.bound) {
            slot.bind(Binding::Pool);
        }
    }
}

impl Backend for Sqlite {
    const KIND: DatabaseKind = DatabaseKind::Sqlite;
    const DIALECT: SqlDialect = SqlDialect::Sqlite;
    type PoolState = hooks::Registry;
    type ConnState = SqliteConnState;
    type TxState = ();
    type Route<'e> = Started<'e>;
    type Rows = u64;
    const READ_ONLY: ReadOnlySql = ReadOnlySql {
        begin: None,
        probe: Some("SELECT 1 FROM pragma_query_only WHERE query_only = 0"),
        on: "PRAGMA query_only = ON",
        off: "PRAGMA query_only = OFF",
        reset: "PRAGMA query_only = OFF",
        in_tx: InTransaction::Session,
    };

    /// `SQLITE_READONLY` (8, and its extended codes).
    fn is_read_only_refusal(e: &dyn DatabaseError) -> bool {
        e.code()
            .as_deref()
            .and_then(|c| c.parse::<i32>().ok())
            .is_some_and(|c| c & 0xff == 8)
            || e.message().contains("readonly database")
    }

    fn on_connect(
        options: PoolOptions<Self>,
        registry: &Arc<hooks::Registry>,
        after_connect: Option<AfterConnect<Self>>,
    ) -> PoolOptions<Self> {
        registry.install_at_connect();
        let registry = registry.clone();
        options.after_connect(move |conn, meta| {
            let registry = registry.clone();
            let after_connect = after_connect.clone();
            Box::pin(async move {
                // Followed by the connection's first command, as `lock_handle()` needs (see
                // `bind`).
                match conn.lock_handle().await {
                    Ok(mut handle) => drop(registry.slot(&mut handle)),
                    Err(e) => stats().audit_error(AuditStage::Hook, &e),
                }
                match after_connect {
                    Some(callback) => callback(conn, meta).await,
                    None => Ok(()),
                }
            })
        })
    }

    async fn before<'e, 'q>(
        ctx: Ctx<'e, Self>,
        query: &'q AuditedQuery<Self>,
        answer: &'q Answer<'e, Self>,
    ) -> Result<(Started<'e>, Read), Error>
    where
        'e: 'q,
    {
        let run = start(ctx, query).await;
        let read = match answer {
            // sqlx's own fetch_optional, so that the statement stops at its first row as it
            // does unaudited: in a text of several statements, those after the row never
            // run. The driver's row count is not read then; a write that returned a row
            // (RETURNING) counts as one, so that hooks that saw none are known to be blind.
            Answer::First(_) => Read::FirstRow {
                counts_row: is_dml(run.fin.att.class.effect.operation),
            },
            _ => Read::Drain,
        };
        Ok((run, read))
    }

    fn statement<'r>(run: &'r mut Started<'_>) -> (&'r mut SqliteConnection, &'r mut u64) {
        (&mut *run.conn, &mut run.fin.rows)
    }

    async fn after<'e>(mut run: Started<'e>, result: Result<(), Error>) -> Result<(), Error>
    where
        Self: 'e,
    {
        run.fin.bound.defuse();
        match result {
            Ok(()) => {
                run.succeeded().await;
                Ok(())
            }
            Err(e) => {
                run.fin.outcome = StatementOutcome::Failed;
                Err(e)
            }
        }
    }

    fn before_end<'e>(
        conn: &'e mut SqliteConnection,
        _tx: &'e mut (),
        state: &'e mut SqliteConnState,
        registry: &'e hooks::Registry,
        _end: TxEnd,
    ) -> BoxFuture<'e, Option<Error>> {
        async move {
            if let Some(owed) = state.owed.take() {
                learn_images(conn, registry, &owed).await;
            }
            None
        }
        .boxed()
    }

    fn mark_acquired<'e>(
        conn: &'e mut SqliteConnection,
        state: &'e mut SqliteConnState,
        registry: &'e hooks::Registry,
        call: Option<Arc<hintaudit_core::CallEffects>>,
    ) -> BoxFuture<'e, ()> {
        let binding = match call {
            None => Binding::SetUp,
            Some(effects) => Binding::Held(Some(crate::execute::Sink {
                effects,
                index: None,
            })),
        };
        async move {
            if let Some(slot) = &state.slot {
                slot.bind(binding);
                return;
            }
            if state.failed {
                return;
            }
            match conn.lock_handle().await {
                Ok(mut handle) => {
                    let slot = registry.slot(&mut handle);
                    slot.bind(binding);
                    state.slot = Some(slot);
                }
                Err(e) => {
                    state.failed = true;
                    stats().audit_error(AuditStage::Hook, &e);
                }
            }
            // `lock_handle()` must be followed by a command to the worker (see the module
            // docs), and the caller may hand the connection back without one.
            if let Err(e) = conn.ping().await {
                stats().audit_error(AuditStage::Hook, &e);
            }
        }
        .boxed()
    }
}
