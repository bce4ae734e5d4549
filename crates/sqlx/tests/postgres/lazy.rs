//! A lazy pool (`AuditedPool::connect_lazy`, `connect_lazy_with`) on PostgreSQL, as sqlx's:
//! nothing is opened until a statement needs a connection, and the connections opened then
//! are audited like those of `connect`.

use hintaudit_core::{CallScope, Effect, Operation};
use hintaudit_sqlx::AuditedPool;

use crate::databases;

fn writes(e: &Effect, table: &str) -> usize {
    e.statements
        .iter()
        .filter(|s| s.operation == Operation::Insert && s.tables.iter().any(|t| t == table))
        .count()
}

#[tokio::test]
async fn a_lazy_postgres_pool_is_audited() {
    use sqlx::Postgres;
    use sqlx::postgres::PgConnectOptions;
    let url = databases::pg_url();
    let pool = AuditedPool::<Postgres>::connect_lazy_with(url.parse::<PgConnectOptions>().unwrap());
    assert_eq!(pool.size(), 0, "nothing opened yet");
    let table = format!("hintaudit_lazy_{}", std::process::id());
    let create = format!("CREATE TABLE {table} (id serial PRIMARY KEY, body text)");
    if let Err(e) = sqlx::query(sqlx::AssertSqlSafe(create))
        .execute(&pool)
        .await
    {
        databases::skip("PostgreSQL", &url, "HINTAUDIT_REQUIRE_PG", e);
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
