//! Rows a statement affected, counted from its answer as the drive loop reads it
//! ([`RowCount`]): the vocabulary [`crate::backend`] and [`crate::drive`] share.

use sqlx::{Database, Either};

/// One item of a statement's answer: its result (rows affected) or a row.
pub type Step<DB> = Either<<DB as Database>::QueryResult, <DB as Database>::Row>;

/// Rows a statement affected, counted from its answer as it is read
/// ([`crate::Backend`]'s `Rows`).
#[doc(hidden)]
pub trait RowCount<DB: Database> {
    /// Counts one item of the answer.
    fn add(&mut self, item: &Step<DB>);
    /// Counts `n` rows the driver did not count: a write's row returned by
    /// `fetch_optional`, which stops before the statement's result.
    fn add_rows(&mut self, n: u64);
    /// Rows affected so far, over all results.
    fn total(&self) -> u64;
}

/// The driver's count: the rows affected of every result, added up.
impl<DB: Database> RowCount<DB> for u64
where
    DB::QueryResult: RowsAffected,
{
    fn add(&mut self, item: &Step<DB>) {
        if let Either::Left(r) = item {
            *self += r.rows_affected();
        }
    }

    fn add_rows(&mut self, n: u64) {
        *self += n;
    }

    fn total(&self) -> u64 {
        *self
    }
}

/// `rows_affected` of every driver's result, which sqlx has on each type, not in a trait.
#[doc(hidden)]
pub trait RowsAffected {
    fn rows_affected(&self) -> u64;
}

#[cfg(feature = "sqlite")]
impl RowsAffected for sqlx::sqlite::SqliteQueryResult {
    fn rows_affected(&self) -> u64 {
        sqlx::sqlite::SqliteQueryResult::rows_affected(self)
    }
}

#[cfg(feature = "postgres")]
impl RowsAffected for sqlx::postgres::PgQueryResult {
    fn rows_affected(&self) -> u64 {
        sqlx::postgres::PgQueryResult::rows_affected(self)
    }
}

#[cfg(feature = "mysql")]
impl RowsAffected for sqlx::mysql::MySqlQueryResult {
    fn rows_affected(&self) -> u64 {
        sqlx::mysql::MySqlQueryResult::rows_affected(self)
    }
}
