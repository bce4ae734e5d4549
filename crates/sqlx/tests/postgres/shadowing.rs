//! Catalog names the audited session shadows ([design: pitfalls]): a temporary view named
//! `pg_locks` or `pg_class` (the session's temporary schema is searched first for relations),
//! or a schema placed before `pg_catalog` in `search_path` holding functions and operators of
//! the catalog's names. The oracle and the catalog lookups name everything in `pg_catalog`,
//! so writes on such a session are still recorded, and enforce mode still makes it read-only.
//!
//! [design: pitfalls]: ../../../../docs/design.md#7-known-pitfalls-checked-against-rmcp-311-sqlx-09-postgresql-15

use hintaudit_core::Enforcement;

use super::acquire::{book, log_and_appointments, one_connection};
use super::*;

/// An empty `pg_locks`, and a `pg_class` that shows the view `viewed` (over `mark_viewed`,
/// which inserts) as a plain table.
const TEMP_VIEWS: &str = "
CREATE VIEW viewed AS SELECT mark_viewed(1) AS page;
CREATE TEMP VIEW pg_locks AS SELECT * FROM pg_catalog.pg_locks WHERE false;
CREATE TEMP VIEW pg_class AS SELECT c.oid, c.relname, c.relnamespace,
  CASE WHEN c.relname = 'viewed' THEN 'r'::\"char\" ELSE c.relkind END AS relkind,
  c.relrowsecurity, c.relpersistence, c.relhasrules, c.relhassubclass
  FROM pg_catalog.pg_class AS c;
";

/// The audited pool's one connection, after `sql` ran on it unaudited.
async fn shadowed(db: &Db, sql: &str) -> AuditedPool<Postgres> {
    let pool = one_connection(
        db,
        AuditedPool::options().with_postgres_oracle(PgOracle::Writes),
    )
    .await;
    pool.inner()
        .execute(sqlx::AssertSqlSafe(sql.to_owned()))
        .await
        .expect("shadow");
    pool
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_temporary_pg_locks_does_not_hide_a_write() {
    let Some(db) = db(PgOracle::Writes, SETUP).await else {
        return;
    };
    let pool = shadowed(&db, TEMP_VIEWS).await;
    for in_tx in [false, true] {
        let e = book(&pool, "ann", in_tx).await;
        assert_eq!(log_and_appointments(&e), (1, 1), "in_tx {in_tx}: {e:?}");
    }
    pool.close().await;
    db.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_temporary_pg_class_does_not_prove_a_writing_view_read_only() {
    let Some(db) = db(PgOracle::Writes, SETUP).await else {
        return;
    };
    let pool = shadowed(&db, TEMP_VIEWS).await;
    let scope = CallScope::new("list_views");
    let effects = scope.effects_handle();
    let page: i32 = scope
        .run(sqlx::query_scalar("SELECT page FROM viewed").fetch_one(&pool))
        .await
        .expect("select");
    assert_eq!(page, 1);
    let e = effects.snapshot();
    assert!(e.statements[0].observed, "{e:?}");
    assert_eq!(
        table(&e, "page_views").map(|t| t.inserted),
        Some(1),
        "{e:?}"
    );
    pool.close().await;
    db.drop_schema().await;
}

/// Each row: what a schema placed before `pg_catalog` holds (`{evil}` its name), each
/// enough on its own to hide the write from unqualified names.
const EVIL: [(&str, &str); 2] = [
    (
        "functions",
        "CREATE FUNCTION {evil}.pg_stat_get_xact_tuples_inserted(oid) RETURNS int8
           LANGUAGE sql AS 'SELECT 0::pg_catalog.int8';
         CREATE FUNCTION {evil}.pg_stat_get_xact_tuples_updated(oid) RETURNS int8
           LANGUAGE sql AS 'SELECT 0::pg_catalog.int8';
         CREATE FUNCTION {evil}.pg_stat_get_xact_tuples_deleted(oid) RETURNS int8
           LANGUAGE sql AS 'SELECT 0::pg_catalog.int8';",
    ),
    (
        "operator",
        "CREATE FUNCTION {evil}.never(int8, int4) RETURNS bool LANGUAGE sql AS 'SELECT false';
         CREATE OPERATOR {evil}.> (LEFTARG = int8, RIGHTARG = int4, FUNCTION = {evil}.never);",
    ),
];

/// A schema `<test schema>_evil` holding `ddl` (its name written `{evil}`), and the `SET`
/// that places it before the test schema and `pg_catalog`.
async fn evil_schema(db: &Db, ddl: &str) -> (String, String) {
    let evil = format!("{}_evil", db.schema);
    let setup = format!("CREATE SCHEMA {evil}; {}", ddl.replace("{evil}", &evil));
    db.admin
        .execute(sqlx::AssertSqlSafe(setup))
        .await
        .expect("evil schema");
    let set = format!("SET search_path = {evil}, {}, pg_catalog", db.schema);
    (evil, set)
}

async fn drop_evil(db: Db, evil: &str) {
    let drop = format!("DROP SCHEMA {evil} CASCADE");
    db.admin
        .execute(sqlx::AssertSqlSafe(drop))
        .await
        .expect("drop evil");
    db.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_before_pg_catalog_does_not_hide_a_write() {
    for (what, ddl) in EVIL {
        let Some(db) = db(PgOracle::Writes, SETUP).await else {
            return;
        };
        let (evil, set) = evil_schema(&db, ddl).await;
        let pool = shadowed(&db, &set).await;
        for in_tx in [false, true] {
            let e = book(&pool, "ann", in_tx).await;
            assert_eq!(
                log_and_appointments(&e),
                (1, 1),
                "{what}, in_tx {in_tx}: {e:?}"
            );
        }
        pool.close().await;
        drop_evil(db, &evil).await;
    }
}

/// Enforce mode makes the session read-only with `set_config`: a shadowing `set_config` that
/// sets nothing must not let a read-only call's hidden write through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_before_pg_catalog_does_not_switch_enforce_mode_off() {
    const FAKE: &str = "CREATE FUNCTION {evil}.set_config(text, text, bool) RETURNS text
        LANGUAGE sql AS 'SELECT $2';";
    let Some(db) = db(PgOracle::Writes, SETUP).await else {
        return;
    };
    let (evil, set) = evil_schema(&db, FAKE).await;
    let pool = shadowed(&db, &set).await;
    let scope = CallScope::new("get_page").with_enforcement(Enforcement {
        read_only: true,
        ..Enforcement::NONE
    });
    let write = scope
        .run(sqlx::query("SELECT mark_viewed(1)").execute(&pool))
        .await;
    let e = write.expect_err("refused by PostgreSQL");
    assert!(e.to_string().contains("read-only transaction"), "{e}");
    let views: i64 = sqlx::query_scalar("SELECT count(*) FROM page_views")
        .fetch_one(pool.inner())
        .await
        .expect("count");
    assert_eq!(views, 0, "nothing was inserted");
    pool.close().await;
    drop_evil(db, &evil).await;
}
