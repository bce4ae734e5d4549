//! Overhead of auditing on PostgreSQL, at 10, 1,000 and 10,000 user tables: the same
//! statements on a plain sqlx pool and on hintaudit's audited pool (inside a call scope, one
//! per statement, as a tool call would run them), in one run, in a database of its own
//! (created with a unique name and dropped at the end).
//!
//! Workloads: a plain autocommit write (`INSERT` into a table with no triggers: the command
//! tag is the evidence), two writes in a transaction, a read, and a write into a table with
//! a trigger that writes another table (the oracle runs). For each, per statement: the bare
//! and audited times (median of rounds that alternate the order), audited/bare, the added
//! time, and the round trips the audited pool adds, counted (not timed) by a proxy that
//! counts the server's `ReadyForQuery` messages (see `proxy`).
//!
//! `cargo bench --bench overhead_pg` (HINTAUDIT_PG_URL, default
//! `postgres://postgres@127.0.0.1:5432/test`, a database to connect to for `CREATE
//! DATABASE`; HINTAUDIT_BENCH_STATEMENTS statements per round, default 200;
//! HINTAUDIT_BENCH_ROUNDS rounds, default 5; HINTAUDIT_BENCH_TABLES, default `10,1000,10000`).
//! Without a server it prints why and exits.

use std::net::ToSocketAddrs;
use std::str::FromStr;
use std::time::{Duration, Instant};

use hintaudit::core::CallScope;
use hintaudit::sqlx::AuditedPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgSslMode};
use sqlx::{ConnectOptions, Executor, PgPool, Postgres};

mod proxy;

/// The schema every table count shares; filler tables are added on top.
const SETUP: &str = "
CREATE TABLE items (id serial PRIMARY KEY, name text NOT NULL);
CREATE TABLE log (id serial PRIMARY KEY, what text);
CREATE TABLE logged (id serial PRIMARY KEY, v int);
CREATE FUNCTION log_it() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO log (what) VALUES ('logged ' || NEW.id); RETURN NEW; END $$;
CREATE TRIGGER logged_log AFTER INSERT ON logged FOR EACH ROW EXECUTE FUNCTION log_it();
CREATE FUNCTION twice(v int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT v * 2';
INSERT INTO items (name) SELECT 'item ' || i FROM generate_series(1, 1000) AS i;
";

/// User tables the schema above holds.
const BASE_TABLES: usize = 3;

/// The workloads: a label, and how many statements one unit runs.
const WORKLOADS: [(&str, u64); 5] = [
    ("plain autocommit write", 1),
    ("2 writes in a transaction", 2),
    ("read (SELECT by key)", 1),
    ("write with a trigger (oracle)", 1),
    ("2 writes in a tx, one triggered", 2),
];

/// Either pool, so that a workload is written once.
enum Pool {
    Bare(PgPool),
    Audited(AuditedPool<Postgres>),
}

macro_rules! on_pool {
    ($p:expr, $pool:ident => $body:expr) => {
        match $p {
            Pool::Bare($pool) => $body,
            Pool::Audited($pool) => $body,
        }
    };
}

/// The transaction's insert: into the plain table (workload 1), or into the one with a
/// trigger (workload 4, the oracle's in-transaction snapshots).
fn tx_insert(w: usize) -> &'static str {
    if w == 1 {
        "INSERT INTO items (name) VALUES ($1)"
    } else {
        "INSERT INTO logged (v) VALUES (length($1))"
    }
}
const TX_UPDATE: &str = "UPDATE items SET name = $1 WHERE id = $2";

/// Runs one unit of workload `w` (the `i`-th), inside a call scope on the audited pool.
async fn unit(pool: &Pool, w: usize, i: i32) {
    let run = async {
        match w {
            0 => on_pool!(pool, p => {
                sqlx::query("INSERT INTO items (name) VALUES ($1)").bind(format!("new {i}")).execute(p).await.map(|_| ())
            }),
            1 | 4 => match pool {
                Pool::Bare(p) => {
                    let mut tx = p.begin().await.expect("begin");
                    sqlx::query(tx_insert(w)).bind("tx").execute(&mut *tx).await.expect("insert");
                    sqlx::query(TX_UPDATE).bind("upd").bind(i % 1000 + 1).execute(&mut *tx).await.expect("update");
                    tx.commit().await
                }
                Pool::Audited(p) => {
                    let mut tx = p.begin().await.expect("begin");
                    sqlx::query(tx_insert(w)).bind("tx").execute(&mut tx).await.expect("insert");
                    sqlx::query(TX_UPDATE).bind("upd").bind(i % 1000 + 1).execute(&mut tx).await.expect("update");
                    tx.commit().await
                }
            },
            2 => on_pool!(pool, p => {
                sqlx::query_scalar::<_, String>("SELECT name FROM items WHERE id = $1").bind(i % 1000 + 1).fetch_one(p).await.map(|_| ())
            }),
            3 => on_pool!(pool, p => {
                sqlx::query("INSERT INTO logged (v) VALUES ($1)").bind(i).execute(p).await.map(|_| ())
            }),
            _ => unreachable!("workload {w}"),
        }
        .expect("statement");
    };
    match pool {
        Pool::Bare(_) => run.await,
        Pool::Audited(_) => CallScope::new("bench").run(run).await,
    }
}

async fn units(pool: &Pool, w: usize, n: usize) -> Duration {
    let start = Instant::now();
    for i in 0..n {
        unit(pool, w, i as i32).await;
    }
    start.elapsed()
}

/// Adds filler tables (`id int PRIMARY KEY, v text`) until the database holds `total` user
/// tables, 500 per transaction (each table takes locks until its transaction ends).
async fn grow(admin: &PgPool, have: usize, total: usize) {
    let mut from = have;
    while from < total {
        let to = (from + 500).min(total);
        let sql = format!(
            "DO $$ BEGIN FOR i IN {} .. {} LOOP \
             EXECUTE format('CREATE TABLE filler_%s (id int PRIMARY KEY, v text)', i); \
             END LOOP; END $$",
            from + 1,
            to
        );
        admin
            .execute(sqlx::AssertSqlSafe(sql))
            .await
            .expect("filler tables");
        from = to;
    }
    admin.execute("ANALYZE").await.expect("analyze");
}

/// Streams: time to the first row and to the last of `sql` read with `fetch`, on the pool
/// or on a connection taken from it first (`held`: `fetch(&mut *conn)`).
async fn stream(pool: &Pool, sql: &'static str, held: bool) -> (Duration, Duration) {
    use futures_util::TryStreamExt;
    let run = async {
        let mut first = None;
        let mut start = Instant::now();
        on_pool!(pool, p => {
            if held {
                let mut conn = p.acquire().await.expect("connection");
                start = Instant::now();
                let mut rows = sqlx::query(sql).fetch(&mut *conn);
                while rows.try_next().await.expect("row").is_some() {
                    first.get_or_insert_with(|| start.elapsed());
                }
            } else {
                let mut rows = sqlx::query(sql).fetch(p);
                while rows.try_next().await.expect("row").is_some() {
                    first.get_or_insert_with(|| start.elapsed());
                }
            }
        });
        (first.unwrap_or_default(), start.elapsed())
    };
    match pool {
        Pool::Bare(_) => run.await,
        Pool::Audited(_) => CallScope::new("bench").run(run).await,
    }
}

/// The streamed queries: a plain read, and one calling a user function (opaque to the
/// classifier, so the oracle wraps it in a transaction), on the pool and on a held
/// connection.
const STREAMS: [(&str, &str, bool); 3] = [
    (
        "stream 300k rows, plain SELECT",
        "SELECT g FROM generate_series(1, 300000) AS g",
        false,
    ),
    (
        "stream 300k rows, user function",
        "SELECT twice(g) FROM generate_series(1, 300000) AS g",
        false,
    ),
    (
        "the same, on a held connection",
        "SELECT twice(g) FROM generate_series(1, 300000) AS g",
        true,
    ),
];

async fn streams(bare: &Pool, audited: &Pool) {
    println!(
        "{:<34} {:>14} {:>14} {:>10} {:>12} {:>12}",
        "stream (fetch)", "bare first ms", "audited first", "ratio", "bare all ms", "audited all"
    );
    for (label, sql, held) in STREAMS {
        let (mut bf, mut af, mut ba, mut aa) = (vec![], vec![], vec![], vec![]);
        for _ in 0..3 {
            let (f, a) = stream(bare, sql, held).await;
            bf.push(f.as_secs_f64());
            ba.push(a.as_secs_f64());
            let (f, a) = stream(audited, sql, held).await;
            af.push(f.as_secs_f64());
            aa.push(a.as_secs_f64());
        }
        let (bf, af) = (median(bf), median(af));
        println!(
            "{label:<34} {:>14.2} {:>14.2} {:>10.2} {:>12.1} {:>12.1}",
            bf * 1e3,
            af * 1e3,
            af / bf,
            median(ba) * 1e3,
            median(aa) * 1e3
        );
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn env_or<T: FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn bare_pool(opts: &PgConnectOptions) -> Pool {
    Pool::Bare(
        PgPoolOptions::new()
            .max_connections(2)
            .connect_with(opts.clone())
            .await
            .expect("bare pool"),
    )
}

async fn audited_pool(opts: &PgConnectOptions) -> Pool {
    let pool = AuditedPool::<Postgres>::options()
        .connect_with(PgPoolOptions::new().max_connections(2), opts.clone())
        .await
        .expect("audited pool");
    Pool::Audited(pool)
}

/// The pools for one table count: timed ones (bare, audited), and ones behind counting
/// proxies for the round trips (each pool behind its own).
struct Pools {
    bare: Pool,
    audited: Pool,
    pb: proxy::Proxy,
    pa: proxy::Proxy,
    cb: Pool,
    ca: Pool,
}

async fn pools(opts: &PgConnectOptions, upstream: std::net::SocketAddr) -> Pools {
    let (bare, audited) = (bare_pool(opts).await, audited_pool(opts).await);
    let (pb, pa) = (proxy::start(upstream).await, proxy::start(upstream).await);
    let via = |p: &proxy::Proxy| opts.clone().host("127.0.0.1").port(p.addr.port());
    let (cb, ca) = (bare_pool(&via(&pb)).await, audited_pool(&via(&pa)).await);
    Pools {
        bare,
        audited,
        pb,
        pa,
        cb,
        ca,
    }
}

/// Workload `w`'s row: its time per unit on each pool over `rounds` rounds of `n` units
/// (taking turns to go first), and the round trips the audited pool adds per unit, counted
/// after a warm-up (prepared statements, the catalog cache).
async fn workload_row(p: &Pools, w: usize, n: usize, rounds: usize) {
    let (label, per_unit) = WORKLOADS[w];
    units(&p.bare, w, 20).await;
    units(&p.audited, w, 20).await;
    let (mut b, mut a) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        let unit_s = |d: Duration| d.as_secs_f64() / (n as f64 * per_unit as f64);
        if r % 2 == 0 {
            b.push(unit_s(units(&p.bare, w, n).await));
            a.push(unit_s(units(&p.audited, w, n).await));
        } else {
            a.push(unit_s(units(&p.audited, w, n).await));
            b.push(unit_s(units(&p.bare, w, n).await));
        }
    }
    let ratio = median(a.iter().zip(&b).map(|(a, b)| a / b).collect());
    units(&p.cb, w, 5).await;
    units(&p.ca, w, 5).await;
    let counted = 50;
    let (b0, a0) = (p.pb.count(), p.pa.count());
    units(&p.cb, w, counted).await;
    units(&p.ca, w, counted).await;
    // Pools ping a released connection in a task of their own: let it land.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let per = (counted as u64 * per_unit) as f64;
    let added_rt = ((p.pa.count() - a0) as f64 - (p.pb.count() - b0) as f64) / per;
    println!(
        "{:<32} {:>11.1} {:>11.1} {:>13.3} {:>13.1} {:>16.2}",
        label,
        median(b.clone()) * 1e6,
        median(a.clone()) * 1e6,
        ratio,
        (median(a) - median(b)) * 1e6,
        added_rt
    );
}

/// The table counts to measure at (HINTAUDIT_BENCH_TABLES).
fn table_counts() -> Vec<usize> {
    std::env::var("HINTAUDIT_BENCH_TABLES")
        .unwrap_or_else(|_| "10,1000,10000".to_owned())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

async fn run() {
    let url = std::env::var("HINTAUDIT_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let n: usize = env_or("HINTAUDIT_BENCH_STATEMENTS", 200);
    let rounds: usize = env_or("HINTAUDIT_BENCH_ROUNDS", 5);
    let counts = table_counts();
    let root = match PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(5))
        .connect(&url)
        .await
    {
        Ok(p) => p,
        Err(e) => {
            println!("skipping: PostgreSQL unreachable at {url}: {e}");
            return;
        }
    };
    let version: String = sqlx::query_scalar("SHOW server_version")
        .fetch_one(&root)
        .await
        .expect("version");
    let db = format!("hintaudit_bench_{}", std::process::id());
    root.execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {db}")))
        .await
        .expect("create database");
    let opts = PgConnectOptions::from_str(&url)
        .expect("url")
        .database(&db)
        .ssl_mode(PgSslMode::Disable)
        .disable_statement_logging();
    let admin = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(opts.clone())
        .await
        .expect("admin");
    admin.execute(SETUP).await.expect("setup");
    let upstream = (opts.get_host(), opts.get_port())
        .to_socket_addrs()
        .expect("address")
        .next()
        .expect("address");
    println!(
        "PostgreSQL {version} on {url} (database {db}); {n} statements x {rounds} rounds per workload and pool; one call scope per unit on the audited pool"
    );
    let mut have = BASE_TABLES;
    for &tables in &counts {
        grow(&admin, have, tables.max(BASE_TABLES)).await;
        have = have.max(tables);
        let p = pools(&opts, upstream).await;
        println!("\n{tables} user tables");
        println!(
            "{:<32} {:>11} {:>11} {:>13} {:>13} {:>16}",
            "workload", "bare us", "audited us", "audited/bare", "added us", "added round trips"
        );
        for w in 0..WORKLOADS.len() {
            workload_row(&p, w, n, rounds).await;
        }
        if tables == counts[0] {
            streams(&p.bare, &p.audited).await;
        }
        for pool in [p.bare, p.audited, p.cb, p.ca] {
            on_pool!(pool, pool => pool.close().await);
        }
    }
    admin.close().await;
    root.execute(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE {db} WITH (FORCE)"
    )))
    .await
    .expect("drop database");
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run());
}
