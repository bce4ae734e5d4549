//! [`AuditedPool`]: a sqlx pool whose statements are attributed to the tool call that runs
//! them (design §3, "attribution").

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use futures_core::future::BoxFuture;
use futures_core::stream::BoxStream;
use futures_util::FutureExt;
use sqlx::pool::{PoolConnectionMetadata, PoolOptions};
use sqlx::{Connection, Database, Describe, Either, Error, Execute, Executor, Pool, SqlStr};
use tracing::Instrument;

use crate::backend::{Backend, Ctx};
use crate::classify::{Classifier, DEFAULT_CLASSIFY_CACHE};
use crate::connection::AuditedConnection;
use crate::execute::{Attribution, AuditedQuery};
use crate::stream::TryStream;
use crate::transaction::AuditedTransaction;

/// When the PostgreSQL transaction oracle runs (design §3, §7). Ignored by other backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PgOracle {
    /// Never: PostgreSQL evidence is statement analysis and rows affected only.
    Off,
    /// For statements that may write: write operations, unparseable text, `CALL`, and any
    /// statement calling a function that is not a known pure built-in
    /// ([`crate::Classification::may_write`]). Plain `SELECT`s skip it. The default.
    #[default]
    Writes,
    /// For every statement and every transaction, reads included.
    Always,
}

/// State shared by a pool and everything acquired from it.
#[doc(hidden)]
pub struct Shared<DB: Backend> {
    pub(crate) pool: Pool<DB>,
    pub(crate) classifier: Classifier,
    pub(crate) oracle: PgOracle,
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    pub(crate) backend: Arc<DB::PoolState>,
}

/// A callback run on every new connection of a pool, with the shape of sqlx's
/// [`PoolOptions::after_connect`]; see [`AuditedPoolOptions::after_connect`].
pub type AfterConnect<DB> = Arc<
    dyn for<'c> Fn(
            &'c mut <DB as Database>::Connection,
            PoolConnectionMetadata,
        ) -> BoxFuture<'c, Result<(), Error>>
        + Send
        + Sync,
>;

/// Options for an [`AuditedPool`]; start with [`AuditedPool::options`].
#[derive(Clone)]
pub struct AuditedPoolOptions<DB: Backend> {
    oracle: PgOracle,
    classify_cache: usize,
    after_connect: Option<AfterConnect<DB>>,
    _db: PhantomData<fn() -> DB>,
}

impl<DB: Backend> fmt::Debug for AuditedPoolOptions<DB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuditedPoolOptions")
            .field("oracle", &self.oracle)
            .field("classify_cache", &self.classify_cache)
            .field("after_connect", &self.after_connect.is_some())
            .finish()
    }
}

impl<DB: Backend> Default for AuditedPoolOptions<DB> {
    fn default() -> Self {
        AuditedPoolOptions {
            oracle: PgOracle::default(),
            classify_cache: DEFAULT_CLASSIFY_CACHE,
            after_connect: None,
            _db: PhantomData,
        }
    }
}

impl<DB: Backend> AuditedPoolOptions<DB> {
    /// When the PostgreSQL oracle runs (default [`PgOracle::Writes`]).
    pub fn with_postgres_oracle(mut self, oracle: PgOracle) -> Self {
        self.oracle = oracle;
        self
    }

    /// How many distinct SQL texts the pool keeps classified (LRU; default
    /// [`DEFAULT_CLASSIFY_CACHE`] = 1024 entries; texts over 16 KiB are never cached).
    pub fn with_classify_cache(mut self, entries: usize) -> Self {
        self.classify_cache = entries.max(1);
        self
    }

    /// Your callback for every new connection, run after hintaudit's own set-up (on SQLite,
    /// installing its hooks). Use this instead of sqlx's [`PoolOptions::after_connect`] when
    /// hintaudit opens the pool ([`AuditedPoolOptions::connect_with`]): sqlx keeps one such
    /// callback per pool, and on SQLite hintaudit needs it. An error from `callback` fails
    /// the connection, as in sqlx. Not used by [`AuditedPoolOptions::wrap`], whose pool is
    /// already open.
    pub fn after_connect<F>(mut self, callback: F) -> Self
    where
        for<'c> F: Fn(&'c mut DB::Connection, PoolConnectionMetadata) -> BoxFuture<'c, Result<(), Error>>
            + Send
            + Sync
            + 'static,
    {
        self.after_connect = Some(Arc::new(callback));
        self
    }

    fn build(self, pool: Pool<DB>, backend: Arc<DB::PoolState>) -> AuditedPool<DB> {
        AuditedPool {
            shared: Arc::new(Shared {
                pool,
                classifier: Classifier::new(DB::DIALECT, self.classify_cache),
                oracle: self.oracle,
                backend,
            }),
        }
    }

    /// Audits an existing pool. Statements through [`AuditedPool::inner`] or through other
    /// clones of `pool` are not audited.
    ///
    /// On SQLite, hintaudit cannot hook the connections of a pool it did not open when they
    /// connect, so it hooks each one the first time a call-scoped statement uses it, and a
    /// call-scoped *pooled* statement that may write finds its connection's hooks with one
    /// round trip to sqlx's worker thread (`lock_handle()`, about 15 µs): prefer
    /// [`AuditedPoolOptions::connect_with`]. Your pool's `after_connect` stays as it is.
    pub fn wrap(self, pool: Pool<DB>) -> AuditedPool<DB> {
        self.build(pool, Arc::default())
    }

    /// Opens a pool with sqlx's default [`PoolOptions`] for `url`.
    ///
    /// # Errors
    /// As [`Pool::connect`]: an invalid URL or a failed first connection.
    pub async fn connect(self, url: &str) -> Result<AuditedPool<DB>, Error> {
        let connect_options = url.parse::<<DB::Connection as Connection>::Options>()?;
        self.connect_with(PoolOptions::new(), connect_options).await
    }

    /// Opens a pool with your pool and connection options.
    ///
    /// On SQLite, hintaudit installs its hooks on every connection as it connects, through
    /// sqlx's `after_connect`: **a callback set with [`PoolOptions::after_connect`] on
    /// `pool_options` is replaced** (sqlx keeps one per pool and cannot chain them); give it
    /// to [`AuditedPoolOptions::after_connect`] instead, which runs it after the hooks are in.
    /// On PostgreSQL `pool_options` is used as it is, unless you set
    /// [`AuditedPoolOptions::after_connect`]. `before_acquire` and `after_release` are always
    /// kept.
    ///
    /// # Errors
    /// As [`PoolOptions::connect_with`].
    pub async fn connect_with(
        self,
        pool_options: PoolOptions<DB>,
        connect_options: <DB::Connection as Connection>::Options,
    ) -> Result<AuditedPool<DB>, Error> {
        let backend = Arc::new(DB::PoolState::default());
        let pool_options = DB::on_connect(pool_options, &backend, self.after_connect.clone());
        let pool = pool_options.connect_with(connect_options).await?;
        Ok(self.build(pool, backend))
    }
}

/// A sqlx pool that records every statement, and on SQLite every row change, into the
/// [`hintaudit_core::CallScope`] of the tool call that runs it.
///
/// `&AuditedPool<DB>`, `&mut AuditedConnection<DB>` and `&mut AuditedTransaction<DB>` are
/// sqlx [`Executor`]s: `sqlx::query(..).execute(&pool)`, `fetch_one`, `fetch_optional`,
/// `fetch_all`, `fetch`, `query_as` and `query_scalar` work unchanged. Cloning is cheap (one
/// `Arc`) and clones share the connections, the classification cache and the hook registry.
pub struct AuditedPool<DB: Backend> {
    pub(crate) shared: Arc<Shared<DB>>,
}

impl<DB: Backend> Clone for AuditedPool<DB> {
    fn clone(&self) -> Self {
        AuditedPool {
            shared: self.shared.clone(),
        }
    }
}

impl<DB: Backend> fmt::Debug for AuditedPool<DB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuditedPool")
            .field("system", &DB::SYSTEM_NAME)
            .field("pool", &self.shared.pool)
            .field("oracle", &self.shared.oracle)
            .finish()
    }
}

impl<DB: Backend> AuditedPool<DB> {
    /// Options: the PostgreSQL oracle, the classification cache size.
    pub fn options() -> AuditedPoolOptions<DB> {
        AuditedPoolOptions::default()
    }

    /// Opens a pool for `url` with default options.
    ///
    /// # Errors
    /// As [`Pool::connect`].
    pub async fn connect(url: &str) -> Result<Self, Error> {
        Self::options().connect(url).await
    }

    /// Opens a pool with your pool and connection options; see
    /// [`AuditedPoolOptions::connect_with`].
    ///
    /// # Errors
    /// As [`PoolOptions::connect_with`].
    pub async fn connect_with(
        pool_options: PoolOptions<DB>,
        connect_options: <DB::Connection as Connection>::Options,
    ) -> Result<Self, Error> {
        Self::options()
            .connect_with(pool_options, connect_options)
            .await
    }

    /// Audits an existing pool with default options; see [`AuditedPoolOptions::wrap`].
    pub fn from_pool(pool: Pool<DB>) -> Self {
        Self::options().wrap(pool)
    }

    /// The underlying sqlx pool, for **unaudited** access (migrations, health checks).
    /// Statements run through it are neither attributed nor counted.
    pub fn inner(&self) -> &Pool<DB> {
        &self.shared.pool
    }

    /// When the PostgreSQL oracle runs for this pool.
    pub fn postgres_oracle(&self) -> PgOracle {
        self.shared.oracle
    }

    /// Takes a connection out of the pool; statements on it are audited, and on SQLite the
    /// connection stays bound to the calling tool call while you hold it.
    ///
    /// # Errors
    /// As [`Pool::acquire`]: pool closed or timed out.
    pub async fn acquire(&self) -> Result<AuditedConnection<DB>, Error> {
        let conn = self.shared.pool.acquire().await?;
        Ok(AuditedConnection::new(conn, self.shared.clone()))
    }

    /// Starts a transaction on a pooled connection. On PostgreSQL the oracle reads the
    /// transaction's writes before `COMMIT` / `ROLLBACK` (see the crate docs for its cost).
    ///
    /// # Errors
    /// As [`Pool::begin`].
    pub async fn begin(&self) -> Result<AuditedTransaction<DB>, Error> {
        AuditedTransaction::begin(self.shared.clone()).await
    }

    /// Closes the pool: see [`Pool::close`].
    pub async fn close(&self) {
        self.shared.pool.close().await
    }

    /// Whether [`AuditedPool::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.shared.pool.is_closed()
    }
}

impl<'p, DB: Backend> Executor<'p> for &'_ AuditedPool<DB> {
    type Database = DB;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxStream<'e, Result<Either<DB::QueryResult, DB::Row>, Error>>
    where
        'p: 'e,
        E: 'q + Execute<'q, DB>,
    {
        let shared = self.shared.clone();
        let query = AuditedQuery::split(query);
        let att = Attribution::start(&shared.classifier, DB::SYSTEM_NAME, query.text());
        let span = att.span.clone();
        Box::pin(TryStream::new(move |y| {
            async move {
                let mut conn = acquire(&shared, &att).await?;
                let mut state = DB::ConnState::default();
                let ctx = Ctx::pooled(&mut *conn, &mut state, shared, att);
                DB::run_into(ctx, query, &y).await
            }
            .instrument(span)
        }))
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, Result<Option<DB::Row>, Error>>
    where
        'p: 'e,
        E: 'q + Execute<'q, DB>,
    {
        let shared = self.shared.clone();
        let query = AuditedQuery::split(query);
        let att = Attribution::start(&shared.classifier, DB::SYSTEM_NAME, query.text());
        let span = att.span.clone();
        async move {
            let mut conn = acquire(&shared, &att).await?;
            let mut state = DB::ConnState::default();
            let ctx = Ctx::pooled(&mut *conn, &mut state, shared, att);
            DB::run_optional(ctx, query).await
        }
        .instrument(span)
        .boxed()
    }

    fn prepare_with<'e>(
        self,
        sql: SqlStr,
        parameters: &'e [DB::TypeInfo],
    ) -> BoxFuture<'e, Result<DB::Statement, Error>>
    where
        'p: 'e,
    {
        let pool = self.shared.pool.clone();
        async move {
            let mut conn = pool.acquire().await?;
            DB::prepare_raw(&mut conn, sql, parameters).await
        }
        .boxed()
    }

    fn describe<'e>(self, sql: SqlStr) -> BoxFuture<'e, Result<Describe<DB>, Error>>
    where
        'p: 'e,
    {
        let pool = self.shared.pool.clone();
        async move {
            let mut conn = pool.acquire().await?;
            DB::describe_raw(&mut conn, sql).await
        }
        .boxed()
    }
}

/// Acquires a pooled connection for one statement; a failure ends the statement's
/// attribution as failed before the error goes back to the caller.
async fn acquire<DB: Backend>(
    shared: &Shared<DB>,
    att: &Attribution,
) -> Result<sqlx::pool::PoolConnection<DB>, Error> {
    shared
        .pool
        .acquire()
        .await
        .inspect_err(|_| att.finish(false, None, false))
}
