//! A fresh database per test, for every test binary of this crate that needs one (each
//! includes this file as `mod databases`): a SQLite file in a temporary directory, a
//! PostgreSQL schema, a MySQL/MariaDB database, each dropped with [`Fresh::drop`]. A server
//! that cannot be reached skips the test with the reason printed, unless it is required
//! (`hintaudit_test_support::required`: `HINTAUDIT_REQUIRE_PG`, `HINTAUDIT_REQUIRE_MYSQL`,
//! `HINTAUDIT_REQUIRE_ALL`), as CI sets them.

// Each test binary uses what its backend needs.
#![allow(dead_code)]

use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use sqlx::Executor;
use sqlx::mysql::MySqlConnectOptions;
use sqlx::postgres::PgConnectOptions;
use sqlx::sqlite::SqliteConnectOptions;

/// A fresh database: how to connect to it, and what to drop once the test is done.
pub struct Fresh<O> {
    pub options: O,
    cleanup: Cleanup,
}

enum Cleanup {
    /// The temporary directory holding the SQLite file.
    Dir(#[allow(dead_code)] tempfile::TempDir),
    /// The PostgreSQL schema, dropped through this pool.
    Schema(sqlx::PgPool, String),
    /// The MySQL/MariaDB database, dropped through this pool.
    Database(sqlx::MySqlPool, String),
}

impl<O> Fresh<O> {
    /// The schema or database's name (empty for SQLite).
    pub fn name(&self) -> &str {
        match &self.cleanup {
            Cleanup::Dir(_) => "",
            Cleanup::Schema(_, name) | Cleanup::Database(_, name) => name,
        }
    }

    /// The pool on the server the database was made with (PostgreSQL).
    pub fn pg_admin(&self) -> Option<&sqlx::PgPool> {
        match &self.cleanup {
            Cleanup::Schema(admin, _) => Some(admin),
            _ => None,
        }
    }

    /// The pool on the server the database was made with (MySQL).
    pub fn mysql_admin(&self) -> Option<&sqlx::MySqlPool> {
        match &self.cleanup {
            Cleanup::Database(admin, _) => Some(admin),
            _ => None,
        }
    }

    /// Drops the database.
    pub async fn drop(self) {
        match self.cleanup {
            Cleanup::Dir(_) => {}
            Cleanup::Schema(admin, schema) => {
                let sql = format!("DROP SCHEMA IF EXISTS {schema} CASCADE");
                admin
                    .execute(sqlx::AssertSqlSafe(sql))
                    .await
                    .expect("drop schema");
                admin.close().await;
            }
            Cleanup::Database(admin, name) => {
                let sql = format!("DROP DATABASE IF EXISTS {name}");
                admin
                    .execute(sqlx::AssertSqlSafe(sql))
                    .await
                    .expect("drop database");
                admin.close().await;
            }
        }
    }
}

/// A SQLite file in a fresh temporary directory.
pub async fn sqlite() -> Option<Fresh<SqliteConnectOptions>> {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = SqliteConnectOptions::new()
        .filename(dir.path().join("notes.db"))
        .create_if_missing(true)
        .busy_timeout(Duration::from_secs(10));
    Some(Fresh {
        options,
        cleanup: Cleanup::Dir(dir),
    })
}

use hintaudit_test_support::required;

/// `HINTAUDIT_PG_URL`, default `postgres://postgres@127.0.0.1:5432/test`.
pub fn pg_url() -> String {
    std::env::var("HINTAUDIT_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// `HINTAUDIT_MYSQL_URL`, default `mysql://root@127.0.0.1:3306` (the server root, without a
/// database).
pub fn mysql_url() -> String {
    std::env::var("HINTAUDIT_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".to_owned())
}

/// Whether a test goes on without the server `server` (`require_var`, say
/// `HINTAUDIT_REQUIRE_PG`, and `HINTAUDIT_REQUIRE_ALL` unset): prints why it skips. Panics
/// when the server is required.
pub fn skip(server: &str, url: &str, require_var: &str, e: impl std::fmt::Display) -> bool {
    assert!(
        !required(require_var),
        "{server} required ({require_var}) but unreachable at {url}: {e}"
    );
    eprintln!("skipping: {server} unreachable at {url}: {e} (set {require_var}=1 to fail instead)");
    true
}

static FRESH: AtomicU32 = AtomicU32::new(0);

/// A name for a fresh schema or database, unique in this process and among processes.
pub fn fresh_name() -> String {
    format!(
        "hintaudit_{}_{}",
        std::process::id(),
        FRESH.fetch_add(1, Ordering::Relaxed)
    )
}

/// The server's `url` and a one-connection pool on it, or `None`, with the reason printed,
/// when the server `server` is unreachable and not required (see [`skip`]).
pub async fn admin<DB: sqlx::Database>(
    server: &str,
    url: String,
    require_var: &str,
) -> Option<(String, sqlx::Pool<DB>)> {
    match sqlx::pool::PoolOptions::<DB>::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(5))
        .connect(&url)
        .await
    {
        Ok(pool) => Some((url, pool)),
        Err(e) => {
            skip(server, &url, require_var, e);
            None
        }
    }
}

/// A fresh schema on `HINTAUDIT_PG_URL` (default `postgres://postgres@127.0.0.1:5432/test`),
/// or `None`, with the reason printed, when the server is unreachable and not required
/// (`HINTAUDIT_REQUIRE_PG`, `HINTAUDIT_REQUIRE_ALL`).
pub async fn postgres() -> Option<Fresh<PgConnectOptions>> {
    let (url, admin) =
        admin::<sqlx::Postgres>("PostgreSQL", pg_url(), "HINTAUDIT_REQUIRE_PG").await?;
    let schema = fresh_name();
    admin
        .execute(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .await
        .expect("create schema");
    let options = PgConnectOptions::from_str(&url)
        .expect("url")
        .options([("search_path", schema.as_str())]);
    Some(Fresh {
        options,
        cleanup: Cleanup::Schema(admin, schema),
    })
}

/// A fresh database on `HINTAUDIT_MYSQL_URL` (default `mysql://root@127.0.0.1:3306`, the
/// server root without a database), or `None`, with the reason printed, when the server is
/// unreachable and not required (`HINTAUDIT_REQUIRE_MYSQL`, `HINTAUDIT_REQUIRE_ALL`).
pub async fn mysql() -> Option<Fresh<MySqlConnectOptions>> {
    let (url, admin) =
        admin::<sqlx::MySql>("MySQL", mysql_url(), "HINTAUDIT_REQUIRE_MYSQL").await?;
    let name = fresh_name();
    admin
        .execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .await
        .expect("create database");
    let options = MySqlConnectOptions::from_str(&url)
        .expect("url")
        .database(&name);
    Some(Fresh {
        options,
        cleanup: Cleanup::Database(admin, name),
    })
}
