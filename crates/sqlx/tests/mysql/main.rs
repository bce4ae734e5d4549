//! The audited pool against a real MySQL or MariaDB (`HINTAUDIT_MYSQL_URL`, default
//! `mysql://root@127.0.0.1:3306`, the server root without a database), and enforce mode
//! (`enforce`; the spans' `db.system.name` is a binary of its own, `mysql_spans`). Each test
//! works in its own database and drops it. Without a server the tests print why they skip,
//! unless `HINTAUDIT_REQUIRE_MYSQL=1` (or `HINTAUDIT_REQUIRE_ALL=1`).
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml
#![cfg(feature = "mysql")]

use hintaudit_core::{CallScope, Confidence, Effect, Facts, Operation, Policy, StatementOutcome};
use hintaudit_sqlx::AuditedPool;
use sqlx::mysql::{MySqlConnectOptions, MySqlPoolOptions};
use sqlx::{Executor, MySql};

#[path = "../support/databases.rs"]
mod databases;
mod enforce;

use databases::Fresh;

struct Db {
    pool: AuditedPool<MySql>,
    fresh: Fresh<MySqlConnectOptions>,
}

impl Db {
    async fn drop_database(self) {
        self.pool.close().await;
        self.fresh.drop().await;
    }
}

/// A pool on a fresh database with `setup` run in it, or `None` (with the reason printed)
/// when the server is unreachable and not required.
async fn db(setup: &[&str]) -> Option<Db> {
    let fresh = databases::mysql().await?;
    let pool = AuditedPool::<MySql>::options()
        .connect_with(
            MySqlPoolOptions::new().max_connections(4),
            fresh.options.clone(),
        )
        .await
        .expect("connect");
    for s in setup {
        pool.inner()
            .execute(sqlx::raw_sql(sqlx::AssertSqlSafe(s.to_string())))
            .await
            .expect("setup");
    }
    Some(Db { pool, fresh })
}

const SETUP: &[&str] = &[
    "CREATE TABLE hits (page INT PRIMARY KEY, n INT NOT NULL)",
    "CREATE TABLE bookings (id INT AUTO_INCREMENT PRIMARY KEY, room INT NOT NULL)",
    "CREATE TABLE holds (id INT AUTO_INCREMENT PRIMARY KEY, room INT NOT NULL)",
    "CREATE TRIGGER booking_clears_holds AFTER INSERT ON bookings FOR EACH ROW \
     BEGIN IF NEW.room > 0 THEN DELETE FROM holds WHERE room = NEW.room; END IF; END",
    "CREATE PROCEDURE purge_holds() BEGIN DELETE FROM holds; END",
    "CREATE FUNCTION take_hold(r INT) RETURNS INT MODIFIES SQL DATA \
     BEGIN DELETE FROM holds WHERE room = r; RETURN r; END",
    "INSERT INTO holds (room) VALUES (1), (2)",
];

/// Runs `f` as tool call `tool`, returning its effect.
async fn call<F: Future>(tool: &str, f: F) -> (F::Output, Effect) {
    let scope = CallScope::new(tool);
    let effects = scope.effects_handle();
    let out = scope.run(f).await;
    (out, effects.snapshot())
}

fn texts(e: &[hintaudit_core::Evidence]) -> Vec<String> {
    e.iter()
        .map(|e| format!("{} ({:?})", e.text, e.confidence))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upserts_by_their_affected_rows() {
    let Some(db) = db(SETUP).await else { return };
    let odku = "INSERT INTO hits (page, n) VALUES (?, ?) ON DUPLICATE KEY UPDATE n = VALUES(n)";
    // (statement, page, n, rows affected, destructive confirmed?, a write?)
    let cases: Vec<(&str, i32, i32, u64, bool, bool)> = vec![
        (odku, 1, 1, 1, false, true), // inserted
        (odku, 1, 2, 2, true, true),  // updated: an overwrite
        (odku, 1, 2, 1, false, true), // unchanged (CLIENT_FOUND_ROWS counts it as 1)
        (
            "REPLACE INTO hits (page, n) VALUES (?, ?)",
            1,
            3,
            2,
            true,
            true,
        ),
        (
            "REPLACE INTO hits (page, n) VALUES (?, ?)",
            2,
            3,
            1,
            false,
            true,
        ),
        (
            "INSERT IGNORE INTO hits (page, n) VALUES (?, ?)",
            2,
            9,
            0,
            false,
            false,
        ),
    ];
    for (sql, page, n, rows, destructive, write) in cases {
        let (r, e) = call("upsert", async {
            sqlx::query(sql).bind(page).bind(n).execute(&db.pool).await
        })
        .await;
        assert_eq!(r.expect(sql).rows_affected(), rows, "{sql}");
        assert_eq!(e.statements[0].operation, Operation::Upsert);
        assert_eq!(e.statements[0].rows_affected, Some(rows), "{sql}");
        let f = Facts::from_effect(&e, &Policy::default());
        let confirmed = f
            .destructive
            .iter()
            .any(|d| d.confidence == Confidence::Confirmed);
        assert_eq!(
            confirmed,
            destructive,
            "{sql} {rows}: {:?}",
            texts(&f.destructive)
        );
        if !destructive {
            assert!(
                f.destructive.is_empty(),
                "{sql}: {:?}",
                texts(&f.destructive)
            );
        }
        assert_eq!(!f.writes.is_empty(), write, "{sql}: {:?}", texts(&f.writes));
    }
    db.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolled_back_writes_are_attempts() {
    let Some(db) = db(SETUP).await else { return };
    let (_, e) = call("read_only_tool", async {
        let mut tx = db.pool.begin().await.unwrap();
        sqlx::query("DELETE FROM holds")
            .execute(&mut tx)
            .await
            .unwrap();
        tx.rollback().await.unwrap();
        // A raw BEGIN ... ROLLBACK on a held connection too.
        let mut conn = db.pool.acquire().await.unwrap();
        sqlx::query("START TRANSACTION")
            .execute(&mut conn)
            .await
            .unwrap();
        sqlx::query("UPDATE holds SET room = 3")
            .execute(&mut conn)
            .await
            .unwrap();
        sqlx::query("ROLLBACK").execute(&mut conn).await.unwrap();
    })
    .await;
    let writes: Vec<_> = e
        .statements
        .iter()
        .filter(|s| s.operation.is_write())
        .collect();
    assert_eq!(writes.len(), 2, "{:?}", e.statements);
    assert!(
        writes
            .iter()
            .all(|s| s.outcome == StatementOutcome::RolledBack)
    );
    let f = Facts::from_effect(&e, &Policy::default());
    assert!(f.writes.is_empty(), "{:?}", texts(&f.writes));
    assert_eq!(f.attempts.len(), 2, "{:?}", texts(&f.attempts));
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM holds")
        .fetch_one(db.pool.inner())
        .await
        .unwrap();
    assert_eq!(left, 2, "really rolled back");
    db.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trigger_that_deletes_behind_an_insert_is_found() {
    let Some(db) = db(SETUP).await else { return };
    let (r, e) = call("book_room", async {
        sqlx::query("INSERT INTO bookings (room) VALUES (?)")
            .bind(1)
            .execute(&db.pool)
            .await
    })
    .await;
    assert_eq!(r.unwrap().rows_affected(), 1);
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM holds")
        .fetch_one(db.pool.inner())
        .await
        .unwrap();
    assert_eq!(left, 1, "the trigger deleted the hold");
    let f = Facts::from_effect(&e, &Policy::default());
    let d = texts(&f.destructive);
    assert_eq!(
        d,
        [
            "DELETE holds (via trigger booking_clears_holds on bookings): a write (rows not reported) (Likely)"
        ],
        "{:?}",
        e.statements
    );
    // The insert itself is a confirmed write of its own table.
    assert!(texts(&f.writes).contains(&"INSERT bookings: 1 row affected (Confirmed)".to_owned()));
    db.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_procedure_that_deletes_is_found() {
    let Some(db) = db(SETUP).await else { return };
    let (r, e) = call("tidy", async {
        sqlx::query("CALL purge_holds()").execute(&db.pool).await
    })
    .await;
    r.unwrap();
    assert_eq!(e.statements[0].operation, Operation::Call);
    let f = Facts::from_effect(&e, &Policy::default());
    assert_eq!(
        texts(&f.destructive),
        ["DELETE holds (via procedure purge_holds): a write (rows not reported) (Likely)"]
    );
    db.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_that_deletes_behind_a_select_is_found() {
    let Some(db) = db(SETUP).await else { return };
    let (r, e) = call("peek", async {
        sqlx::query_scalar::<_, i32>("SELECT take_hold(?)")
            .bind(2)
            .fetch_one(&db.pool)
            .await
    })
    .await;
    assert_eq!(r.unwrap(), 2);
    assert_eq!(e.statements[0].operation, Operation::Select);
    let f = Facts::from_effect(&e, &Policy::default());
    assert_eq!(
        texts(&f.destructive),
        ["DELETE holds (via function take_hold): a write (rows not reported) (Likely)"]
    );
    db.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ddl_and_truncate_are_destructive() {
    let Some(db) = db(SETUP).await else { return };
    let (_, e) = call("reset", async {
        sqlx::query("TRUNCATE TABLE holds")
            .execute(&db.pool)
            .await
            .unwrap();
        sqlx::query("DROP TABLE hits")
            .execute(&db.pool)
            .await
            .unwrap();
    })
    .await;
    let f = Facts::from_effect(&e, &Policy::default());
    assert_eq!(
        texts(&f.destructive),
        [
            "TRUNCATE holds: table truncated (Likely)",
            "DROP TABLE hits: DROP (Likely)"
        ]
    );
    db.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_statement_text_is_judged_per_statement() {
    let Some(db) = db(SETUP).await else { return };
    let text = "INSERT INTO holds (room) VALUES (5); DELETE FROM holds WHERE room = 1; \
                UPDATE hits SET n = 1 WHERE page = 99";
    let (r, e) = call("shuffle", async {
        sqlx::raw_sql(text).execute(&db.pool).await
    })
    .await;
    assert_eq!(r.expect("multi").rows_affected(), 2);
    let got: Vec<(Operation, Option<u64>, StatementOutcome)> = e
        .statements
        .iter()
        .map(|s| (s.operation, s.rows_affected, s.outcome))
        .collect();
    assert_eq!(
        got,
        [
            (Operation::Insert, Some(1), StatementOutcome::Ok),
            (Operation::Delete, Some(1), StatementOutcome::Ok),
            (Operation::Update, Some(0), StatementOutcome::Ok),
        ]
    );
    let f = Facts::from_effect(&e, &Policy::default());
    assert_eq!(
        texts(&f.destructive),
        ["DELETE holds: 1 row affected (Confirmed)"]
    );
    assert_eq!(
        texts(&f.attempts),
        ["UPDATE hits: 0 rows affected (Confirmed)"]
    );

    // MySQL stops at the first failing statement: the DELETE after it never ran.
    let text =
        "INSERT INTO holds (room) VALUES (6); INSERT INTO nosuch VALUES (1); DELETE FROM holds";
    let (r, e) = call("broken", async {
        sqlx::raw_sql(text).execute(&db.pool).await
    })
    .await;
    assert!(r.is_err());
    let got: Vec<(Operation, StatementOutcome)> = e
        .statements
        .iter()
        .map(|s| (s.operation, s.outcome))
        .collect();
    assert_eq!(
        got,
        [
            (Operation::Insert, StatementOutcome::Ok),
            (Operation::Insert, StatementOutcome::Failed),
            (Operation::Delete, StatementOutcome::Failed),
        ]
    );
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM holds")
        .fetch_one(db.pool.inner())
        .await
        .unwrap();
    assert_eq!(left, 3, "2 seeded + 5 - 1 + 6, no DELETE");
    db.drop_database().await;
}
