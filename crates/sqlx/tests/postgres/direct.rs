//! Direct writes: a plain `INSERT`/`UPDATE`/`DELETE` on a table with no triggers, rules or
//! cascading foreign keys is evidenced by its command tag, with the same observation the
//! oracle would have made; everything else still gets the oracle, also after DDL changed
//! what a table does.

use super::*;

const CASCADE: &str = "
CREATE TABLE parents (id int PRIMARY KEY);
CREATE TABLE children (id int PRIMARY KEY, parent int REFERENCES parents ON DELETE CASCADE);
INSERT INTO parents VALUES (1), (2);
INSERT INTO children VALUES (10, 1), (11, 1);
";

fn writes(table: &str, (inserted, updated, deleted): (u64, u64, u64)) -> TableWrites {
    TableWrites {
        table: table.into(),
        inserted,
        updated,
        deleted,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_writes_are_observed_from_their_command_tags() {
    let Some(db) = db(PgOracle::Writes, &format!("{SETUP}{CASCADE}")).await else {
        return;
    };
    let scope = CallScope::new("plain");
    let effects = scope.effects_handle();
    scope
        .run(async {
            for sql in [
                "INSERT INTO audit_log (what) VALUES ('a'), ('b')",
                "UPDATE audit_log SET what = 'c'",
                "DELETE FROM audit_log WHERE what = 'nothing'",
            ] {
                db.pool.execute(sql).await.expect(sql);
            }
            let mut tx = db.pool.begin().await.expect("begin");
            tx.execute("DELETE FROM audit_log").await.expect("delete");
            tx.commit().await.expect("commit");
        })
        .await;
    let e = effects.snapshot();
    assert!(e.statements.iter().all(|s| s.observed), "{e:?}");
    let tables: Vec<_> = e.transactions.iter().map(|t| t.tables.clone()).collect();
    assert_eq!(
        tables,
        [
            vec![writes("audit_log", (2, 0, 0))],
            vec![writes("audit_log", (0, 2, 0))],
            vec![],
            vec![writes("audit_log", (0, 0, 2))],
        ]
    );
    assert!(e.transactions.iter().all(|t| t.committed));
    db.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cascades_and_triggers_added_later_get_the_oracle() {
    let Some(db) = db(PgOracle::Writes, &format!("{SETUP}{CASCADE}")).await else {
        return;
    };
    let scope = CallScope::new("cascade");
    let effects = scope.effects_handle();
    scope
        .run(async {
            db.pool
                .execute("DELETE FROM parents WHERE id = 1")
                .await
                .expect("delete");
            // page_views is plain (and now cached as such) until the trigger is created
            // through the pool, which clears the cache.
            db.pool
                .execute("INSERT INTO page_views (page) VALUES (1)")
                .await
                .expect("insert");
            db.pool
                .execute(
                    "CREATE TRIGGER page_views_audit AFTER INSERT ON page_views \
                     FOR EACH ROW EXECUTE FUNCTION log_insert()",
                )
                .await
                .expect("trigger");
            db.pool
                .execute("INSERT INTO page_views (page) VALUES (2)")
                .await
                .expect("insert");
        })
        .await;
    let e = effects.snapshot();
    assert_eq!(
        e.transactions[0].tables,
        [writes("children", (0, 0, 2)), writes("parents", (0, 0, 1))]
    );
    assert_eq!(e.transactions[1].tables, [writes("page_views", (1, 0, 0))]);
    let last = e.transactions.last().expect("observed");
    assert_eq!(
        last.tables,
        [
            writes("audit_log", (1, 0, 0)),
            writes("page_views", (1, 0, 0))
        ]
    );
    db.drop_schema().await;
}
