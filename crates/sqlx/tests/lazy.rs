//! Lazy pools (`AuditedPool::connect_lazy`, `connect_lazy_with`), as sqlx's: nothing is
//! opened until a statement needs a connection, and the connections opened then are audited
//! like those of `connect` (on SQLite, the hooks are in from the first statement). Against a
//! real SQLite file and a real PostgreSQL (`HINTAUDIT_PG_URL`; skipped with the reason
//! printed when unreachable, unless `HINTAUDIT_REQUIRE_PG` or `HINTAUDIT_REQUIRE_ALL` is set).

use hintaudit_core::{CallScope, Effect, Operation, RowOperation};
use hintaudit_sqlx::AuditedPool;

fn writes(e: &Effect, table: &str) -> usize {
    e.statements
        .iter()
        .filter(|s| s.operation == Operation::Insert && s.tables.iter().any(|t| t == table))
        .count()
}

#[cfg(feature = "sqlite")]
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

#[cfg(feature = "postgres")]
#[tokio::test]
async fn a_lazy_postgres_pool_is_audited() {
    use sqlx::Postgres;
    use sqlx::postgres::PgConnectOptions;
    let url = std::env::var("HINTAUDIT_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let pool = AuditedPool::<Postgres>::connect_lazy_with(url.parse::<PgConnectOptions>().unwrap());
    assert_eq!(pool.size(), 0, "nothing opened yet");
    let table = format!("hintaudit_lazy_{}", std::process::id());
    let create = format!("CREATE TABLE {table} (id serial PRIMARY KEY, body text)");
    if let Err(e) = sqlx::query(sqlx::AssertSqlSafe(create))
        .execute(&pool)
        .await
    {
        let required = ["HINTAUDIT_REQUIRE_PG", "HINTAUDIT_REQUIRE_ALL"]
            .iter()
            .any(|k| std::env::var(k).is_ok_and(|v| v == "1"));
        assert!(
            !required,
            "PostgreSQL is required here but unreachable: {e}"
        );
        eprintln!("skipped: PostgreSQL unreachable at {url}: {e}");
        return;
    }
    let scope = CallScope::new("add_note");
    let effects = scope.effects_handle();
    scope
        .run(async {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "INSERT INTO {table} (body) VALUES ('x')"
            )))
            .execute(&pool)
            .await
            .expect("insert");
        })
        .await;
    let e = effects.snapshot();
    assert_eq!(writes(&e, &table), 1, "{e:#?}");
    let by_url = AuditedPool::<Postgres>::connect_lazy(&url).expect("the URL parses");
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP TABLE {table}")))
        .execute(&by_url)
        .await
        .expect("drop");
}
