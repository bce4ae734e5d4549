//! The PostgreSQL backend: rows affected from the driver, and the transaction oracle.
//!
//! An autocommit statement that may write runs wrapped as `BEGIN; snapshot; statement;
//! snapshot; COMMIT` on one connection (ROLLBACK on error); a statement inside an
//! [`crate::AuditedTransaction`] runs as it is, and the oracle reads the whole transaction
//! right before `COMMIT` / `ROLLBACK`.

mod oracle;

use std::sync::Arc;

use futures_core::future::BoxFuture;
use futures_util::{FutureExt, TryStreamExt};
use hintaudit_core::{
    AuditStage, CallEffects, CallScope, Operation, StatementOutcome, TransactionObservation, stats,
};
use sqlx::pool::PoolOptions;
use sqlx::postgres::{PgConnection, PgQueryResult, PgRow, Postgres};
use sqlx::{Connection, Either, Error, Executor};

use crate::backend::{Backend, Ctx, Step, TxEnd, sealed};
use crate::classify::{SqlDialect, TxControl};
use crate::execute::{Attribution, AuditedQuery, Sink, StatementEnd};
use crate::pool::options::{AfterConnect, PgOracle};
use crate::stream::Yielder;

/// A held PostgreSQL connection's audit state: whether the caller opened a transaction with
/// a raw `BEGIN` (the oracle must not wrap statements then).
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct PgConnState {
    raw_transaction: bool,
}

/// An [`crate::AuditedTransaction`]'s oracle state.
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct PgTxState {
    oracle: PgOracle,
    before: Option<oracle::Snapshot>,
    statements: Vec<(Sink, bool)>,
    failed: bool,
    observation: Option<TransactionObservation>,
    ended: bool,
}

impl Drop for PgTxState {
    fn drop(&mut self) {
        if !self.ended {
            // Dropped without COMMIT or ROLLBACK: sqlx rolls back, the oracle cannot ask.
            self.mark_rolled_back();
        }
    }
}

impl PgTxState {
    fn mark_rolled_back(&self) {
        for (sink, write) in &self.statements {
            if *write {
                sink.effects
                    .update_statement(sink.index, |s| s.outcome = StatementOutcome::Failed);
            }
        }
    }

    fn sink(&self) -> Option<Arc<CallEffects>> {
        CallScope::current()
            .map(|s| s.effects_handle())
            .or_else(|| self.statements.last().map(|(s, _)| s.effects.clone()))
    }
}

impl sealed::Sealed for Postgres {}

fn is_dml(op: Operation) -> bool {
    matches!(
        op,
        Operation::Insert | Operation::Upsert | Operation::Update | Operation::Delete
    )
}

fn wants_oracle(mode: PgOracle, att: &Attribution) -> bool {
    let c = &att.class;
    match mode {
        PgOracle::Off => false,
        PgOracle::Writes => c.may_write(),
        PgOracle::Always => true,
    }
}

/// Whether an autocommit statement runs wrapped in the oracle's transaction.
fn wrap(ctx: &Ctx<'_, Postgres>) -> bool {
    let c = &ctx.att.class;
    ctx.tx.is_none()
        && !ctx.state.raw_transaction
        && !ctx.conn.is_in_transaction()
        && c.tx_control.is_none()
        && !c.no_transaction_block
        && wants_oracle(ctx.oracle, &ctx.att)
}

/// Before a statement inside an audited transaction: the oracle's first snapshot, taken
/// lazily before the first statement that may write.
async fn before_in_tx(conn: &mut PgConnection, tx: &mut PgTxState, att: &Attribution) {
    if tx.before.is_none() && !tx.failed && wants_oracle(tx.oracle, att) {
        match oracle::snapshot_protected(conn, true).await {
            Ok(s) => tx.before = Some(s),
            Err(e) => stats().audit_error(AuditStage::Oracle, &e),
        }
    }
    if let Some(sink) = &att.sink {
        tx.statements
            .push((sink.clone(), att.class.effect.operation.is_write()));
    }
}

/// A statement that succeeded: `rows` affected (recorded for DML only), `observed` by the
/// oracle or not.
fn succeeded(att: &Attribution, rows: u64, observed: bool) -> StatementEnd {
    StatementEnd {
        outcome: StatementOutcome::Ok,
        rows_affected: is_dml(att.class.effect.operation).then_some(rows),
        observed,
    }
}

/// Records the end of a statement ([`Attribution::finish`]) and the connection's raw
/// transaction state.
fn finish(
    att: &Attribution,
    state: &mut PgConnState,
    tx: Option<&mut PgTxState>,
    end: StatementEnd,
) {
    att.finish(end);
    let ok = end.outcome == StatementOutcome::Ok;
    if let Some(tx) = tx {
        tx.failed |= !ok;
    } else if ok {
        match att.class.tx_control {
            Some(TxControl::Begin) => state.raw_transaction = true,
            Some(TxControl::Commit | TxControl::Rollback) => state.raw_transaction = false,
            _ => {}
        }
    }
}

type Item = Either<PgQueryResult, PgRow>;

/// Runs the statement to completion: every item, and the rows affected.
async fn collect(
    conn: &mut PgConnection,
    query: AuditedQuery<Postgres>,
    one: bool,
    dml: bool,
) -> Result<(Vec<Item>, u64), Error> {
    if one && !dml {
        let row = conn.fetch_optional(query).await?;
        return Ok((row.map(Either::Right).into_iter().collect(), 0));
    }
    let mut items = Vec::new();
    let mut rows = 0;
    let mut have_row = false;
    let mut s = conn.fetch_many(query);
    while let Some(v) = s.try_next().await? {
        match v {
            Either::Left(r) => {
                rows += r.rows_affected();
                items.push(Either::Left(r));
            }
            // fetch_optional answers with the first row; the others are drained.
            Either::Right(row) if !one || !have_row => {
                have_row = true;
                items.push(Either::Right(row));
            }
            Either::Right(_) => {}
        }
    }
    Ok((items, rows))
}

/// When `wrapped`, runs the statement in the oracle's transaction ([`run_wrapped`]) and
/// finishes it: `Left` with its answer, or the error. Otherwise, or when the wrapping could
/// not start, hands the statement back (`Right`) to run unwrapped.
async fn wrap_or_pass(
    wrapped: bool,
    conn: &mut PgConnection,
    state: &mut PgConnState,
    att: &Attribution,
    query: AuditedQuery<Postgres>,
    one: bool,
) -> Result<Either<Vec<Item>, AuditedQuery<Postgres>>, Error> {
    if !wrapped {
        return Ok(Either::Right(query));
    }
    match run_wrapped(conn, att, query, one).await {
        Ok((items, rows, observed)) => {
            finish(att, state, None, succeeded(att, rows, observed));
            Ok(Either::Left(items))
        }
        Err((e, None)) => {
            finish(att, state, None, StatementEnd::FAILED);
            Err(e)
        }
        Err((_, Some(query))) => Ok(Either::Right(query)),
    }
}

/// Runs an autocommit statement inside the oracle's transaction: `BEGIN`, snapshot,
/// statement, snapshot (in a savepoint), `COMMIT`; `ROLLBACK` when the statement fails.
/// Returns `None` when the wrapping could not start: the caller runs the statement unwrapped.
async fn run_wrapped(
    conn: &mut PgConnection,
    att: &Attribution,
    query: AuditedQuery<Postgres>,
    one: bool,
) -> Result<(Vec<Item>, u64, bool), (Error, Option<AuditedQuery<Postgres>>)> {
    let mut tx = match conn.begin().await {
        Ok(tx) => tx,
        Err(e) => {
            stats().audit_error(AuditStage::Oracle, &e);
            return Err((e, Some(query)));
        }
    };
    let before = match oracle::snapshot(&mut tx).await {
        Ok(s) => s,
        Err(e) => {
            stats().audit_error(AuditStage::Oracle, &e);
            let _ = tx.rollback().await;
            return Err((e, Some(query)));
        }
    };
    let dml = is_dml(att.class.effect.operation);
    match collect(&mut tx, query, one, dml).await {
        Ok((items, rows)) => {
            let after = oracle::snapshot_protected(&mut tx, false).await;
            if let Err(e) = &after {
                stats().audit_error(AuditStage::Oracle, e);
            }
            let committed = tx.commit().await;
            if let (Ok(after), Some(sink)) = (&after, &att.sink) {
                let obs = oracle::observe(&before, after, committed.is_ok());
                sink.effects.record_transaction(obs);
            }
            match committed {
                Ok(()) => Ok((items, rows, after.is_ok())),
                // Deferred constraints fail at COMMIT: in autocommit the statement would have
                // failed, so this is the statement's error.
                Err(e) => Err((e, None)),
            }
        }
        Err(e) => {
            let _ = tx.rollback().await;
            Err((e, None))
        }
    }
}

/// A statement's connection and audit state, once it has started.
struct Started<'e> {
    /// Whether the oracle wraps it (see [`wrap`]).
    wrapped: bool,
    conn: &'e mut PgConnection,
    state: &'e mut PgConnState,
    tx: Option<&'e mut PgTxState>,
    att: Attribution,
}

/// The start of both ways of running a statement: whether to wrap it, and inside an
/// audited transaction, what the oracle does before it.
async fn start(ctx: Ctx<'_, Postgres>) -> Started<'_> {
    let wrapped = wrap(&ctx);
    let Ctx {
        conn,
        state,
        mut tx,
        att,
        ..
    } = ctx;
    if let Some(tx) = tx.as_deref_mut() {
        before_in_tx(conn, tx, &att).await;
    }
    Started {
        wrapped,
        conn,
        state,
        tx,
        att,
    }
}

impl Backend for Postgres {
    const SYSTEM_NAME: &'static str = "postgresql";
    const DIALECT: SqlDialect = SqlDialect::Postgres;
    type PoolState = ();
    type ConnState = PgConnState;
    type TxState = PgTxState;

    fn on_connect(
        options: PoolOptions<Self>,
        _state: &Arc<()>,
        after_connect: Option<AfterConnect<Self>>,
    ) -> PoolOptions<Self> {
        match after_connect {
            Some(callback) => options.after_connect(move |conn, meta| callback(conn, meta)),
            None => options,
        }
    }

    async fn run_into<'e>(
        ctx: Ctx<'e, Self>,
        query: AuditedQuery<Self>,
        y: &'e Yielder<Step<Self>>,
    ) -> Result<(), Error> {
        let Started {
            wrapped,
            conn,
            state,
            tx,
            att,
        } = start(ctx).await;
        let query = match wrap_or_pass(wrapped, conn, state, &att, query, false).await? {
            Either::Left(items) => {
                // Buffered: the rows are yielded once COMMIT answered.
                for v in items {
                    y.send(v).await;
                }
                return Ok(());
            }
            Either::Right(query) => query,
        };
        let mut s = conn.fetch_many(query);
        let mut done = Guard {
            att: &att,
            rows: 0,
            armed: true,
        };
        loop {
            match s.try_next().await {
                Ok(Some(v)) => {
                    if let Either::Left(r) = &v {
                        done.rows += r.rows_affected();
                    }
                    y.send(v).await;
                }
                Ok(None) => break,
                Err(e) => {
                    drop(s);
                    done.armed = false;
                    finish(&att, state, tx, StatementEnd::FAILED);
                    return Err(e);
                }
            }
        }
        drop(s);
        done.armed = false;
        finish(&att, state, tx, succeeded(&att, done.rows, false));
        Ok(())
    }

    async fn run_optional<'e>(
        ctx: Ctx<'e, Self>,
        query: AuditedQuery<Self>,
    ) -> Result<Option<PgRow>, Error> {
        let Started {
            wrapped,
            conn,
            state,
            tx,
            att,
        } = start(ctx).await;
        let first = |items: Vec<Item>| {
            items.into_iter().find_map(|v| match v {
                Either::Right(r) => Some(r),
                Either::Left(_) => None,
            })
        };
        let query = match wrap_or_pass(wrapped, conn, state, &att, query, true).await? {
            Either::Left(items) => return Ok(first(items)),
            Either::Right(query) => query,
        };
        let dml = is_dml(att.class.effect.operation);
        let mut done = Guard {
            att: &att,
            rows: 0,
            armed: true,
        };
        let r = collect(conn, query, true, dml).await;
        done.armed = false;
        match r {
            Ok((items, rows)) => {
                finish(&att, state, tx, succeeded(&att, rows, false));
                Ok(first(items))
            }
            Err(e) => {
                finish(&att, state, tx, StatementEnd::FAILED);
                Err(e)
            }
        }
    }

    fn after_begin<'e>(
        conn: &'e mut PgConnection,
        tx: &'e mut PgTxState,
        oracle: PgOracle,
    ) -> BoxFuture<'e, ()> {
        async move {
            tx.oracle = oracle;
            if tx.oracle == PgOracle::Always {
                match oracle::snapshot_protected(conn, true).await {
                    Ok(s) => tx.before = Some(s),
                    Err(e) => {
                        stats().audit_error(AuditStage::Oracle, &e);
                        tx.failed = true;
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
        _pool: &'e (),
        end: TxEnd,
    ) -> BoxFuture<'e, ()> {
        async move {
            let Some(before) = tx.before.take() else {
                return;
            };
            if tx.failed {
                return; // the transaction is aborted: nothing can be asked
            }
            match oracle::snapshot_protected(conn, false).await {
                Ok(after) => {
                    let committed = end == TxEnd::Commit;
                    tx.observation = Some(oracle::observe(&before, &after, committed));
                }
                Err(e) => stats().audit_error(AuditStage::Oracle, &e),
            }
        }
        .boxed()
    }

    fn after_end(tx: &mut PgTxState, end: TxEnd, answer: &Result<(), Error>) {
        tx.ended = true;
        let committed = end == TxEnd::Commit && answer.is_ok();
        match tx.observation.take() {
            Some(mut obs) => {
                obs.committed = committed;
                if let Some(effects) = tx.sink() {
                    effects.record_transaction(obs);
                }
                for (sink, _) in &tx.statements {
                    Attribution::mark_observed(sink);
                }
            }
            None if !committed => tx.mark_rolled_back(),
            None => {}
        }
    }
}

/// Finishes a statement whose stream or future was dropped before it ended.
struct Guard<'a> {
    att: &'a Attribution,
    rows: u64,
    armed: bool,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        if self.armed {
            // The caller stopped reading: not a failure of the statement.
            self.att.finish(succeeded(self.att, self.rows, false));
        }
    }
}
