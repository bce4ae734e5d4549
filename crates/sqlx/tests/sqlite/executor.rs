//! Every executor entry point of the audited pool, connection and transaction, against a
//! real SQLite file.

use super::*;

#[derive(Debug, PartialEq)]
struct Appt {
    id: i64,
    patient: String,
}

impl sqlx::FromRow<'_, sqlx::sqlite::SqliteRow> for Appt {
    fn from_row(row: &sqlx::sqlite::SqliteRow) -> Result<Self, sqlx::Error> {
        Ok(Appt {
            id: row.try_get("id")?,
            patient: row.try_get("patient")?,
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_executor_entry_point_works() {
    let (_dir, pool) = pool(2).await;
    let scope = CallScope::new("all");
    let effects = scope.effects_handle();
    scope
        .run(async {
            // &pool
            let r = sqlx::query("INSERT INTO appointments (patient) VALUES (?)")
                .bind("a")
                .execute(&pool)
                .await
                .expect("execute");
            assert_eq!(r.rows_affected(), 1);
            let row = sqlx::query("SELECT patient FROM appointments")
                .fetch_one(&pool)
                .await
                .expect("one");
            assert_eq!(row.get::<String, _>(0), "a");
            let all: Vec<Appt> = sqlx::query_as("SELECT id, patient FROM appointments")
                .fetch_all(&pool)
                .await
                .expect("all");
            assert_eq!(
                all,
                [Appt {
                    id: 1,
                    patient: "a".into()
                }]
            );
            let n = sqlx::query("SELECT * FROM appointments")
                .fetch(&pool)
                .try_collect::<Vec<_>>()
                .await
                .expect("fetch");
            assert_eq!(n.len(), 1);
            let none = sqlx::query("SELECT 1 FROM appointments WHERE id = 99")
                .fetch_optional(&pool)
                .await
                .expect("opt");
            assert!(none.is_none());
            let id: i64 =
                sqlx::query_scalar("INSERT INTO appointments (patient) VALUES ('r') RETURNING id")
                    .fetch_one(&pool)
                    .await
                    .expect("returning");
            assert_eq!(id, 2);
            // &mut conn
            let mut conn = pool.acquire().await.expect("acquire");
            sqlx::query("INSERT INTO appointments (patient) VALUES ('b')")
                .execute(&mut conn)
                .await
                .expect("c exec");
            let one: Appt =
                sqlx::query_as("SELECT id, patient FROM appointments WHERE patient = 'b'")
                    .fetch_one(&mut conn)
                    .await
                    .expect("c one");
            assert_eq!(one.patient, "b");
            let s: Vec<_> = sqlx::query("SELECT id FROM appointments")
                .fetch(&mut conn)
                .try_collect()
                .await
                .expect("c fetch");
            assert_eq!(s.len(), 3);
            let all = sqlx::query("SELECT id FROM appointments")
                .fetch_all(&mut conn)
                .await
                .expect("c all");
            assert_eq!(all.len(), 3);
            drop(conn);
            // &mut tx
            let mut tx = pool.begin().await.expect("begin");
            sqlx::query("INSERT INTO appointments (patient) VALUES ('c')")
                .execute(&mut tx)
                .await
                .expect("t exec");
            let n: i64 = sqlx::query_scalar("SELECT count(*) FROM appointments")
                .fetch_one(&mut tx)
                .await
                .expect("t one");
            assert_eq!(n, 4);
            let s: Vec<_> = sqlx::query("SELECT id FROM appointments")
                .fetch(&mut tx)
                .try_collect()
                .await
                .expect("t fetch");
            assert_eq!(s.len(), 4);
            let o = sqlx::query("SELECT id FROM appointments WHERE id = 1")
                .fetch_optional(&mut tx)
                .await
                .expect("t opt");
            assert!(o.is_some());
            tx.commit().await.expect("commit");
            // Errors surface exactly as sqlx gives them.
            let raw = sqlx::query("INSERT INTO appointments (patient) VALUES (NULL)")
                .execute(pool.inner())
                .await
                .expect_err("not null");
            let audited = sqlx::query("INSERT INTO appointments (patient) VALUES (NULL)")
                .execute(&pool)
                .await
                .expect_err("not null");
            assert_eq!(raw.to_string(), audited.to_string());
            let raw = sqlx::query("SELECT nope FROM appointments")
                .execute(pool.inner())
                .await
                .expect_err("bad column");
            let audited = sqlx::query("SELECT nope FROM appointments")
                .execute(&pool)
                .await
                .expect_err("bad column");
            assert_eq!(raw.to_string(), audited.to_string());
        })
        .await;
    let e = effects.snapshot();
    assert_eq!(rows(&e, "appointments", RowOperation::Insert, true), 4);
    let failed = e
        .statements
        .iter()
        .filter(|s| s.outcome == StatementOutcome::Failed)
        .count();
    assert_eq!(failed, 2);
    let _: Option<&RowChange> = e.row_changes.first();
}
