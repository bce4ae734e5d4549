//! A fresh database per test, for each backend of the port fixture.

use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use sqlx::Executor;
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
}

impl<O> Fresh<O> {
    /// Drops the database.
    pub async fn drop(self) {
        if let Cleanup::Schema(admin, schema) = self.cleanup {
            let sql = format!("DROP SCHEMA IF EXISTS {schema} CASCADE");
            admin
                .execute(sqlx::AssertSqlSafe(sql))
                .await
                .expect("drop schema");
            admin.close().await;
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

/// Whether PostgreSQL must not be skipped: `HINTAUDIT_REQUIRE_PG` or `HINTAUDIT_REQUIRE_ALL`
/// is `1` or `true`, as CI sets them.
fn required() -> bool {
    ["HINTAUDIT_REQUIRE_PG", "HINTAUDIT_REQUIRE_ALL"]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|x| x == "1" || x.eq_ignore_ascii_case("true")))
}

static SCHEMAS: AtomicU32 = AtomicU32::new(0);

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
        Err(e) if !required() => {
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
        SCHEMAS.fetch_add(1, Ordering::Relaxed)
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
