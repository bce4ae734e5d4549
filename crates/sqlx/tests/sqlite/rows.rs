//! What the audited pool reports of the rows a statement touched, against a real SQLite file:
//! the update hook's row ids, as the judge reads them (a tool that inserts a row and then
//! fills in a computed column of that same row overwrites nothing), `fetch_optional`
//! stopping at the first row as plain sqlx does, and the rows a helper over sqlx's `Acquire`
//! changes inside a call landing in that call and no other.

#![cfg(feature = "sqlite")]

use hintaudit_core::{CallScope, DeclaredHints, Judge, Operation, Policy, RowOperation, ToolCall};
use hintaudit_sqlx::AuditedPool;
use sqlx::{Acquire, Executor, Sqlite};
use tempfile::TempDir;

/// A pool hintaudit opens on a new file, with `schema` in place.
async fn pool(schema: &'static str) -> (TempDir, AuditedPool<Sqlite>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("rows.db").display());
    let pool = AuditedPool::<Sqlite>::connect(&url).await.expect("connect");
    pool.inner().execute(schema).await.expect("schema");
    (dir, pool)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filling_in_the_row_a_call_inserted_is_not_destructive() {
    let (_dir, pool) = pool(
        "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT); \
         INSERT INTO items (name) VALUES ('old');",
    )
    .await;
    // A "create" declared not destructive; then an "edit" that is, unless it says so.
    let hints = DeclaredHints {
        read_only: Some(false),
        destructive: Some(false),
        idempotent: None,
        open_world: Some(false),
    };
    let judge = Judge::new(Policy::default());
    for (tool, edit_own_row, expected) in [
        ("create_item", true, vec![]),
        (
            "create_item_and_rename_first",
            false,
            vec!["undeclared_destructive"],
        ),
    ] {
        let scope = CallScope::new(tool);
        let effects = scope.effects_handle();
        scope
            .run(async {
                let id: i64 =
                    sqlx::query_scalar("INSERT INTO items (name) VALUES ('new') RETURNING id")
                        .fetch_one(&pool)
                        .await
                        .expect("insert");
                let target = if edit_own_row { id } else { 1 };
                sqlx::query("UPDATE items SET name = 'item ' || id WHERE id = $1")
                    .bind(target)
                    .execute(&pool)
                    .await
                    .expect("update");
            })
            .await;
        let e = effects.snapshot();
        let ops: Vec<(RowOperation, bool)> = e
            .row_changes
            .iter()
            .map(|r| (r.operation, r.row_id.is_some()))
            .collect();
        assert_eq!(
            ops,
            [(RowOperation::Insert, true), (RowOperation::Update, true)],
            "{tool}: {e:?}"
        );
        let verdict = judge.judge(&ToolCall {
            tool,
            hints,
            arguments: None,
            effect: &e,
        });
        let rules: Vec<&str> = verdict.findings.iter().map(|f| f.rule.as_str()).collect();
        assert_eq!(rules, expected, "{tool}: {verdict:?}");
    }
}

/// `fetch_optional` and `fetch_one` stop at the first row, as they do unaudited: in a text of
/// several statements, those after the row never run. A write that returned a row while the
/// hooks saw none (WITHOUT ROWID) is not marked observed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_optional_stops_at_the_first_row() {
    let (_dir, pool) = pool(
        "CREATE TABLE appointments (id INTEGER PRIMARY KEY, patient TEXT NOT NULL UNIQUE); \
         INSERT INTO appointments (patient) VALUES ('a'), ('b'); \
         CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID;",
    )
    .await;
    let scope = CallScope::new("peek");
    let effects = scope.effects_handle();
    let (first, key) = scope
        .run(async {
            let first: Option<i64> = sqlx::query_scalar(
                "SELECT id FROM appointments WHERE patient = 'a'; \
                 DELETE FROM appointments WHERE patient = 'b'",
            )
            .fetch_optional(&pool)
            .await
            .expect("select");
            let key: String = sqlx::query_scalar("INSERT INTO kv VALUES ('k', 'v') RETURNING k")
                .fetch_one(&pool)
                .await
                .expect("kv");
            (first, key)
        })
        .await;
    assert!(first.is_some());
    assert_eq!(key, "k");
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM appointments")
        .fetch_one(pool.inner())
        .await
        .expect("count");
    assert_eq!(left, 2, "the DELETE after the first row must not run");
    let e = effects.snapshot();
    let deletes = e
        .row_changes
        .iter()
        .filter(|r| r.table == "appointments" && r.operation == RowOperation::Delete && r.committed)
        .count();
    assert_eq!(deletes, 0, "{e:?}");
    assert_eq!(e.statements[1].operation, Operation::Insert, "{e:?}");
    assert!(!e.statements[1].observed, "{e:?}");
}

/// A helper in plain sqlx style: deletes a row through whatever it can acquire.
async fn delete_item(db: impl Acquire<'_, Database = Sqlite>, id: i64) -> Result<(), sqlx::Error> {
    let mut conn = db.acquire().await?;
    sqlx::query("DELETE FROM items WHERE id = ?")
        .bind(id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// The same in a sqlx transaction it begins through `Acquire::begin`.
async fn delete_item_in_tx(
    db: impl Acquire<'_, Database = Sqlite>,
    id: i64,
) -> Result<(), sqlx::Error> {
    let mut tx = db.begin().await?;
    sqlx::query("DELETE FROM items WHERE id = ?")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await
}

/// Inside a call, rows a helper over `impl Acquire` deletes through `&pool` (the driver's
/// connection) or through `&mut conn` (`Acquire::begin`'s sqlx transaction) are the call's,
/// with confirmed row evidence: a tool declared not destructive gets
/// `undeclared_destructive`. A concurrent call that writes through the pool (holding the
/// pool's writer) gets none of them. Both acquires are counted and noted on the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_through_acquire_inside_a_call_are_that_calls() {
    const N: i64 = 20;
    let (_dir, pool) = pool(
        "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT); \
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40) \
         INSERT INTO items (id, name) SELECT i, 'old' FROM n;",
    )
    .await;
    let before = hintaudit_core::stats().unaudited_acquires();
    let deleter = CallScope::new("archive_items");
    let deleter_effects = deleter.effects_handle();
    let writer = CallScope::new("add_items");
    let writer_effects = writer.effects_handle();
    let deleting = deleter.run(async {
        for id in 1..=N {
            delete_item(&pool, id).await.expect("delete through &pool");
            tokio::task::yield_now().await;
        }
        let mut conn = pool.acquire().await.expect("acquire");
        delete_item_in_tx(&mut conn, N + 1)
            .await
            .expect("delete through &mut conn");
    });
    let writing = writer.run(async {
        for _ in 0..N {
            sqlx::query("INSERT INTO items (name) VALUES ('new')")
                .execute(&pool)
                .await
                .expect("insert");
            tokio::task::yield_now().await;
        }
    });
    tokio::join!(deleting, writing);
    let count = |e: &hintaudit_core::Effect, op| {
        e.row_changes
            .iter()
            .filter(|r| r.table == "items" && r.operation == op && r.committed)
            .count()
    };
    let d = deleter_effects.snapshot();
    let w = writer_effects.snapshot();
    assert_eq!(count(&d, RowOperation::Delete), N as usize + 1, "{d:?}");
    assert_eq!(count(&d, RowOperation::Insert), 0, "{d:?}");
    assert!(d.row_changes.iter().all(|r| r.statement.is_none()), "{d:?}");
    assert_eq!(d.unaudited_acquires, N as u32 + 1, "{d:?}");
    assert!(
        d.summary().contains("not audited one by one"),
        "{}",
        d.summary()
    );
    assert_eq!(count(&w, RowOperation::Delete), 0, "{w:?}");
    assert_eq!(count(&w, RowOperation::Insert), N as usize, "{w:?}");
    assert_eq!(w.unaudited_acquires, 0, "{w:?}");
    assert!(hintaudit_core::stats().unaudited_acquires() > before + N as u64);
    let verdict = Judge::new(Policy::default()).judge(&ToolCall {
        tool: "archive_items",
        hints: DeclaredHints {
            read_only: Some(false),
            destructive: Some(false),
            idempotent: None,
            open_world: Some(false),
        },
        arguments: None,
        effect: &d,
    });
    let rules: Vec<&str> = verdict.findings.iter().map(|f| f.rule.as_str()).collect();
    assert_eq!(rules, ["undeclared_destructive"], "{verdict:?}");
}
