//! Enforce mode against a real SQLite file: a read-only call's writes are refused by SQLite
//! itself (`PRAGMA query_only`), including a write a trigger makes; a non-destructive call's
//! `DELETE` never reaches SQLite; and no pooled connection is handed on read-only, under
//! concurrency and cancellation.

#![cfg(feature = "sqlite")]

use std::time::Duration;

use futures_util::TryStreamExt;
use hintaudit_core::{CallScope, Enforcement, Hint, Operation, RefusedBy};
use hintaudit_sqlx::{AuditedPool, Refused};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use sqlx::{Executor, Sqlite};
use tempfile::TempDir;

const SCHEMA: &str = "CREATE TABLE appointments (id INTEGER PRIMARY KEY, views INTEGER NOT NULL DEFAULT 0); \
     CREATE TABLE audit_log (id INTEGER PRIMARY KEY, what TEXT); \
     CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); \
     CREATE TRIGGER appointments_viewed AFTER UPDATE ON appointments \
     BEGIN INSERT INTO audit_log (what) VALUES ('viewed ' || NEW.id); END; \
     INSERT INTO appointments (id) VALUES (1), (2), (3);";

async fn pool(max: u32) -> (TempDir, AuditedPool<Sqlite>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = SqliteConnectOptions::new()
        .filename(dir.path().join("enforce.db"))
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .busy_timeout(Duration::from_secs(30));
    let pool = AuditedPool::<Sqlite>::options()
        .connect_with(SqlitePoolOptions::new().max_connections(max), options)
        .await
        .expect("connect");
    pool.inner().execute(SCHEMA).await.expect("schema");
    (dir, pool)
}

fn read_only() -> Enforcement {
    Enforcement {
        read_only: true,
        ..Enforcement::NONE
    }
}

async fn count(pool: &AuditedPool<Sqlite>, table: &str) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
        .fetch_one(pool.inner())
        .await
        .expect("count")
}

/// The error a refused tool sees: a database error naming its hint, whose source is SQLite's
/// own refusal (SQLITE_READONLY, "attempt to write a readonly database").
fn assert_refused_by_sqlite(e: &sqlx::Error) {
    let sqlx::Error::Database(db) = e else {
        panic!("a database error, got {e:?}")
    };
    assert!(db.message().contains("readOnlyHint: true"), "{e}");
    assert!(
        db.message()
            .contains("attempt to write a readonly database"),
        "{e}"
    );
    let refused = db.try_downcast_ref::<Refused>().expect("a Refused error");
    assert_eq!(refused.hint(), Hint::ReadOnly);
    let source = std::error::Error::source(refused).expect("SQLite's error");
    assert!(source.to_string().contains("readonly database"), "{source}");
    assert_eq!(db.code().as_deref(), Some("8"), "SQLITE_READONLY");
}

/// A read-only call's UPDATE, whose trigger writes audit_log, is refused by SQLite, on the
/// pool and in a transaction; nothing changes; the call records `enforced` refusals by the
/// database, and the connection (the pool's only one) serves the next call read-write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_refuses_a_read_only_calls_writes_even_through_a_trigger() {
    let (_dir, pool) = pool(1).await;
    let scope = CallScope::new("get_appointment").with_enforcement(read_only());
    let effects = scope.effects_handle();
    let (read, pooled, in_tx) = scope
        .run(async {
            let read: i64 = sqlx::query_scalar("SELECT views FROM appointments WHERE id = 1")
                .fetch_one(&pool)
                .await
                .expect("reads run");
            let pooled = sqlx::query("UPDATE appointments SET views = views + 1 WHERE id = ?")
                .bind(1)
                .execute(&pool)
                .await;
            let mut tx = pool.begin().await.expect("begin");
            let in_tx = sqlx::query("UPDATE appointments SET views = views + 1 WHERE id = 2")
                .execute(&mut *tx)
                .await;
            tx.rollback().await.expect("rollback");
            (read, pooled, in_tx)
        })
        .await;
    assert_eq!(read, 0);
    assert_refused_by_sqlite(&pooled.expect_err("refused on the pool"));
    assert_refused_by_sqlite(&in_tx.expect_err("refused in a transaction"));
    assert_eq!(
        count(&pool, "audit_log").await,
        0,
        "the trigger never wrote"
    );

    let effect = effects.snapshot();
    let refused: Vec<_> = effect
        .refusals
        .iter()
        .map(|r| (r.hint, r.by, r.statement, r.what.as_str()))
        .collect();
    assert_eq!(
        refused,
        [
            (
                Hint::ReadOnly,
                RefusedBy::Database,
                Some(1),
                "UPDATE appointments"
            ),
            (
                Hint::ReadOnly,
                RefusedBy::Database,
                Some(2),
                "UPDATE appointments"
            ),
        ]
    );
    assert!(effect.row_changes.iter().all(|r| !r.committed));

    // The next call, not enforced, writes on the same (only) connection.
    let next = CallScope::new("add_note");
    next.run(async {
        sqlx::query("UPDATE appointments SET views = 7 WHERE id = 3")
            .execute(&pool)
            .await
            .expect("a normal call writes")
    })
    .await;
    assert_eq!(count(&pool, "audit_log").await, 1, "its trigger wrote");
    let query_only: i64 = sqlx::query_scalar("PRAGMA query_only")
        .fetch_one(pool.inner())
        .await
        .unwrap();
    assert_eq!(query_only, 0, "the connection went back read-write");
}

/// destructiveHint false: a DELETE never reaches SQLite (statement analysis refuses it), an
/// INSERT goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_destructive_calls_delete_is_refused_before_sqlite() {
    let (_dir, pool) = pool(2).await;
    let scope = CallScope::new("confirm_appointment").with_enforcement(Enforcement {
        non_destructive: true,
        ..Enforcement::NONE
    });
    let effects = scope.effects_handle();
    let (insert, delete) = scope
        .run(async {
            let insert = sqlx::query("INSERT INTO notes (body) VALUES ('x')")
                .execute(&pool)
                .await;
            let delete = sqlx::query("DELETE FROM appointments WHERE id = 1")
                .execute(&pool)
                .await;
            (insert, delete)
        })
        .await;
    insert.expect("an insert is not destructive");
    let e = delete.expect_err("refused");
    let sqlx::Error::Database(db) = &e else {
        panic!("{e:?}")
    };
    assert!(db.message().contains("destructiveHint: false"), "{e}");
    assert!(db.message().contains("DELETE appointments"), "{e}");
    assert_eq!(db.code(), None, "SQLite never saw it");
    assert_eq!(count(&pool, "appointments").await, 3);
    let effect = effects.snapshot();
    assert_eq!(effect.statements[1].operation, Operation::Delete);
    assert_eq!(effect.refusals.len(), 1);
    assert_eq!(effect.refusals[0].by, RefusedBy::Hintaudit);
    assert_eq!(effect.refusals[0].hint, Hint::Destructive);
}

/// Many read-only enforced calls (some cancelled in the middle of a stream, some by a
/// timeout) interleaved with writer calls on a pool of 2 connections: every writer call's
/// writes succeed, every enforced write is refused, and afterwards every connection the pool
/// hands to an audited call is read-write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_pooled_connection_is_handed_on_read_only() {
    let (_dir, pool) = pool(2).await;
    sqlx::query("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500) INSERT INTO notes (body) SELECT 'n' || i FROM n")
        .execute(pool.inner())
        .await
        .expect("fill notes");
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..60u32 {
        let pool = pool.clone();
        tasks.spawn(async move {
            match i % 4 {
                // A read-only call that tries to write: refused.
                0 => {
                    let scope = CallScope::new("reader").with_enforcement(read_only());
                    let r = scope
                        .run(async {
                            sqlx::query("INSERT INTO notes (body) VALUES ('ro')")
                                .execute(&pool)
                                .await
                        })
                        .await;
                    assert_refused_by_sqlite(&r.expect_err("refused"));
                    "refused"
                }
                // A read-only call cancelled in the middle of a stream: its future drops
                // before the connection is made read-write again.
                1 => {
                    let scope = CallScope::new("reader").with_enforcement(read_only());
                    scope
                        .run(async {
                            let mut rows = sqlx::query("SELECT body FROM notes").fetch(&pool);
                            let _first = rows.try_next().await.expect("a row");
                            drop(rows);
                        })
                        .await;
                    "cancelled"
                }
                // A read-only call cut short by a timeout, on a held connection.
                2 => {
                    let scope = CallScope::new("reader").with_enforcement(read_only());
                    let _ = tokio::time::timeout(
                        Duration::from_micros(50),
                        scope.run(async {
                            let mut conn = pool.acquire().await.expect("acquire");
                            sqlx::query("SELECT count(*) FROM notes a, notes b")
                                .fetch_one(&mut *conn)
                                .await
                        }),
                    )
                    .await;
                    "timed out"
                }
                // A writer call: must never see a read-only connection.
                _ => {
                    let scope = CallScope::new("writer");
                    scope
                        .run(async {
                            sqlx::query("INSERT INTO audit_log (what) VALUES ('w')")
                                .execute(&pool)
                                .await
                                .expect("a writer call writes");
                            let mut tx = pool.begin().await.expect("begin");
                            sqlx::query("INSERT INTO audit_log (what) VALUES ('t')")
                                .execute(&mut *tx)
                                .await
                                .expect("a writer call writes in a transaction");
                            tx.commit().await.expect("commit");
                        })
                        .await;
                    "written"
                }
            }
        });
    }
    let mut written = 0;
    while let Some(done) = tasks.join_next().await {
        written += usize::from(done.expect("no task panicked") == "written");
    }
    assert_eq!(written, 15);
    assert_eq!(count(&pool, "audit_log").await, 30);
    // Every connection, held at once so the pool hands out each of them: read-write for an
    // audited call.
    let next = CallScope::new("after");
    next.run(async {
        let mut held = Vec::new();
        for _ in 0..2 {
            let mut conn = pool.acquire().await.expect("acquire");
            let query_only: i64 = sqlx::query_scalar("PRAGMA query_only")
                .fetch_one(&mut *conn)
                .await
                .unwrap();
            assert_eq!(query_only, 0, "a connection handed on read-only");
            sqlx::query("INSERT INTO audit_log (what) VALUES ('after')")
                .execute(&mut *conn)
                .await
                .expect("writes");
            held.push(conn);
        }
    })
    .await;
}

/// A connection the deployment made read-only (`query_only` in its connect options) stays
/// read-only: after a read-only call's statement, and after a read-only call's dropped
/// stream, a call that enforces nothing still has its write refused by SQLite, as on a bare
/// pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_configured_read_only_is_never_made_read_write() {
    let (dir, writable) = pool(1).await;
    let options = SqliteConnectOptions::new()
        .filename(dir.path().join("enforce.db"))
        .pragma("query_only", "ON");
    let pool = AuditedPool::<Sqlite>::options()
        .connect_with(SqlitePoolOptions::new().max_connections(1), options)
        .await
        .expect("connect");
    // Dropped after 1, 2, … polls, until the statement is done before its drop: every point
    // a statement can be dropped at, whatever the polls each step of enforcement needs; then
    // a read to its end, and a stream dropped after its first row.
    let mut dropped_after = 1;
    loop {
        let round = match dropped_after {
            0 => "read".to_owned(),
            usize::MAX => "dropped stream".to_owned(),
            polls => format!("dropped after {polls} polls"),
        };
        let done = CallScope::new("reader")
            .with_enforcement(read_only())
            .run(async {
                if !matches!(dropped_after, 0 | usize::MAX) {
                    let mut conn = pool.acquire().await.expect("acquire");
                    let mut f = (&mut *conn).fetch_optional(sqlx::query("SELECT 1"));
                    let polls = dropped_after;
                    let done = hintaudit_test_support::poll_at_most(f.as_mut(), polls).await;
                    drop(f);
                    // The worker finishes what was under way.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    return done;
                }
                let mut rows = sqlx::query("SELECT id FROM appointments").fetch(&pool);
                assert!(rows.try_next().await.expect("a row").is_some());
                if dropped_after == 0 {
                    while rows.try_next().await.expect("a row").is_some() {}
                }
                false
            })
            .await;
        let r = CallScope::new("writer")
            .run(sqlx::query("INSERT INTO audit_log (what) VALUES ('w')").execute(&pool))
            .await;
        let e = r.expect_err("refused: the connection is read-only");
        assert!(e.to_string().contains("readonly"), "{round}: {e}");
        dropped_after = match dropped_after {
            0 => usize::MAX,
            usize::MAX => break,
            _ if done => 0,
            polls => polls + 1,
        };
    }
    pool.close().await;
    assert_eq!(count(&writable, "audit_log").await, 0);
}
