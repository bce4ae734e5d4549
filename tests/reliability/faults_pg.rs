//! Case 3 on PostgreSQL, database faults: backends killed with `pg_terminate_backend` (idle,
//! mid-statement, inside a transaction, and at random while calls run), `statement_timeout`,
//! and an exhausted pool. The same scenarios run on a bare sqlx pool and on an
//! `AuditedPool`, each in its own schema; every outcome (ok, SQLSTATE, sqlx error variant)
//! and the rows left must be the same. The shared server itself is never restarted.

use std::time::{Duration, Instant};

use hintaudit::core::{AuditStage, CallScope, stats};
use sqlx::{AssertSqlSafe, PgPool};

use crate::faults_side::{PgSide, side};
use crate::outcome::{Outcomes, either};
use crate::support::{PgSchema, figure};

/// Terminates backend `pid` and waits until it is gone from `pg_stat_activity`.
async fn terminate(admin: &PgPool, pid: i32) {
    sqlx::query("SELECT pg_terminate_backend($1)")
        .bind(pid)
        .execute(admin)
        .await
        .expect("pg_terminate_backend");
    wait_for(
        admin,
        "SELECT count(*) FROM pg_stat_activity WHERE pid = $1",
        pid,
        0,
    )
    .await;
}

/// Waits (at most 10 s) until `count_sql` with `$1 = pid` answers `want`.
async fn wait_for(admin: &PgPool, count_sql: &'static str, pid: i32, want: i64) {
    let started = Instant::now();
    loop {
        let n: i64 = sqlx::query_scalar(count_sql)
            .bind(pid)
            .fetch_one(admin)
            .await
            .expect("pg_stat_activity");
        if n == want {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{count_sql} for {pid}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits until backend `pid` runs a statement (or waits on a lock).
async fn until_active(admin: &PgPool, pid: i32) {
    wait_for(
        admin,
        "SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND state = 'active' \
         AND (query LIKE '%pg_sleep%' OR wait_event_type = 'Lock')",
        pid,
        1,
    )
    .await;
}

/// `SELECT count(*) FROM t` on the side's schema, through the admin pool.
async fn rows(s: &PgSchema) -> i64 {
    let q = format!("SELECT count(*) FROM {}.t", s.schema);
    sqlx::query_scalar(AssertSqlSafe(q))
        .fetch_one(&s.admin)
        .await
        .expect("count")
}

/// The kill scenarios on one side, inside a call scope.
async fn kills(pool: &PgSide, s: &PgSchema, out: &mut Outcomes) {
    // A held connection whose backend is killed while idle, then used.
    let idle = [
        ("idle_kill.read", "SELECT count(*) FROM t"),
        ("idle_kill.direct_write", "INSERT INTO t (n) VALUES (1)"),
        (
            "idle_kill.wrapped_write",
            "INSERT INTO t (n) SELECT 1 FROM pg_sleep(0)",
        ),
    ];
    for (name, sql) in idle {
        let r = either!(pool.by_ref(), p => {
            let mut c = p.acquire().await.expect("acquire");
            let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
                .fetch_one(&mut *c).await.expect("pid");
            terminate(&s.admin, pid).await;
            sqlx::raw_sql(sql).execute(&mut *c).await.map(|r| r.rows_affected())
        });
        out.note(name, &r);
        out.note(&format!("{name}.then_pool"), &ping(pool).await);
    }
    // Killed mid-statement: a sleep, a wrapped write, a direct write waiting on a lock.
    let mid = [
        ("mid_kill.read", "SELECT pg_sleep(5)"),
        (
            "mid_kill.wrapped_write",
            "INSERT INTO t (n) SELECT 1 FROM pg_sleep(5)",
        ),
        (
            "mid_kill.blocked_direct_write",
            "INSERT INTO t (n) VALUES (2)",
        ),
    ];
    for (name, sql) in mid {
        let mut lock = s.admin.begin().await.expect("begin");
        let q = format!("LOCK TABLE {}.t IN ACCESS EXCLUSIVE MODE", s.schema);
        if name.contains("blocked") {
            sqlx::raw_sql(AssertSqlSafe(q))
                .execute(&mut *lock)
                .await
                .expect("lock");
        }
        let r = either!(pool.by_ref(), p => {
            let mut c = p.acquire().await.expect("acquire");
            let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
                .fetch_one(&mut *c).await.expect("pid");
            let killer = async {
                until_active(&s.admin, pid).await;
                terminate(&s.admin, pid).await;
            };
            let (r, ()) = tokio::join!(sqlx::raw_sql(sql).execute(&mut *c), killer);
            r.map(|r| r.rows_affected())
        });
        lock.rollback().await.expect("rollback");
        out.note(name, &r);
        out.note(&format!("{name}.then_pool"), &ping(pool).await);
    }
    // Killed inside a transaction, between its insert and its commit.
    let (insert, commit) = either!(pool.by_ref(), p => {
        let mut tx = p.begin().await.expect("begin");
        let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(&mut *tx).await.expect("pid");
        let insert = sqlx::raw_sql("INSERT INTO t (n) SELECT 1 FROM pg_sleep(0)")
            .execute(&mut *tx).await.map(|_| ());
        terminate(&s.admin, pid).await;
        (insert, tx.commit().await)
    });
    out.note("tx_kill.insert", &insert);
    out.note("tx_kill.commit", &commit);
    out.note("tx_kill.then_pool", &ping(pool).await);
}

/// A statement straight on the pool.
async fn ping(pool: &PgSide) -> Result<u64, sqlx::Error> {
    either!(pool.by_ref(), p => sqlx::raw_sql("SELECT 1").execute(p).await.map(|r| r.rows_affected()))
}

/// The `statement_timeout` scenarios (300 ms) on one side.
async fn timeouts(pool: &PgSide, s: &PgSchema, out: &mut Outcomes) {
    let plain = [
        ("timeout.read", "SELECT pg_sleep(1)"),
        (
            "timeout.wrapped_write",
            "INSERT INTO t (n) SELECT 1 FROM pg_sleep(1)",
        ),
        (
            "timeout.fast_wrapped_write",
            "INSERT INTO t (n) SELECT 1 FROM pg_sleep(0.01)",
        ),
        ("timeout.fast_direct_write", "INSERT INTO t (n) VALUES (3)"),
    ];
    for (name, sql) in plain {
        let r = either!(pool.by_ref(), p => sqlx::raw_sql(sql).execute(p).await.map(|r| r.rows_affected()));
        out.note(name, &r);
    }
    // A direct write that waits on a lock past the timeout.
    let mut lock = s.admin.begin().await.expect("begin");
    let q = format!("LOCK TABLE {}.t IN ACCESS EXCLUSIVE MODE", s.schema);
    sqlx::raw_sql(AssertSqlSafe(q))
        .execute(&mut *lock)
        .await
        .expect("lock");
    let r = either!(pool.by_ref(), p => sqlx::raw_sql("INSERT INTO t (n) VALUES (4)").execute(p).await.map(|r| r.rows_affected()));
    lock.rollback().await.expect("rollback");
    out.note("timeout.blocked_direct_write", &r);
    // In a transaction: the slow statement times out, the next fails, the commit rolls back.
    let (slow, next, commit) = either!(pool.by_ref(), p => {
        let mut tx = p.begin().await.expect("begin");
        let _ = sqlx::raw_sql("INSERT INTO t (n) VALUES (5)").execute(&mut *tx).await;
        let slow = sqlx::raw_sql("SELECT pg_sleep(1)").execute(&mut *tx).await.map(|_| ());
        let next = sqlx::raw_sql("INSERT INTO t (n) VALUES (6)").execute(&mut *tx).await.map(|_| ());
        (slow, next, tx.commit().await)
    });
    out.note("timeout.tx.slow", &slow);
    out.note("timeout.tx.next", &next);
    out.note("timeout.tx.commit", &commit);
    out.value("timeout.idle_in_transaction", s.idle_in_transaction().await);
}

/// The pool of 2 exhausted by two held connections (acquire timeout 300 ms).
async fn exhaustion(pool: &PgSide, out: &mut Outcomes) {
    let (statement, begin, acquire, held) = either!(pool.by_ref(), p => {
        let mut a = p.acquire().await.expect("acquire");
        let _b = p.acquire().await.expect("acquire");
        let statement = sqlx::raw_sql("INSERT INTO t (n) VALUES (7)").execute(p).await.map(|_| ());
        let begin = p.begin().await.map(|_| ());
        let acquire = p.acquire().await.map(|_| ());
        let held = sqlx::raw_sql("INSERT INTO t (n) VALUES (8)").execute(&mut *a).await.map(|_| ());
        (statement, begin, acquire, held)
    });
    out.note("exhausted.statement", &statement);
    out.note("exhausted.begin", &begin);
    out.note("exhausted.acquire", &acquire);
    out.note("exhausted.held_connection", &held);
    out.note("exhausted.released", &ping(pool).await);
}

/// The groups of scenarios.
#[derive(Clone, Copy)]
enum Group {
    Kills,
    Timeouts,
    Exhaustion,
}

/// Runs a group of scenarios on a bare and an audited side and returns (scenarios,
/// differences).
async fn compare(test: &str, group: Group) -> Option<(usize, Vec<String>)> {
    let (max, timeout_ms) = match group {
        Group::Kills => (4, None),
        Group::Timeouts => (4, Some(300)),
        Group::Exhaustion => (2, None),
    };
    let mut sides = Vec::new();
    for audited in [false, true] {
        let (pool, schema) =
            side(test, audited, max, Duration::from_millis(300), timeout_ms).await?;
        let mut out = Outcomes::default();
        let run = async {
            match group {
                Group::Kills => kills(&pool, &schema, &mut out).await,
                Group::Timeouts => timeouts(&pool, &schema, &mut out).await,
                Group::Exhaustion => exhaustion(&pool, &mut out).await,
            }
        };
        CallScope::new("faults").run(run).await;
        out.value("rows_left", rows(&schema).await);
        either!(pool.by_ref(), p => p.close().await);
        schema.cleanup().await;
        sides.push(out);
    }
    let (bare, audited) = (&sides[0], &sides[1]);
    println!("{test}: bare {:?}", bare.0);
    Some((bare.0.len(), audited.differences(bare)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_faults_fail_or_succeed_as_on_the_bare_server() {
    let oracle_errors = stats().audit_errors(AuditStage::Oracle);
    let mut scenarios = 0;
    let mut differences = Vec::new();
    let runs = [
        compare("faults_kill", Group::Kills).await,
        compare("faults_timeout", Group::Timeouts).await,
        compare("faults_pool", Group::Exhaustion).await,
    ];
    for run in runs {
        let Some((n, d)) = run else { return };
        scenarios += n;
        differences.extend(d);
    }
    let storm = crate::faults_storm::storm().await;
    figure(
        "faults.postgres",
        &[
            ("scenarios", scenarios.to_string()),
            ("scenarios_differ", differences.len().to_string()),
            (
                "oracle_errors_counted",
                (stats().audit_errors(AuditStage::Oracle) - oracle_errors).to_string(),
            ),
        ],
    );
    storm.figure();
    assert!(
        differences.is_empty(),
        "outcomes differ from bare: {differences:#?}"
    );
    storm.check();
}
