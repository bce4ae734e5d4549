//! The fixture's planted lies found live through the proxy on MariaDB (ROW binary log),
//! overlapping calls of two sessions each given its own commit (the writer triggers name the
//! connection), and another writer's write outside calls foreign.

use serde_json::json;
use sqlx::MySqlPool;

use crate::holds::Holds;
use crate::support::*;

pub(crate) fn mysql_url() -> String {
    std::env::var("HINTAUDIT_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".into())
}

pub(crate) async fn mysql_or_skip() -> Option<MySqlPool> {
    match MySqlPool::connect(&mysql_url()).await {
        Ok(p) => Some(p),
        Err(e) if hintaudit_test_support::required("HINTAUDIT_REQUIRE_MYSQL") => {
            panic!("MySQL/MariaDB required (HINTAUDIT_REQUIRE_MYSQL) but unreachable: {e}")
        }
        Err(e) => {
            eprintln!("skipped: MySQL/MariaDB unreachable at {}: {e}", mysql_url());
            None
        }
    }
}

/// Runs `statements` on the server, in order.
pub(crate) async fn exec(admin: &MySqlPool, statements: impl IntoIterator<Item = String>) {
    for sql in statements {
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql.clone()))
            .execute(admin)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

/// MariaDB and Python, or `None` after a printed skip.
pub(crate) async fn my_parts() -> Option<(MySqlPool, &'static str)> {
    let admin = mysql_or_skip().await?;
    let py = python_or_skip()?;
    Some((admin, py))
}

/// A new, empty database named `name` on the server; its URL.
pub(crate) async fn fresh_my_db(admin: &MySqlPool, name: &str) -> String {
    exec(
        admin,
        [
            format!("DROP DATABASE IF EXISTS {name}"),
            format!("CREATE DATABASE {name}"),
        ],
    )
    .await;
    format!("{}/{name}", mysql_url().trim_end_matches('/'))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_lies_are_found_live_on_mariadb_from_the_binary_log() {
    let Some((admin, py)) = my_parts().await else {
        return;
    };
    let name = "hintaudit_proxy_my";
    let db = fresh_my_db(&admin, name).await;
    // archive_item deletes, then stays in flight until the test releases it: calls of other
    // tools overlap it.
    let mut holds = Holds::new(name);
    let upstream = fixture(
        py,
        &db,
        &format!("FIXTURE_HOLD_AFTER={}", holds.env("archive_item")),
    );
    // The capture's wait is an upper bound (a call's answer waits for the log at most that
    // long): room for a loaded machine, where each session's own upstream child starts too.
    let args = [
        "--stdio",
        &upstream,
        "--database",
        &db,
        "--capture-wait-ms",
        "30000",
    ];
    let (_proxy, addr) = proxy_http(&args).await;
    let url = format!("http://{addr}/mcp");
    let client = http_client(&url).await;
    client.list_all_tools().await.expect("tools/list");
    let a = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
    call(&client, "get_item", a(json!({"id": 1}))).await;
    let slow = tokio::spawn(async move {
        let c = http_client(&url).await;
        let a = json!({"id": 2}).as_object().cloned().unwrap_or_default();
        call(&c, "archive_item", a).await
    });
    // Once archive_item's DELETE has committed, get_item's UPDATE commits while it is in
    // flight: by position a set of two tools, but its writer is get_item's session's child.
    for _ in 0..400 {
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT count(*) FROM {name}.items WHERE id = 2"
        )))
        .fetch_one(&admin)
        .await
        .expect("count");
        if n == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let held = holds.held(1).await;
    call(&client, "get_item", a(json!({"id": 3}))).await;
    assert!(!slow.is_finished(), "archive_item answered while held");
    held.iter().for_each(|h| holds.release(h));
    slow.await.expect("archive_item answered");
    call(&client, "add_note", a(json!({"id": 9, "text": "nine"}))).await;
    call(
        &client,
        "read_query",
        a(json!({"query": "SELECT * FROM items"})),
    )
    .await;

    let s = metrics(addr).await;
    assert_eq!(
        violations(&s, "get_item", "read_only_write"),
        2.0,
        "{}",
        s.text
    );
    assert_eq!(
        violations(&s, "archive_item", "undeclared_destructive"),
        1.0
    );
    assert_eq!(commits(&s, "ambiguous"), 0.0, "{}", s.text);
    let archive_updates = s.value(
        "hintaudit_tool_row_changes_total",
        &[
            ("tool", "archive_item"),
            ("table", "items"),
            ("operation", "update"),
        ],
    );
    assert_eq!(archive_updates.unwrap_or(0.0), 0.0, "not archive_item's");
    for honest in ["add_note", "read_query"] {
        for rule in ["read_only_write", "undeclared_destructive"] {
            assert_eq!(violations(&s, honest, rule), 0.0, "{honest} {rule}");
        }
    }
    let inserted = s.value(
        "hintaudit_tool_row_changes_total",
        &[
            ("tool", "add_note"),
            ("table", "notes"),
            ("operation", "insert"),
        ],
    );
    assert_eq!(inserted, Some(1.0), "{}", s.text);
    let lag = s.value("hintaudit_capture_lag_bytes", &[("backend", "mysql")]);
    assert!(lag.is_some(), "{}", s.text);

    // Another writer's write (this test's connection, no child's), while no call is in
    // flight: it names its writer, which is not the upstream's, so it is foreign. Writes to
    // other databases on the same server are not this proxy's at all.
    let before = commits(&s, "foreign");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "INSERT INTO {name}.notes (id, text) VALUES (100, 'cron')"
    )))
    .execute(&admin)
    .await
    .expect("background write");
    let s = until(addr, |s| commits(s, "foreign") > before).await;
    assert_eq!(commits(&s, "foreign"), before + 1.0, "{}", s.text);
    drop(client);
    exec(&admin, [format!("DROP DATABASE IF EXISTS {name}")]).await;
}

/// Positions are server-wide: another database's writers move the binary log on during
/// every call. The calls' own commits still fall in their intervals (attributed, the lies
/// found), the other database's commits are no commit of this proxy's (neither
/// unattributed nor ambiguous), and none is dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_writers_on_the_same_server_change_nothing() {
    let Some(admin) = mysql_or_skip().await else {
        return;
    };
    let Some(py) = python_or_skip() else {
        return;
    };
    let (name, other) = ("hintaudit_proxy_my_busy", "hintaudit_proxy_my_other");
    exec(
        &admin,
        [
            format!("DROP DATABASE IF EXISTS {name}"),
            format!("CREATE DATABASE {name}"),
            format!("DROP DATABASE IF EXISTS {other}"),
            format!("CREATE DATABASE {other}"),
            format!("CREATE TABLE {other}.t (id INT AUTO_INCREMENT PRIMARY KEY, n INT)"),
        ],
    )
    .await;
    let db = format!("{}/{name}", mysql_url().trim_end_matches('/'));
    let (_proxy, addr) = proxy_http(&["--stdio", &fixture(py, &db, ""), "--database", &db]).await;
    let client = http_client(&format!("http://{addr}/mcp")).await;
    client.list_all_tools().await.expect("tools/list");
    let a = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
    // The fixture's seed committed before this first call: read by its end.
    call(&client, "read_query", a(json!({"query": "SELECT 1"}))).await;
    let before = metrics(addr).await;

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (admin, stop) = (admin.clone(), stop.clone());
        tokio::spawn(async move {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                    "INSERT INTO {other}.t (n) VALUES ({n})"
                )))
                .execute(&admin)
                .await
                .expect("the other database's write");
                n += 1;
            }
            n
        })
    };
    for id in 1..=3 {
        call(&client, "get_item", a(json!({"id": id}))).await;
    }
    call(&client, "archive_item", a(json!({"id": 4}))).await;
    call(&client, "add_note", a(json!({"id": 9, "text": "nine"}))).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let other_writes = writer.await.expect("writer");
    assert!(other_writes > 0, "the other database was written to");

    let s = metrics(addr).await;
    assert_eq!(
        violations(&s, "get_item", "read_only_write"),
        3.0,
        "{}",
        s.text
    );
    assert_eq!(
        violations(&s, "archive_item", "undeclared_destructive"),
        1.0
    );
    let inserted = s.value(
        "hintaudit_tool_row_changes_total",
        &[
            ("tool", "add_note"),
            ("table", "notes"),
            ("operation", "insert"),
        ],
    );
    assert_eq!(inserted, Some(1.0), "{}", s.text);
    for outcome in ["unattributed", "ambiguous", "dropped"] {
        assert_eq!(
            commits(&s, outcome),
            commits(&before, outcome),
            "{outcome}: {} other commits\n{}",
            other_writes,
            s.text
        );
    }
    assert_eq!(
        commits(&s, "attributed") - commits(&before, "attributed"),
        5.0
    );
    drop(client);
    exec(
        &admin,
        [name, other].map(|db| format!("DROP DATABASE IF EXISTS {db}")),
    )
    .await;
}
