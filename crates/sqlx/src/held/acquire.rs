//! sqlx's [`Acquire`] for `&mut AuditedConn` (and so for held connections and transactions),
//! and [`AuditedConn::hand_out`], the one way the driver's connection leaves the audit's
//! hands, which the pool's `Acquire` uses too (`crate::pool::acquire`).
//!
//! sqlx's trait hands out the **driver's** connection (its `Connection` must deref to
//! `DB::Connection`) and a sqlx `Transaction`, so statements a helper runs through them are
//! not audited statement by statement. Inside a call this is counted and noted on the call,
//! and SQLite's hooks stay bound to the call until this connection's next audited statement
//! or until it drops; see the crate docs (*Acquire and set-up*).

use std::sync::Arc;

use futures_core::future::BoxFuture;
use hintaudit_core::{CallEffects, CallScope, stats};
use sqlx::{Acquire, Error, Transaction};

use super::AuditedConn;
use crate::backend::Backend;

/// Notes a connection handed out raw through sqlx's `Acquire` now: outside any call scope
/// it is set-up, counted with `stats().setup_acquire()` (`None`); inside one it is counted
/// with `stats().unaudited_acquire()` and noted on the call's effects, whose handle it
/// returns.
pub(crate) fn note_acquire() -> Option<Arc<CallEffects>> {
    match CallScope::current() {
        None => {
            stats().setup_acquire();
            None
        }
        Some(scope) => {
            stats().unaudited_acquire();
            scope.effects().record_unaudited_acquire();
            Some(scope.effects_handle())
        }
    }
}

impl<DB: Backend> AuditedConn<'_, DB> {
    /// Before the driver's connection is handed out through sqlx's `Acquire` (noted with
    /// [`note_acquire`], which gave `call`): resets it after a read-only leak (outside a
    /// transaction: see [`crate::enforce`]) and marks it for set-up (`call` `None`) or for
    /// the call (SQLite: the hooks are bound to the call until the next audited statement
    /// or until this connection drops).
    pub(crate) async fn hand_out(&mut self, call: Option<Arc<CallEffects>>) {
        if self.tx.is_none() {
            let leaks = &self.shared.read_only_leaks;
            crate::enforce::reset_for_call::<DB>(&mut self.raw, leaks).await;
        }
        DB::mark_acquired(&mut self.raw, &mut self.state, &self.shared.backend, call).await;
    }
}

/// sqlx's [`Acquire`], for helpers written against `impl Acquire<'_, Database = DB>`: the
/// driver's connection, handed out with [`AuditedConn::hand_out`].
impl<'a, DB: Backend> Acquire<'a> for &'a mut AuditedConn<'_, DB> {
    type Database = DB;
    type Connection = &'a mut DB::Connection;

    fn acquire(self) -> BoxFuture<'a, Result<Self::Connection, Error>> {
        Box::pin(async move {
            self.hand_out(note_acquire()).await;
            Ok(&mut *self.raw)
        })
    }

    fn begin(self) -> BoxFuture<'a, Result<Transaction<'a, DB>, Error>> {
        Box::pin(async move {
            self.hand_out(note_acquire()).await;
            Transaction::begin(&mut *self.raw, None).await
        })
    }
}
