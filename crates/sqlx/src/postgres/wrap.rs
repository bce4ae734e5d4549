//! An autocommit statement wrapped in the oracle's transaction, and a statement run to its
//! end before anything is handed back.

use hintaudit_core::{AuditStage, stats};
use sqlx::postgres::{PgConnection, PgQueryResult, PgRow, Postgres};
use sqlx::{Connection, Either, Error, Executor, Transaction};

use crate::backend::Answer;
use crate::classify::is_dml;
use crate::drive::drain;
use crate::execute::{Attribution, AuditedQuery};
use crate::stream::Yielder;

use super::lost::connection_lost;
use super::oracle;

/// One item of a statement's answer.
pub(super) type Item = Either<PgQueryResult, PgRow>;

/// Runs the statement to completion: every item, and the rows affected.
pub(super) async fn collect(
    conn: &mut PgConnection,
    query: AuditedQuery<Postgres>,
    one: bool,
    dml: bool,
) -> Result<(Vec<Item>, u64), Error> {
    if one && !dml {
        let row = conn.fetch_optional(query).await?;
        return Ok((row.map(Either::Right).into_iter().collect(), 0));
    }
    let mut rows = 0;
    let keep = if one { 1 } else { usize::MAX };
    let mut answer = Answer::Buffer {
        items: Vec::new(),
        rows: keep,
    };
    drain(conn, query, &mut rows, &mut answer).await?;
    Ok((answer.into_items(), rows))
}

/// The oracle's transaction around an autocommit statement, open: `BEGIN` answered.
struct Opened<'c> {
    tx: Transaction<'c, Postgres>,
    before: oracle::Snapshot,
    scope: oracle::Scope,
}

/// Opens the oracle's transaction: the flush of pending statistics ([`oracle::flush`]),
/// `BEGIN`; where the flush is not available (PostgreSQL before 15), a snapshot of every
/// relation right after `BEGIN`. Hands the statement back when it could not open; when one
/// of these round trips finds the connection lost (see `lost`), its error is the
/// statement's, which is not sent.
async fn open(
    conn: &mut PgConnection,
    query: AuditedQuery<Postgres>,
) -> Result<(Opened<'_>, AuditedQuery<Postgres>), (Error, Option<AuditedQuery<Postgres>>)> {
    let scope = match oracle::flush(conn).await {
        Ok(()) => oracle::Scope::Locked,
        Err(e) if connection_lost(&e) => return Err((e, None)),
        Err(_) => oracle::Scope::All,
    };
    let mut tx = match conn.begin().await {
        Ok(tx) => tx,
        Err(e) if connection_lost(&e) => return Err((e, None)),
        Err(e) => {
            stats().audit_error(AuditStage::Oracle, &e);
            return Err((e, Some(query)));
        }
    };
    let before = match scope {
        // Nothing is pending after the flush: the transaction starts from zero.
        oracle::Scope::Locked => oracle::Snapshot::default(),
        oracle::Scope::All => match oracle::snapshot(&mut tx, scope).await {
            Ok(s) => s,
            Err(e) => {
                stats().audit_error(AuditStage::Oracle, &e);
                if connection_lost(&e) {
                    return Err((e, None));
                }
                let _ = tx.rollback().await;
                return Err((e, Some(query)));
            }
        },
    };
    Ok((Opened { tx, before, scope }, query))
}

impl Opened<'_> {
    /// After the statement succeeded: the snapshot (in a savepoint), `COMMIT`, and the
    /// observation recorded. Whether the oracle observed, or `COMMIT`'s error (or the
    /// snapshot's, when it found the connection lost: not committed).
    async fn commit(mut self, att: &Attribution) -> Result<bool, Error> {
        let after = oracle::snapshot_protected(&mut self.tx, self.scope, false).await;
        if let Err(e) = &after {
            stats().audit_error(AuditStage::Oracle, e);
        }
        let after = match after {
            // Not committed: the statement's error, as the COMMIT's would have been.
            Err(e) if connection_lost(&e) => return Err(e),
            after => after,
        };
        let committed = self.tx.commit().await;
        if let (Ok(after), Some(sink)) = (&after, &att.sink) {
            let obs = oracle::observe(&self.before, after, committed.is_ok());
            sink.effects.record_transaction(obs);
        }
        // Deferred constraints fail at COMMIT: in autocommit the statement would have
        // failed, so this is the statement's error.
        committed.map(|()| after.is_ok())
    }
}

/// Runs an autocommit statement inside the oracle's transaction, to completion: see
/// [`open`], then the statement, the snapshot of the relations the transaction locked (in a
/// savepoint), `COMMIT`; `ROLLBACK` when the statement fails. Four round trips besides the
/// statement's, whatever the schema's size (five before PostgreSQL 15). Returns `None` when
/// the wrapping could not start: the caller runs the statement unwrapped.
pub(super) async fn run_wrapped(
    conn: &mut PgConnection,
    att: &Attribution,
    query: AuditedQuery<Postgres>,
    one: bool,
) -> Result<(Vec<Item>, u64, bool), (Error, Option<AuditedQuery<Postgres>>)> {
    let (mut opened, query) = open(conn, query).await?;
    let dml = is_dml(att.class.effect.operation);
    match collect(&mut opened.tx, query, one, dml).await {
        Ok((items, rows)) => match opened.commit(att).await {
            Ok(observed) => Ok((items, rows, observed)),
            Err(e) => Err((e, None)),
        },
        Err(e) => {
            let _ = opened.tx.rollback().await;
            Err((e, None))
        }
    }
}

/// As [`run_wrapped`], but each item goes to `y` as it arrives: rows are not held until
/// `COMMIT`. Only for a stream whose producer can be finished after the stream is dropped
/// ([`Yielder::detachable`]): from `BEGIN` until `COMMIT` answered, a stream dropped early
/// does not roll back the transaction (as dropping it would), but has the rest of the
/// answer read and discarded, the snapshot taken, `COMMIT` sent and the observation
/// recorded in a task of its own, so that the statement's writes stay, as in autocommit.
/// A `COMMIT` that fails (deferred constraints) ends the stream with its error after the
/// rows, as autocommit's implicit commit does.
pub(super) async fn stream_wrapped(
    conn: &mut PgConnection,
    att: &Attribution,
    query: AuditedQuery<Postgres>,
    y: &Yielder<Item>,
) -> Result<(u64, bool), (Error, Option<AuditedQuery<Postgres>>)> {
    let (mut opened, query) = open(conn, query).await?;
    y.finish_on_drop(true);
    let mut rows = 0;
    let streamed = drain(&mut *opened.tx, query, &mut rows, &mut Answer::Stream(y)).await;
    let end = match streamed {
        Ok(()) => opened.commit(att).await.map(|observed| (rows, observed)),
        Err(e) => {
            let _ = opened.tx.rollback().await;
            Err(e)
        }
    };
    y.finish_on_drop(false);
    end.map_err(|e| (e, None))
}
