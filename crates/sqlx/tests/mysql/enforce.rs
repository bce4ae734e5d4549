//! Enforce mode against a real MySQL or MariaDB (`HINTAUDIT_MYSQL_URL`, default
//! `mysql://root@127.0.0.1:3306`): a read-only call's write hidden in a stored function its
//! plain `SELECT` calls, or in a procedure it `CALL`s, is refused by the database itself
//! (error 1792, SQLSTATE 25006), in autocommit (`SET SESSION TRANSACTION READ ONLY`) and in
//! an audited transaction (`START TRANSACTION READ ONLY`), and the connection serves the next
//! call read-write; a non-destructive call's `DELETE` never reaches the database. Each test
//! works in its own database and drops it; without a server it skips, unless
//! `HINTAUDIT_REQUIRE_MYSQL=1` (or `HINTAUDIT_REQUIRE_ALL=1`).

#![cfg(feature = "mysql")]

use hintaudit_core::{CallScope, Enforcement, Hint, Operation, RefusedBy};
use hintaudit_sqlx::{AuditedPool, Refused};
use sqlx::mysql::{MySqlConnectOptions, MySqlPoolOptions};
use sqlx::{Executor, MySql};

use crate::databases::{self, Fresh};

const SETUP: &[&str] = &[
    "CREATE TABLE appointments (id INT AUTO_INCREMENT PRIMARY KEY, views INT NOT NULL DEFAULT 0)",
    "CREATE TABLE page_views (id INT AUTO_INCREMENT PRIMARY KEY, page INT)",
    "CREATE FUNCTION mark_viewed(p INT) RETURNS INT MODIFIES SQL DATA \
     BEGIN INSERT INTO page_views (page) VALUES (p); RETURN p; END",
    "CREATE PROCEDURE record_view(p INT) BEGIN INSERT INTO page_views (page) VALUES (p); END",
    "INSERT INTO appointments (views) VALUES (0), (0)",
];

struct Db {
    pool: AuditedPool<MySql>,
    fresh: Fresh<MySqlConnectOptions>,
}

/// A one-connection audited pool (so every call shares that connection) on a fresh
/// database, or `None` (with the reason printed) when the server is unreachable and not
/// required.
async fn db() -> Option<Db> {
    let fresh = databases::mysql().await?;
    let pool = AuditedPool::<MySql>::options()
        .connect_with(
            MySqlPoolOptions::new().max_connections(1),
            fresh.options.clone(),
        )
        .await
        .expect("connect");
    for s in SETUP {
        pool.inner()
            .execute(sqlx::raw_sql(sqlx::AssertSqlSafe(s.to_string())))
            .await
            .expect("setup");
    }
    Some(Db { pool, fresh })
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

    async fn drop_database(self) {
        self.pool.close().await;
        self.fresh.drop().await;
    }
}

fn read_only() -> Enforcement {
    Enforcement {
        read_only: true,
        ..Enforcement::NONE
    }
}

/// The database's own refusal (error 1792, SQLSTATE 25006), wrapped so that its message
/// names the hint.
fn assert_refused_by_database(what: &str, r: &Result<(), sqlx::Error>) {
    let e = r.as_ref().expect_err(what);
    let sqlx::Error::Database(db) = e else {
        panic!("{what}: a database error, got {e:?}")
    };
    assert!(db.message().contains("readOnlyHint: true"), "{what}: {e}");
    assert!(
        db.message().contains("READ ONLY transaction"),
        "{what}: {e}"
    );
    assert_eq!(db.code().as_deref(), Some("25006"), "{what}: {e}");
    let refused = db.try_downcast_ref::<Refused>().expect("a Refused error");
    assert_eq!(refused.hint(), Hint::ReadOnly);
    let source = std::error::Error::source(refused).expect("the database's error");
    let mysql = source
        .downcast_ref::<sqlx::mysql::MySqlDatabaseError>()
        .expect("a MySQL error");
    assert_eq!(
        mysql.number(),
        1792,
        "ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION"
    );
}

/// `SELECT mark_viewed(n)` (statement analysis sees a SELECT) and `CALL record_view(n)`:
/// the INSERT inside is what the database refuses, in autocommit, in a transaction begun on
/// the pool, in a savepoint of it, in one begun on a held connection, and in one dropped
/// unended. Then the next, unenforced call on the same (only) connection writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_refuses_a_write_hidden_in_a_function_or_procedure() {
    let Some(db) = db().await else {
        return;
    };
    let scope = CallScope::new("get_appointment").with_enforcement(read_only());
    let effects = scope.effects_handle();
    let results = scope
        .run(async {
            let mut out = Vec::new();
            let plain: i64 = sqlx::query_scalar("SELECT count(*) FROM appointments")
                .fetch_one(&db.pool)
                .await
                .expect("reads run");
            assert_eq!(plain, 2);
            out.push(
                sqlx::query("SELECT mark_viewed(1)")
                    .execute(&db.pool)
                    .await
                    .map(drop),
            );
            out.push(
                sqlx::query("CALL record_view(2)")
                    .execute(&db.pool)
                    .await
                    .map(drop),
            );

            let mut tx = db.pool.begin().await.expect("begin");
            let n: i64 = sqlx::query_scalar("SELECT count(*) FROM appointments")
                .fetch_one(&mut *tx)
                .await
                .expect("reads run in the transaction");
            assert_eq!(n, 2);
            out.push(
                sqlx::query_scalar::<_, i32>("SELECT mark_viewed(?)")
                    .bind(3)
                    .fetch_one(&mut *tx)
                    .await
                    .map(drop),
            );
            out.push(
                sqlx::query("CALL record_view(4)")
                    .execute(&mut *tx)
                    .await
                    .map(drop),
            );
            {
                let mut sp = tx.begin().await.expect("savepoint");
                out.push(
                    sqlx::query("SELECT mark_viewed(5)")
                        .execute(&mut *sp)
                        .await
                        .map(drop),
                );
                sp.rollback().await.expect("rollback to savepoint");
            }
            tx.rollback().await.expect("rollback");

            let mut conn = db.pool.acquire().await.expect("acquire");
            let mut tx = conn.begin().await.expect("begin on a held connection");
            out.push(
                sqlx::query("SELECT mark_viewed(6)")
                    .execute(&mut *tx)
                    .await
                    .map(drop),
            );
            tx.commit().await.expect("commit");
            drop(conn);
            // Dropped without COMMIT or ROLLBACK (a tool that failed): sqlx rolls it back.
            let mut tx = db.pool.begin().await.expect("begin");
            out.push(
                sqlx::query("SELECT mark_viewed(7)")
                    .execute(&mut *tx)
                    .await
                    .map(drop),
            );
            drop(tx);
            out
        })
        .await;
    let names = [
        "autocommit function",
        "autocommit CALL",
        "function in a transaction",
        "CALL in a transaction",
        "function in a savepoint",
        "function in a held connection's transaction",
        "function in a transaction then dropped",
    ];
    assert_eq!(results.len(), names.len());
    for (r, what) in results.iter().zip(names) {
        assert_refused_by_database(what, r);
    }
    assert_eq!(db.views().await, 0, "nothing was inserted");
    let effect = effects.snapshot();
    // Statement analysis took the function calls for SELECTs: the database refused them.
    let selects = effect
        .statements
        .iter()
        .filter(|s| s.operation == Operation::Select)
        .count();
    assert_eq!(selects, 7, "{:?}", effect.statements);
    assert_eq!(effect.refusals.len(), names.len(), "{:?}", effect.refusals);
    assert!(
        effect
            .refusals
            .iter()
            .all(|r| r.hint == Hint::ReadOnly && r.by == RefusedBy::Database),
        "{:?}",
        effect.refusals
    );

    // The next call, not enforced, on the same (only) connection: read-write again.
    CallScope::new("mark")
        .run(async {
            sqlx::query("SELECT mark_viewed(10)")
                .execute(&db.pool)
                .await
                .expect("a normal call writes");
            sqlx::query("CALL record_view(11)")
                .execute(&db.pool)
                .await
                .expect("and calls");
            let mut tx = db.pool.begin().await.expect("begin");
            sqlx::query("SELECT mark_viewed(12)")
                .execute(&mut *tx)
                .await
                .expect("and in a transaction");
            tx.commit().await.expect("commit");
        })
        .await;
    assert_eq!(db.views().await, 3);
    let ro: i64 = sqlx::query_scalar("SELECT CAST(@@session.tx_read_only AS SIGNED)")
        .fetch_one(db.pool.inner())
        .await
        .expect("tx_read_only");
    assert_eq!(ro, 0, "the session is read-write");
    db.drop_database().await;
}

/// A transaction begun with the caller's own statement stays theirs: the database was not
/// asked to keep it read-only, so statement analysis refuses what may write, before the
/// database sees it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn begin_with_keeps_the_callers_statement() {
    let Some(db) = db().await else {
        return;
    };
    let scope = CallScope::new("get_appointment").with_enforcement(read_only());
    let effects = scope.effects_handle();
    let (read, write) = scope
        .run(async {
            let mut tx = db
                .pool
                .begin_with("START TRANSACTION")
                .await
                .expect("begin");
            let read: Result<i64, _> = sqlx::query_scalar("SELECT count(*) FROM appointments")
                .fetch_one(&mut *tx)
                .await;
            let write = sqlx::query("SELECT mark_viewed(1)").execute(&mut *tx).await;
            tx.rollback().await.expect("rollback");
            (read, write)
        })
        .await;
    assert_eq!(read.expect("reads run"), 2);
    let e = write.expect_err("refused");
    let sqlx::Error::Database(d) = &e else {
        panic!("{e:?}")
    };
    assert!(d.message().contains("readOnlyHint: true"), "{e}");
    assert_eq!(d.code(), None, "the database never saw it");
    let effect = effects.snapshot();
    let refused: Vec<_> = effect.refusals.iter().map(|r| (r.hint, r.by)).collect();
    assert_eq!(refused, [(Hint::ReadOnly, RefusedBy::Hintaudit)]);
    assert_eq!(db.views().await, 0);
    db.drop_database().await;
}

/// destructiveHint false: `DELETE`, `TRUNCATE` and `UPDATE` are refused before the database
/// sees them; an INSERT goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_destructive_calls_delete_never_reaches_mysql() {
    let Some(db) = db().await else {
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
        assert_eq!(d.code(), None, "the database never saw it");
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
    db.drop_database().await;
}

/// A read-only call reads 900 rows as a stream; `dropped`: the stream is dropped after the
/// first.
async fn read_only_call_reads(pool: &AuditedPool<MySql>, dropped: bool) {
    use futures_util::TryStreamExt;
    CallScope::new("get_appointment")
        .with_enforcement(read_only())
        .run(async {
            let mut rows = sqlx::query(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 900) \
                 SELECT i FROM n",
            )
            .fetch(pool);
            assert!(rows.try_next().await.expect("a row").is_some());
            if !dropped {
                while rows.try_next().await.expect("a row").is_some() {}
            }
        })
        .await;
}

/// A read-only call whose stream is dropped early leaves its connection read-only (`SET
/// SESSION TRANSACTION READ ONLY`, see `enforce`). A later call that is not read-only,
/// beginning a transaction on that connection (from the pool, or held), gets a read-write
/// transaction: MySQL cannot change a running transaction's access mode, so the reset must
/// come before `START TRANSACTION`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_begun_after_a_read_only_leak_is_read_write() {
    let Some(db) = db().await else { return };
    for held in [false, true] {
        // Dropped before the connection is made read-write again.
        read_only_call_reads(&db.pool, true).await;
        CallScope::new("book_appointment")
            .run(async {
                let mut conn = db.pool.acquire().await.expect("acquire");
                let mut tx = match held {
                    true => conn.begin().await.expect("begin on a held connection"),
                    false => {
                        drop(conn);
                        db.pool.begin().await.expect("begin on the pool")
                    }
                };
                sqlx::query("INSERT INTO appointments (views) VALUES (9)")
                    .execute(&mut *tx)
                    .await
                    .unwrap_or_else(|e| {
                        panic!("a write in a transaction begun (held: {held}): {e}")
                    });
                tx.commit().await.expect("commit");
            })
            .await;
    }
    assert_eq!(db.booked().await, 2);
    db.drop_database().await;
}

/// A session the deployment made read-only (here by an init command) stays read-only: after
/// a read-only call's statement, and after a read-only call's dropped stream, a call that
/// enforces nothing still has its write refused by the database (error 1792), as on a bare
/// pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_configured_read_only_is_never_made_read_write() {
    let Some(db) = db().await else { return };
    let pool = AuditedPool::<MySql>::options()
        .connect_with(
            MySqlPoolOptions::new()
                .max_connections(1)
                .after_connect(|conn, _| {
                    Box::pin(async move {
                        conn.execute("SET SESSION TRANSACTION READ ONLY").await?;
                        Ok(())
                    })
                }),
            db.fresh.options.clone(),
        )
        .await
        .expect("connect");
    // Then dropped after 1, 2, … polls, until the statement is done before its drop: every
    // point a statement can be dropped at, whatever the polls each step of enforcement needs.
    for round in 0.. {
        let done = match round {
            0 | 1 => {
                read_only_call_reads(&pool, round == 1).await;
                false
            }
            polls => read_only_call_dropped_after(&pool, polls - 1).await,
        };
        let round = match round {
            0 => "read".to_owned(),
            1 => "dropped stream".to_owned(),
            polls => format!("dropped after {} polls", polls - 1),
        };
        let r = CallScope::new("book_appointment")
            .run(sqlx::query("INSERT INTO appointments (views) VALUES (9)").execute(&pool))
            .await;
        let e = r.expect_err("refused: the session is read-only");
        let sqlx::Error::Database(d) = &e else {
            panic!("{e:?}")
        };
        assert_eq!(d.code().as_deref(), Some("25006"), "{round}: {e}");
        if done {
            break;
        }
    }
    pool.close().await;
    assert_eq!(db.booked().await, 0);
    db.drop_database().await;
}

/// A read-only call whose statement is dropped after at most `polls` polls (with one of
/// enforcement's round trips under way, or after it ended): whether it was done by then.
async fn read_only_call_dropped_after(pool: &AuditedPool<MySql>, polls: usize) -> bool {
    CallScope::new("get_appointment")
        .with_enforcement(read_only())
        .run(async {
            let mut conn = pool.acquire().await.expect("acquire");
            let mut f = (&mut *conn).fetch_optional(sqlx::query("SELECT 1"));
            hintaudit_test_support::poll_at_most(f.as_mut(), polls).await
        })
        .await
}
