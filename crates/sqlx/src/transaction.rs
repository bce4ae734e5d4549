//! [`AuditedTransaction`]: a transaction on a pooled connection.

use std::fmt;
use std::sync::Arc;

use futures_core::future::BoxFuture;
use futures_core::stream::BoxStream;
use futures_util::FutureExt;
use sqlx::{Describe, Either, Error, Execute, Executor, SqlStr, Transaction};

use crate::backend::{Backend, Ctx};
use crate::execute::{Attribution, AuditedQuery};
use crate::pool::Shared;

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
        DB::after_begin(&mut t.tx, &mut t.txs, &t.shared).await;
        Ok(t)
    }

    /// Commits. On PostgreSQL the oracle query runs first (one round trip, see the crate
    /// docs); its failure is counted, never returned.
    ///
    /// # Errors
    /// As [`Transaction::commit`].
    pub async fn commit(self) -> Result<(), Error> {
        let AuditedTransaction {
            state,
            mut txs,
            mut tx,
            shared,
        } = self;
        DB::before_end(&mut tx, &mut txs, true).await;
        let r = tx.commit().await;
        DB::after_end(&mut txs, true, r.is_ok());
        drop((state, shared));
        r
    }

    /// Rolls back. On PostgreSQL the oracle query runs first, and its observation is recorded
    /// with `committed: false`.
    ///
    /// # Errors
    /// As [`Transaction::rollback`].
    pub async fn rollback(self) -> Result<(), Error> {
        let AuditedTransaction {
            state,
            mut txs,
            mut tx,
            shared,
        } = self;
        DB::before_end(&mut tx, &mut txs, false).await;
        let r = tx.rollback().await;
        DB::after_end(&mut txs, false, r.is_ok());
        drop((state, shared));
        r
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
    /// Starts attributing `query` and gathers what the backend needs to run it on this
    /// held connection.
    fn context(&mut self, query: &AuditedQuery<DB>) -> Ctx<'_, DB> {
        let att = Attribution::start(&self.shared.classifier, DB::SYSTEM_NAME, query.text());
        Ctx {
            conn: &mut *self.tx,
            state: &mut self.state,
            tx: Some(&mut self.txs),
            shared: self.shared.clone(),
            att,
            pooled: false,
        }
    }
}

impl<'c, DB: Backend> Executor<'c> for &'c mut AuditedTransaction<DB> {
    type Database = DB;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxStream<'e, Result<Either<DB::QueryResult, DB::Row>, Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, DB>,
    {
        let query = AuditedQuery::split(query);
        let ctx = self.context(&query);
        DB::run_many(ctx, query)
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, Result<Option<DB::Row>, Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, DB>,
    {
        let query = AuditedQuery::split(query);
        let ctx = self.context(&query);
        DB::run_optional(ctx, query)
    }

    fn prepare_with<'e>(
        self,
        sql: SqlStr,
        parameters: &'e [DB::TypeInfo],
    ) -> BoxFuture<'e, Result<DB::Statement, Error>>
    where
        'c: 'e,
    {
        DB::prepare_raw(&mut self.tx, sql, parameters)
    }

    fn describe<'e>(self, sql: SqlStr) -> BoxFuture<'e, Result<Describe<DB>, Error>>
    where
        'c: 'e,
    {
        DB::describe_raw(&mut self.tx, sql).boxed()
    }
}
