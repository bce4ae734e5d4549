//! The oracle and transactions: what it reads at `COMMIT` and `ROLLBACK`, statements
//! PostgreSQL refuses to run inside a transaction block (never wrapped in the oracle's), and
//! a savepoint rolled back after a failure.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_are_read_before_commit_and_rollback() {
    let Some(db) = db(PgOracle::Writes, SETUP).await else {
        return;
    };
    let scope = CallScope::new("tx");
    let effects = scope.effects_handle();
    scope
        .run(async {
            let mut tx = db.pool.begin().await.expect("begin");
            sqlx::query("INSERT INTO appointments (patient) VALUES ('x')")
                .execute(&mut tx)
                .await
                .expect("insert");
            let n: i64 = sqlx::query_scalar("SELECT count(*) FROM appointments")
                .fetch_one(&mut tx)
                .await
                .expect("count");
            assert_eq!(n, 1);
            tx.rollback().await.expect("rollback");
            let mut tx = db.pool.begin().await.expect("begin");
            sqlx::query("DELETE FROM audit_log")
                .execute(&mut tx)
                .await
                .expect("delete");
            sqlx::query("INSERT INTO appointments (patient) VALUES ('y')")
                .execute(&mut tx)
                .await
                .expect("insert");
            tx.commit().await.expect("commit");
        })
        .await;
    let e = effects.snapshot();
    assert_eq!(e.transactions.len(), 2);
    let (rb, c) = (&e.transactions[0], &e.transactions[1]);
    assert!(!rb.committed && rb.wrote);
    assert_eq!(
        rb.tables
            .iter()
            .map(|t| t.table.as_str())
            .collect::<Vec<_>>(),
        ["appointments", "audit_log"]
    );
    assert!(c.committed);
    assert_eq!(
        c.tables,
        [
            TableWrites {
                table: "appointments".into(),
                inserted: 1,
                updated: 0,
                deleted: 0
            },
            TableWrites {
                table: "audit_log".into(),
                inserted: 1,
                updated: 0,
                deleted: 0
            },
        ]
    );
    assert!(
        e.statements
            .iter()
            .all(|s| s.observed || s.operation == Operation::Select)
    );
    db.drop_schema().await;
}

/// Statements PostgreSQL refuses inside a transaction block run unwrapped, as they would
/// unaudited: the oracle does not open its transaction around them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_refused_in_a_transaction_block_run_unwrapped() {
    let Some(db) = db(PgOracle::Writes, SETUP).await else {
        return;
    };
    let scope = CallScope::new("maintain");
    let effects = scope.effects_handle();
    scope
        .run(async {
            for sql in ["CLUSTER", "VACUUM page_views"] {
                (&db.pool)
                    .execute(sql)
                    .await
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
            }
        })
        .await;
    let e = effects.snapshot();
    assert_eq!(e.statements.len(), 2, "{e:?}");
    assert!(e.transactions.is_empty(), "no oracle transaction: {e:?}");
    db.drop_schema().await;
}

/// A statement that fails inside a savepoint that is then rolled back leaves the outer
/// transaction alive, and the oracle still asks at its COMMIT: the delete after the
/// savepoint is observed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oracle_asks_after_a_failed_savepoint_is_rolled_back() {
    let Some(db) = db(PgOracle::Writes, SETUP).await else {
        return;
    };
    db.pool
        .inner()
        .execute("INSERT INTO appointments (patient) VALUES ('a'), ('b')")
        .await
        .expect("seed");
    let scope = CallScope::new("cancel_first");
    let effects = scope.effects_handle();
    scope
        .run(async {
            let mut tx = db.pool.begin().await.expect("begin");
            sqlx::query("UPDATE appointments SET views = views + 1 WHERE id = 2")
                .execute(&mut *tx)
                .await
                .expect("update");
            let mut sp = tx.begin().await.expect("savepoint");
            sqlx::query("INSERT INTO appointments (patient) VALUES (NULL)")
                .execute(&mut *sp)
                .await
                .expect_err("NOT NULL");
            sp.rollback().await.expect("rollback to savepoint");
            sqlx::query("DELETE FROM appointments WHERE id = 1")
                .execute(&mut *tx)
                .await
                .expect("delete");
            tx.commit().await.expect("commit");
        })
        .await;
    let e = effects.snapshot();
    let t = table(&e, "appointments").unwrap_or_else(|| panic!("no observation: {e:?}"));
    assert_eq!((t.updated, t.deleted, t.inserted), (1, 1, 0), "{e:?}");
    assert!(e.transactions.iter().all(|t| t.committed), "{e:?}");
    db.drop_schema().await;
}
