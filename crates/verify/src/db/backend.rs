//! verify's side of a database kind, as hintaudit-sqlx's `Backend` is the audited pool's:
//! one [`Backend`] per [`DatabaseKind`] (connecting, and `--reset`'s copies) and the
//! [`Connection`] it opens (the catalog, scans, change marker, sessions, setup SQL). Every
//! method without a default is what the compiler asks of a new kind; [`super::backend`] is
//! the one place verify tells the kinds apart.
//!
//! | kind | [`Backend`] | [`Connection`] |
//! |---|---|---|
//! | SQLite | `sqlite::Sqlite` | `sqlx::SqliteConnection` |
//! | PostgreSQL | `postgres::Postgres` | `sqlx::PgConnection` |
//! | MySQL/MariaDB | `mysql::MySql` | `sqlx::MySqlConnection` |

use std::path::PathBuf;

use async_trait::async_trait;
use hintaudit_core::DatabaseUrl;

use super::{DbSession, RawTable};
use crate::error::VerifyError;
use crate::objects::RawObject;
use crate::sequences::RawSequence;
use crate::snapshot::{TableShape, TableSnapshot};

/// One kind of database, as verify reaches it: a unit struct per kind, picked by
/// [`super::backend`].
#[async_trait]
pub(crate) trait Backend: Sync {
    /// Opens one connection to the database `url` names (its driver URL; SQLite: the file
    /// must exist).
    async fn connect(&self, url: &DatabaseUrl) -> Result<Box<dyn Connection>, sqlx::Error>;

    /// `--reset`: copies the database `url` names to `copy`, replacing it: a database of
    /// that name on the same server (PostgreSQL `CREATE DATABASE … TEMPLATE`, MySQL/MariaDB a
    /// dump and restore of its tables, rows and triggers), or for a file kind the file at
    /// path `copy` (SQLite `VACUUM INTO`, a consistent copy, write-ahead log included).
    async fn copy_database(&self, url: &DatabaseUrl, copy: &str) -> Result<(), VerifyError>;

    /// `--reset` in place, at the end of the run: drops the database `name` (as
    /// [`Backend::copy_database`] names it) that `url`'s server holds, if it exists.
    async fn drop_database(&self, url: &DatabaseUrl, name: &str) -> Result<(), VerifyError>;
}

/// One connection to a test database: the per-kind reads behind [`super::Database`], which
/// adds what every kind does alike (the policy's filter, the order).
#[async_trait]
pub(crate) trait Connection: Send {
    /// Tables as the catalog lists them. PostgreSQL: of every non-system schema, or only
    /// `schemas` when it is not empty; other kinds ignore `schemas`.
    async fn tables(&mut self, schemas: &[String]) -> Result<Vec<RawTable>, sqlx::Error>;

    /// Sequences with their state (`schemas` as for [`Connection::tables`]).
    async fn sequences(&mut self, schemas: &[String]) -> Result<Vec<RawSequence>, sqlx::Error>;

    /// Indexes, views, routines, triggers, types (`schemas` as for [`Connection::tables`]).
    async fn objects(&mut self, schemas: &[String]) -> Result<Vec<RawObject>, sqlx::Error>;

    /// Streams one table into its snapshot.
    async fn scan(&mut self, shape: TableShape) -> Result<TableSnapshot, sqlx::Error>;

    /// A value that changes whenever anything may have been written; `None` when the kind
    /// has none (the default: every snapshot rescans).
    async fn change_marker(&mut self) -> Result<Option<String>, sqlx::Error> {
        Ok(None)
    }

    /// The sessions on the database server other than ours; `None` where there are no
    /// sessions (the default).
    async fn sessions(&mut self) -> Result<Option<Vec<DbSession>>, sqlx::Error> {
        Ok(None)
    }

    /// The SQLite database file, absolute and without symbolic links; `None` for other
    /// kinds (the default) and in memory.
    async fn sqlite_file(&mut self) -> Result<Option<PathBuf>, sqlx::Error> {
        Ok(None)
    }

    /// The statement that opens a read-only transaction in which every table of one
    /// snapshot is read at one moment (closed by `COMMIT`).
    fn begin_read(&self) -> &'static str;

    /// Runs a script of one or more statements.
    async fn execute_script(&mut self, sql: &str) -> Result<(), sqlx::Error>;

    /// The largest value of a column, as text (`None` for an empty table).
    async fn max_value(
        &mut self,
        table: &TableShape,
        column: &str,
    ) -> Result<Option<String>, sqlx::Error>;

    /// Up to `limit` distinct non-NULL values of a column, as text, smallest first.
    async fn sample(
        &mut self,
        table: &TableShape,
        column: &str,
        limit: u32,
    ) -> Result<Vec<String>, sqlx::Error>;
}

/// A `--reset` step's database error, with what it was doing.
pub(super) fn reset_err(what: &str) -> impl Fn(sqlx::Error) -> VerifyError + '_ {
    move |e| VerifyError::db(&format!("--reset: {what}"), e)
}
