//! An autocommit statement wrapped in the oracle's transaction: [`open`] before the
//! statement, [`Opened::commit`] (or [`Opened::rollback`]) after it.

use hintaudit_core::{AuditStage, stats};
use sqlx::postgres::{PgConnection, Postgres};
use sqlx::{Database, Error};
use sqlx_core::transaction::TransactionManager;

use crate::execute::Attribution;
use crate::guard::Guard;

use super::lost::connection_lost;
use super::oracle;

type Manager = <Postgres as Database>::TransactionManager;

/// The connection in the oracle's transaction: rolled back when dropped before `COMMIT` or
/// `ROLLBACK` answered (sqlx queues the `ROLLBACK` for the connection's next use), as a
/// dropped sqlx `Transaction` is.
type InTx<'c> = Guard<&'c mut PgConnection, fn(&mut &mut PgConnection)>;

/// sqlx's rollback of a transaction dropped while open.
fn start_rollback(conn: &mut &mut PgConnection) {
    Manager::start_rollback(conn);
}

/// The oracle's transaction around an autocommit statement, open: `BEGIN` answered.
pub(super) struct Opened<'c> {
    tx: InTx<'c>,
    before: oracle::Snapshot,
    scope: oracle::Scope,
}

/// Opens the oracle's transaction: the flush of pending statistics ([`oracle::flush`]),
/// unless the connection is `flushed` already (straight from a pool whose test of it
/// flushed, see `acquire`), then `BEGIN`; where the flush is not available (PostgreSQL
/// before 15), a snapshot of every relation right after `BEGIN`. Hands the connection back
/// when it could not open; when one of these round trips finds the connection lost (see
/// `lost`), its error is the statement's, which is not sent.
pub(super) async fn open(
    conn: &mut PgConnection,
    flushed: bool,
) -> Result<Opened<'_>, (Error, Option<&mut PgConnection>)> {
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
    let mut tx: InTx<'_> = Guard::new(&mut *conn, start_rollback);
    if let Err(e) = Manager::begin(&mut tx, None).await {
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
        oracle::Scope::All => match oracle::snapshot(&mut tx, scope).await {
            Ok(s) => s,
            Err(e) => {
                stats().audit_error(AuditStage::Oracle, &e);
                if connection_lost(&e) {
                    return Err((e, None));
                }
                if Manager::rollback(&mut tx).await.is_ok() {
                    tx.defuse();
                }
                drop(tx);
                return Err((e, Some(conn)));
            }
        },
    };
    tx.defuse();
    drop(tx);
    let tx: InTx<'_> = Guard::new(conn, start_rollback);
    Ok(Opened { tx, before, scope })
}

impl Opened<'_> {
    /// The connection, in the transaction.
    pub(super) fn conn(&mut self) -> &mut PgConnection {
        &mut self.tx
    }

    /// After the statement succeeded: the snapshot (in a savepoint), `COMMIT`, and the
    /// observation recorded. Whether the oracle observed, or `COMMIT`'s error (or the
    /// snapshot's, when it found the connection lost: not committed).
    pub(super) async fn commit(mut self, att: &Attribution) -> Result<bool, Error> {
        let after = oracle::snapshot_protected(&mut self.tx, self.scope, false).await;
        if let Err(e) = &after {
            stats().audit_error(AuditStage::Oracle, e);
        }
        let after = match after {
            // Not committed: the statement's error, as the COMMIT's would have been.
            Err(e) if connection_lost(&e) => return Err(e),
            after => after,
        };
        let committed = Manager::commit(&mut self.tx).await;
        if committed.is_ok() {
            self.tx.defuse();
        }
        drop(self.tx);
        if let (Ok(after), Some(sink)) = (&after, &att.sink) {
            let obs = oracle::observe(&self.before, after, committed.is_ok());
            sink.effects.record_transaction(obs);
        }
        // Deferred constraints fail at COMMIT: in autocommit the statement would have
        // failed, so this is the statement's error.
        committed.map(|()| after.is_ok())
    }

    /// After the statement failed: `ROLLBACK`, its own failure ignored (the transaction is
    /// then rolled back when the connection is next used).
    pub(super) async fn rollback(mut self) {
        if Manager::rollback(&mut self.tx).await.is_ok() {
            self.tx.defuse();
        }
    }
}
