//! [`Shared`]: the state a pool shares with everything acquired from it, and the start of
//! every audited statement, whichever executor runs it.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use sqlx::{Execute, Pool};

use crate::backend::Backend;
use crate::classify::Classifier;
use crate::execute::{Attribution, AuditedQuery};
use crate::pool::options::{AuditedPoolOptions, PgOracle};

/// State shared by a pool and everything acquired from it.
#[doc(hidden)]
pub struct Shared<DB: Backend> {
    pub(crate) pool: Pool<DB>,
    pub(crate) classifier: Classifier,
    pub(crate) oracle: PgOracle,
    /// The backend's audit state for the pool (SQLite: the registry of hooked connections).
    pub(crate) backend: Arc<DB::PoolState>,
    /// Connections that may have gone back to the pool read-only: an enforced read-only
    /// statement whose future was dropped before it restored read-write (see
    /// [`crate::enforce`]). While non-zero, statements that do not enforce read-only reset
    /// their connection first.
    pub(crate) read_only_leaks: AtomicU64,
}

impl<DB: Backend> Shared<DB> {
    /// The shared state of `pool`, configured by `options`.
    pub(crate) fn new(
        options: &AuditedPoolOptions<DB>,
        pool: Pool<DB>,
        backend: Arc<DB::PoolState>,
    ) -> Self {
        Shared {
            pool,
            classifier: Classifier::new(DB::DIALECT, options.classify_cache),
            oracle: options.oracle,
            backend,
            read_only_leaks: AtomicU64::new(0),
        }
    }

    /// The start of every audited statement (`fetch_many` and `fetch_optional` of the pool, a
    /// connection and a transaction): takes `query` apart as the driver would
    /// ([`AuditedQuery::split`]), classifies it, records it into the current call scope and
    /// opens its span ([`Attribution::start`]).
    pub(crate) fn start<'q, E: Execute<'q, DB>>(
        &self,
        query: E,
    ) -> (AuditedQuery<DB>, Attribution) {
        let query = AuditedQuery::split(query);
        let att = Attribution::start(&self.classifier, DB::SPAN_SYSTEM_NAME, query.text());
        (query, att)
    }
}
