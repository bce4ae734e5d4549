//! Case 2, cancellation and panics: calls cancelled mid-statement, mid-transaction (also
//! mid-way through the PostgreSQL oracle's own wrapping transaction) and mid-stream, and
//! tools that panic inside a transaction. Afterwards no scope leaks into later calls, no
//! connection is back in the pool inside a transaction or bound to a finished call, and the
//! pool's size recovers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use hintaudit::core::{CallEffects, CallScope, Operation, RowOperation, stats};
use hintaudit::sqlx::{AuditedPool, Backend};

use crate::support::{self, figure};

/// The SQL of one backend: a statement that runs about `slow` long, a stream of many rows.
struct Sql {
    slow: &'static str,
    slow_insert: &'static str,
    many_rows: &'static str,
}

const SQLITE: Sql = Sql {
    slow: "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000) SELECT count(*) FROM c",
    slow_insert: "INSERT INTO t (n) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000) SELECT count(*) FROM c",
    many_rows: "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000) SELECT x FROM c",
};

const POSTGRES: Sql = Sql {
    slow: "SELECT pg_sleep(0.2)",
    slow_insert: "INSERT INTO t (n) SELECT 1 FROM pg_sleep(0.1)",
    many_rows: "SELECT generate_series(1, 100000)",
};

/// The kinds of trouble, one per call.
#[derive(Clone, Copy, Debug)]
enum Trouble {
    MidStatement,
    MidAutocommitWrite,
    MidTransaction,
    MidStream,
    MidTransactionStream,
    Panic,
}

const TROUBLES: [Trouble; 6] = [
    Trouble::MidStatement,
    Trouble::MidAutocommitWrite,
    Trouble::MidTransaction,
    Trouble::MidStream,
    Trouble::MidTransactionStream,
    Trouble::Panic,
];

/// One troubled call's body. Cancellation comes from outside (a timeout drops the future);
/// a stream is dropped after its first row; a panic unwinds through an open transaction.
async fn troubled<DB: Backend>(pool: AuditedPool<DB>, sql: &'static Sql, trouble: Trouble) {
    match trouble {
        Trouble::MidStatement => {
            let _ = sqlx::raw_sql(sql.slow).execute(&pool).await;
        }
        Trouble::MidAutocommitWrite => {
            let _ = sqlx::raw_sql(sql.slow_insert).execute(&pool).await;
        }
        Trouble::MidTransaction => {
            let mut tx = pool.begin().await.expect("begin");
            sqlx::raw_sql("INSERT INTO t (n) VALUES (1)")
                .execute(&mut tx)
                .await
                .expect("insert");
            let _ = sqlx::raw_sql(sql.slow).execute(&mut tx).await;
            tx.commit().await.expect("commit");
        }
        Trouble::MidStream => {
            let mut rows = sqlx::raw_sql(sql.many_rows).fetch(&pool);
            let _ = rows.next().await;
        }
        Trouble::MidTransactionStream => {
            let mut tx = pool.begin().await.expect("begin");
            sqlx::raw_sql("UPDATE t SET n = n + 1")
                .execute(&mut tx)
                .await
                .expect("update");
            {
                let mut rows = sqlx::raw_sql(sql.many_rows).fetch(&mut tx);
                let _ = rows.next().await;
            }
            // Dropped without commit: the call gave up.
        }
        Trouble::Panic => {
            let mut tx = pool.begin().await.expect("begin");
            sqlx::raw_sql("INSERT INTO t (n) VALUES (2)")
                .execute(&mut tx)
                .await
                .expect("insert");
            std::panic::panic_any(PLANNED);
        }
    }
}

/// The message of the tools' planned panics, kept out of the test output (other panics
/// still print through the previous hook).
const PLANNED: &str = "the tool panics inside its transaction";

fn quiet_planned_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let p = info.payload();
            let planned = p.downcast_ref::<&str>().is_some_and(|m| *m == PLANNED)
                || p.downcast_ref::<String>().is_some_and(|m| m == PLANNED);
            if !planned {
                previous(info);
            }
        }));
    });
}

/// Whether every connection the pool can hand out is outside a transaction: a raw `BEGIN`
/// on SQLite fails inside one. Returns how many were inside one.
async fn sqlite_in_transaction(pool: &AuditedPool<sqlx::Sqlite>, size: u32) -> usize {
    let mut held = Vec::new();
    let mut stuck = 0;
    for _ in 0..size {
        let mut conn = pool.inner().acquire().await.expect("acquire");
        if sqlx::raw_sql("BEGIN").execute(&mut *conn).await.is_err() {
            stuck += 1;
        } else {
            sqlx::raw_sql("ROLLBACK")
                .execute(&mut *conn)
                .await
                .expect("rollback");
        }
        held.push(conn);
    }
    stuck
}

/// Runs `rounds` of every trouble, concurrently, then a clean check. Returns (cancelled,
/// panicked, leaks) and asserts that leaks are 0.
async fn trouble_then_check<DB: Backend>(
    pool: AuditedPool<DB>,
    sql: &'static Sql,
    backend: &str,
    rounds: usize,
) -> Vec<Arc<CallEffects>>
where
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
{
    quiet_planned_panics();
    sqlx::raw_sql("CREATE TABLE t (n BIGINT)")
        .execute(pool.inner())
        .await
        .expect("ddl");
    let started = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..rounds {
        for (k, trouble) in TROUBLES.into_iter().enumerate() {
            let scope = CallScope::new(format!("troubled_{k}"));
            let effects = scope.effects_handle();
            let pool = pool.clone();
            // Cancel points spread over the statement's run: 0 to 140 ms.
            let deadline = Duration::from_millis(((i * 7 + k * 13) % 15) as u64 * 10);
            tasks.push((
                effects,
                tokio::spawn(async move {
                    let call = scope.run(troubled(pool, sql, trouble));
                    match trouble {
                        Trouble::Panic | Trouble::MidStream | Trouble::MidTransactionStream => {
                            call.await;
                            false
                        }
                        _ => tokio::time::timeout(deadline, call).await.is_err(),
                    }
                }),
            ));
        }
    }
    let (mut cancelled, mut panicked, mut dropped_streams) = (0, 0, 0);
    let mut finished = Vec::new();
    for (effects, task) in tasks {
        match task.await {
            Ok(true) => cancelled += 1,
            Ok(false) => dropped_streams += 1,
            Err(e) if e.is_panic() => panicked += 1,
            Err(e) => panic!("{e}"),
        }
        finished.push(effects);
    }
    let troubled_seconds = started.elapsed().as_secs_f64();
    // Let statements the worker threads still run after their future was dropped finish.
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The finished calls' statements, frozen: no later statement may land in them. (Row
    // changes may: SQLite finishes a cancelled statement, and sqlx rolls a dropped transaction
    // back at the connection's next use; those rows are the call's own, checked below.)
    let frozen: Vec<usize> = finished
        .iter()
        .map(|e| e.snapshot().statements.len())
        .collect();

    let mut leaks = 0;
    // No scope leaks: a fresh task on this runtime sees none.
    leaks += tokio::spawn(async { CallScope::current().is_some() as usize })
        .await
        .expect("task");
    // Later calls, one per connection and more, see only their own statements.
    let mut later = Vec::new();
    for i in 0..32 {
        let scope = CallScope::new("later");
        let effects = scope.effects_handle();
        let pool = pool.clone();
        later.push(tokio::spawn(scope.run(async move {
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                "INSERT INTO t (n) VALUES ({i})"
            )))
            .execute(&pool)
            .await
            .expect("later insert");
            effects
        })));
    }
    for t in later {
        let e = t.await.expect("later").snapshot();
        let data = e
            .statements
            .iter()
            .filter(|s| s.operation != Operation::Transaction)
            .count();
        let rows = e.row_changes.len();
        if data != 1 || rows > 1 {
            eprintln!("leak: a later call has {data} data statements, {rows} rows: {e:?}");
        }
        leaks += data.abs_diff(1) + rows.saturating_sub(1);
    }
    // Unscoped statements are unattributed: no connection is still bound to a finished call.
    let _lock = support::STATS.lock().await;
    let before = stats().unattributed_statements(Operation::Insert);
    for i in 0..16 {
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "INSERT INTO t (n) VALUES ({i})"
        )))
        .execute(&pool)
        .await
        .expect("unscoped insert");
    }
    let unattributed = stats().unattributed_statements(Operation::Insert) - before;
    if unattributed != 16 {
        eprintln!("leak: {unattributed} of 16 unscoped inserts counted unattributed");
    }
    leaks += unattributed.abs_diff(16) as usize;
    for (e, n) in finished.iter().zip(&frozen) {
        let s = e.snapshot();
        let now = s.statements.len();
        if now != *n {
            eprintln!(
                "leak: {} grew from {n} to {now} statements after it ended: {s:?}",
                e.tool()
            );
        }
        leaks += now.abs_diff(*n);
    }
    // Each troubled call holds only row changes its own kind can make.
    for (k, e) in finished.iter().enumerate() {
        let trouble = TROUBLES[k % TROUBLES.len()];
        let s = e.snapshot();
        let alien = s
            .row_changes
            .iter()
            .filter(|r| match trouble {
                Trouble::MidStatement | Trouble::MidStream => true,
                Trouble::MidTransactionStream => r.operation != RowOperation::Update,
                _ => r.operation != RowOperation::Insert,
            })
            .count()
            + match trouble {
                Trouble::MidTransactionStream => 0,
                _ => s.row_changes.len().saturating_sub(1),
            };
        if alien > 0 {
            eprintln!("misattributed: {trouble:?} holds {alien} rows not its own: {s:?}");
        }
        leaks += alien;
    }
    figure(
        &format!("cancellation.{backend}"),
        &[
            (
                "calls",
                (cancelled + panicked + dropped_streams).to_string(),
            ),
            ("cancelled_by_timeout", cancelled.to_string()),
            ("streams_dropped", dropped_streams.to_string()),
            ("panicked", panicked.to_string()),
            ("scope_or_binding_leaks", leaks.to_string()),
            ("seconds", format!("{troubled_seconds:.1}")),
        ],
    );
    assert_eq!(panicked, rounds, "every panicking tool panicked");
    assert!(cancelled > 0, "some calls were cancelled mid-way");
    assert_eq!(leaks, 0, "a scope or an audit binding outlived its call");
    finished
}

/// Waits until every connection is idle again (sqlx finishes a cancelled statement's
/// rollback when the connection comes back); returns (size, idle).
async fn settled<DB: sqlx::Database>(pool: &sqlx::Pool<DB>) -> (u32, usize) {
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until && pool.num_idle() != pool.size() as usize {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (pool.size(), pool.num_idle())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelled_and_panicking_calls_leak_nothing_on_sqlite() {
    const SIZE: u32 = 4;
    let (pool, _dir) = support::sqlite(SIZE).await;
    trouble_then_check(pool.clone(), &SQLITE, "sqlite", support::size(10, 200)).await;
    let (size, idle) = settled(pool.inner()).await;
    assert!(
        size <= SIZE && idle == size as usize,
        "pool recovers: size {size}, idle {idle}"
    );
    let stuck = sqlite_in_transaction(&pool, SIZE).await;
    figure(
        "cancellation.sqlite.pool",
        &[
            ("size", size.to_string()),
            ("idle", idle.to_string()),
            ("in_transaction", stuck.to_string()),
        ],
    );
    assert_eq!(
        stuck, 0,
        "a connection went back to the pool inside a transaction"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelled_and_panicking_calls_leak_nothing_on_postgres() {
    const SIZE: u32 = 6;
    let Some((pool, schema)) = support::postgres("cancel", SIZE).await else {
        return;
    };
    trouble_then_check(pool.clone(), &POSTGRES, "postgres", support::size(10, 200)).await;
    let (size, idle) = settled(pool.inner()).await;
    assert!(
        size <= SIZE && idle == size as usize,
        "pool recovers: size {size}, idle {idle}"
    );
    let stuck = schema.idle_in_transaction().await;
    figure(
        "cancellation.postgres.pool",
        &[
            ("size", size.to_string()),
            ("idle", idle.to_string()),
            ("in_transaction", stuck.to_string()),
        ],
    );
    assert_eq!(
        stuck, 0,
        "a connection went back to the pool inside a transaction"
    );
    pool.close().await;
    schema.cleanup().await;
}
