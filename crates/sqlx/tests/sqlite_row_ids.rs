//! Row ids from SQLite's update hook, as the judge reads them: a tool that inserts a row and
//! then fills in a computed column of that same row overwrites nothing, against a real file.

#![cfg(feature = "sqlite")]

use hintaudit_core::{CallScope, DeclaredHints, Judge, Policy, RowOperation, ToolCall};
use hintaudit_sqlx::AuditedPool;
use sqlx::{Executor, Sqlite};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filling_in_the_row_a_call_inserted_is_not_destructive() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("ids.db").display());
    let pool = AuditedPool::<Sqlite>::connect(&url).await.expect("connect");
    pool.inner()
        .execute(
            "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT); \
             INSERT INTO items (name) VALUES ('old');",
        )
        .await
        .expect("schema");
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
