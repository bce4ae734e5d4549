//! An autocommit statement wrapped in the oracle's transaction: [`open`] before the
//! statement, [`Opened::commit`] (or [`Opened::rollback`]) after it.
//!
//! Two ways to open and end it:
//!
//! - **Raw**, on a connection taken from the pool for this statement alone: `BEGIN` as a
//!   simple query of its own, and `SAVEPOINT`, the snapshot and `COMMIT` as one
//!   ([`oracle::snapshot_commit`]): two round trips. sqlx does not see these as a
//!   transaction (its transaction depth stays 0), so it would not roll back one dropped
//!   part-way: until `COMMIT` answered, a drop sets [`crate::postgres::PgConnState`]'s
//!   `left_open`, and the pool's connection is then closed instead of returned
//!   ([`crate::Backend::release`]; the server rolls back a closed session's transaction).
//! - **sqlx's**, on a held connection, which the caller may use again after a drop (and
//!   reach unaudited through `inner_mut`): sqlx's `BEGIN`, and `COMMIT` after the snapshot,
//!   three round trips; a drop queues sqlx's `ROLLBACK` for the connection's next use, as a
//!   dropped sqlx `Transaction` does.

use hintaudit_core::{AuditStage, stats};
use sqlx::postgres::{PgConnection, Postgres};
use sqlx::{Database, Error, Executor};
use sqlx_core::transaction::TransactionManager;

use crate::execute::Attribution;
use crate::guard::Guard;

use super::lost::connection_lost;
use super::oracle;

type Manager = <Postgres as Database>::TransactionManager;

/// The connection, and who ends the oracle's transaction on it.
pub(super) struct Held<'c> {
    conn: &'c mut PgConnection,
    /// `Some` for a raw transaction: set when it is dropped before its end.
    left_open: Option<&'c mut bool>,
}

/// The connection in the oracle's transaction: when dropped before `COMMIT` or `ROLLBACK`
/// answered, see [`abandoned`].
type InTx<'c> = Guard<Held<'c>, fn(&mut Held<'c>)>;

/// The oracle's transaction dropped before its end: a raw one marks the connection
/// `left_open`; sqlx's queues its `ROLLBACK` for the connection's next use.
fn abandoned(held: &mut Held<'_>) {
    match &mut held.left_open {
        Some(left_open) => **left_open = true,
        None => Manager::start_rollback(held.conn),
    }
}

impl Held<'_> {
    /// `BEGIN`: raw, or sqlx's. One round trip.
    async fn begin(&mut self) -> Result<(), Error> {
        match self.left_open {
            Some(_) => self.conn.execute(sqlx::raw_sql("BEGIN")).await.map(|_| ()),
            None => Manager::begin(self.conn, None).await,
        }
    }

    /// `ROLLBACK`: raw, or sqlx's. One round trip.
    async fn rollback(&mut self) -> Result<(), Error> {
        match self.left_open {
            Some(_) => self
                .conn
                .execute(sqlx::raw_sql("ROLLBACK"))
                .await
                .map(|_| ()),
            None => Manager::rollback(self.conn).await,
        }
    }
}

/// The oracle's transaction around an autocommit statement, open: `BEGIN` answered.
pub(super) struct Opened<'c> {
    tx: InTx<'c>,
    before: oracle::Snapshot,
    scope: oracle::Scope,
}

/// Opens the oracle's transaction: the flush of pending statistics ([`oracle::flush`]),
/// unless the connection is `flushed` already (straight from a pool whose test of it
/// flushed, see `acquire`), then `BEGIN`, raw when `left_open` is given (a connection taken
/// from the pool for this statement alone, see the module's docs); where the flush is not
/// available (PostgreSQL before 15), a snapshot of every relation right after `BEGIN`.
/// Hands the connection back when it could not open; when one of these round trips finds
/// the connection lost (see `lost`), its error is the statement's, which is not sent.
pub(super) async fn open<'c>(
    conn: &'c mut PgConnection,
    flushed: bool,
    mut left_open: Option<&'c mut bool>,
) -> Result<Opened<'c>, (Error, Option<&'c mut PgConnection>)> {
    let scope = match flushed {
        true => oracle::Scope::Locked,
        false => match oracle::flush(conn).await {
            Ok(()) => oracle::Scope::Locked,
            Err(e) if connection_lost(&e) => return Err((e, None)),
            Err(_) => oracle::Scope::All,
        },
    };
    // Until it is open, the transaction stands on a reborrow, so that the connection can be
    // handed back; as sqlx's `begin`, a `BEGIN` that fails or is dropped is rolled back.
    let held = Held {
        conn: &mut *conn,
        left_open: left_open.as_deref_mut(),
    };
    let mut tx: InTx<'_> = Guard::new(held, abandoned);
    if let Err(e) = tx.begin().await {
        // No transaction was opened: nothing to roll back.
        tx.defuse();
        drop(tx);
        if connection_lost(&e) {
            return Err((e, None));
        }
        stats().audit_error(AuditStage::Oracle, &e);
        return Err((e, Some(conn)));
    }
    let before = match scope {
        // Nothing is pending after the flush: the transaction starts from zero.
        oracle::Scope::Locked => oracle::Snapshot::default(),
        oracle::Scope::All => match oracle::snapshot(tx.conn, scope).await {
            Ok(s) => s,
            Err(e) => {
                stats().audit_error(AuditStage::Oracle, &e);
                if connection_lost(&e) {
                    return Err((e, None));
                }
                if tx.rollback().await.is_ok() {
                    tx.defuse();
                }
                drop(tx);
                return Err((e, Some(conn)));
            }
        },
    };
    tx.defuse();
    drop(tx);
    let tx: InTx<'_> = Guard::new(Held { conn, left_open }, abandoned);
    Ok(Opened { tx, before, scope })
}

impl Opened<'_> {
    /// The connection, in the transaction.
    pub(super) fn conn(&mut self) -> &mut PgConnection {
        self.tx.conn
    }

    /// After the statement succeeded: the snapshot (in a savepoint), `COMMIT`, and the
    /// observation recorded. Whether the oracle observed, or `COMMIT`'s error (or the
    /// snapshot's, when it found the connection lost: not committed).
    pub(super) async fn commit(mut self, att: &Attribution) -> Result<bool, Error> {
        let (after, committed) = match self.tx.left_open {
            Some(_) => self.end_raw().await?,
            None => self.end_sqlx().await?,
        };
        if let Err(e) = &after {
            stats().audit_error(AuditStage::Oracle, e);
        }
        if let (Ok(after), Some(sink)) = (&after, &att.sink) {
            let obs = oracle::observe(&self.before, after, committed.is_ok());
            sink.effects.record_transaction(obs);
        }
        // Deferred constraints fail at COMMIT: in autocommit the statement would have
        // failed, so this is the statement's error.
        committed.map(|()| after.is_ok())
    }

    /// The raw transaction's end: snapshot and `COMMIT` in one message; when the snapshot
    /// failed, back to the savepoint and `COMMIT`, one more. The snapshot, and `COMMIT`'s
    /// answer; `Err` when the connection was lost before `COMMIT` answered (not committed),
    /// or the transaction could not be revived (its writes undone).
    async fn end_raw(&mut self) -> Result<Ending, Error> {
        match oracle::snapshot_commit(self.tx.conn, self.scope).await {
            oracle::Ended::Committed(after, committed) => {
                if committed.as_ref().is_err_and(connection_lost) {
                    return Err(committed.unwrap_err());
                }
                self.tx.defuse();
                Ok((after, committed))
            }
            oracle::Ended::Aborted(e) if connection_lost(&e) => Err(e),
            oracle::Ended::Aborted(e) => {
                oracle::revive_and_commit(self.tx.conn).await?;
                self.tx.defuse();
                Ok((Err(e), Ok(())))
            }
        }
    }

    /// sqlx's transaction's end: the snapshot in a savepoint, then sqlx's `COMMIT`. As
    /// [`Opened::end_raw`].
    async fn end_sqlx(&mut self) -> Result<Ending, Error> {
        let after = oracle::snapshot_protected(self.tx.conn, self.scope, false).await;
        if let Err(e) = &after
            && connection_lost(e)
        {
            // Not committed: the statement's error, as the COMMIT's would have been.
            return Err(after.unwrap_err());
        }
        let committed = Manager::commit(self.tx.conn).await;
        if committed.is_ok() {
            self.tx.defuse();
        }
        Ok((after, committed))
    }

    /// After the statement failed: `ROLLBACK`, its own failure ignored (sqlx's transaction
    /// is then rolled back when the connection is next used; a raw one's connection is
    /// closed when it goes back to the pool).
    pub(super) async fn rollback(mut self) {
        if self.tx.rollback().await.is_ok() {
            self.tx.defuse();
        }
    }
}

/// The snapshot at the end of the oracle's transaction (or its error), and `COMMIT`'s
/// answer.
type Ending = (Result<oracle::Snapshot, Error>, Result<(), Error>);
