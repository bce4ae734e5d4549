//! hintaudit-sqlx (work in progress).
mod classify;
pub use classify::{Classification, DEFAULT_CLASSIFY_CACHE, SqlDialect, TxControl, classify};
