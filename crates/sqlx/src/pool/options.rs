//! What you configure on an [`crate::AuditedPool`]: when the PostgreSQL oracle runs
//! ([`PgOracle`]), the classification cache, and your own `after_connect` and
//! `before_acquire` callbacks ([`AfterConnect`], [`BeforeAcquire`]).
//!
//! The builder's last steps, which open or wrap a pool ([`AuditedPoolOptions::connect`],
//! [`AuditedPoolOptions::connect_with`], [`AuditedPoolOptions::wrap`]), live beside the pool
//! they build; this module depends on nothing audited, so the backends can read it.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use futures_core::future::BoxFuture;
use sqlx::pool::PoolConnectionMetadata;
use sqlx::{Database, Error};

use crate::classify::DEFAULT_CLASSIFY_CACHE;

/// When the PostgreSQL transaction oracle runs ([design: evidence], [design: pitfalls]).
/// Ignored by other backends.
///
/// [design: evidence]: ../../../../docs/design.md#3-evidence
/// [design: pitfalls]: ../../../../docs/design.md#7-known-pitfalls-checked-against-rmcp-311-sqlx-09-postgresql-15
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PgOracle {
    /// Never: PostgreSQL evidence is statement analysis and rows affected only.
    Off,
    /// For every statement not proved read-only: by its text
    /// ([`crate::Classification::proved_read_only`]), and by the catalog for each relation
    /// it reads (a plain table, or a view whose definition is itself proved). Plain
    /// `SELECT`s over tables and such views skip it. The default.
    #[default]
    Writes,
    /// For every statement and every transaction, reads included.
    Always,
}

/// A callback run on every new connection of a pool, with the shape of sqlx's
/// [`sqlx::pool::PoolOptions::after_connect`]; see [`AuditedPoolOptions::after_connect`].
pub type AfterConnect<DB> = Arc<
    dyn for<'c> Fn(
            &'c mut <DB as Database>::Connection,
            PoolConnectionMetadata,
        ) -> BoxFuture<'c, Result<(), Error>>
        + Send
        + Sync,
>;

/// A callback run on every idle connection a pool hands out, with the shape of sqlx's
/// [`sqlx::pool::PoolOptions::before_acquire`] (`Ok(false)` closes the connection and takes
/// another); see [`AuditedPoolOptions::before_acquire`].
pub type BeforeAcquire<DB> = Arc<
    dyn for<'c> Fn(
            &'c mut <DB as Database>::Connection,
            PoolConnectionMetadata,
        ) -> BoxFuture<'c, Result<bool, Error>>
        + Send
        + Sync,
>;

/// Options for an [`crate::AuditedPool`]; start with [`crate::AuditedPool::options`].
#[derive(Clone)]
pub struct AuditedPoolOptions<DB: Database> {
    pub(crate) oracle: PgOracle,
    pub(crate) classify_cache: usize,
    pub(crate) after_connect: Option<AfterConnect<DB>>,
    pub(crate) before_acquire: Option<BeforeAcquire<DB>>,
    _db: PhantomData<fn() -> DB>,
}

impl<DB: Database> fmt::Debug for AuditedPoolOptions<DB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuditedPoolOptions")
            .field("oracle", &self.oracle)
            .field("classify_cache", &self.classify_cache)
            .field("after_connect", &self.after_connect.is_some())
            .field("before_acquire", &self.before_acquire.is_some())
            .finish()
    }
}

impl<DB: Database> Default for AuditedPoolOptions<DB> {
    fn default() -> Self {
        AuditedPoolOptions {
            oracle: PgOracle::default(),
            classify_cache: DEFAULT_CLASSIFY_CACHE,
            after_connect: None,
            before_acquire: None,
            _db: PhantomData,
        }
    }
}

impl<DB: Database> AuditedPoolOptions<DB> {
    /// When the PostgreSQL oracle runs (default [`PgOracle::Writes`]).
    pub fn with_postgres_oracle(mut self, oracle: PgOracle) -> Self {
        self.oracle = oracle;
        self
    }

    /// How many distinct SQL texts the pool keeps classified (LRU; default
    /// [`DEFAULT_CLASSIFY_CACHE`] = 1024 entries; texts over 16 KiB are never cached). Up to
    /// 16 recently used texts are kept besides, by their address, so that a query written as
    /// a `&'static str` is found without hashing its text.
    pub fn with_classify_cache(mut self, entries: usize) -> Self {
        self.classify_cache = entries.max(1);
        self
    }

    /// Your callback for every new connection, run after hintaudit's own set-up (on SQLite,
    /// installing its hooks). Use this instead of sqlx's
    /// [`sqlx::pool::PoolOptions::after_connect`] when hintaudit opens the pool
    /// ([`AuditedPoolOptions::connect_with`]): sqlx keeps one such callback per pool, and on
    /// SQLite hintaudit needs it. An error from `callback` fails the connection, as in sqlx.
    /// Not used by [`AuditedPoolOptions::wrap`], whose pool is already open.
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

    /// Your callback for every idle connection the pool hands out, as sqlx's
    /// [`sqlx::pool::PoolOptions::before_acquire`]. Use this instead of sqlx's when hintaudit
    /// opens the pool ([`AuditedPoolOptions::connect_with`]): on PostgreSQL 15 and later
    /// hintaudit tests each connection it hands out with a query that also flushes the
    /// session's statistics, in place of sqlx's ping (see [`crate::PgOracle`]), and sqlx
    /// keeps one such callback per pool. It runs after that test; `Ok(false)` or an error
    /// closes the connection and the pool takes another, as in sqlx. Not used by
    /// [`AuditedPoolOptions::wrap`], whose pool is already open.
    pub fn before_acquire<F>(mut self, callback: F) -> Self
    where
        for<'c> F: Fn(&'c mut DB::Connection, PoolConnectionMetadata) -> BoxFuture<'c, Result<bool, Error>>
            + Send
            + Sync
            + 'static,
    {
        self.before_acquire = Some(Arc::new(callback));
        self
    }
}
