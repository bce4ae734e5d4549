//! Many proxies, one database (docs/performance.md#many-proxies-one-database): N captures
//! (N = 0, 1, 2, 4), each decoding the whole WAL through a temporary slot of its own, under
//! the same write load. Per N it prints:
//!
//! - the server's CPU seconds in the captures' own backends (logical decoding through the SQL
//!   interface runs in the backend that calls `pg_logical_slot_get_changes`), read from
//!   `/proc/<pid>/stat`, so PostgreSQL must run on this machine;
//! - the same per 1,000 commits;
//! - the slots' peak lag (bytes of WAL kept and not yet read), sampled every 100 ms;
//! - the time from the load's end until every slot has read past it (wall clock);
//! - the writers' throughput, beside N = 0's (a wall-clock ratio).
//!
//! `cargo bench -p hintaudit-proxy --bench decoders` (PostgreSQL at HINTAUDIT_PG_URL with
//! wal_level = logical; `HINTAUDIT_BENCH_TRANSACTIONS`, default 4,000, of 10 inserted rows
//! and one updated row each, from 4 writers). The WAL is the cluster's: other databases'
//! traffic is decoded (and skipped) by every slot too, so run it on an otherwise idle server.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use hintaudit_proxy::{Capture, CaptureOptions};
use sqlx::AssertSqlSafe;
use sqlx::postgres::{PgPool, PgPoolOptions};

mod measures;
use measures::{capture_backends, cpu_seconds};

fn pg_url() -> String {
    std::env::var("HINTAUDIT_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// `url` with its database replaced by `db`.
fn with_database(url: &str, db: &str) -> String {
    let (base, query) = url.split_once('?').map_or((url, ""), |(b, q)| (b, q));
    let root = base.rsplit_once('/').map_or(base, |(r, _)| r);
    if query.is_empty() {
        format!("{root}/{db}")
    } else {
        format!("{root}/{db}?{query}")
    }
}

/// One run's figures.
struct Run {
    decoders: usize,
    /// Whether the writer trigger was installed (by an earlier capture) during the load.
    trigger: bool,
    wal_bytes: i64,
    cpu_seconds: f64,
    peak_lag: i64,
    catch_up: Duration,
    tps: f64,
}

/// The largest lag of this database's hintaudit slots, in bytes (0 without a slot).
async fn lag(admin: &PgPool, db: &str) -> i64 {
    sqlx::query_scalar::<_, Option<i64>>(
        "SELECT max(pg_current_wal_lsn() - confirmed_flush_lsn)::bigint \
         FROM pg_replication_slots WHERE database = $1 AND slot_name LIKE 'hintaudit_proxy_%'",
    )
    .bind(db)
    .fetch_one(admin)
    .await
    .expect("pg_replication_slots")
    .unwrap_or(0)
}

/// Every slot of this database has read through `lsn` (text form).
async fn caught_up(admin: &PgPool, db: &str, lsn: &str) -> bool {
    sqlx::query_scalar::<_, Option<bool>>(
        "SELECT bool_and(confirmed_flush_lsn >= $2::pg_lsn) FROM pg_replication_slots \
         WHERE database = $1 AND slot_name LIKE 'hintaudit_proxy_%'",
    )
    .bind(db)
    .bind(lsn)
    .fetch_one(admin)
    .await
    .expect("pg_replication_slots")
    .unwrap_or(true)
}

/// The WAL insert position, in bytes.
async fn wal_lsn(admin: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint")
        .fetch_one(admin)
        .await
        .expect("WAL position")
}

/// Whether the writer trigger (installed by a capture, kept after it) is on the tables.
async fn trigger_installed(admin: &PgPool) -> bool {
    sqlx::query_scalar("SELECT count(*) > 0 FROM pg_trigger WHERE tgname = 'hintaudit_writer'")
        .fetch_one(admin)
        .await
        .expect("pg_trigger")
}

/// `total` transactions from 4 writers, each inserting 10 rows and updating one.
async fn load(pool: &PgPool, total: usize) -> Duration {
    let started = Instant::now();
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let pool = pool.clone();
            tokio::spawn(async move {
                for i in 0..total / 4 {
                    let table = format!("t{}", (w + i) % 10);
                    let mut tx = pool.begin().await.expect("begin");
                    sqlx::query(AssertSqlSafe(format!(
                        "INSERT INTO {table} (v, n) SELECT md5(g::text), g \
                         FROM generate_series(1, 10) g"
                    )))
                    .execute(&mut *tx)
                    .await
                    .expect("insert");
                    sqlx::query(AssertSqlSafe(format!(
                        "UPDATE {table} SET n = n + 1 WHERE id = 1"
                    )))
                    .execute(&mut *tx)
                    .await
                    .expect("update");
                    tx.commit().await.expect("commit");
                }
            })
        })
        .collect();
    for w in writers {
        w.await.expect("writer");
    }
    started.elapsed()
}

/// Waits until database `db` has no replication slot: a capture's slot goes with its
/// session, which the server ends a moment after the capture closes it.
async fn no_slots(admin: &PgPool, db: &str) {
    for _ in 0..100 {
        let slots: i64 =
            sqlx::query_scalar("SELECT count(*) FROM pg_replication_slots WHERE database = $1")
                .bind(db)
                .fetch_one(admin)
                .await
                .expect("pg_replication_slots");
        if slots == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn run(admin: &PgPool, url: &str, db: &str, decoders: usize, total: usize) -> Run {
    // The previous run's capture sessions are gone, so their backends are not counted.
    no_slots(admin, db).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut captures = Vec::new();
    for _ in 0..decoders {
        captures.push(
            Capture::start(url, CaptureOptions::default())
                .await
                .expect("capture"),
        );
    }
    let pids = capture_backends(admin, db).await;
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .connect(url)
        .await
        .expect("writers' pool");
    let cpu_before = cpu_seconds(&pids);
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(0));
    let sampling = {
        let (admin, db, peak) = (admin.clone(), db.to_owned(), peak.clone());
        tokio::spawn(async move {
            loop {
                peak.fetch_max(lag(&admin, &db).await, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    let wal_before = wal_lsn(admin).await;
    let took = load(&pool, total).await;
    let wal_bytes = wal_lsn(admin).await - wal_before;
    let end: String = sqlx::query_scalar("SELECT pg_current_wal_flush_lsn()::text")
        .fetch_one(admin)
        .await
        .expect("flush lsn");
    let ended = Instant::now();
    while !caught_up(admin, db, &end).await {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let catch_up = ended.elapsed();
    sampling.abort();
    let peak_lag = peak.load(Ordering::Relaxed);
    let cpu_seconds = cpu_seconds(&pids) - cpu_before;
    for c in &captures {
        c.shutdown().await;
    }
    pool.close().await;
    Run {
        decoders,
        trigger: trigger_installed(admin).await,
        wal_bytes,
        cpu_seconds,
        peak_lag,
        catch_up,
        tps: total as f64 / took.as_secs_f64(),
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let total: usize = std::env::var("HINTAUDIT_BENCH_TRANSACTIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4000);
    let admin_url = pg_url();
    let db = format!("hintaudit_bench_decoders_{}", std::process::id());
    let root = PgPool::connect(&admin_url).await.expect("PostgreSQL");
    sqlx::query(AssertSqlSafe(format!("CREATE DATABASE {db}")))
        .execute(&root)
        .await
        .expect("create database");
    let url = with_database(&admin_url, &db);
    let admin = PgPool::connect(&url).await.expect("bench database");
    for t in 0..10 {
        sqlx::query(AssertSqlSafe(format!(
            "CREATE TABLE t{t} (id bigserial PRIMARY KEY, v text, n int)"
        )))
        .execute(&admin)
        .await
        .expect("create table");
    }
    let mut runs = Vec::new();
    // 0 again once the first capture has installed the writer trigger: the trigger's own
    // cost apart from the decoding's.
    for decoders in [0, 1, 0, 2, 4] {
        runs.push(run(&admin, &url, &db, decoders, total).await);
    }
    print(&runs, total);
    admin.close().await;
    no_slots(&root, &db).await;
    sqlx::query(AssertSqlSafe(format!("DROP DATABASE {db} WITH (FORCE)")))
        .execute(&root)
        .await
        .expect("drop database");
}

fn print(runs: &[Run], total: usize) {
    let base = runs.first().map_or(1.0, |r| r.tps);
    println!("{total} transactions (10 inserted rows, 1 updated row each), 4 writers");
    println!(
        "| decoders | writer trigger | WAL MB | server CPU s (captures' backends) | \
         per decoder | CPU ms per WAL MB per decoder | peak lag bytes | catch-up ms | \
         writers tx/s | vs none |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for r in runs {
        let mb = r.wal_bytes as f64 / 1_048_576.0;
        let per = r.cpu_seconds / r.decoders.max(1) as f64;
        let per_mb = if mb > 0.0 { per * 1000.0 / mb } else { 0.0 };
        println!(
            "| {} | {} | {:.1} | {:.2} | {:.2} | {:.1} | {} | {} | {:.0} | {:.3} |",
            r.decoders,
            if r.trigger { "yes" } else { "no" },
            mb,
            r.cpu_seconds,
            per,
            per_mb,
            r.peak_lag,
            r.catch_up.as_millis(),
            r.tps,
            r.tps / base
        );
    }
}
