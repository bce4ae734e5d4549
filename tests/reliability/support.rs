//! Shared set-up: the long switch, figures, the lock on process-wide counters, and audited
//! pools on a SQLite file and on a fresh PostgreSQL schema.

use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hintaudit::sqlx::AuditedPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

/// Whether the long sizes run (`HINTAUDIT_RELIABILITY_LONG=1`, as `.ci/run` sets it).
pub fn long() -> bool {
    std::env::var("HINTAUDIT_RELIABILITY_LONG").is_ok_and(|v| v == "1" || v == "true")
}

/// Resident set size of this process (`VmRSS`), in KiB; 0 where `/proc` does not tell.
pub fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Runs `body` in a process of its own: this test binary again, with only the test named
/// `test` (its full path, `module::name`), so that a resident-size figure is this case's
/// alone and not that of the cases libtest runs beside it in the same process. The child's
/// `FIGURE` lines are printed; its failure fails the test, with its whole output.
pub fn in_own_process(test: &str, body: impl FnOnce()) {
    const CHILD: &str = "HINTAUDIT_RELIABILITY_CHILD";
    if std::env::var(CHILD).is_ok_and(|v| v == test) {
        return body();
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = std::process::Command::new(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, test)
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The child's figure shares its line with libtest's `test … ... `: each on a line of its
    // own, as `.ci/run` and docs/reliability.md read them (`^FIGURE`).
    for line in stdout.lines() {
        if let Some(at) = line.find("FIGURE ") {
            println!("{}", &line[at..]);
        }
    }
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{test} failed in its own process ({}):\n{stdout}\n{stderr}",
        out.status
    );
}

/// `fast` in `cargo test`, `full` with the long switch.
pub fn size(fast: usize, full: usize) -> usize {
    if long() { full } else { fast }
}

/// Prints one figures line: `FIGURE <case> k=v k=v`, for docs/reliability.md.
pub fn figure(case: &str, pairs: &[(&str, String)]) {
    let body: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!(
        "FIGURE {case} mode={} {}",
        if long() { "long" } else { "fast" },
        body.join(" ")
    );
}

/// Held by every test that runs audited statements outside a call scope or reads the
/// process-wide counters (`hintaudit::core::stats()`), so that deltas are exact.
pub static STATS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A SQLite file in a temp dir, opened in WAL mode as a server would, and the audited pool.
pub async fn sqlite(connections: u32) -> (AuditedPool<sqlx::Sqlite>, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = SqliteConnectOptions::from_str(&format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("reliability.db").display()
    ))
    .expect("url")
    .journal_mode(SqliteJournalMode::Wal)
    .synchronous(SqliteSynchronous::Normal)
    .busy_timeout(Duration::from_secs(30));
    let pool = AuditedPool::options()
        .connect_with(
            SqlitePoolOptions::new().max_connections(connections),
            options,
        )
        .await
        .expect("sqlite pool");
    (pool, dir)
}

fn pg_base_url() -> String {
    std::env::var("HINTAUDIT_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// A fresh PostgreSQL schema and an audited pool on it whose connections carry
/// `application_name` = the schema name (to find them in `pg_stat_activity`), or `None`
/// (the reason printed) when PostgreSQL is unreachable and not required.
pub async fn postgres(
    test: &str,
    connections: u32,
) -> Option<(AuditedPool<sqlx::Postgres>, PgSchema)> {
    let (options, schema) = pg_schema(test).await?;
    let pool = AuditedPool::options()
        .connect_with(
            PgPoolOptions::new()
                .max_connections(connections)
                .acquire_timeout(Duration::from_secs(60)),
            options,
        )
        .await
        .expect("pg pool");
    Some((pool, schema))
}

/// A fresh PostgreSQL schema and the connect options of a pool on it (`application_name` =
/// the schema name, `search_path` = the schema), or `None` (the reason printed) when
/// PostgreSQL is unreachable and not required.
pub async fn pg_schema(test: &str) -> Option<(PgConnectOptions, PgSchema)> {
    static N: AtomicUsize = AtomicUsize::new(0);
    let base = pg_base_url();
    let admin = match sqlx::PgPool::connect(&base).await {
        Ok(p) => p,
        Err(e) => {
            if hintaudit_test_support::required("HINTAUDIT_REQUIRE_PG") {
                panic!("PostgreSQL is required but {base} is unreachable: {e}");
            }
            eprintln!("skipping {test} on PostgreSQL: {base} is unreachable ({e})");
            return None;
        }
    };
    // Made here from the test name, the pid and a counter: safe to format into DDL.
    let schema = format!(
        "rel_{}_{}_{}",
        test.replace(|c: char| !c.is_ascii_alphanumeric(), "_"),
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    for ddl in [
        format!("DROP SCHEMA IF EXISTS {schema} CASCADE"),
        format!("CREATE SCHEMA {schema}"),
    ] {
        sqlx::query(sqlx::AssertSqlSafe(ddl))
            .execute(&admin)
            .await
            .expect("schema");
    }
    let options = PgConnectOptions::from_str(&base)
        .expect("url")
        .application_name(&schema)
        .options([("search_path", schema.as_str())]);
    Some((options, PgSchema { schema, admin }))
}

/// A test's PostgreSQL schema and an unaudited admin pool on the server.
pub struct PgSchema {
    pub schema: String,
    pub admin: sqlx::PgPool,
}

impl PgSchema {
    /// Drops the schema.
    pub async fn cleanup(self) {
        let drop = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema);
        let _ = sqlx::query(sqlx::AssertSqlSafe(drop))
            .execute(&self.admin)
            .await;
        self.admin.close().await;
    }

    /// How many of the pool's backends sit in an open transaction.
    pub async fn idle_in_transaction(&self) -> i64 {
        sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 \
             AND state LIKE 'idle in transaction%'",
        )
        .bind(&self.schema)
        .fetch_one(&self.admin)
        .await
        .expect("pg_stat_activity")
    }
}
