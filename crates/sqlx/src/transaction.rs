//! [`AuditedTransaction`]: a transaction on a pooled connection.

use std::fmt;
use std::sync::Arc;

use futures_core::future::BoxFuture;
use futures_core::stream::BoxStream;
use sqlx::{Describe, Either, Error, Execute, Executor, SqlStr, Transaction};

use crate::backend::{Backend, Ctx, TxEnd};
use crate::connection::held_executor;
use crate::execute::Attribution;
use crate::pool::inner::Shared;

/// A transaction started with [`crate::AuditedPool::begin`].
///
/// `&mut AuditedTransaction<DB>` is a sqlx [`Executor`]. End it with
/// [`AuditedTransaction::commit`] or [`AuditedTransaction::rollback`]; dropping it rolls back
/// as sqlx does. On SQLite, row changes are buffered per connection until the commit hook
/// (recorded as committed) or the rollback hook (recorded as rolled back: attempts, not
/// changes). On PostgreSQL, the oracle reads the transaction's writes right before `COMMIT` or
/// `ROLLBACK` and records one [`hintaudit_core::TransactionObservation`]; a transaction
/// dropped without either cannot be asked, and its write statements are recorded as failed.
pub struct AuditedTransaction<DB: Backend> {
    // Field order: audit state drops (and unbinds) before the transaction rolls back.
    pub(crate) state: DB::ConnState,
    pub(crate) txs: DB::TxState,
    pub(crate) tx: Transaction<'static, DB>,
    pub(crate) shared: Arc<Shared<DB>>,
}

impl<DB: Backend> AuditedTransaction<DB> {
    pub(crate) async fn begin(shared: Arc<Shared<DB>>) -> Result<Self, Error> {
        let tx = shared.pool.begin().await?;
        let mut t = AuditedTransaction {
            state: DB::ConnState::default(),
            txs: DB::TxState::default(),
            tx,
            shared,
        };
        DB::after_begin(&mut t.tx, &mut t.txs, t.shared.oracle).await;
        Ok(t)
    }

    /// Commits. On PostgreSQL the oracle query runs first (one round trip, see the crate
    /// docs); its failure is counted, never returned.
    ///
    /// # Errors
    /// As [`Transaction::commit`].
    pub async fn commit(self) -> Result<(), Error> {
        self.end(TxEnd::Commit).await
    }

    /// Rolls back. On PostgreSQL the oracle query runs first, and its observation is recorded
    /// with `committed: false`.
    ///
    /// # Errors
    /// As [`Transaction::rollback`].
    pub async fn rollback(self) -> Result<(), Error> {
        self.end(TxEnd::Rollback).await
    }

    /// Ends the transaction as `end` says, between the backend's `before_end` and
    /// `after_end`.
    async fn end(self, end: TxEnd) -> Result<(), Error> {
        let AuditedTransaction {
            mut state,
            mut txs,
            mut tx,
            shared,
        } = self;
        DB::before_end(&mut tx, &mut txs, &mut state, &shared.backend, end).await;
        let answer = match end {
            TxEnd::Commit => tx.commit().await,
            TxEnd::Rollback => tx.rollback().await,
        };
        DB::after_end(&mut txs, end, &answer);
        drop((state, shared));
        answer
    }

    /// The raw connection, for **unaudited** access. Statements run through it are neither
    /// attributed nor counted (their rows still reach SQLite's hooks).
    pub fn inner_mut(&mut self) -> &mut DB::Connection {
        &mut self.tx
    }
}

impl<DB: Backend> fmt::Debug for AuditedTransaction<DB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuditedTransaction")
            .field("system", &DB::SYSTEM_NAME)
            .field("state", &self.state)
            .field("tx", &self.txs)
            .finish()
    }
}

impl<DB: Backend> AuditedTransaction<DB> {
    /// What the backend needs to run `att`'s statement in this transaction.
    fn context(&mut self, att: Attribution) -> Ctx<'_, DB> {
        Ctx {
            conn: &mut *self.tx,
            state: &mut self.state,
            tx: Some(&mut self.txs),
            pool: &self.shared.backend,
            oracle: self.shared.oracle,
            att,
            pooled: false,
        }
    }
}

held_executor!(AuditedTransaction, tx);
