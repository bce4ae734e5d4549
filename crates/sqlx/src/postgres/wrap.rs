//! An autocommit statement wrapped in the oracle's transaction, and a statement run to its
//! end before anything is handed back.

use futures_util::TryStreamExt;
use hintaudit_core::{AuditStage, stats};
use sqlx::postgres::{PgConnection, PgQueryResult, PgRow, Postgres};
use sqlx::{Connection, Either, Error, Executor};

use crate::classify::is_dml;
use crate::execute::{Attribution, AuditedQuery};

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

/// Runs an autocommit statement inside the oracle's transaction: the flush of pending
/// statistics ([`oracle::flush`]), `BEGIN`, the statement, the snapshot of the relations
/// the transaction locked (in a savepoint), `COMMIT`; `ROLLBACK` when the statement fails.
/// Four round trips besides the statement's, whatever the schema's size. Where the flush is
/// not available (PostgreSQL before 15), a snapshot of every relation right after `BEGIN`
/// and at the end instead (five). Returns the query back with the error when the wrapping
/// could not start: the caller runs the statement unwrapped. When one of these round trips
/// finds the connection lost (see `lost`), its error is the statement's, which is not sent
/// (or not committed).
pub(super) async fn run_wrapped(
    conn: &mut PgConnection,
    att: &Attribution,
    query: AuditedQuery<Postgres>,
    one: bool,
) -> Result<(Vec<Item>, u64, bool), (Error, Option<AuditedQuery<Postgres>>)> {
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
    let dml = is_dml(att.class.effect.operation);
    match collect(&mut tx, query, one, dml).await {
        Ok((items, rows)) => {
            let after = oracle::snapshot_protected(&mut tx, scope, false).await;
            let after = match after {
                Err(e) if connection_lost(&e) => {
                    // Not committed: the statement's error, as the COMMIT's would have been.
                    stats().audit_error(AuditStage::Oracle, &e);
                    return Err((e, None));
                }
                after => after,
            };
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
