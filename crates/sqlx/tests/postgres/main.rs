//! The audited pool against a real PostgreSQL (`HINTAUDIT_PG_URL`, default
//! `postgres://postgres@127.0.0.1:5432/test`): the oracle, direct writes (`direct`),
//! streaming (`streaming`), transactions (`transactions`, `tx_scope`), enforce mode
//! (`enforce`), lazy pools (`lazy`) and catalog names the session shadows (`shadowing`).
//! Each test works in its own schema and drops it.
//! Without a server the tests print why they skip, unless `HINTAUDIT_REQUIRE_PG=1` (or
//! `HINTAUDIT_REQUIRE_ALL=1`).
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml
#![cfg(feature = "postgres")]

use std::time::Duration;

use futures_util::TryStreamExt;
use hintaudit_core::{CallScope, Effect, Facts, Operation, Policy, StatementOutcome, TableWrites};
use hintaudit_sqlx::{AuditedPool, PgOracle};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Executor, Postgres};

mod acquire;
#[path = "../support/databases.rs"]
mod databases;
mod direct;
mod enforce;
mod lazy;
mod shadowing;
mod streaming;
mod transactions;
mod tx_scope;
mod wrapped_end;

use databases::Fresh;

struct Db {
    pool: AuditedPool<Postgres>,
    admin: sqlx::PgPool,
    schema: String,
    fresh: Fresh<PgConnectOptions>,
}

impl Db {
    async fn drop_schema(self) {
        self.pool.close().await;
        self.fresh.drop().await;
    }
}

/// A pool whose connections work in a fresh schema, or `None` (with the reason printed) when
/// PostgreSQL is unreachable and not required.
async fn db(oracle: PgOracle, setup: &str) -> Option<Db> {
    let fresh = databases::postgres().await?;
    let admin = fresh.pg_admin().expect("a schema").clone();
    let schema = fresh.name().to_owned();
    let pool = AuditedPool::<Postgres>::options()
        .with_postgres_oracle(oracle)
        .connect_with(
            PgPoolOptions::new().max_connections(4),
            fresh.options.clone(),
        )
        .await
        .expect("connect");
    pool.inner()
        .execute(sqlx::AssertSqlSafe(setup.to_owned()))
        .await
        .expect("setup");
    Some(Db {
        pool,
        admin,
        schema,
        fresh,
    })
}

const SETUP: &str = "
CREATE TABLE appointments (id serial PRIMARY KEY, patient text NOT NULL, views int NOT NULL DEFAULT 0);
CREATE TABLE audit_log (id serial PRIMARY KEY, what text);
CREATE TABLE page_views (id serial PRIMARY KEY, page int);
CREATE FUNCTION mark_viewed(p int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN INSERT INTO page_views (page) VALUES (p); RETURN p; END $$;
CREATE FUNCTION log_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO audit_log (what) VALUES ('insert ' || NEW.id); RETURN NEW; END $$;
CREATE TRIGGER appointments_audit AFTER INSERT ON appointments
FOR EACH ROW EXECUTE FUNCTION log_insert();
";

fn table(e: &Effect, name: &str) -> Option<TableWrites> {
    e.transactions
        .iter()
        .flat_map(|t| t.tables.iter())
        .find(|t| t.table == name)
        .cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oracle_catches_a_write_hidden_in_a_function() {
    let Some(db) = db(PgOracle::Writes, SETUP).await else {
        return;
    };
    let scope = CallScope::new("get_page");
    let effects = scope.effects_handle();
    let got: i32 = scope
        .run(
            sqlx::query_scalar("SELECT mark_viewed($1)")
                .bind(7)
                .fetch_one(&db.pool),
        )
        .await
        .expect("select");
    assert_eq!(got, 7);
    let e = effects.snapshot();
    assert_eq!(e.statements.len(), 1);
    let s = &e.statements[0];
    assert_eq!(s.operation, Operation::Select);
    assert_eq!(*s.opaque_calls, ["mark_viewed"]);
    assert!(s.observed);
    assert_eq!(e.transactions.len(), 1);
    assert!(e.transactions[0].wrote && e.transactions[0].committed);
    assert_eq!(
        table(&e, "page_views"),
        Some(TableWrites {
            table: "page_views".into(),
            inserted: 1,
            updated: 0,
            deleted: 0
        })
    );
    // The judge's facts see a confirmed write.
    let facts = Facts::from_effect(&e, &Policy::default());
    assert!(facts.written_tables.contains("page_views"), "{facts:?}");
    db.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trigger_writes_and_rows_affected() {
    let Some(db) = db(PgOracle::Writes, SETUP).await else {
        return;
    };
    let scope = CallScope::new("book");
    let effects = scope.effects_handle();
    scope
        .run(async {
            let r = sqlx::query("INSERT INTO appointments (patient) VALUES ($1), ($2)")
                .bind("ann")
                .bind("bob")
                .execute(&db.pool)
                .await
                .expect("insert");
            assert_eq!(r.rows_affected(), 2);
            let id: i32 = sqlx::query_scalar(
                "UPDATE appointments SET views = views + 1 WHERE patient = $1 RETURNING id",
            )
            .bind("ann")
            .fetch_one(&db.pool)
            .await
            .expect("update");
            assert_eq!(id, 1);
            let n = sqlx::query("SELECT * FROM appointments")
                .fetch(&db.pool)
                .try_collect::<Vec<_>>()
                .await
                .expect("select");
            assert_eq!(n.len(), 2);
        })
        .await;
    let e = effects.snapshot();
    let ops: Vec<Operation> = e.statements.iter().map(|s| s.operation).collect();
    assert_eq!(
        ops,
        [Operation::Insert, Operation::Update, Operation::Select]
    );
    assert_eq!(e.statements[0].rows_affected, Some(2));
    assert_eq!(e.statements[1].rows_affected, Some(1));
    assert_eq!(e.statements[2].rows_affected, None, "never for reads");
    assert!(e.statements[0].observed && e.statements[1].observed);
    assert!(!e.statements[2].observed, "plain SELECT skips the oracle");
    assert_eq!(
        e.transactions.len(),
        2,
        "one per write, none for the SELECT"
    );
    let first = &e.transactions[0];
    assert_eq!(
        first.tables,
        [
            TableWrites {
                table: "appointments".into(),
                inserted: 2,
                updated: 0,
                deleted: 0
            },
            TableWrites {
                table: "audit_log".into(),
                inserted: 2,
                updated: 0,
                deleted: 0
            },
        ]
    );
    assert_eq!(
        e.transactions[1].tables,
        [TableWrites {
            table: "appointments".into(),
            inserted: 0,
            updated: 1,
            deleted: 0
        }]
    );
    db.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn select_for_update_is_not_a_write() {
    let Some(db) = db(PgOracle::Always, SETUP).await else {
        return;
    };
    db.pool
        .inner()
        .execute("INSERT INTO appointments (patient) VALUES ('ann')")
        .await
        .expect("seed");
    let scope = CallScope::new("peek");
    let effects = scope.effects_handle();
    scope
        .run(async {
            let mut tx = db.pool.begin().await.expect("begin");
            let p: String =
                sqlx::query_scalar("SELECT patient FROM appointments WHERE id = 1 FOR UPDATE")
                    .fetch_one(&mut tx)
                    .await
                    .expect("lock");
            assert_eq!(p, "ann");
            tx.commit().await.expect("commit");
        })
        .await;
    let e = effects.snapshot();
    assert_eq!(e.statements[0].operation, Operation::SelectForUpdate);
    assert_eq!(e.transactions.len(), 1);
    let t = &e.transactions[0];
    assert!(
        !t.wrote,
        "a lock assigns a transaction id but writes nothing: {t:?}"
    );
    assert!(t.tables.is_empty() && t.committed);
    let facts = Facts::from_effect(&e, &Policy::default());
    assert!(
        facts.writes.is_empty() && facts.attempts.is_empty(),
        "{facts:?}"
    );
    db.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_surface_unchanged_and_oracle_off_records_nothing() {
    let Some(db) = db(PgOracle::Off, SETUP).await else {
        return;
    };
    let scope = CallScope::new("bad");
    let effects = scope.effects_handle();
    scope
        .run(async {
            let raw = sqlx::query("INSERT INTO appointments (patient) VALUES (NULL)")
                .execute(db.pool.inner())
                .await
                .expect_err("not null");
            let audited = sqlx::query("INSERT INTO appointments (patient) VALUES (NULL)")
                .execute(&db.pool)
                .await
                .expect_err("not null");
            assert_eq!(raw.to_string(), audited.to_string());
            let r = sqlx::query("UPDATE appointments SET views = 1")
                .execute(&db.pool)
                .await
                .expect("update");
            assert_eq!(r.rows_affected(), 0);
            sqlx::query("SELECT mark_viewed(1)")
                .execute(&db.pool)
                .await
                .expect("select");
        })
        .await;
    let e = effects.snapshot();
    assert_eq!(e.statements[0].outcome, StatementOutcome::Failed);
    assert_eq!(e.statements[1].rows_affected, Some(0));
    assert!(e.transactions.is_empty());
    assert!(e.statements.iter().all(|s| !s.observed));
    db.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_get_their_own_oracle_readings() {
    let Some(db) = db(PgOracle::Writes, SETUP).await else {
        return;
    };
    let mut handles = Vec::new();
    for i in 0..32usize {
        let pool = db.pool.clone();
        let scope = CallScope::new(format!("c{i}"));
        let effects = scope.effects_handle();
        handles.push(tokio::spawn(async move {
            scope
                .run(async {
                    for _ in 0..=(i % 4) {
                        sqlx::query("SELECT mark_viewed($1)")
                            .bind(i as i32)
                            .execute(&pool)
                            .await
                            .expect("call");
                    }
                })
                .await;
            (i, effects.snapshot())
        }));
    }
    for h in handles {
        let (i, e) = h.await.expect("join");
        let views: u64 = e
            .transactions
            .iter()
            .flat_map(|t| t.tables.iter())
            .filter(|t| t.table == "page_views")
            .map(|t| t.inserted)
            .sum();
        assert_eq!(views, (i % 4 + 1) as u64, "call {i}: {:?}", e.transactions);
    }
    db.drop_schema().await;
}

/// Inside a call, a helper over `impl Acquire` that deletes through `&pool` runs on the
/// driver's connection: not audited statement by statement, and PostgreSQL has no row hooks,
/// so the call is marked as having unaudited work (its evidence is incomplete) and the
/// process-wide count increments; a call that does not acquire is not marked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_inside_a_call_marks_the_call_unaudited() {
    async fn delete_appointment(
        db: impl sqlx::Acquire<'_, Database = Postgres>,
        id: i32,
    ) -> Result<u64, sqlx::Error> {
        let mut conn = db.acquire().await?;
        let done = sqlx::query("DELETE FROM appointments WHERE id = $1")
            .bind(id)
            .execute(&mut *conn)
            .await?;
        Ok(done.rows_affected())
    }
    let Some(db) = db(PgOracle::Writes, SETUP).await else {
        return;
    };
    db.pool
        .inner()
        .execute("INSERT INTO appointments (patient) VALUES ('a')")
        .await
        .expect("seed");
    let before = hintaudit_core::stats().unaudited_acquires();
    let scope = CallScope::new("cancel");
    let effects = scope.effects_handle();
    let deleted = scope
        .run(delete_appointment(&db.pool, 1))
        .await
        .expect("delete");
    assert_eq!(deleted, 1);
    let e = effects.snapshot();
    assert_eq!(e.unaudited_acquires, 1, "{e:?}");
    assert!(e.statements.is_empty(), "{e:?}");
    assert!(
        e.summary().contains("not audited one by one"),
        "{}",
        e.summary()
    );
    assert!(hintaudit_core::stats().unaudited_acquires() > before);
    let other = CallScope::new("list");
    let other_effects = other.effects_handle();
    other
        .run(async {
            sqlx::query("SELECT 1")
                .execute(&db.pool)
                .await
                .expect("select");
        })
        .await;
    assert_eq!(other_effects.snapshot().unaudited_acquires, 0);
    db.drop_schema().await;
}
