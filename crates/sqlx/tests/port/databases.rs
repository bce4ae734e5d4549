//! A fresh database per test, for each backend of the port fixture.

use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use sqlx::Executor;
use sqlx::mysql::{MySqlConnectOptions, MySqlPoolOptions};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
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

/// Whether a server must not be skipped: `var` (`HINTAUDIT_REQUIRE_PG`,
/// `HINTAUDIT_REQUIRE_MYSQL`) or `HINTAUDIT_REQUIRE_ALL` is `1` or `true`, as CI sets them.
fn required(var: &str) -> bool {
    [var, "HINTAUDIT_REQUIRE_ALL"]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|x| x == "1" || x.eq_ignore_ascii_case("true")))
}

static FRESH: AtomicU32 = AtomicU32::new(0);

/// A fresh schema on `HINTAUDIT_PG_URL` (default `postgres://postgres@127.0.0.1:5432/test`),
/// or `None`, with the reason printed, when the server is unreachable and not required
/// (`HINTAUDIT_REQUIRE_PG`, `HINTAUDIT_REQUIRE_ALL`).
pub async fn postgres() -> Option<Fresh<PgConnectOptions>> {
    let url = std::env::var("HINTAUDIT_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let admin = match PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(5))
        .connect(&url)
        .await
    {
        Ok(pool) => pool,
        Err(e) if !required("HINTAUDIT_REQUIRE_PG") => {
            eprintln!(
                "skipping: PostgreSQL unreachable at {url}: {e} (set HINTAUDIT_REQUIRE_PG=1 to fail instead)"
            );
            return None;
        }
        Err(e) => panic!("PostgreSQL required but unreachable at {url}: {e}"),
    };
    let schema = format!(
        "hintaudit_port_{}_{}",
        std::process::id(),
        FRESH.fetch_add(1, Ordering::Relaxed)
    );
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
    let url = std::env::var("HINTAUDIT_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".to_owned());
    let admin = match MySqlPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(5))
        .connect(&url)
        .await
    {
        Ok(pool) => pool,
        Err(e) if !required("HINTAUDIT_REQUIRE_MYSQL") => {
            eprintln!(
                "skipping: MySQL unreachable at {url}: {e} (set HINTAUDIT_REQUIRE_MYSQL=1 to fail instead)"
            );
            return None;
        }
        Err(e) => panic!("MySQL required but unreachable at {url}: {e}"),
    };
    let name = format!(
        "hintaudit_port_{}_{}",
        std::process::id(),
        FRESH.fetch_add(1, Ordering::Relaxed)
    );
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
