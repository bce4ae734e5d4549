//! The oracle inside an audited transaction reads only the relations the transaction locked
//! (the server flushes earlier transactions' statistics right before `BEGIN`): a write
//! hidden in a trigger or function is still found among many tables, and counts an earlier
//! transaction left unflushed on the same connection are not blamed on the next one.

use super::*;

/// `n` filler tables, so that reading every relation would be costly.
fn fillers(n: usize) -> String {
    format!(
        "DO $$ BEGIN FOR i IN 1..{n} LOOP \
         EXECUTE format('CREATE TABLE filler_%s (id int)', i); \
         END LOOP; END $$;"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hidden_writes_in_a_transaction_are_found_among_many_tables() {
    let Some(db) = db(PgOracle::Writes, &format!("{SETUP}{}", fillers(1_000))).await else {
        return;
    };
    let scope = CallScope::new("book");
    let effects = scope.effects_handle();
    scope
        .run(async {
            let mut tx = db.pool.begin().await.expect("begin");
            sqlx::query("INSERT INTO filler_7 (id) VALUES (1)")
                .execute(&mut tx)
                .await
                .expect("direct write");
            sqlx::query("INSERT INTO appointments (patient) VALUES ('x')")
                .execute(&mut tx)
                .await
                .expect("triggered insert");
            sqlx::query("SELECT mark_viewed(3)")
                .execute(&mut tx)
                .await
                .expect("function");
            tx.commit().await.expect("commit");
        })
        .await;
    let e = effects.snapshot();
    assert_eq!(e.transactions.len(), 1, "{e:?}");
    let t = &e.transactions[0];
    assert!(t.committed && t.wrote, "{e:?}");
    let names: Vec<_> = t.tables.iter().map(|w| w.table.as_str()).collect();
    assert_eq!(
        names,
        ["appointments", "audit_log", "filler_7", "page_views"],
        "{e:?}"
    );
    assert!(t.tables.iter().all(|w| w.inserted == 1), "{e:?}");
    assert!(e.statements.iter().all(|s| s.observed), "{e:?}");
    db.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unflushed_counts_of_an_earlier_transaction_are_not_blamed_on_the_next() {
    let Some(db) = db(PgOracle::Writes, SETUP).await else {
        return;
    };
    let mut conn = db.pool.acquire().await.expect("acquire");
    // Unaudited, right after a flush: the server keeps these 5 inserts pending (it
    // flushes at most once a second), so they show in this backend's counters.
    conn.inner_mut()
        .execute("SELECT pg_stat_force_next_flush()")
        .await
        .expect("flush");
    conn.inner_mut()
        .execute("INSERT INTO audit_log (what) SELECT 'old' FROM generate_series(1, 5)")
        .await
        .expect("earlier insert");
    let pending: i64 =
        sqlx::query_scalar("SELECT pg_stat_get_xact_tuples_inserted('audit_log'::regclass)")
            .fetch_one(conn.inner_mut())
            .await
            .expect("pending");
    assert_eq!(pending, 5, "the earlier inserts must still be pending");
    let scope = CallScope::new("book");
    let effects = scope.effects_handle();
    scope
        .run(async {
            let mut tx = conn.begin().await.expect("begin");
            sqlx::query("INSERT INTO appointments (patient) VALUES ('x')")
                .execute(&mut tx)
                .await
                .expect("triggered insert");
            tx.commit().await.expect("commit");
        })
        .await;
    drop(conn);
    let e = effects.snapshot();
    let t = table(&e, "audit_log").unwrap_or_else(|| panic!("no observation: {e:?}"));
    assert_eq!((t.inserted, t.updated, t.deleted), (1, 0, 0), "{e:?}");
    let a = table(&e, "appointments").unwrap_or_else(|| panic!("no observation: {e:?}"));
    assert_eq!(a.inserted, 1, "{e:?}");
    db.drop_schema().await;
}
