//! A fresh database per test, for each backend of the port fixture.

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

/// A name for a fresh schema or database, unique in this process and among processes.
fn fresh_name() -> String {
    format!(
        "hintaudit_port_{}_{}",
        std::process::id(),
        FRESH.fetch_add(1, Ordering::Relaxed)
    )
}

/// The server's URL (the variable `url_var`, else `default`) and a one-connection pool on
/// it, or `None`, with the reason printed, when the server `server` is unreachable and not
/// required (`require_var`, `HINTAUDIT_REQUIRE_ALL`). Panics when it is required.
async fn admin<DB: sqlx::Database>(
    server: &str,
    url_var: &str,
    default: &str,
    require_var: &str,
) -> Option<(String, sqlx::Pool<DB>)> {
    let url = std::env::var(url_var).unwrap_or_else(|_| default.to_owned());
    match sqlx::pool::PoolOptions::<DB>::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(5))
        .connect(&url)
        .await
    {
        Ok(pool) => Some((url, pool)),
        Err(e) if !required(require_var) => {
            eprintln!(
                "skipping: {server} unreachable at {url}: {e} (set {require_var}=1 to fail instead)"
            );
            None
        }
        Err(e) => panic!("{server} required but unreachable at {url}: {e}"),
    }
}

/// A fresh schema on `HINTAUDIT_PG_URL` (default `postgres://postgres@127.0.0.1:5432/test`),
/// or `None`, with the reason printed, when the server is unreachable and not required
/// (`HINTAUDIT_REQUIRE_PG`, `HINTAUDIT_REQUIRE_ALL`).
pub async fn postgres() -> Option<Fresh<PgConnectOptions>> {
    let (url, admin) = admin::<sqlx::Postgres>(
        "PostgreSQL",
        "HINTAUDIT_PG_URL",
        "postgres://postgres@127.0.0.1:5432/test",
        "HINTAUDIT_REQUIRE_PG",
    )
    .await?;
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
    let (url, admin) = admin::<sqlx::MySql>(
        "MySQL",
        "HINTAUDIT_MYSQL_URL",
        "mysql://root@127.0.0.1:3306",
        "HINTAUDIT_REQUIRE_MYSQL",
    )
    .await?;
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
