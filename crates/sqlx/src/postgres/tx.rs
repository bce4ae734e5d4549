//! An [`crate::AuditedTransaction`]'s oracle state: the oracle's first snapshot, the
//! statements, the direct writes, and what is recorded when the transaction ends.

use std::sync::Arc;

use hintaudit_core::{
    AuditStage, CallEffects, CallScope, StatementOutcome, TableWrites, TransactionObservation,
    stats,
};

use sqlx::postgres::PgConnection;

use crate::execute::{Attribution, Sink};
use crate::pool::options::PgOracle;

use super::catalog::{self, Catalog, Direct};
use super::oracle;

/// An [`crate::AuditedTransaction`]'s oracle state.
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct PgTxState {
    pub(super) oracle: PgOracle,
    pub(super) before: Option<oracle::Snapshot>,
    statements: Vec<(Sink, bool)>,
    /// The oracle's first snapshot failed: nothing can be compared.
    pub(super) failed: bool,
    /// A statement failed, aborting the transaction, and no savepoint rolled back since
    /// revived it: nothing can be asked, and its COMMIT rolls back.
    pub(super) aborted: bool,
    pub(super) observation: Option<TransactionObservation>,
    /// Direct writes (see [`catalog::direct_target`]) that ran before any oracle snapshot:
    /// their command tags are the evidence, recorded when the transaction ends.
    pub(super) direct: Vec<(Sink, Direct, u64)>,
    /// Set when the transaction ran DDL: the catalog cache to clear when it ends.
    pub(super) ddl: Option<Arc<Catalog>>,
    /// The oracle's snapshot after `BEGIN` found the connection lost (see `lost`): the
    /// error of the next statement, or of the end.
    pub(super) lost: Option<sqlx::Error>,
    /// The server flushed this backend's pending statistics right before `BEGIN` (see
    /// [`oracle::flush`]): the transaction's counts start from zero, so the oracle's first
    /// snapshot is empty without a query, and both read only the relations the transaction
    /// locked ([`oracle::Scope::Locked`]).
    pub(super) flushed: bool,
}

impl PgTxState {
    /// Marks the transaction's writes rolled back: it was dropped without COMMIT or
    /// ROLLBACK, sqlx rolls back, and the oracle cannot ask.
    pub(super) fn mark_rolled_back(&self) {
        for (sink, write) in &self.statements {
            if *write {
                sink.update(|s| s.outcome = StatementOutcome::RolledBack);
            }
        }
    }

    fn sink(&self) -> Option<Arc<CallEffects>> {
        CallScope::current()
            .map(|s| s.effects_handle())
            .or_else(|| self.statements.last().map(|(s, _)| s.effects.clone()))
    }
}

/// Before a statement inside an audited transaction: the oracle's first snapshot, taken
/// lazily before the first statement that needs it (`skip`: it is a direct write, whose
/// command tag is its evidence, or it is proved read-only); none when the connection is
/// already known `lost`. The snapshot's error when it found the connection lost (see
/// `lost`): the statement's.
pub(super) async fn before(
    conn: &mut PgConnection,
    tx: &mut PgTxState,
    att: &Attribution,
    skip: bool,
    lost: bool,
) -> Result<(), sqlx::Error> {
    let mut answer = Ok(());
    if !lost && tx.before.is_none() && !tx.failed && !tx.aborted && !skip {
        match first_snapshot(conn, tx).await {
            Ok(s) => tx.before = Some(s),
            Err(e) => {
                stats().audit_error(AuditStage::Oracle, &e);
                if super::lost::connection_lost(&e) {
                    answer = Err(e);
                }
            }
        }
    }
    if let Some(sink) = &att.sink {
        tx.statements
            .push((sink.clone(), att.class.effect.operation.is_write()));
    }
    answer
}

/// The oracle's first snapshot: empty, without a query, when the statistics were flushed
/// before `BEGIN` (the transaction's counts start from zero); otherwise every user relation
/// (counts of earlier transactions may be pending), one round trip.
pub(super) async fn first_snapshot(
    conn: &mut PgConnection,
    tx: &PgTxState,
) -> Result<oracle::Snapshot, sqlx::Error> {
    if tx.flushed {
        return Ok(oracle::Snapshot::default());
    }
    oracle::snapshot_protected(conn, oracle::Scope::All, true).await
}

/// Which relations the oracle's last snapshot reads: the locked ones after a flush before
/// `BEGIN`, every user relation otherwise.
pub(super) fn last_scope(tx: &PgTxState) -> oracle::Scope {
    if tx.flushed {
        oracle::Scope::Locked
    } else {
        oracle::Scope::All
    }
}

/// Records what the transaction did once it ended, `committed` or not: the oracle's
/// observation with the direct writes' counts merged in (one observation per transaction,
/// as the oracle alone would make), and clears the catalog cache after DDL.
pub(super) fn ended(tx: &mut PgTxState, committed: bool) {
    if let Some(catalog) = tx.ddl.take() {
        catalog.clear();
    }
    // Direct writes: what the oracle would have counted, from their command tags, in
    // the transaction's one observation. A failed statement aborted the transaction:
    // its COMMIT rolled back.
    let direct = std::mem::take(&mut tx.direct);
    let oracle_ran = tx.observation.is_some();
    let mut obs = tx
        .observation
        .take()
        .unwrap_or_else(|| TransactionObservation {
            committed,
            ..Default::default()
        });
    obs.committed = committed && (oracle_ran || !tx.aborted);
    // After a flush before BEGIN the oracle's delta starts at BEGIN and already holds the
    // direct writes' counts.
    let counted = oracle_ran && tx.flushed;
    for (sink, d, rows) in &direct {
        if !counted {
            let one = catalog::observation(&d.table, d.operation, *rows, true);
            obs.wrote |= one.wrote;
            merge(&mut obs.tables, one.tables);
        }
        sink.update(|s| s.observed = true);
    }
    let effects = tx
        .sink()
        .or_else(|| direct.first().map(|(s, _, _)| s.effects.clone()));
    if let Some(effects) = effects.filter(|_| oracle_ran || !direct.is_empty()) {
        effects.record_transaction(obs);
    }
    if oracle_ran {
        for (sink, _) in &tx.statements {
            sink.update(|s| s.observed = true);
        }
    } else if !committed {
        tx.mark_rolled_back();
    }
}

/// Adds `more` to `tables`, summing the counts of a table already there; sorted by name,
/// as the oracle reports them.
fn merge(tables: &mut Vec<TableWrites>, more: Vec<TableWrites>) {
    for w in more {
        match tables.iter_mut().find(|t| t.table == w.table) {
            Some(t) => {
                t.inserted += w.inserted;
                t.updated += w.updated;
                t.deleted += w.deleted;
            }
            None => tables.push(w),
        }
    }
    tables.sort_by(|a, b| a.table.cmp(&b.table));
}
