//! [`AuditedConnection`]: one pooled connection, held by one tool call.

use std::fmt;
use std::sync::Arc;

use futures_core::future::BoxFuture;
use futures_core::stream::BoxStream;
use sqlx::pool::PoolConnection;
use sqlx::{Describe, Either, Error, Execute, Executor, SqlStr};

use crate::backend::{Backend, Ctx};
use crate::execute::Attribution;
use crate::pool::inner::Shared;

/// A connection taken from an [`crate::AuditedPool`] with [`crate::AuditedPool::acquire`].
///
/// `&mut AuditedConnection<DB>` is a sqlx [`Executor`]. Each statement is attributed to the
/// call scope current when it starts. On SQLite, the connection's hooks stay bound to that
/// call until the next statement or until the connection is dropped (returned to the pool),
/// so changes committed later by a raw `COMMIT` still land in the call that made them.
pub struct AuditedConnection<DB: Backend> {
    // Field order matters: the audit state (which unbinds SQLite hooks on drop) drops before
    // the connection goes back to the pool.
    pub(crate) state: DB::ConnState,
    pub(crate) conn: PoolConnection<DB>,
    pub(crate) shared: Arc<Shared<DB>>,
}

impl<DB: Backend> AuditedConnection<DB> {
    pub(crate) fn new(conn: PoolConnection<DB>, shared: Arc<Shared<DB>>) -> Self {
        AuditedConnection {
            state: DB::ConnState::default(),
            conn,
            shared,
        }
    }

    /// The raw connection, for **unaudited** access (driver-specific APIs). Statements run
    /// through it are neither attributed nor counted.
    pub fn inner_mut(&mut self) -> &mut DB::Connection {
        &mut self.conn
    }

    /// Detaches the raw pooled connection; it is no longer audited.
    pub fn into_inner(self) -> PoolConnection<DB> {
        let AuditedConnection { state, conn, .. } = self;
        drop(state);
        conn
    }
}

impl<DB: Backend> fmt::Debug for AuditedConnection<DB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuditedConnection")
            .field("system", &DB::SYSTEM_NAME)
            .field("state", &self.state)
            .finish()
    }
}

impl<DB: Backend> AuditedConnection<DB> {
    /// What the backend needs to run `att`'s statement on this connection, held by its
    /// caller.
    fn context(&mut self, att: Attribution) -> Ctx<'_, DB> {
        Ctx {
            conn: &mut *self.conn,
            state: &mut self.state,
            tx: None,
            pool: &self.shared.backend,
            oracle: self.shared.oracle,
            att,
            pooled: false,
        }
    }

    /// What the backend needs to run `att`'s statement on this connection, taken from the
    /// pool for that statement alone (`Executor for &AuditedPool`).
    pub(crate) fn pooled_context(&mut self, att: Attribution) -> Ctx<'_, DB> {
        let mut ctx = self.context(att);
        ctx.pooled = true;
        ctx
    }
}

/// `Executor` for a held connection type (`$held<DB>`, whose raw connection is the field
/// `$raw`): statements start with [`Shared::start`] and go through the type's `context` to
/// the backend; `prepare_with` and `describe` go to the raw connection unaudited. Shared by
/// [`AuditedConnection`] and [`crate::AuditedTransaction`], as sqlx shares its own executor
/// impls with a macro.
macro_rules! held_executor {
    ($held:ident, $raw:ident) => {
        impl<'c, DB: Backend> Executor<'c> for &'c mut $held<DB> {
            type Database = DB;

            fn fetch_many<'e, 'q: 'e, E>(
                self,
                query: E,
            ) -> BoxStream<'e, Result<Either<DB::QueryResult, DB::Row>, Error>>
            where
                'c: 'e,
                E: 'q + Execute<'q, DB>,
            {
                let (query, att) = self.shared.start(query);
                crate::backend::statement_stream(self.context(att), query)
            }

            fn fetch_optional<'e, 'q: 'e, E>(
                self,
                query: E,
            ) -> BoxFuture<'e, Result<Option<DB::Row>, Error>>
            where
                'c: 'e,
                E: 'q + Execute<'q, DB>,
            {
                let (query, att) = self.shared.start(query);
                crate::backend::statement_optional(self.context(att), query)
            }

            fn prepare_with<'e>(
                self,
                sql: SqlStr,
                parameters: &'e [DB::TypeInfo],
            ) -> BoxFuture<'e, Result<DB::Statement, Error>>
            where
                'c: 'e,
            {
                crate::backend::prepare_raw::<DB>(&mut self.$raw, sql, parameters)
            }

            fn describe<'e>(self, sql: SqlStr) -> BoxFuture<'e, Result<Describe<DB>, Error>>
            where
                'c: 'e,
            {
                crate::backend::describe_raw::<DB>(&mut self.$raw, sql)
            }
        }
    };
}
pub(crate) use held_executor;

held_executor!(AuditedConnection, conn);
