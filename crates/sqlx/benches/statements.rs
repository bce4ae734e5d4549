//! What auditing adds per statement, SQLite and PostgreSQL: a benchmark, not a test. Run with
//! `cargo bench -p hintaudit-sqlx --bench statements` (PostgreSQL at HINTAUDIT_PG_URL, or
//! skipped with a note).
//! Raw and audited runs alternate in rounds; each line shows the best round's mean, which
//! filters out noise from other processes. The numbers in the crate docs come from here.

use std::str::FromStr;
use std::time::{Duration, Instant};

use hintaudit_core::CallScope;
use hintaudit_sqlx::{AuditedPool, PgOracle};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use sqlx::{Connection, Executor, Postgres, Sqlite};

const ROUNDS: u32 = 7;
const PER_ROUND: u32 = 300;

/// Runs `$raw` and `$audited` (expressions awaited once per iteration) in alternating rounds
/// and prints the best mean of each.
macro_rules! compare {
    ($label:expr, $raw:expr, $audited:expr) => {{
        let mut best = [Duration::MAX; 2];
        for _ in 0..ROUNDS {
            let t = Instant::now();
            for _ in 0..PER_ROUND {
                $raw;
            }
            best[0] = best[0].min(t.elapsed() / PER_ROUND);
            let t = Instant::now();
            for _ in 0..PER_ROUND {
                $audited;
            }
            best[1] = best[1].min(t.elapsed() / PER_ROUND);
        }
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        println!(
            "{:<44} raw {:>8.1} µs  audited {:>8.1} µs  (+{:.1} µs)",
            $label,
            us(best[0]),
            us(best[1]),
            us(best[1]) - us(best[0])
        );
    }};
}

/// An audited pool on a SQLite file of its own (in the returned directory), table `t` with
/// one row.
async fn sqlite_pool() -> (tempfile::TempDir, AuditedPool<Sqlite>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = SqliteConnectOptions::new()
        .filename(dir.path().join("o.db"))
        .create_if_missing(true)
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
        .synchronous(sqlx::sqlite::SqliteSynchronous::Off);
    let pool = AuditedPool::<Sqlite>::options()
        .connect_with(SqlitePoolOptions::new().max_connections(2), opts)
        .await
        .expect("connect");
    pool.inner()
        .execute("CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER); INSERT INTO t (n) VALUES (1)")
        .await
        .expect("schema");
    (dir, pool)
}

const SEL: &str = "SELECT n FROM t WHERE id = ?";
const UPD: &str = "UPDATE t SET n = n + 1 WHERE id = 1";

/// Statements through the pool: raw and audited, outside and inside a call scope.
async fn sqlite_pool_statements(raw: &sqlx::SqlitePool, pool: &AuditedPool<Sqlite>) {
    compare!(
        "sqlite pool SELECT, no call scope",
        sqlx::query(SEL)
            .bind(1)
            .fetch_optional(raw)
            .await
            .expect("q"),
        sqlx::query(SEL)
            .bind(1)
            .fetch_optional(pool)
            .await
            .expect("q")
    );
    compare!(
        "sqlite pool SELECT, call-scoped",
        sqlx::query(SEL)
            .bind(1)
            .fetch_optional(raw)
            .await
            .expect("q"),
        CallScope::new("t")
            .run(sqlx::query(SEL).bind(1).fetch_optional(pool))
            .await
            .expect("q")
    );
    compare!(
        "sqlite pool UPDATE (1 row), call-scoped",
        sqlx::query(UPD).execute(raw).await.expect("q"),
        CallScope::new("t")
            .run(sqlx::query(UPD).execute(pool))
            .await
            .expect("q")
    );
}

/// Statements on a held connection, and what locking its handle costs.
async fn sqlite_held_connection(raw: &sqlx::SqlitePool, pool: &AuditedPool<Sqlite>) {
    let mut rc = raw.acquire().await.expect("acquire");
    let mut ac = pool.acquire().await.expect("acquire");
    compare!(
        "sqlite held connection SELECT, call-scoped",
        sqlx::query(SEL)
            .bind(1)
            .fetch_optional(&mut *rc)
            .await
            .expect("q"),
        CallScope::new("t")
            .run(sqlx::query(SEL).bind(1).fetch_optional(&mut ac))
            .await
            .expect("q")
    );
    // Each lock_handle() is followed by a command (see the crate docs on why).
    compare!(
        "sqlite ping vs lock_handle() + ping",
        rc.ping().await.expect("ping"),
        {
            drop(rc.lock_handle().await.expect("lock"));
            rc.ping().await.expect("ping");
        }
    );
}

async fn sqlite_overhead() {
    let (_dir, pool) = sqlite_pool().await;
    let raw = pool.inner().clone();
    sqlite_pool_statements(&raw, &pool).await;
    sqlite_held_connection(&raw, &pool).await;
    compare!(
        "tracing span, no subscriber",
        std::hint::black_box(()),
        drop(tracing::info_span!(
            "db.statement",
            a = "x",
            b = tracing::field::Empty
        ))
    );
}

async fn postgres_overhead() {
    let url = std::env::var("HINTAUDIT_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let schema = format!("hintaudit_overhead_{}", std::process::id());
    let admin = match sqlx::PgPool::connect(&url).await {
        Ok(p) => p,
        Err(e) => {
            eprintln!("skipping: PostgreSQL unreachable at {url}: {e}");
            return;
        }
    };
    admin
        .execute(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .await
        .expect("schema");
    let opts = PgConnectOptions::from_str(&url).expect("url").options([
        ("search_path", schema.as_str()),
        ("synchronous_commit", "off"),
    ]);
    let pool = AuditedPool::<Postgres>::options()
        .with_postgres_oracle(PgOracle::Writes)
        .connect_with(PgPoolOptions::new().max_connections(1), opts)
        .await
        .expect("connect");
    pool.inner()
        .execute("CREATE TABLE t (id int PRIMARY KEY, n int); INSERT INTO t VALUES (1, 1)")
        .await
        .expect("table");
    let raw = pool.inner().clone();
    let sel = "SELECT n FROM t WHERE id = $1";
    let upd = "UPDATE t SET n = n + 1 WHERE id = 1";
    compare!(
        "postgres pool SELECT, call-scoped (no oracle)",
        sqlx::query(sel)
            .bind(1)
            .fetch_optional(&raw)
            .await
            .expect("q"),
        CallScope::new("t")
            .run(sqlx::query(sel).bind(1).fetch_optional(&pool))
            .await
            .expect("q")
    );
    compare!(
        "postgres pool UPDATE, call-scoped, oracle wraps",
        sqlx::query(upd).execute(&raw).await.expect("q"),
        CallScope::new("t")
            .run(sqlx::query(upd).execute(&pool))
            .await
            .expect("q")
    );
    compare!(
        "postgres tx BEGIN/UPDATE/COMMIT, call-scoped",
        {
            let mut tx = raw.begin().await.expect("begin");
            sqlx::query(upd).execute(&mut *tx).await.expect("q");
            tx.commit().await.expect("commit");
        },
        CallScope::new("t")
            .run(async {
                let mut tx = pool.begin().await.expect("begin");
                sqlx::query(upd).execute(&mut tx).await.expect("q");
                tx.commit().await.expect("commit");
            })
            .await
    );
    pool.close().await;
    admin
        .execute(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
        .await
        .expect("drop");
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        sqlite_overhead().await;
        postgres_overhead().await;
    });
}
