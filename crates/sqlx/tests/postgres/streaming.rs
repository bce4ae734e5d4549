//! A statement the oracle wraps, run straight on the pool, streams its rows as they arrive;
//! a stream dropped early still commits what the statement wrote, as autocommit would. On a
//! held connection its rows are buffered until `COMMIT`: a stream dropped there has
//! committed already and holds no lock (see `docs/performance.md`, "Streaming").

use super::*;

/// Rows of more than the server's 8 kB send buffer, so that each goes out as it is made.
const PAD: &str = "repeat('x', 20000)";

/// Waits (up to a minute) until `check` holds; `what` names it in the failure.
async fn eventually<F: std::future::Future<Output = bool>>(
    what: &str,
    mut check: impl FnMut() -> F,
) {
    for _ in 0..600 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: not after a minute");
}

async fn count(admin: &sqlx::PgPool, schema: &str) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT count(*) FROM {schema}.page_views"
    )))
    .fetch_one(admin)
    .await
    .expect("count")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_arrive_before_the_wrapped_statement_completes() {
    let Some(db) = db(PgOracle::Writes, SETUP).await else {
        return;
    };
    let key = 7_000_000 + i64::from(std::process::id() % 1_000_000);
    let mut holder = db.admin.acquire().await.expect("admin connection");
    sqlx::query("SELECT pg_advisory_lock($1)")
        .bind(key)
        .execute(&mut *holder)
        .await
        .expect("lock");
    let scope = CallScope::new("views");
    let effects = scope.effects_handle();
    let sql = format!(
        "SELECT mark_viewed(g) AS v, {PAD} AS pad, \
         CASE WHEN g = 3 THEN pg_advisory_lock({key})::text END AS waited \
         FROM generate_series(1, 3) AS g"
    );
    scope
        .run(async {
            let mut rows = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch(&db.pool);
            // The third row waits for the lock this test holds: buffered until COMMIT, the
            // first row would never come.
            let first = tokio::time::timeout(Duration::from_secs(60), rows.try_next())
                .await
                .expect("the first row arrives while the statement still runs")
                .expect("row");
            assert!(first.is_some());
            // The server may send the first rows before it reaches the third: wait (up to
            // 30 s) until the statement blocks on the lock, with the first row in hand.
            let mut waiting = 0_i64;
            for _ in 0..300 {
                waiting = sqlx::query_scalar(
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE wait_event_type = 'Lock' AND query LIKE 'SELECT mark_viewed(g)%'",
                )
                .fetch_one(&mut *holder)
                .await
                .expect("activity");
                if waiting > 0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            assert_eq!(
                waiting, 1,
                "the statement is still running, blocked on the lock"
            );
            sqlx::query("SELECT pg_advisory_unlock($1)")
                .bind(key)
                .execute(&mut *holder)
                .await
                .expect("unlock");
            let mut n = 1;
            while rows.try_next().await.expect("row").is_some() {
                n += 1;
            }
            assert_eq!(n, 3);
        })
        .await;
    drop(holder);
    let e = effects.snapshot();
    let t = table(&e, "page_views").unwrap_or_else(|| panic!("no observation: {e:?}"));
    assert_eq!(t.inserted, 3, "{e:?}");
    assert!(e.transactions.iter().all(|t| t.committed), "{e:?}");
    assert!(e.statements.iter().all(|s| s.observed), "{e:?}");
    assert_eq!(count(&db.admin, &db.schema).await, 3);
    db.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrapped_stream_dropped_early_still_commits() {
    let Some(db) = db(PgOracle::Writes, SETUP).await else {
        return;
    };
    let scope = CallScope::new("views");
    let effects = scope.effects_handle();
    let sql = format!("SELECT mark_viewed(g) AS v, {PAD} AS pad FROM generate_series(1, 50) AS g");
    scope
        .run(async {
            let mut rows = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch(&db.pool);
            assert!(rows.try_next().await.expect("row").is_some());
            drop(rows);
        })
        .await;
    // Bare autocommit keeps the 50 rows the statement inserted: so must the audited pool.
    finished_later(&db, &effects, 50).await;
    db.drop_schema().await;
}

/// A statement finished in a task of its own after its caller let go: waits (up to a
/// minute each) until its `inserted` rows are committed and the oracle's observation is in
/// the call's `effects`, then checks it as [`assert_observed`].
async fn finished_later(db: &Db, effects: &hintaudit_core::CallEffects, inserted: u64) {
    eventually("the statement's writes are committed", || async {
        count(&db.admin, &db.schema).await == i64::try_from(inserted).expect("count")
    })
    .await;
    eventually("the oracle's observation is recorded", || {
        let e = effects.snapshot();
        async move { table(&e, "page_views").is_some_and(|t| t.inserted == inserted) }
    })
    .await;
    assert_observed(&effects.snapshot(), inserted);
}

/// The call's statements succeeded and the oracle observed `inserted` committed inserts.
fn assert_observed(e: &Effect, inserted: u64) {
    let t = table(e, "page_views").unwrap_or_else(|| panic!("no observation: {e:?}"));
    assert_eq!(t.inserted, inserted, "{e:?}");
    assert!(e.transactions.iter().all(|t| t.committed), "{e:?}");
    assert!(
        e.statements
            .iter()
            .all(|s| s.outcome == StatementOutcome::Ok && s.observed),
        "{e:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_connections_dropped_stream_has_committed_and_holds_no_lock() {
    let Some(db) = db(PgOracle::Writes, SETUP).await else {
        return;
    };
    let scope = CallScope::new("views");
    let effects = scope.effects_handle();
    let sql = format!("SELECT mark_viewed(g) AS v, {PAD} AS pad FROM generate_series(1, 50) AS g");
    let mut conn = db.pool.acquire().await.expect("held connection");
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut *conn)
        .await
        .expect("pid");
    scope
        .run(async {
            let mut rows = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch(&mut *conn);
            assert!(rows.try_next().await.expect("row").is_some());
            drop(rows);
        })
        .await;
    // As bare autocommit: committed and observed before the first row came, with the
    // connection held and unused since. An oracle transaction left open until the
    // connection's next use would keep the rows' locks, and another connection of the same
    // task waiting on them would wait forever.
    assert_eq!(count(&db.admin, &db.schema).await, 50);
    let state: String = sqlx::query_scalar("SELECT state FROM pg_stat_activity WHERE pid = $1")
        .bind(pid)
        .fetch_one(&db.admin)
        .await
        .expect("backend state");
    assert_eq!(state, "idle", "no transaction left open");
    let mut other = db.admin.begin().await.expect("admin transaction");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "LOCK TABLE {}.page_views IN EXCLUSIVE MODE NOWAIT",
        db.schema
    )))
    .execute(&mut *other)
    .await
    .expect("no lock left on the table the statement wrote");
    drop(other);
    assert_observed(&effects.snapshot(), 50);
    drop(conn);
    db.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrapped_statement_failing_mid_stream_on_a_held_connection_leaves_it_in_autocommit() {
    let Some(db) = db(PgOracle::Writes, SETUP).await else {
        return;
    };
    let mut conn = db.pool.acquire().await.expect("held connection");
    let failed = CallScope::new("views");
    let failed_effects = failed.effects_handle();
    let sql = format!(
        "SELECT mark_viewed(g) AS v, {PAD} AS pad, 1 / (3 - g) AS boom FROM generate_series(1, 5) AS g"
    );
    let err = failed
        .run(async {
            let mut rows = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch(&mut *conn);
            loop {
                match rows.try_next().await {
                    Ok(Some(_)) => {}
                    Ok(None) => break None,
                    Err(e) => break Some(e),
                }
            }
        })
        .await;
    assert!(err.is_some(), "division by zero at the third row");
    let e = failed_effects.snapshot();
    assert!(
        e.statements
            .iter()
            .all(|s| s.outcome == StatementOutcome::Failed),
        "{e:?}"
    );
    assert_eq!(count(&db.admin, &db.schema).await, 0, "rolled back");
    // The next wrapped statement on the connection is wrapped, observed and committed.
    let next = CallScope::new("views");
    let next_effects = next.effects_handle();
    next.run(async {
        sqlx::query("SELECT mark_viewed(100)")
            .execute(&mut *conn)
            .await
            .expect("the next write")
    })
    .await;
    assert_observed(&next_effects.snapshot(), 1);
    assert_eq!(count(&db.admin, &db.schema).await, 1);
    drop(conn);
    db.drop_schema().await;
}

/// A wrapped write run with `fetch_one` on the pool, whose caller is dropped while the
/// statement runs (a cancelled tool call, here a timeout): the statement still commits, as
/// bare autocommit would (the server finishes a statement it was sent), and the oracle
/// observes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrapped_fetch_one_cancelled_mid_statement_still_commits() {
    let Some(db) = db(PgOracle::Writes, SETUP).await else {
        return;
    };
    let scope = CallScope::new("views");
    let effects = scope.effects_handle();
    let timed_out = scope
        .run(tokio::time::timeout(
            Duration::from_millis(300),
            sqlx::query("SELECT mark_viewed(1) AS v, pg_sleep(1.5)::text AS s").fetch_one(&db.pool),
        ))
        .await;
    assert!(timed_out.is_err(), "cancelled while the statement sleeps");
    finished_later(&db, &effects, 1).await;
    db.drop_schema().await;
}
