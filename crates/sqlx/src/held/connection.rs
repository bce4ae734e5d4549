//! [`AuditedConnection`]: one pooled connection, held by one tool call.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use sqlx::pool::PoolConnection;

use super::{AuditedConn, Raw, delegate_held};
use crate::backend::Backend;
use crate::pool::inner::Shared;

/// A connection taken from an [`crate::AuditedPool`] with [`crate::AuditedPool::acquire`].
///
/// `&mut AuditedConnection<DB>` is a sqlx [`sqlx::Executor`], and so is `&mut *conn` (the
/// audited connection, where sqlx's `PoolConnection` derefs to the driver's connection): both
/// run the same audited statement. Each statement is attributed to the call scope current
/// when it starts. On SQLite, the connection's hooks stay bound to that call until the next
/// statement or until the connection is dropped (returned to the pool), so changes committed
/// later by a raw `COMMIT` still land in the call that made them. `conn.begin()` opens an
/// audited transaction on it ([`AuditedConnection::begin`]).
pub struct AuditedConnection<DB: Backend> {
    conn: AuditedConn<'static, DB>,
}

impl<DB: Backend> AuditedConnection<DB> {
    pub(crate) fn new(conn: PoolConnection<DB>, shared: Arc<Shared<DB>>) -> Self {
        AuditedConnection {
            conn: AuditedConn::pooled(conn, shared),
        }
    }

    /// Detaches the raw pooled connection; it is no longer audited.
    pub fn into_inner(self) -> PoolConnection<DB> {
        let AuditedConn { state, tx, raw, .. } = self.conn;
        drop((state, tx));
        match raw {
            Raw::Pooled(conn) => conn,
            // An `AuditedConnection` is only ever built from a pooled connection (`new`).
            Raw::Tx(_) => unreachable!("an AuditedConnection holds a pooled connection"),
        }
    }
}

impl<DB: Backend> Deref for AuditedConnection<DB> {
    type Target = AuditedConn<'static, DB>;
    fn deref(&self) -> &Self::Target {
        &self.conn
    }
}

impl<DB: Backend> DerefMut for AuditedConnection<DB> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.conn
    }
}

impl<DB: Backend> fmt::Debug for AuditedConnection<DB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AuditedConnection")
            .field(&self.conn)
            .finish()
    }
}

delegate_held!(AuditedConnection);
