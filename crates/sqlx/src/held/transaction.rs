//! [`AuditedTransaction`]: a transaction on a pooled connection, or a savepoint in one.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use sqlx::pool::MaybePoolConnection;
use sqlx::{Error, SqlStr, Transaction};

use super::{AuditedConn, Link, Raw, delegate_held};
use crate::backend::{Backend, TxEnd};
use crate::guard::Guard;
use crate::pool::inner::Shared;

/// A transaction started with [`crate::AuditedPool::begin`] (`'static`), or with
/// [`crate::AuditedConnection::begin`] or [`AuditedTransaction::begin`] on a held connection or
/// inside a transaction (a savepoint), as
/// sqlx's `Transaction<'c, DB>`.
///
/// `&mut AuditedTransaction<DB>` is a sqlx [`sqlx::Executor`], and so is `&mut *tx` (the
/// audited connection, where sqlx's `Transaction` derefs to the driver's connection): both run
/// the same audited statement. End it with [`AuditedTransaction::commit`] or
/// [`AuditedTransaction::rollback`]; dropping it rolls back as sqlx does. On SQLite, row
/// changes are buffered per connection until the commit hook (recorded as committed) or the
/// rollback hook (recorded as rolled back: attempts, not changes). On PostgreSQL, earlier
/// transactions' statistics are flushed before `BEGIN` (by the pool's test of the connection
/// it hands out, or else in one round trip of their own), and the oracle reads the transaction's writes right before `COMMIT` or `ROLLBACK`
/// and records one [`hintaudit_core::TransactionObservation`]; a transaction dropped without
/// either cannot be asked, and its write statements are recorded as failed. A savepoint's statements belong
/// to its outermost transaction's reading; its own `commit` and `rollback` are `RELEASE
/// SAVEPOINT` and `ROLLBACK TO SAVEPOINT`, as in sqlx.
pub struct AuditedTransaction<'c, DB: Backend> {
    conn: AuditedConn<'c, DB>,
}

/// An outermost transaction's audit state: the backend's ([`Backend::TxState`], which it
/// derefs to), recorded with [`Backend::dropped_unended`] when the transaction is dropped
/// without `commit()` or `rollback()` (sqlx rolls it back), and what every backend keeps
/// alike.
pub(crate) struct TxAudit<DB: Backend> {
    backend: Guard<DB::TxState, fn(&mut DB::TxState)>,
    /// Begun with the backend's read-only `BEGIN` ([`crate::backend::ReadOnlySql::begin`],
    /// enforce mode): the database itself refuses its writes.
    pub(crate) begun_read_only: bool,
}

impl<DB: Backend> TxAudit<DB> {
    /// The transaction ended with `commit()` or `rollback()`: nothing is recorded on drop.
    pub(crate) fn defuse(&mut self) {
        self.backend.defuse();
    }
}

impl<DB: Backend> Deref for TxAudit<DB> {
    type Target = DB::TxState;
    fn deref(&self) -> &DB::TxState {
        &self.backend
    }
}

impl<DB: Backend> DerefMut for TxAudit<DB> {
    fn deref_mut(&mut self) -> &mut DB::TxState {
        &mut self.backend
    }
}

/// Begins an outermost audited transaction on `conn` (taken from the pool for it:
/// `pooled`, or a held connection's): the reset after a read-only leak (see [`crate::enforce`]), the backend's
/// [`Backend::before_begin`], sqlx's `BEGIN` (in a call that enforces readOnlyHint, the
/// backend's read-only begin) or the caller's `statement`, then [`Backend::after_begin`].
/// The one way every outermost audited transaction begins.
pub(crate) async fn begin_outermost<'c, DB, C>(
    mut conn: C,
    shared: &Shared<DB>,
    statement: Option<SqlStr>,
    pooled: bool,
) -> Result<(Transaction<'c, DB>, TxAudit<DB>), Error>
where
    DB: Backend,
    C: DerefMut<Target = DB::Connection> + Into<MaybePoolConnection<'c, DB>>,
{
    crate::enforce::reset_for_call::<DB>(&mut conn, &shared.read_only_leaks).await;
    let audit = DB::before_begin(&mut conn, &shared.backend, pooled).await?;
    let (statement, begun_read_only) = crate::enforce::begin_statement::<DB>(statement);
    let mut raw = Transaction::begin(conn, statement).await?;
    let mut audit = TxAudit::<DB> {
        backend: Guard::new(audit, DB::dropped_unended),
        begun_read_only,
    };
    DB::after_begin(&mut raw, &mut audit).await;
    Ok((raw, audit))
}

impl<DB: Backend> AuditedTransaction<'static, DB> {
    /// Begins a transaction on a connection taken from the pool ([`begin_outermost`]).
    pub(crate) async fn on_pool(
        shared: Arc<Shared<DB>>,
        statement: Option<SqlStr>,
    ) -> Result<Self, Error> {
        let pooled = shared.pool.acquire().await?;
        let (raw, audit) = begin_outermost(pooled, &shared, statement, true).await?;
        Ok(AuditedTransaction::new(AuditedConn {
            state: Link::Own(DB::ConnState::default()),
            tx: Some(Link::Own(audit)),
            raw: Raw::Tx(raw),
            shared,
        }))
    }
}

impl<'c, DB: Backend> AuditedTransaction<'c, DB> {
    /// A transaction whose `BEGIN` (or `SAVEPOINT`) answered.
    pub(crate) fn new(conn: AuditedConn<'c, DB>) -> Self {
        AuditedTransaction { conn }
    }

    /// Commits (a savepoint: releases it). On PostgreSQL the oracle query runs first for an
    /// outermost transaction (one round trip, see the crate docs); its failure is counted,
    /// never returned.
    ///
    /// # Errors
    /// As [`Transaction::commit`].
    pub async fn commit(self) -> Result<(), Error> {
        self.end(TxEnd::Commit).await
    }

    /// Rolls back (a savepoint: rolls back to it). On PostgreSQL the oracle query runs first
    /// for an outermost transaction, and its observation is recorded with `committed: false`.
    ///
    /// # Errors
    /// As [`Transaction::rollback`].
    pub async fn rollback(self) -> Result<(), Error> {
        self.end(TxEnd::Rollback).await
    }

    /// Ends the transaction as `end` says; an outermost one between the backend's
    /// `before_end` and `after_end`.
    async fn end(self, end: TxEnd) -> Result<(), Error> {
        let AuditedConn {
            mut state,
            tx,
            raw,
            shared,
        } = self.conn;
        let Raw::Tx(mut raw) = raw else {
            // Only `on_pool` and `AuditedConn::open` build a transaction, both on `Raw::Tx`.
            return Ok(());
        };
        let finish = |raw: Transaction<'c, DB>| async move {
            match end {
                TxEnd::Commit => raw.commit().await,
                TxEnd::Rollback => raw.rollback().await,
            }
        };
        let answer = match tx {
            Some(Link::Own(mut txs)) => {
                let lost = DB::before_end(&mut raw, &mut txs, &mut state, &shared.backend, end);
                // A lost connection's error is the answer; sqlx rolls the dropped
                // transaction back if the connection is ever used again.
                let answer = match lost.await {
                    Some(e) => Err(e),
                    None => finish(raw).await,
                };
                txs.defuse();
                DB::after_end(&mut txs, end, &answer);
                answer
            }
            Some(Link::Outer(txs)) => {
                let answer = finish(raw).await;
                if end == TxEnd::Rollback && answer.is_ok() {
                    DB::savepoint_rolled_back(txs);
                }
                answer
            }
            None => finish(raw).await,
        };
        drop((state, shared));
        answer
    }
}

impl<'c, DB: Backend> Deref for AuditedTransaction<'c, DB> {
    type Target = AuditedConn<'c, DB>;
    fn deref(&self) -> &Self::Target {
        &self.conn
    }
}

impl<DB: Backend> DerefMut for AuditedTransaction<'_, DB> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.conn
    }
}

impl<DB: Backend> fmt::Debug for AuditedTransaction<'_, DB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AuditedTransaction")
            .field(&self.conn)
            .finish()
    }
}

delegate_held!(AuditedTransaction, 'c);
