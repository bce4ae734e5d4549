//! Enforce mode against a real PostgreSQL (`HINTAUDIT_PG_URL`): a read-only call's write
//! hidden in a function its plain `SELECT` calls is refused by PostgreSQL itself (SQLSTATE
//! 25006), in autocommit and in a transaction, and the connection serves the next call
//! read-write; a non-destructive call's `DELETE` never reaches PostgreSQL. Each test works in
//! its own schema and drops it; without a server it skips, unless `HINTAUDIT_REQUIRE_PG=1`
//! (or `HINTAUDIT_REQUIRE_ALL=1`).

#![cfg(feature = "postgres")]

use std::str::FromStr;

use hintaudit_core::{CallScope, Enforcement, Hint, Operation, RefusedBy};
use hintaudit_sqlx::{AuditedPool, PgOracle, Refused};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Executor, Postgres};

use crate::databases::{self, Fresh};

const SETUP: &str = "
CREATE TABLE appointments (id serial PRIMARY KEY, views int NOT NULL DEFAULT 0);
CREATE TABLE page_views (id serial PRIMARY KEY, page int);
CREATE FUNCTION mark_viewed(p int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN INSERT INTO page_views (page) VALUES (p); RETURN p; END $$;
INSERT INTO appointments (views) VALUES (0), (0);
";

struct Db {
    pool: AuditedPool<Postgres>,
    schema: String,
    fresh: Fresh<PgConnectOptions>,
}

/// A one-connection audited pool in a fresh schema (so every call shares that connection),
/// or `None` when PostgreSQL is unreachable and not required.
async fn db(oracle: PgOracle, _name: &str) -> Option<Db> {
    let fresh = databases::postgres().await?;
    let schema = fresh.name().to_owned();
    let pool = AuditedPool::<Postgres>::options()
        .with_postgres_oracle(oracle)
        .connect_with(
            PgPoolOptions::new().max_connections(1),
            fresh.options.clone(),
        )
        .await
        .expect("connect");
    pool.inner().execute(SETUP).await.expect("setup");
    Some(Db {
        pool,
        schema,
        fresh,
    })
}

impl Db {
    /// The appointments the tests' writer calls book (`views = 9`).
    async fn booked(&self) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM appointments WHERE views = 9")
            .fetch_one(self.pool.inner())
            .await
            .expect("count")
    }

    async fn views(&self) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM page_views")
            .fetch_one(self.pool.inner())
            .await
            .expect("count")
    }

    async fn drop_schema(self) {
        self.pool.close().await;
        self.fresh.drop().await;
    }
}

/// PostgreSQL's own refusal, wrapped so that its message names the hint.
fn assert_refused_by_postgres(e: &sqlx::Error) {
    let sqlx::Error::Database(db) = e else {
        panic!("a database error, got {e:?}")
    };
    assert!(db.message().contains("readOnlyHint: true"), "{e}");
    assert!(db.message().contains("read-only transaction"), "{e}");
    assert_eq!(
        db.code().as_deref(),
        Some("25006"),
        "read_only_sql_transaction"
    );
    let refused = db.try_downcast_ref::<Refused>().expect("a Refused error");
    assert_eq!(refused.hint(), Hint::ReadOnly);
}

/// `SELECT mark_viewed(1)`: statement analysis sees a SELECT; the INSERT inside the function
/// is what PostgreSQL refuses, in autocommit and in a transaction, under every oracle mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_refuses_a_write_hidden_in_a_function() {
    for (i, oracle) in [PgOracle::Writes, PgOracle::Off, PgOracle::Always]
        .into_iter()
        .enumerate()
    {
        let Some(db) = db(oracle, &format!("fn{i}")).await else {
            return;
        };
        let scope = CallScope::new("get_appointment").with_enforcement(Enforcement {
            read_only: true,
            ..Enforcement::NONE
        });
        let effects = scope.effects_handle();
        let (plain, autocommit, in_tx) = scope
            .run(async {
                let plain: i64 = sqlx::query_scalar("SELECT count(*) FROM appointments")
                    .fetch_one(&db.pool)
                    .await
                    .expect("reads run");
                let autocommit = sqlx::query("SELECT mark_viewed(1)").execute(&db.pool).await;
                let mut tx = db.pool.begin().await.expect("begin");
                // Begun `BEGIN READ ONLY` (asked unaudited, so nothing set it per statement).
                let ro: String = sqlx::query_scalar("SHOW transaction_read_only")
                    .fetch_one(tx.inner_mut())
                    .await
                    .expect("show");
                assert_eq!(ro, "on", "{oracle:?}");
                let in_tx = sqlx::query_scalar::<_, i32>("SELECT mark_viewed($1)")
                    .bind(2)
                    .fetch_one(&mut *tx)
                    .await;
                let _ = tx.rollback().await;
                (plain, autocommit, in_tx)
            })
            .await;
        assert_eq!(plain, 2);
        assert_refused_by_postgres(&autocommit.expect_err("refused in autocommit"));
        assert_refused_by_postgres(&in_tx.expect_err("refused in a transaction"));
        assert_eq!(db.views().await, 0, "{oracle:?}: nothing was inserted");
        let effect = effects.snapshot();
        // Statement analysis took both for SELECTs: the database refused, not the parser.
        assert!(
            effect
                .statements
                .iter()
                .all(|s| s.operation == Operation::Select),
            "{:?}",
            effect.statements
        );
        let refused: Vec<_> = effect
            .refusals
            .iter()
            .map(|r| (r.hint, r.by, r.statement))
            .collect();
        assert_eq!(
            refused,
            [
                (Hint::ReadOnly, RefusedBy::Database, Some(1)),
                (Hint::ReadOnly, RefusedBy::Database, Some(2)),
            ],
            "{oracle:?}"
        );

        // The next call, not enforced, on the same (only) connection: read-write again.
        let next = CallScope::new("mark");
        next.run(async {
            sqlx::query("SELECT mark_viewed(3)")
                .execute(&db.pool)
                .await
                .expect("a normal call writes");
            let mut tx = db.pool.begin().await.expect("begin");
            sqlx::query("SELECT mark_viewed(4)")
                .execute(&mut *tx)
                .await
                .expect("and in a transaction");
            tx.commit().await.expect("commit");
        })
        .await;
        assert_eq!(db.views().await, 2, "{oracle:?}");
        let ro: String = sqlx::query_scalar("SHOW default_transaction_read_only")
            .fetch_one(db.pool.inner())
            .await
            .unwrap();
        assert_eq!(ro, "off");
        db.drop_schema().await;
    }
}

/// destructiveHint false: `DELETE` and `TRUNCATE` are refused before PostgreSQL sees them;
/// an INSERT goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_destructive_calls_delete_never_reaches_postgres() {
    let Some(db) = db(PgOracle::Writes, "destructive").await else {
        return;
    };
    let scope = CallScope::new("confirm_appointment").with_enforcement(Enforcement {
        non_destructive: true,
        ..Enforcement::NONE
    });
    let effects = scope.effects_handle();
    let results = scope
        .run(async {
            let mut out = Vec::new();
            for sql in [
                "INSERT INTO appointments (views) VALUES (5)",
                "DELETE FROM appointments WHERE id = 1",
                "TRUNCATE appointments",
                "UPDATE appointments SET views = 1",
            ] {
                out.push(sqlx::query(sql).execute(&db.pool).await);
            }
            out
        })
        .await;
    assert!(results[0].is_ok(), "{:?}", results[0]);
    for r in &results[1..] {
        let e = r.as_ref().expect_err("refused");
        let sqlx::Error::Database(d) = e else {
            panic!("{e:?}")
        };
        assert!(d.message().contains("destructiveHint: false"), "{e}");
        assert_eq!(d.code(), None, "PostgreSQL never saw it");
    }
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM appointments WHERE views = 0")
        .fetch_one(db.pool.inner())
        .await
        .unwrap();
    assert_eq!(n, 2, "nothing deleted, truncated or updated");
    let effect = effects.snapshot();
    assert_eq!(effect.refusals.len(), 3);
    assert!(
        effect
            .refusals
            .iter()
            .all(|r| r.by == RefusedBy::Hintaudit && r.hint == Hint::Destructive)
    );
    db.drop_schema().await;
}

/// A read-only call whose stream is dropped early leaves its connection read-only
/// (`default_transaction_read_only`, see `enforce`). A later call that is not read-only,
/// beginning a transaction on that connection (from the pool or held, audited or through
/// sqlx's `Acquire`), gets a read-write transaction: its writes succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_begun_after_a_read_only_leak_is_read_write() {
    let Some(db) = db(PgOracle::Writes, "leak_begin").await else {
        return;
    };
    /// A helper written against sqlx's `Acquire`, as a library's would be.
    async fn book<'a>(a: impl sqlx::Acquire<'a, Database = Postgres>) -> Result<(), sqlx::Error> {
        let mut tx = a.begin().await?;
        sqlx::query(INSERT).execute(&mut *tx).await?;
        tx.commit().await
    }
    const INSERT: &str = "INSERT INTO appointments (views) VALUES (9)";
    let ways = [
        "on the pool",
        "on a held connection",
        "by sqlx's Acquire on the pool",
        "by sqlx's Acquire on a held connection",
    ];
    for way in ways {
        let reader = CallScope::new("get_appointment").with_enforcement(Enforcement {
            read_only: true,
            ..Enforcement::NONE
        });
        reader
            .run(async {
                use futures_util::TryStreamExt;
                let mut rows =
                    sqlx::query("SELECT g FROM generate_series(1, 100000) AS g").fetch(&db.pool);
                assert!(rows.try_next().await.expect("a row").is_some());
                drop(rows); // before the connection is made read-write again
            })
            .await;
        let writer = CallScope::new("book_appointment");
        let booked = writer
            .run(async {
                let mut conn = db.pool.acquire().await?;
                match way {
                    "on the pool" => {
                        drop(conn);
                        let mut tx = db.pool.begin().await?;
                        sqlx::query(INSERT).execute(&mut *tx).await?;
                        tx.commit().await
                    }
                    "on a held connection" => {
                        let mut tx = conn.begin().await?;
                        sqlx::query(INSERT).execute(&mut *tx).await?;
                        tx.commit().await
                    }
                    "by sqlx's Acquire on the pool" => {
                        drop(conn);
                        book(&db.pool).await
                    }
                    _ => book(&mut *conn).await,
                }
            })
            .await;
        booked.unwrap_or_else(|e| panic!("a write in a transaction begun {way}: {e}"));
    }
    assert_eq!(db.booked().await, 4);
    db.drop_schema().await;
}

/// A session the deployment made read-only (here by a connect option; a read-only role's
/// `default_transaction_read_only` is the same setting) stays read-only: after a read-only
/// call's statement, and after a read-only call's dropped stream, a call that enforces
/// nothing still has its writes refused by PostgreSQL (25006), in autocommit and in a
/// transaction, as on a bare pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_configured_read_only_is_never_made_read_write() {
    let Some(db) = db(PgOracle::Writes, "configured_ro").await else {
        return;
    };
    let url = databases::pg_url();
    let opts = PgConnectOptions::from_str(&url).expect("url").options([
        ("search_path", db.schema.as_str()),
        ("default_transaction_read_only", "on"),
    ]);
    let pool = AuditedPool::<Postgres>::options()
        .connect_with(PgPoolOptions::new().max_connections(1), opts)
        .await
        .expect("connect");
    let read_only_call = || {
        CallScope::new("get_appointment").with_enforcement(Enforcement {
            read_only: true,
            ..Enforcement::NONE
        })
    };
    let insert = "INSERT INTO appointments (views) VALUES (9)";
    let refused = |r: Result<(), sqlx::Error>, what: &str| {
        let e = r.expect_err(what);
        let sqlx::Error::Database(d) = &e else {
            panic!("{what}: {e:?}")
        };
        assert_eq!(d.code().as_deref(), Some("25006"), "{what}: {e}");
    };
    for round in [
        "after a read-only call's statement",
        "after a dropped stream",
    ] {
        read_only_call()
            .run(async {
                use futures_util::TryStreamExt;
                let mut rows =
                    sqlx::query("SELECT g FROM generate_series(1, 100000) AS g").fetch(&pool);
                assert!(rows.try_next().await.expect("a row").is_some());
                if round == "after a dropped stream" {
                    drop(rows);
                } else {
                    while rows.try_next().await.expect("a row").is_some() {}
                }
            })
            .await;
        let writer = CallScope::new("book_appointment");
        let (autocommit, in_tx) = writer
            .run(async {
                let autocommit = sqlx::query(insert).execute(&pool).await.map(drop);
                let in_tx = async {
                    let mut tx = pool.begin().await?;
                    sqlx::query(insert).execute(&mut *tx).await?;
                    tx.commit().await
                }
                .await;
                (autocommit, in_tx)
            })
            .await;
        refused(autocommit, &format!("autocommit, {round}"));
        refused(in_tx, &format!("in a transaction, {round}"));
    }
    pool.close().await;
    assert_eq!(db.booked().await, 0);
    db.drop_schema().await;
}
