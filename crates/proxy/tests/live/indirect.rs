//! Writes the server's SQL does not spell out, seen in the database's log through the proxy:
//! a function a read-only tool's `SELECT` calls, a trigger, and a foreign key's cascade, on
//! PostgreSQL and on MariaDB. The log shows what the database did, not what the server's
//! SQL says: a `SELECT` that writes is a write.

use std::net::SocketAddr;

use hintaudit_test_support::scrape::Scraped;
use serde_json::json;

use crate::mariadb::{exec, mysql_or_skip, mysql_url};
use crate::support::*;

/// What the three calls below changed, as `hintaudit_tool_row_changes_total{tool, table,
/// operation}`.
fn changes(s: &Scraped, tool: &str, table: &str, operation: &str) -> f64 {
    s.value(
        "hintaudit_tool_row_changes_total",
        &[("tool", tool), ("table", table), ("operation", operation)],
    )
    .unwrap_or(0.0)
}

/// The calls, once the objects are in place: `read_query` runs `SELECT bump()` (a function
/// that updates every item), `add_note` inserts a note (a trigger copies it to
/// notes_audit), `archive_item` deletes item 3 (two item_tags rows reference it, `ON DELETE
/// CASCADE`). Returns the proxy's metrics after them.
async fn calls(client: &Client, addr: SocketAddr, bump: &str) -> Scraped {
    let a = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
    let answer = call(client, "read_query", a(json!({ "query": bump }))).await;
    assert_eq!(answer["content"][0]["text"], "[[1]]", "{answer}");
    call(client, "add_note", a(json!({"id": 9, "text": "nine"}))).await;
    call(client, "archive_item", a(json!({"id": 3}))).await;
    metrics(addr).await
}

/// What both backends show: the function's update is the read-only tool's write, the
/// trigger's insert is the tool's that fired it.
fn assert_function_and_trigger(s: &Scraped) {
    assert_eq!(
        violations(s, "read_query", "read_only_write"),
        1.0,
        "a SELECT that writes through a function is a write\n{}",
        s.text
    );
    assert_eq!(
        changes(s, "read_query", "items", "update"),
        4.0,
        "{}",
        s.text
    );
    assert_eq!(changes(s, "add_note", "notes", "insert"), 1.0);
    assert_eq!(
        changes(s, "add_note", "notes_audit", "insert"),
        1.0,
        "the trigger's row"
    );
    assert_eq!(changes(s, "archive_item", "items", "delete"), 1.0);
    assert_eq!(violations(s, "add_note", "read_only_write"), 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn functions_triggers_and_cascades_on_postgresql() {
    let Some((admin, py)) = parts().await else {
        return;
    };
    let name = "hintaudit_proxy_indirect";
    let db = fresh_db(&admin, name).await;
    let (_proxy, addr) = proxy_http(&["--stdio", &fixture(py, &db, ""), "--database", &db]).await;
    let client = http_client(&format!("http://{addr}/mcp")).await;
    client.list_all_tools().await.expect("tools/list");
    // The fixture made its tables before it answered tools/list.
    let pool = sqlx::PgPool::connect(&db).await.expect("connect");
    sqlx::raw_sql(
        "CREATE TABLE public.notes_audit (note_id integer NOT NULL);
         CREATE FUNCTION public.audit_note() RETURNS trigger LANGUAGE plpgsql AS
           $$ BEGIN INSERT INTO public.notes_audit (note_id) VALUES (NEW.id); RETURN NEW; END $$;
         CREATE TRIGGER notes_audit AFTER INSERT ON public.notes
           FOR EACH ROW EXECUTE FUNCTION public.audit_note();
         CREATE FUNCTION public.bump() RETURNS integer LANGUAGE plpgsql AS
           $$ BEGIN UPDATE public.items SET qty = qty + 1; RETURN 1; END $$;
         CREATE TABLE public.item_tags (
           item_id integer NOT NULL REFERENCES public.items (id) ON DELETE CASCADE,
           tag text NOT NULL);
         INSERT INTO public.item_tags VALUES (3, 'brass'), (3, 'antique'), (1, 'iron');",
    )
    .execute(&pool)
    .await
    .expect("the function, the trigger and the cascade");

    let s = calls(&client, addr, "SELECT public.bump()").await;
    assert_function_and_trigger(&s);
    // Logical decoding carries the rows a cascade deleted like any other.
    assert_eq!(
        changes(&s, "archive_item", "item_tags", "delete"),
        2.0,
        "{}",
        s.text
    );
    pool.close().await;
    client.cancel().await.ok();
    drop_db(&admin, name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn functions_and_triggers_on_mariadb_and_what_a_cascade_hides() {
    let Some(admin) = mysql_or_skip().await else {
        return;
    };
    let Some(py) = python_or_skip() else {
        return;
    };
    let name = "hintaudit_proxy_my_indirect";
    let drop_sql = format!("DROP DATABASE IF EXISTS {name}");
    exec(
        &admin,
        [drop_sql.clone(), format!("CREATE DATABASE {name}")],
    )
    .await;
    let db = format!("{}/{name}", mysql_url().trim_end_matches('/'));
    let (_proxy, addr) = proxy_http(&["--stdio", &fixture(py, &db, ""), "--database", &db]).await;
    let client = http_client(&format!("http://{addr}/mcp")).await;
    client.list_all_tools().await.expect("tools/list");
    exec(
        &admin,
        [
            "CREATE TABLE {db}.notes_audit (note_id INT NOT NULL)",
            "CREATE TRIGGER {db}.notes_audit AFTER INSERT ON {db}.notes \
             FOR EACH ROW INSERT INTO {db}.notes_audit (note_id) VALUES (NEW.id)",
            "CREATE FUNCTION {db}.bump() RETURNS INT MODIFIES SQL DATA \
             BEGIN UPDATE {db}.items SET qty = qty + 1; RETURN 1; END",
            "CREATE TABLE {db}.item_tags (item_id INT NOT NULL, tag TEXT NOT NULL, \
             FOREIGN KEY (item_id) REFERENCES {db}.items (id) ON DELETE CASCADE) ENGINE = InnoDB",
            "INSERT INTO {db}.item_tags VALUES (3, 'brass'), (3, 'antique'), (1, 'iron')",
        ]
        .map(|sql| sql.replace("{db}", name)),
    )
    .await;

    let s = calls(&client, addr, "SELECT bump()").await;
    assert_function_and_trigger(&s);
    // InnoDB applies a foreign key's cascade below the binary log: a replica repeats it
    // itself, so the log holds the parent's delete only. What the proxy cannot see.
    assert_eq!(
        changes(&s, "archive_item", "item_tags", "delete"),
        0.0,
        "{}",
        s.text
    );
    let left: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT count(*) FROM {name}.item_tags WHERE item_id = 3"
    )))
    .fetch_one(&admin)
    .await
    .expect("count");
    assert_eq!(left, 0, "the cascade did delete them");
    drop(client);
    exec(&admin, [drop_sql]).await;
}
