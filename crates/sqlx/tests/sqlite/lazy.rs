//! Lazy pools (`AuditedPool::connect_lazy`, `connect_lazy_with`), as sqlx's: nothing is
//! opened until a statement needs a connection, and the connections opened then are audited
//! like those of `connect`: on SQLite, the hooks are in from the first statement (the
//! PostgreSQL case is in the postgres suite).

use hintaudit_core::{CallScope, Effect, Operation, RowOperation};
use hintaudit_sqlx::AuditedPool;

fn writes(e: &Effect, table: &str) -> usize {
    e.statements
        .iter()
        .filter(|s| s.operation == Operation::Insert && s.tables.iter().any(|t| t == table))
        .count()
}

#[tokio::test]
async fn a_lazy_sqlite_pool_opens_on_first_use_with_its_hooks() {
    use sqlx::Sqlite;
    use sqlx::sqlite::SqliteConnectOptions;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lazy.db");
    let url = format!("sqlite:{}?mode=rwc", path.display());
    let by_url = AuditedPool::<Sqlite>::connect_lazy(&url).expect("the URL parses");
    assert_eq!(by_url.size(), 0, "nothing opened yet");
    assert!(!path.exists(), "not even the file");
    assert!(AuditedPool::<Sqlite>::connect_lazy("sqlite:x.db?mode=bogus").is_err());
    sqlx::query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        .execute(&by_url)
        .await
        .expect("first use connects");
    assert!(by_url.size() >= 1);
    let by_options =
        AuditedPool::<Sqlite>::connect_lazy_with(SqliteConnectOptions::new().filename(&path));
    assert_eq!(by_options.size(), 0);
    for pool in [&by_url, &by_options] {
        let scope = CallScope::new("add_note");
        let effects = scope.effects_handle();
        scope
            .run(async {
                sqlx::query("INSERT INTO notes (body) VALUES ('x')")
                    .execute(pool)
                    .await
                    .expect("insert");
            })
            .await;
        let e = effects.snapshot();
        assert_eq!(writes(&e, "notes"), 1, "{e:#?}");
        // The update hook's row: the connection was hooked as it connected.
        let inserted = e
            .row_changes
            .iter()
            .filter(|r| r.table == "notes" && r.operation == RowOperation::Insert)
            .count();
        assert_eq!(inserted, 1, "{e:#?}");
    }
}
