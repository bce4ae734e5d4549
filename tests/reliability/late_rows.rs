//! Regressions found by the cancellation case on SQLite: row changes that SQLite's hooks
//! report after the call that caused them was cancelled must never land in another call.

use std::time::Duration;

use hintaudit::core::{CallScope, RowOperation};

use crate::support;

/// A pooled autocommit write cancelled while SQLite still runs it (sqlx's worker thread
/// finishes a statement whose future was dropped): its row commits later. Meanwhile another
/// call's pooled write waits for the write lock while holding the pool's writer binding; the
/// late row must not be attributed to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_pooled_writes_late_row_is_not_the_next_writers() {
    let (pool, _dir) = support::sqlite(2).await;
    sqlx::raw_sql("CREATE TABLE t (n BIGINT)")
        .execute(pool.inner())
        .await
        .expect("ddl");
    let a = CallScope::new("cancelled");
    let a_effects = a.effects_handle();
    let p = pool.clone();
    let slow = "INSERT INTO t (n) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c \
                WHERE x < 3000000) SELECT count(*) FROM c";
    let cancelled = tokio::time::timeout(
        Duration::from_millis(100),
        a.run(async move { sqlx::raw_sql(slow).execute(&p).await }),
    )
    .await;
    assert!(
        cancelled.is_err(),
        "the slow insert was cancelled mid-statement"
    );
    let b = CallScope::new("next_writer");
    let b_effects = b.effects_handle();
    b.run(async {
        sqlx::raw_sql("INSERT INTO t (n) VALUES (7)")
            .execute(&pool)
            .await
            .expect("insert");
    })
    .await;
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM t")
        .fetch_one(pool.inner())
        .await
        .expect("count");
    let b_rows = b_effects.snapshot().row_changes;
    let a_rows = a_effects.snapshot().row_changes;
    eprintln!("rows in t: {rows}; cancelled call: {a_rows:?}; next writer: {b_rows:?}");
    assert_eq!(
        rows, 2,
        "the cancelled insert still committed (SQLite finished it)"
    );
    assert_eq!(
        b_rows.len(),
        1,
        "the next writer holds only its own row: {b_rows:?}"
    );
    assert!(
        b_rows
            .iter()
            .all(|r| r.operation == RowOperation::Insert && r.committed)
    );
    assert_eq!(
        a_rows.len(),
        1,
        "the late row is the cancelled call's own: {a_rows:?}"
    );
}
