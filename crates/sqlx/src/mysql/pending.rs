//! What a MySQL transaction holds back until it ends: its statements (marked failed when it
//! rolls back, so that a rolled-back write is an attempt, not a write) and the upsert
//! counts read from the affected-rows convention (recorded with the transaction's outcome).

use std::sync::Arc;

use hintaudit_core::{CallEffects, StatementOutcome, TransactionObservation};

use crate::execute::Sink;

/// The statements and counts of one open transaction (an [`crate::AuditedTransaction`], or
/// one the caller opened with `BEGIN` / `START TRANSACTION`).
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// Every statement recorded in the transaction, and whether it is a write.
    statements: Vec<(Sink, bool)>,
    /// Upsert counts, recorded when the transaction ends.
    counts: Vec<(Arc<CallEffects>, TransactionObservation)>,
}

impl Pending {
    pub(crate) fn statement(&mut self, sink: Sink, write: bool) {
        self.statements.push((sink, write));
    }

    pub(crate) fn counts(&mut self, effects: Arc<CallEffects>, obs: TransactionObservation) {
        self.counts.push((effects, obs));
    }

    /// The transaction ended: committed or not.
    pub(crate) fn end(&mut self, committed: bool) {
        if !committed {
            for (sink, write) in self.statements.drain(..) {
                if write {
                    sink.update(|s| s.outcome = StatementOutcome::RolledBack);
                }
            }
        }
        self.statements.clear();
        for (effects, mut obs) in self.counts.drain(..) {
            obs.committed = committed;
            effects.record_transaction(obs);
        }
    }
}
