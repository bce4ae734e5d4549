//! [`AuditedPool`]: a sqlx pool whose statements are attributed to the tool call that runs
//! them ([design: evidence](../../../../docs/design.md#3-evidence)).
//!
//! Split as sqlx-core splits its pool, with every import pointing one way (down this list):
//! - this module: the pool type, and the options' last steps that open or wrap one;
//! - [`executor`]: `Executor for &AuditedPool`, a statement on a connection taken for it alone;
//! - [`acquire`]: sqlx's `Acquire for &AuditedPool`, the driver's connection for set-up work
//!   (migrations) and helpers over `impl Acquire`;
//! - [`inner`]: [`Shared`](inner::Shared), the state a pool shares with its connections and
//!   transactions, and the start of every audited statement;
//! - [`options`]: what you configure; the backends read it.

pub(crate) mod acquire;
mod executor;
pub(crate) mod inner;
pub(crate) mod options;

use std::fmt;
use std::sync::Arc;

use sqlx::pool::PoolOptions;
use sqlx::{Connection, Error, Pool, SqlSafeStr};

use crate::backend::Backend;
use crate::held::AuditedTransaction;
use crate::held::connection::AuditedConnection;
use inner::Shared;
use options::{AuditedPoolOptions, PgOracle};

/// A sqlx pool that records every statement, and on SQLite every row change, into the
/// [`hintaudit_core::CallScope`] of the tool call that runs it.
///
/// `&AuditedPool<DB>`, `&mut AuditedConnection<DB>` and `&mut AuditedTransaction<DB>` are
/// sqlx [`sqlx::Executor`]s: `sqlx::query(..).execute(&pool)`, `fetch_one`,
/// `fetch_optional`, `fetch_all`, `fetch`, `query_as` and `query_scalar` work unchanged.
/// Cloning is cheap (one `Arc`) and clones share the connections, the classification cache
/// and the hook registry.
///
/// Generic code names the database with [`Backend`], not `sqlx::Database`: the pool exists
/// only for the databases hintaudit audits (their hooks, oracle and statement analysis
/// differ), and `Backend` implies `sqlx::Database`.
///
/// ```compile_fail,E0277
/// fn idle<DB: sqlx::Database>(pool: &hintaudit_sqlx::AuditedPool<DB>) -> usize {
///     pool.num_idle()
/// }
/// ```
///
/// ```
/// fn idle<DB: hintaudit_sqlx::Backend>(pool: &hintaudit_sqlx::AuditedPool<DB>) -> usize {
///     pool.num_idle()
/// }
/// # #[cfg(feature = "sqlite")]
/// # fn lazy() -> Result<(), sqlx::Error> {
/// // A pool sqlx builds converts with `.into()` (or `AuditedPool::connect_lazy`).
/// let pool: hintaudit_sqlx::AuditedPool<sqlx::Sqlite> =
///     sqlx::pool::PoolOptions::new().connect_lazy("sqlite::memory:")?.into();
/// assert_eq!(idle(&pool), 0);
/// # Ok(()) }
/// ```
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
            .field("system", &DB::KIND.system_name())
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

    /// Opens a pool with sqlx's default pool options and your connection options, as
    /// [`Pool::connect_with`]. For your own pool options (`max_connections`, timeouts), use
    /// [`AuditedPoolOptions::connect_with`]: `AuditedPool::options().connect_with(pool_options,
    /// connect_options)`, or build the pool with sqlx and convert it ([`AuditedPool::from_pool`],
    /// `From<Pool<DB>>`).
    ///
    /// # Errors
    /// As [`Pool::connect_with`].
    pub async fn connect_with(
        connect_options: <DB::Connection as Connection>::Options,
    ) -> Result<Self, Error> {
        Self::options()
            .connect_with(PoolOptions::new(), connect_options)
            .await
    }

    /// A pool for `url` with default options that connects on first use, as
    /// [`Pool::connect_lazy`]: nothing is opened until a statement needs a connection.
    ///
    /// # Errors
    /// As [`Pool::connect_lazy`]: a URL that does not parse.
    pub fn connect_lazy(url: &str) -> Result<Self, Error> {
        Self::options().connect_lazy(url)
    }

    /// A pool with sqlx's default pool options and your connection options that connects on
    /// first use, as [`Pool::connect_lazy_with`]. For your own pool options, use
    /// [`AuditedPoolOptions::connect_lazy_with`].
    pub fn connect_lazy_with(connect_options: <DB::Connection as Connection>::Options) -> Self {
        Self::options().connect_lazy_with(PoolOptions::new(), connect_options)
    }

    /// Audits an existing pool with default options; see [`AuditedPoolOptions::wrap`]. The
    /// same as `AuditedPool::from(pool)`.
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
    /// In a call that enforces readOnlyHint, the transaction is begun read-only (PostgreSQL
    /// `BEGIN READ ONLY`, MySQL `START TRANSACTION READ ONLY`), so that the database refuses
    /// its writes (see [enforce mode](crate#enforce-mode)).
    ///
    /// # Errors
    /// As [`Pool::begin`].
    pub async fn begin(&self) -> Result<AuditedTransaction<'static, DB>, Error> {
        AuditedTransaction::on_pool(self.shared.clone(), None).await
    }

    /// Starts a transaction with your own statement (`BEGIN IMMEDIATE`, `START TRANSACTION
    /// READ ONLY`), as [`Pool::begin_with`]; audited as [`AuditedPool::begin`]. Your statement
    /// is kept in enforce mode too (see [enforce mode](crate#enforce-mode) for how a
    /// read-only call's transaction begun with it is guarded).
    ///
    /// # Errors
    /// As [`Pool::begin_with`]: among others, when `statement` does not open a transaction.
    pub async fn begin_with(
        &self,
        statement: impl SqlSafeStr,
    ) -> Result<AuditedTransaction<'static, DB>, Error> {
        AuditedTransaction::on_pool(self.shared.clone(), Some(statement.into_sql_str())).await
    }

    /// Closes the pool: see [`Pool::close`].
    pub async fn close(&self) {
        self.shared.pool.close().await
    }

    /// Whether [`AuditedPool::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.shared.pool.is_closed()
    }

    /// Connections the pool holds, idle or in use: see [`Pool::size`].
    pub fn size(&self) -> u32 {
        self.shared.pool.size()
    }

    /// Idle connections: see [`Pool::num_idle`].
    pub fn num_idle(&self) -> usize {
        self.shared.pool.num_idle()
    }
}

/// Wraps a pool the application already builds: the same as [`AuditedPool::from_pool`].
impl<DB: Backend> From<Pool<DB>> for AuditedPool<DB> {
    fn from(pool: Pool<DB>) -> Self {
        Self::from_pool(pool)
    }
}

/// The options' last steps, here beside the pool they build.
impl<DB: Backend> AuditedPoolOptions<DB> {
    fn build(self, pool: Pool<DB>, backend: Arc<DB::PoolState>) -> AuditedPool<DB> {
        AuditedPool {
            shared: Arc::new(Shared::new(&self, pool, backend)),
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
        let backend = Arc::new(DB::pool_state(&self));
        self.build(pool, backend)
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
    /// On PostgreSQL 15 and later (oracle not [`crate::PgOracle::Off`], `test_before_acquire`
    /// on, as by default), hintaudit tests each idle connection the pool hands out with
    /// `SELECT pg_stat_force_next_flush()` in place of sqlx's ping (one round trip either
    /// way), so that the oracle needs no flush of its own on a connection straight from the
    /// pool: **a callback set with [`PoolOptions::before_acquire`] is then replaced**; give it
    /// to [`AuditedPoolOptions::before_acquire`] instead, which runs it after the test.
    /// Otherwise `pool_options` is used as it is, unless you set
    /// [`AuditedPoolOptions::after_connect`]. `after_release` is always kept.
    ///
    /// # Errors
    /// As [`PoolOptions::connect_with`].
    pub async fn connect_with(
        self,
        pool_options: PoolOptions<DB>,
        connect_options: <DB::Connection as Connection>::Options,
    ) -> Result<AuditedPool<DB>, Error> {
        let (pool_options, backend) = self.prepare(pool_options);
        let pool = pool_options.connect_with(connect_options).await?;
        Ok(self.build(pool, backend))
    }

    /// Opens a pool with sqlx's default [`PoolOptions`] for `url` that connects on first use.
    ///
    /// # Errors
    /// A URL that does not parse.
    pub fn connect_lazy(self, url: &str) -> Result<AuditedPool<DB>, Error> {
        let connect_options = url.parse::<<DB::Connection as Connection>::Options>()?;
        Ok(self.connect_lazy_with(PoolOptions::new(), connect_options))
    }

    /// Opens a pool with your pool and connection options that connects on first use, as
    /// [`PoolOptions::connect_lazy_with`]; every connection it opens later is audited as
    /// [`AuditedPoolOptions::connect_with`] says (SQLite hooks installed as it connects).
    pub fn connect_lazy_with(
        self,
        pool_options: PoolOptions<DB>,
        connect_options: <DB::Connection as Connection>::Options,
    ) -> AuditedPool<DB> {
        let (pool_options, backend) = self.prepare(pool_options);
        self.build(pool_options.connect_lazy_with(connect_options), backend)
    }

    /// The options of a pool hintaudit opens, and the pool's audit state: `pool_options`
    /// with your [`AuditedPoolOptions::before_acquire`], then the backend's set-up
    /// ([`Backend::on_connect`], which runs your [`AuditedPoolOptions::after_connect`]).
    fn prepare(&self, pool_options: PoolOptions<DB>) -> (PoolOptions<DB>, Arc<DB::PoolState>) {
        let backend = Arc::new(DB::pool_state(self));
        let pool_options = match self.before_acquire.clone() {
            Some(callback) => pool_options.before_acquire(move |conn, meta| callback(conn, meta)),
            None => pool_options,
        };
        let pool_options = DB::on_connect(pool_options, &backend, self.after_connect.clone());
        (pool_options, backend)
    }
}
