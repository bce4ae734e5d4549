//! A wrapped statement streamed on a held connection (`fetch(&mut *conn)`), and the oracle's
//! transaction such a stream leaves open when it is dropped before its end.
//!
//! On the pool, a dropped stream's producer owns its connection and is finished in a task of
//! its own (see `wrap`). A held connection's stream borrows the connection, so nothing can
//! run on it once the stream is dropped, and sqlx's `Transaction` would queue a `ROLLBACK`
//! on drop, undoing what the statement wrote (bare autocommit keeps it). So here the
//! transaction is not guarded by a `Transaction`: it is begun by sqlx as usual, then its
//! guard is given up, and the oracle's state ([`Unfinished`]) stays in the connection's
//! audit state until the stream ends. When the stream was dropped, the transaction is
//! finished (the rest of the answer read and discarded by sqlx, the snapshot, `COMMIT`, the
//! observation) at the connection's next use: its next audited statement, `begin()`, or
//! when the connection is dropped, in a spawned task that then returns it to the pool
//! ([`release`]).

use futures_util::TryStreamExt;
use hintaudit_core::{AuditStage, stats};
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnection, PgTransactionManager, Postgres};
use sqlx::{Either, Error, Executor};
use sqlx_core::transaction::TransactionManager;

use super::PgConnState;
use super::oracle::{Scope, Snapshot};
use super::wrap::{Item, Opened, after_commit, before_commit, open};
use crate::execute::{Attribution, AuditedQuery, FinishOnDrop, Sink};
use crate::stream::Yielder;

/// The oracle's transaction around a wrapped statement streamed on a held connection, from
/// `BEGIN` until `COMMIT` answered.
#[derive(Debug)]
pub(super) struct Unfinished {
    before: Snapshot,
    scope: Scope,
    /// Where the observation goes: the statement's call.
    sink: Option<Sink>,
    /// The statement failed: the transaction is to be rolled back, not observed.
    failed: bool,
}

impl Unfinished {
    /// The snapshot (in a savepoint), `COMMIT` (sqlx's, which keeps its count of open
    /// transactions right), and the observation recorded: as the pool's wrapped statements
    /// (see `wrap`); `ROLLBACK` instead after the statement failed. Whether the oracle
    /// observed, or `COMMIT`'s error. By reference: the state stays in the connection until
    /// this answered, so that a caller cancelled on the way leaves it to the next
    /// [`settle`] (an oracle failure then, at worst, and sqlx's `COMMIT`, which keeps its
    /// count of open transactions right).
    async fn end(&self, conn: &mut PgConnection) -> Result<bool, Error> {
        if self.failed {
            return PgTransactionManager::rollback(conn).await.map(|()| false);
        }
        let after = before_commit(conn, self.scope).await?;
        let committed = PgTransactionManager::commit(conn).await;
        let observed = after_commit(self.sink.as_ref(), &self.before, after.as_ref(), committed);
        // After a dropped stream, the statement was finished unobserved.
        if let (Ok(true), Some(sink)) = (&observed, &self.sink) {
            Attribution::mark_observed(sink);
        }
        observed
    }
}

/// As `wrap::stream_wrapped`, on a held connection: each item goes to `y` as it arrives.
/// From `BEGIN` until `COMMIT` answered, the oracle's state waits in `state`; a stream
/// dropped in between finishes the statement as autocommit would have it (succeeded, the
/// rows affected so far: see [`FinishOnDrop`]) and leaves the transaction to [`settle`] or
/// [`release`], which mark the statement observed once the oracle read it.
pub(super) async fn stream_held(
    conn: &mut PgConnection,
    state: &mut PgConnState,
    att: &Attribution,
    query: AuditedQuery<Postgres>,
    y: &Yielder<Item>,
) -> Result<(u64, bool), (Error, Option<AuditedQuery<Postgres>>)> {
    let (Opened { tx, before, scope }, query) = open(conn, query).await?;
    // Dropped, the `Transaction` would queue a `ROLLBACK`: the transaction must outlive a
    // dropped stream, so it is ended by sqlx's transaction manager instead, as the
    // `Transaction` would have ended it. Forgetting it leaks nothing: it holds a borrow.
    std::mem::forget(tx);
    state.unfinished = Some(Unfinished {
        before,
        scope,
        sink: att.sink.clone(),
        failed: false,
    });
    let mut dropped = FinishOnDrop {
        att,
        rows: 0,
        armed: true,
    };
    let streamed = async {
        let mut s = conn.fetch_many(query);
        while let Some(v) = s.try_next().await? {
            if let Either::Left(r) = &v {
                dropped.rows += r.rows_affected();
            }
            y.send(v).await;
        }
        Ok::<(), Error>(())
    }
    .await;
    // Dropped while `COMMIT` is under way, the statement is finished as above.
    let end = match (streamed, state.unfinished.as_mut()) {
        (Ok(()), Some(u)) => u.end(conn).await.map(|observed| (dropped.rows, observed)),
        (Err(e), u) => {
            dropped.armed = false; // failed: the caller finishes it so
            if let Some(u) = u {
                u.failed = true;
                let _ = u.end(conn).await;
            }
            Err(e)
        }
        // Nothing else takes the state while the stream runs.
        (Ok(()), None) => Ok((dropped.rows, false)),
    };
    dropped.armed = false;
    state.unfinished = None;
    end.map_err(|e| (e, None))
}

/// Finishes the oracle's transaction a dropped stream left open on this connection, if
/// any: sqlx reads the rest of that statement's answer first. Called before anything else
/// runs on a held connection. Errors are the dropped statement's, whose caller is gone: a
/// failed `COMMIT` is recorded in the observation (`committed: false`), an oracle failure
/// as an audit error.
pub(super) async fn settle(conn: &mut PgConnection, state: &mut PgConnState) {
    if let Some(u) = &state.unfinished {
        let _ = u.end(conn).await;
        state.unfinished = None;
    }
}

/// Hands a held connection back to the pool. With an oracle transaction a dropped stream
/// left open, the connection goes back only after [`settle`], in a task spawned on the
/// current tokio runtime; without a runtime, sqlx's `ROLLBACK` is queued instead (the
/// statement's writes are undone, as sqlx undoes a dropped transaction's) and the loss is
/// counted as an audit error.
pub(super) fn release(mut state: PgConnState, mut conn: PoolConnection<Postgres>) {
    let Some(u) = state.unfinished.take() else {
        return;
    };
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            runtime.spawn(async move {
                let _ = u.end(&mut conn).await;
            });
        }
        Err(_) => abandon(&mut conn),
    }
}

/// Ends the oracle transaction a dropped stream left open, without a round trip: sqlx's
/// `ROLLBACK` queued, sent before the connection's next statement. For a connection the
/// audit lets go of (`AuditedConnection::into_inner`) or cannot finish (no runtime).
pub(super) fn detach(state: &mut PgConnState, conn: &mut PgConnection) {
    if state.unfinished.take().is_some() {
        abandon(conn);
    }
}

fn abandon(conn: &mut PgConnection) {
    PgTransactionManager::start_rollback(conn);
    stats().audit_error(
        AuditStage::Oracle,
        &"a dropped stream's oracle transaction could not be finished: rolled back",
    );
}
