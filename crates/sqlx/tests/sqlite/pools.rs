//! How SQLite connections get their hooks, against a real SQLite file: a pool hintaudit opens
//! hooks every connection when it connects and binds pooled writes through the pool's writer;
//! a pool it wraps hooks connections on first use. Both attribute the same rows; your own
//! `after_connect` still runs; writes of a held connection never land in a concurrent
//! pooled write's call; a pooled write goes on while a stream holds the writer; and auditing
//! leaves SQLite's locking as it was.

#![cfg(feature = "sqlite")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hintaudit_core::{CallScope, Effect, RowImage, RowOperation};
use hintaudit_sqlx::AuditedPool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use sqlx::{Executor, Sqlite};
use tempfile::TempDir;

const SCHEMA: &str = "CREATE TABLE appointments (id INTEGER PRIMARY KEY, patient TEXT NOT NULL); \
     CREATE TABLE audit_log (id INTEGER PRIMARY KEY, what TEXT); \
     CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); \
     CREATE TRIGGER appointments_audit AFTER INSERT ON appointments \
     BEGIN INSERT INTO audit_log (what) VALUES ('insert ' || NEW.id); END;";

fn options(dir: &TempDir) -> SqliteConnectOptions {
    SqliteConnectOptions::new()
        .filename(dir.path().join("pools.db"))
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .busy_timeout(Duration::from_secs(30))
}

/// A pool hintaudit opens (`opened`) or one it wraps, with the schema in place.
async fn pool(opened: bool, max: u32) -> (TempDir, AuditedPool<Sqlite>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let pool_options = SqlitePoolOptions::new().max_connections(max);
    let pool = if opened {
        AuditedPool::<Sqlite>::options()
            .connect_with(pool_options, options(&dir))
            .await
    } else {
        let raw = pool_options
            .connect_with(options(&dir))
            .await
            .expect("raw pool");
        Ok(AuditedPool::from_pool(raw))
    }
    .expect("connect");
    pool.inner().execute(SCHEMA).await.expect("schema");
    (dir, pool)
}

fn rows(e: &Effect, table: &str, op: RowOperation) -> usize {
    e.row_changes
        .iter()
        .filter(|r| r.table == table && r.operation == op && r.committed)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opened_and_wrapped_pools_attribute_the_same_rows() {
    for opened in [true, false] {
        let (_dir, pool) = pool(opened, 4).await;
        let scope = CallScope::new("book");
        let effects = scope.effects_handle();
        scope
            .run(async {
                for p in ["ann", "bob"] {
                    sqlx::query("INSERT INTO appointments (patient) VALUES (?)")
                        .bind(p)
                        .execute(&pool)
                        .await
                        .expect("insert");
                }
                sqlx::query("UPDATE appointments SET patient = upper(patient)")
                    .execute(&pool)
                    .await
                    .expect("update");
                sqlx::query("SELECT count(*) FROM appointments")
                    .fetch_one(&pool)
                    .await
                    .expect("select");
            })
            .await;
        let e = effects.snapshot();
        assert_eq!(e.statements.len(), 4, "opened {opened}");
        assert_eq!(
            rows(&e, "appointments", RowOperation::Insert),
            2,
            "{opened}"
        );
        // The trigger's rows too.
        assert_eq!(rows(&e, "audit_log", RowOperation::Insert), 2, "{opened}");
        assert_eq!(
            rows(&e, "appointments", RowOperation::Update),
            2,
            "{opened}"
        );
        assert_eq!(e.row_changes.len(), 6, "opened {opened}");
        // Every row change points at the statement that made it.
        let statements: Vec<Option<usize>> = e.row_changes.iter().map(|r| r.statement).collect();
        assert_eq!(statements, [0, 0, 1, 1, 2, 2].map(Some), "opened {opened}");
        assert!(
            e.statements[..3].iter().all(|s| s.observed),
            "opened {opened}: {:?}",
            e.statements
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn your_after_connect_runs_after_the_hooks_are_in() {
    let dir = tempfile::tempdir().expect("tempdir");
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let pool = AuditedPool::<Sqlite>::options()
        .after_connect(move |conn, _meta| {
            let counter = counter.clone();
            Box::pin(async move {
                counter.fetch_add(1, Ordering::SeqCst);
                // A per-connection setting: it must hold on every connection.
                conn.execute("PRAGMA recursive_triggers = ON").await?;
                Ok(())
            })
        })
        .connect_with(
            SqlitePoolOptions::new()
                .max_connections(3)
                .min_connections(3),
            options(&dir),
        )
        .await
        .expect("connect");
    pool.inner().execute(SCHEMA).await.expect("schema");
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(pool.acquire().await.expect("acquire"));
    }
    for conn in &mut held {
        let on: i64 = sqlx::query_scalar("PRAGMA recursive_triggers")
            .fetch_one(conn.inner_mut())
            .await
            .expect("pragma");
        assert_eq!(on, 1);
    }
    drop(held);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    // The callback did not replace the hooks.
    let scope = CallScope::new("note");
    let effects = scope.effects_handle();
    scope
        .run(sqlx::query("INSERT INTO notes (body) VALUES ('hello')").execute(&pool))
        .await
        .expect("insert");
    assert_eq!(rows(&effects.snapshot(), "notes", RowOperation::Insert), 1);

    // An error from the callback fails the connection, as in sqlx.
    let failing = AuditedPool::<Sqlite>::options()
        .after_connect(|conn, _meta| {
            Box::pin(async move { conn.execute("NOT SQL").await.map(drop) })
        })
        .connect_with(
            SqlitePoolOptions::new()
                .max_connections(1)
                .acquire_timeout(Duration::from_secs(1)),
            options(&dir),
        )
        .await;
    assert!(failing.is_err(), "{failing:?}");
}

/// A held connection's unscoped writes, and a transaction's, run while scoped pooled writes
/// hold the pool's writer: none of their rows may land in a pooled call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_connections_never_write_into_a_pooled_call() {
    for opened in [true, false] {
        let (_dir, pool) = pool(opened, 4).await;
        const CALLS: usize = 40;
        let held = {
            let pool = pool.clone();
            tokio::spawn(async move {
                let mut conn = pool.acquire().await.expect("acquire");
                for i in 0..CALLS {
                    sqlx::query("INSERT INTO notes (body) VALUES (?)")
                        .bind(format!("held {i}"))
                        .execute(&mut conn)
                        .await
                        .expect("held insert");
                    tokio::task::yield_now().await;
                }
            })
        };
        let tx = {
            let pool = pool.clone();
            tokio::spawn(async move {
                for i in 0..CALLS / 4 {
                    let mut tx = pool.begin().await.expect("begin");
                    for k in 0..4 {
                        sqlx::query("INSERT INTO notes (body) VALUES (?)")
                            .bind(format!("tx {i} {k}"))
                            .execute(&mut tx)
                            .await
                            .expect("tx insert");
                    }
                    tx.commit().await.expect("commit");
                }
            })
        };
        let mut calls = Vec::new();
        for i in 0..CALLS {
            let pool = pool.clone();
            let scope = CallScope::new(format!("book{i}"));
            let effects = scope.effects_handle();
            calls.push(tokio::spawn(async move {
                scope
                    .run(async {
                        sqlx::query("INSERT INTO appointments (patient) VALUES (?)")
                            .bind(format!("p{i}"))
                            .execute(&pool)
                            .await
                            .expect("insert");
                    })
                    .await;
                effects.snapshot()
            }));
        }
        for (i, call) in calls.into_iter().enumerate() {
            let e = call.await.expect("join");
            assert_eq!(
                (
                    rows(&e, "appointments", RowOperation::Insert),
                    rows(&e, "audit_log", RowOperation::Insert),
                    rows(&e, "notes", RowOperation::Insert),
                    e.row_changes.len()
                ),
                (1, 1, 0, 2),
                "opened {opened}, call {i}: {:?}",
                e.row_changes
            );
        }
        held.await.expect("held");
        tx.await.expect("tx");
        let notes: i64 = sqlx::query_scalar("SELECT count(*) FROM notes")
            .fetch_one(pool.inner())
            .await
            .expect("count");
        assert_eq!(notes, CALLS as i64 * 2);
    }
}

/// Another connection holds SQLite's write lock for a while, then commits.
async fn hold_write_lock(pool: &AuditedPool<Sqlite>) -> tokio::task::JoinHandle<()> {
    let raw = pool.inner().clone();
    let (locked, wait) = tokio::sync::oneshot::channel();
    let holder = tokio::spawn(async move {
        let mut tx = raw.begin().await.expect("holder begin");
        sqlx::query("INSERT INTO notes (body) VALUES ('holder')")
            .execute(&mut *tx)
            .await
            .expect("holder insert");
        locked.send(()).expect("signal");
        tokio::time::sleep(Duration::from_millis(300)).await;
        tx.commit().await.expect("holder commit");
    });
    wait.await.expect("holder locked");
    holder
}

/// Auditing must not change SQLite's locking. A transaction's first write waits for another
/// writer (the busy timeout) as it does unaudited; reading the column names for row images
/// before it, inside the transaction, made it fail at once with SQLITE_BUSY instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transactions_first_write_waits_for_another_writer() {
    // `None`: sqlx's own `begin()`; else the SQL that opens the transaction, as one statement
    // or inside a text of several.
    let begins = [None, Some("BEGIN"), Some("BEGIN; SELECT 1")];
    for (opened, raw_begin) in [true, false]
        .into_iter()
        .flat_map(|o| begins.map(|b| (o, b)))
    {
        let (_dir, pool) = pool(opened, 4).await;
        let holder = hold_write_lock(&pool).await;
        let scope = CallScope::new("book");
        let effects = scope.effects_handle();
        scope
            .run(async {
                let mut conn = pool.acquire().await.expect("acquire");
                let mut tx = match raw_begin {
                    Some(sql) => {
                        conn.execute(sql).await.expect("BEGIN");
                        None
                    }
                    None => Some(pool.begin().await.expect("begin")),
                };
                for sql in [
                    "INSERT INTO appointments (patient) VALUES ('b')",
                    "UPDATE appointments SET patient = 'c' WHERE patient = 'b'",
                ] {
                    match &mut tx {
                        Some(tx) => tx.execute(sql).await,
                        None => conn.execute(sql).await,
                    }
                    .unwrap_or_else(|e| panic!("{sql} (opened {opened}, {raw_begin:?}): {e}"));
                }
                match tx {
                    Some(tx) => tx.commit().await.expect("commit"),
                    None => drop(conn.execute("COMMIT").await.expect("COMMIT")),
                }
            })
            .await;
        holder.await.expect("holder");
        let e = effects.snapshot();
        let case = format!("opened {opened}, BEGIN {raw_begin:?}");
        assert_eq!(rows(&e, "appointments", RowOperation::Insert), 1, "{case}");
        assert_eq!(rows(&e, "audit_log", RowOperation::Insert), 1, "{case}");
        assert_eq!(rows(&e, "notes", RowOperation::Insert), 0, "{case}");
        let update: Vec<&RowImage> = e
            .row_changes
            .iter()
            .filter(|r| r.operation == RowOperation::Update && r.committed)
            .map(|r| &r.image)
            .collect();
        // With row images, the names were learned in time for the commit.
        let expected = if cfg!(feature = "preupdate-hook") {
            RowImage::Changed(vec!["patient".into()])
        } else {
            RowImage::Unknown
        };
        assert_eq!(update, [&expected], "{case}");
    }
}

/// Runs `edit` on a pool (opened or wrapped) whose `notes` table holds `rows` rows, in a call
/// scope; returns the committed row images of `notes` (built with the `preupdate-hook`
/// feature).
#[cfg(feature = "preupdate-hook")]
async fn notes_images<F>(opened: bool, rows: usize, edit: F) -> Vec<RowImage>
where
    F: AsyncFnOnce(&AuditedPool<Sqlite>),
{
    let (_dir, pool) = pool(opened, 2).await;
    for _ in 0..rows {
        pool.inner()
            .execute("INSERT INTO notes (body) VALUES ('a')")
            .await
            .expect("seed");
    }
    let scope = CallScope::new("edit");
    let effects = scope.effects_handle();
    scope.run(edit(&pool)).await;
    effects
        .snapshot()
        .row_changes
        .into_iter()
        .filter(|r| r.table == "notes" && r.committed)
        .map(|r| r.image)
        .collect()
}

/// After a transaction begun and committed as SQL on a held connection, its autocommit writes
/// learn column names before they run again, so the commit hook can name changed columns.
#[cfg(feature = "preupdate-hook")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_its_own_commit_a_held_connection_names_changed_columns() {
    for opened in [true, false] {
        let images = notes_images(opened, 1, async |pool| {
            let mut conn = pool.acquire().await.expect("acquire");
            for sql in [
                "BEGIN",
                "INSERT INTO appointments (patient) VALUES ('b')",
                "COMMIT",
                // Autocommit, and the first statement to touch `notes`.
                "UPDATE notes SET body = 'b'",
            ] {
                conn.execute(sql).await.expect(sql);
            }
        })
        .await;
        let named = RowImage::Changed(vec!["body".into()]);
        assert_eq!(images, [named], "opened {opened}");
    }
}

/// A write whose stream is dropped before it ends, inside a transaction, still has its changed
/// columns named at the commit: the names it owed are learned before the commit.
#[cfg(feature = "preupdate-hook")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_stream_dropped_in_a_transaction_still_names_changed_columns() {
    use futures_util::TryStreamExt;
    for opened in [true, false] {
        let images = notes_images(opened, 2, async |pool| {
            let mut tx = pool.begin().await.expect("begin");
            {
                // SQLite makes every change of a RETURNING statement on its first step.
                let mut rows =
                    sqlx::query("UPDATE notes SET body = body || '!' RETURNING id").fetch(&mut tx);
                rows.try_next().await.expect("first row").expect("a row");
            }
            tx.commit().await.expect("commit");
        })
        .await;
        let named = RowImage::Changed(vec!["body".into()]);
        assert_eq!(images, [named.clone(), named], "opened {opened}");
    }
}

/// Reads a stream whose statement may write (a function call hintaudit does not know to be
/// pure), and writes each row back through the pool inside the loop: the stream's statement
/// holds the pool's writer, and the write must not wait for it. Returns the rows updated.
async fn update_while_streaming(pool: &AuditedPool<Sqlite>) -> usize {
    use futures_util::TryStreamExt;
    use sqlx::Row;
    let work = async {
        let mut rows =
            sqlx::query("SELECT id, patient || sqlite_source_id() FROM appointments ORDER BY id")
                .fetch(pool);
        let mut n = 0;
        while let Some(row) = rows.try_next().await.expect("row") {
            sqlx::query("UPDATE appointments SET patient = 'seen' WHERE id = $1")
                .bind(row.get::<i64, _>(0))
                .execute(pool)
                .await
                .expect("update");
            n += 1;
        }
        n
    };
    tokio::time::timeout(Duration::from_secs(20), work)
        .await
        .expect("a pooled write while a stream holds the writer must not hang")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pooled_writes_go_on_while_a_stream_holds_the_writer() {
    for opened in [true, false] {
        let (_dir, pool) = pool(opened, 4).await;
        for i in 0..5 {
            sqlx::query("INSERT INTO appointments (patient) VALUES ($1)")
                .bind(format!("p{i}"))
                .execute(pool.inner())
                .await
                .expect("seed");
        }
        // Unscoped first: the writes bind their connections to nobody, and must leave them
        // falling back to the writer again, or the call below would lose its rows.
        assert_eq!(update_while_streaming(&pool).await, 5, "opened {opened}");
        let scope = CallScope::new("mark_seen");
        let effects = scope.effects_handle();
        let writes = async {
            let n = update_while_streaming(&pool).await;
            // Pooled writes after the stream, through whichever connections the pool hands out.
            for _ in 0..4 {
                sqlx::query("INSERT INTO notes (body) VALUES ('after')")
                    .execute(&pool)
                    .await
                    .expect("insert");
            }
            n
        };
        assert_eq!(scope.run(writes).await, 5, "opened {opened}");
        let e = effects.snapshot();
        assert_eq!(
            rows(&e, "appointments", RowOperation::Update),
            5,
            "opened {opened}: {e:?}"
        );
        assert_eq!(
            rows(&e, "notes", RowOperation::Insert),
            4,
            "opened {opened}: {e:?}"
        );
        let unattributed_updates = e
            .row_changes
            .iter()
            .filter(|r| r.statement.is_none())
            .count();
        assert_eq!(unattributed_updates, 0, "opened {opened}: {e:?}");
    }
}
