//! [`AuditedConnection`]: one pooled connection, held by one tool call.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use sqlx::pool::PoolConnection;

use crate::backend::Backend;
use crate::conn::{AuditedConn, Link, Raw, delegate_held};
use crate::pool::inner::Shared;

/// A connection taken from an [`crate::AuditedPool`] with [`crate::AuditedPool::acquire`].
///
/// `&mut AuditedConnection<DB>` is a sqlx [`sqlx::Executor`], and so is `&mut *conn` (an
/// [`AuditedConn`], where sqlx's `PoolConnection` derefs to the driver's connection): both
/// run the same audited statement. Each statement is attributed to the call scope current
/// when it starts. On SQLite, the connection's hooks stay bound to that call until the next
/// statement or until the connection is dropped (returned to the pool), so changes committed
/// later by a raw `COMMIT` still land in the call that made them. `conn.begin()` opens an
/// audited transaction on it ([`AuditedConn::begin`]).
pub struct AuditedConnection<DB: Backend> {
    /// `None` only once dropped or detached.
    conn: Option<AuditedConn<'static, DB>>,
}

impl<DB: Backend> AuditedConnection<DB> {
    pub(crate) fn new(conn: PoolConnection<DB>, shared: Arc<Shared<DB>>) -> Self {
        AuditedConnection {
            conn: Some(AuditedConn::pooled(conn, shared)),
        }
    }

    /// Detaches the raw pooled connection; it is no longer audited. On PostgreSQL, an
    /// oracle transaction a dropped stream left open on it cannot be finished then: sqlx's
    /// `ROLLBACK` is queued (see [`crate::AuditedConn`]'s streams), and the loss is counted
    /// as an audit error.
    pub fn into_inner(mut self) -> PoolConnection<DB> {
        let (mut state, mut conn) = self.take();
        DB::detach(&mut state, &mut conn);
        conn
    }

    /// The connection's own audit state and the pooled connection, taken out.
    fn take(&mut self) -> (DB::ConnState, PoolConnection<DB>) {
        let AuditedConn { state, tx, raw, .. } = self.conn.take().expect(HELD);
        drop(tx);
        match (state, raw) {
            (Link::Own(state), Raw::Pooled(conn)) => (state, conn),
            // An `AuditedConnection` is only ever built from a pooled connection (`new`).
            _ => unreachable!("an AuditedConnection holds a pooled connection"),
        }
    }
}

const HELD: &str = "an AuditedConnection holds its connection until dropped";

impl<DB: Backend> Drop for AuditedConnection<DB> {
    fn drop(&mut self) {
        if self.conn.is_some() {
            let (state, conn) = self.take();
            DB::release(state, conn);
        }
    }
}

impl<DB: Backend> Deref for AuditedConnection<DB> {
    type Target = AuditedConn<'static, DB>;
    fn deref(&self) -> &Self::Target {
        self.conn.as_ref().expect(HELD)
    }
}

impl<DB: Backend> DerefMut for AuditedConnection<DB> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.conn.as_mut().expect(HELD)
    }
}

impl<DB: Backend> fmt::Debug for AuditedConnection<DB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AuditedConnection").field(&**self).finish()
    }
}

delegate_held!(AuditedConnection);
