//! [`AuditedConn`]: the audited connection behind an [`crate::AuditedConnection`] and an
//! [`crate::AuditedTransaction`], what `*conn` and `*tx` are.
//!
//! In sqlx, `*conn` of a `PoolConnection` and `*tx` of a `Transaction` are the driver's
//! connection (`PgConnection`, `SqliteConnection`), and `&mut *tx` is how the sqlx docs run a
//! statement in a transaction. Here they are an [`AuditedConn`], and `&mut AuditedConn` is an
//! audited [`Executor`]: `query(..).execute(&mut *tx)` compiles unchanged and is audited.
//! Derefencing to the driver's connection instead would have compiled too, but every
//! statement run through it would have bypassed the audit.
//!
//! What a tool call holds, each a child module over the [`AuditedConn`] it derefs to:
//! - [`connection`]: [`crate::AuditedConnection`], a connection taken from the pool;
//! - [`transaction`]: [`AuditedTransaction`], a transaction on one (or a savepoint), and the
//!   one way an outermost audited transaction begins ([`transaction::begin_outermost`]);
//! - [`acquire`]: sqlx's `Acquire` for them, and the one way the driver's connection is
//!   handed out raw ([`AuditedConn::hand_out`]), for the pool's `Acquire` too.

/// sqlx's `Acquire` for held connections and transactions: the driver's connection, raw.
pub(crate) mod acquire;
/// [`crate::AuditedConnection`]: one pooled connection held by a tool call.
pub(crate) mod connection;
/// [`AuditedTransaction`]: a transaction on a pooled connection, or a savepoint in one.
pub(crate) mod transaction;

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use futures_core::future::BoxFuture;
use futures_core::stream::BoxStream;
use sqlx::pool::PoolConnection;
use sqlx::{Describe, Either, Error, Execute, Executor, SqlSafeStr, SqlStr, Transaction};

use crate::backend::{Backend, Ctx};
use crate::execute::Attribution;
use crate::pool::inner::Shared;
pub(crate) use transaction::{AuditedTransaction, TxAudit, begin_outermost};

/// The audited connection behind an [`crate::AuditedConnection`] (`*conn`) or an
/// [`crate::AuditedTransaction`] (`*tx`), where sqlx has the driver's connection.
///
/// `&mut AuditedConn` is a sqlx [`Executor`]: `execute(&mut *tx)`, `fetch_one(&mut *conn)`
/// and helpers over `impl Executor<'_, Database = DB>` are audited exactly as statements on
/// the connection or transaction themselves. [`AuditedConn::begin`] opens a transaction on it
/// (a savepoint inside a transaction), as sqlx's `Connection::begin` does.
pub struct AuditedConn<'c, DB: Backend> {
    // Field order matters: the audit state (which unbinds SQLite hooks on drop) drops before
    // the transaction state (PostgreSQL: a transaction never ended is recorded as rolled
    // back), and both before the connection goes back to the pool or the transaction rolls
    // back.
    pub(crate) state: Link<'c, DB::ConnState>,
    /// Inside a transaction: its audit state (PostgreSQL: the oracle's), owned by the
    /// outermost audited transaction and shared by its savepoints.
    pub(crate) tx: Option<Link<'c, TxAudit<DB>>>,
    pub(crate) raw: Raw<'c, DB>,
    pub(crate) shared: Arc<Shared<DB>>,
}

/// Audit state owned by this connection or transaction, or borrowed from the one it was
/// opened on (a transaction on a held connection, a savepoint).
pub(crate) enum Link<'c, T> {
    Own(T),
    Outer(&'c mut T),
}

impl<T> Deref for Link<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        match self {
            Link::Own(t) => t,
            Link::Outer(t) => t,
        }
    }
}

impl<T> DerefMut for Link<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        match self {
            Link::Own(t) => t,
            Link::Outer(t) => t,
        }
    }
}

/// The driver's connection: pooled, or a sqlx transaction (or savepoint) on one.
pub(crate) enum Raw<'c, DB: Backend> {
    Pooled(PoolConnection<DB>),
    Tx(Transaction<'c, DB>),
}

impl<DB: Backend> Deref for Raw<'_, DB> {
    type Target = DB::Connection;
    fn deref(&self) -> &DB::Connection {
        match self {
            Raw::Pooled(c) => c,
            Raw::Tx(t) => t,
        }
    }
}

impl<DB: Backend> DerefMut for Raw<'_, DB> {
    fn deref_mut(&mut self) -> &mut DB::Connection {
        match self {
            Raw::Pooled(c) => c,
            Raw::Tx(t) => t,
        }
    }
}

impl<DB: Backend> fmt::Debug for AuditedConn<'_, DB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuditedConn")
            .field("system", &DB::KIND.system_name())
            .field("state", &*self.state)
            .field("tx", &self.tx.as_deref().map(|tx| &**tx))
            .finish()
    }
}

impl<'c, DB: Backend> AuditedConn<'c, DB> {
    /// A connection taken from the pool, owning its audit state.
    pub(crate) fn pooled(conn: PoolConnection<DB>, shared: Arc<Shared<DB>>) -> Self {
        AuditedConn {
            state: Link::Own(DB::ConnState::default()),
            tx: None,
            raw: Raw::Pooled(conn),
            shared,
        }
    }

    /// The driver's connection, for **unaudited** access (driver-specific APIs). Statements
    /// run through it are neither attributed nor counted.
    pub fn inner_mut(&mut self) -> &mut DB::Connection {
        &mut self.raw
    }

    /// Begins a transaction on this connection, or a savepoint when it is already in one,
    /// as sqlx's `Connection::begin`. Statements in it are audited; a savepoint's statements
    /// belong to the enclosing transaction's oracle reading (PostgreSQL) and hooks (SQLite).
    /// An outermost transaction begun in a call that enforces readOnlyHint is begun read-only
    /// (`BEGIN READ ONLY`, `START TRANSACTION READ ONLY`; see
    /// [enforce mode](crate#enforce-mode)).
    ///
    /// # Errors
    /// As sqlx's `Connection::begin`.
    pub async fn begin(&mut self) -> Result<AuditedTransaction<'_, DB>, Error> {
        self.open(None).await
    }

    /// Begins a transaction with your own statement (`BEGIN IMMEDIATE`, `START TRANSACTION
    /// READ ONLY`), as sqlx's `Connection::begin_with`. Your statement is kept in enforce mode
    /// too (see [enforce mode](crate#enforce-mode) for how a read-only call's transaction
    /// begun with it is guarded).
    ///
    /// # Errors
    /// As sqlx's `Connection::begin_with`: among others, when this connection is already in a
    /// transaction.
    pub async fn begin_with(
        &mut self,
        statement: impl SqlSafeStr,
    ) -> Result<AuditedTransaction<'_, DB>, Error> {
        self.open(Some(statement.into_sql_str())).await
    }

    /// Opens a transaction (or a savepoint) borrowing this connection and its audit state.
    async fn open(
        &mut self,
        statement: Option<SqlStr>,
    ) -> Result<AuditedTransaction<'_, DB>, Error> {
        let AuditedConn {
            state,
            tx,
            raw,
            shared,
        } = self;
        let (raw, tx) = match tx {
            Some(outer) => (
                Transaction::begin(&mut **raw, statement).await?,
                Link::Outer(&mut **outer),
            ),
            None => {
                let (raw, own) = begin_outermost(&mut **raw, shared, statement, false).await?;
                (raw, Link::Own(own))
            }
        };
        Ok(AuditedTransaction::new(AuditedConn {
            state: Link::Outer(&mut **state),
            tx: Some(tx),
            raw: Raw::Tx(raw),
            shared: shared.clone(),
        }))
    }

    /// What the backend needs to run `att`'s statement on this connection, held by its
    /// caller.
    fn context(&mut self, att: Attribution) -> Ctx<'_, DB> {
        let begun_read_only = self.tx.as_deref().is_some_and(|tx| tx.begun_read_only);
        Ctx {
            conn: &mut self.raw,
            state: &mut self.state,
            tx: self.tx.as_deref_mut().map(|tx| &mut **tx),
            begun_read_only,
            pool: &self.shared.backend,
            leaks: &self.shared.read_only_leaks,
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

impl<'x, DB: Backend> Executor<'x> for &'x mut AuditedConn<'_, DB> {
    type Database = DB;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxStream<'e, Result<Either<DB::QueryResult, DB::Row>, Error>>
    where
        'x: 'e,
        E: 'q + Execute<'q, DB>,
    {
        let (query, att) = self.shared.start(query);
        crate::enforce::statement_stream(self.context(att), query)
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, Result<Option<DB::Row>, Error>>
    where
        'x: 'e,
        E: 'q + Execute<'q, DB>,
    {
        let (query, att) = self.shared.start(query);
        crate::enforce::statement_optional(self.context(att), query)
    }

    fn prepare_with<'e>(
        self,
        sql: SqlStr,
        parameters: &'e [DB::TypeInfo],
    ) -> BoxFuture<'e, Result<DB::Statement, Error>>
    where
        'x: 'e,
    {
        crate::backend::prepare_raw::<DB>(&mut self.raw, sql, parameters)
    }

    fn describe<'e>(self, sql: SqlStr) -> BoxFuture<'e, Result<Describe<DB>, Error>>
    where
        'x: 'e,
    {
        crate::backend::describe_raw::<DB>(&mut self.raw, sql)
    }
}

/// `Executor` and `Acquire` for a type that derefs to an [`AuditedConn`] (`$held<DB>`, with
/// `$($lt)?` its lifetime), delegating to it: `&mut conn` and `&mut *conn` run the same
/// audited statement.
macro_rules! delegate_held {
    ($held:ident $(, $lt:lifetime)?) => {
        impl<'x, $($lt,)? DB: Backend> sqlx::Executor<'x> for &'x mut $held<$($lt,)? DB> {
            type Database = DB;

            fn fetch_many<'e, 'q: 'e, E>(
                self,
                query: E,
            ) -> futures_core::stream::BoxStream<
                'e,
                Result<sqlx::Either<DB::QueryResult, DB::Row>, sqlx::Error>,
            >
            where
                'x: 'e,
                E: 'q + sqlx::Execute<'q, DB>,
            {
                (&mut **self).fetch_many(query)
            }

            fn fetch_optional<'e, 'q: 'e, E>(
                self,
                query: E,
            ) -> futures_core::future::BoxFuture<'e, Result<Option<DB::Row>, sqlx::Error>>
            where
                'x: 'e,
                E: 'q + sqlx::Execute<'q, DB>,
            {
                (&mut **self).fetch_optional(query)
            }

            fn prepare_with<'e>(
                self,
                sql: sqlx::SqlStr,
                parameters: &'e [DB::TypeInfo],
            ) -> futures_core::future::BoxFuture<'e, Result<DB::Statement, sqlx::Error>>
            where
                'x: 'e,
            {
                (&mut **self).prepare_with(sql, parameters)
            }

            fn describe<'e>(
                self,
                sql: sqlx::SqlStr,
            ) -> futures_core::future::BoxFuture<'e, Result<sqlx::Describe<DB>, sqlx::Error>>
            where
                'x: 'e,
            {
                (&mut **self).describe(sql)
            }
        }

        impl<$($lt,)? DB: Backend> $held<$($lt,)? DB> {
            /// Begins a transaction on this connection, or a savepoint when it is already in
            /// one, as sqlx's `Connection::begin`. Statements in it are audited; a savepoint's
            /// statements belong to the enclosing transaction's oracle reading (PostgreSQL) and
            /// hooks (SQLite). An outermost transaction begun in a call that enforces
            /// readOnlyHint is begun read-only (`BEGIN READ ONLY`, `START TRANSACTION READ
            /// ONLY`; see [enforce mode](crate#enforce-mode)). Here as well as on the
            /// connection it derefs to, so that `tx.begin()` stays audited with sqlx's `Acquire` in scope (whose
            /// `begin` for `&mut Self` would otherwise be picked first, as it is for sqlx's
            /// own `Transaction`, and hand out an unaudited sqlx transaction).
            ///
            /// # Errors
            /// As sqlx's `Connection::begin`.
            pub async fn begin(
                &mut self,
            ) -> Result<crate::AuditedTransaction<'_, DB>, sqlx::Error> {
                (**self).begin().await
            }

            /// Begins a transaction with your own statement (`BEGIN IMMEDIATE`, `START
            /// TRANSACTION READ ONLY`), as sqlx's `Connection::begin_with`. Your statement is
            /// kept in enforce mode too (see [enforce mode](crate#enforce-mode) for how a
            /// read-only call's transaction begun with it is guarded).
            ///
            /// # Errors
            /// As sqlx's `Connection::begin_with`.
            pub async fn begin_with(
                &mut self,
                statement: impl sqlx::SqlSafeStr,
            ) -> Result<crate::AuditedTransaction<'_, DB>, sqlx::Error> {
                (**self).begin_with(statement).await
            }
        }

        /// sqlx's `Acquire`, as for the connection it derefs to: hands out the driver's
        /// connection, unaudited statement by statement.
        impl<'a, $($lt,)? DB: Backend> sqlx::Acquire<'a> for &'a mut $held<$($lt,)? DB> {
            type Database = DB;
            type Connection = &'a mut DB::Connection;

            fn acquire(
                self,
            ) -> futures_core::future::BoxFuture<'a, Result<Self::Connection, sqlx::Error>> {
                sqlx::Acquire::acquire(&mut **self)
            }

            fn begin(
                self,
            ) -> futures_core::future::BoxFuture<
                'a,
                Result<sqlx::Transaction<'a, DB>, sqlx::Error>,
            > {
                sqlx::Acquire::begin(&mut **self)
            }
        }
    };
}
pub(crate) use delegate_held;
