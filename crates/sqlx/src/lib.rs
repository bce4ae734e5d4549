//! hintaudit-sqlx (docs below are filled in later).

mod backend;
mod classify;
mod connection;
mod execute;
mod pool;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;
mod stream;
mod transaction;

pub use backend::Backend;
pub use classify::{Classification, DEFAULT_CLASSIFY_CACHE, SqlDialect, TxControl, classify};
pub use connection::AuditedConnection;
pub use pool::{AuditedPool, AuditedPoolOptions, PgOracle};
pub use transaction::AuditedTransaction;
