//! Attribution by writer on MariaDB: the checks of writers.rs (4 and 16 concurrent clients,
//! two proxies on one database) through the writer triggers and the binary log; and a table
//! created while the proxy runs, which gets the triggers when its `CREATE TABLE` is read.

use serde_json::json;

use crate::mariadb::{exec, mysql_or_skip};
use crate::support::*;
use crate::writers::{Server, concurrent_clients, two_proxies};

/// MariaDB and Python, or `None` after a printed skip.
async fn parts() -> Option<(Server, &'static str)> {
    let admin = mysql_or_skip().await?;
    let py = python_or_skip()?;
    Some((Server::My(admin), py))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_concurrent_clients_each_commit_is_exactly_its_calls_on_mariadb() {
    if let Some((server, py)) = parts().await {
        concurrent_clients(server, py, 4, 3).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_concurrent_clients_each_commit_is_exactly_its_calls_on_mariadb() {
    if let Some((server, py)) = parts().await {
        concurrent_clients(server, py, 16, 2).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_proxies_on_one_mariadb_database_never_blame_their_calls_for_the_others_writes() {
    if let Some((server, py)) = parts().await {
        two_proxies(server, py).await;
    }
}

/// Waits until `table` of `db` has the three writer triggers (at most 20 s).
async fn watched(admin: &sqlx::MySqlPool, db: &str, table: &str) {
    for _ in 0..200 {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? \
             AND EVENT_OBJECT_TABLE = ? AND TRIGGER_NAME LIKE 'hintaudit\\_writer\\_%'",
        )
        .bind(db)
        .bind(table)
        .fetch_one(admin)
        .await
        .expect("TRIGGERS");
        if n == 3 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{db}.{table} never got its writer triggers");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_created_later_gets_the_writer_triggers_when_the_log_shows_it() {
    let Some(admin) = mysql_or_skip().await else {
        return;
    };
    let Some(py) = python_or_skip() else {
        return;
    };
    let name = "hintaudit_proxy_my_later";
    let server = Server::My(admin.clone());
    let db = server.seeded(name, py).await;
    let (_proxy, addr) = proxy_http(&["--stdio", &fixture(py, &db, ""), "--database", &db]).await;
    let client = http_client(&format!("http://{addr}/mcp")).await;
    // A call: the proxy knows its session's child, so it can tell other writers from it.
    call(&client, "read_query", args(json!({"query": "SELECT 1"}))).await;

    // Another writer makes a table and writes to it once the triggers are on, with no call
    // in flight: its commit names that writer, so it is foreign (without a trigger it would
    // name none, and be unattributed).
    exec(
        &admin,
        [format!(
            "CREATE TABLE {name}.later (id INT PRIMARY KEY) ENGINE = InnoDB"
        )],
    )
    .await;
    watched(&admin, name, "later").await;
    exec(&admin, [format!("INSERT INTO {name}.later VALUES (1)")]).await;
    let s = until(addr, |s| commits(s, "foreign") >= 1.0).await;
    assert_eq!(commits(&s, "foreign"), 1.0, "{}", s.text);
    assert_eq!(commits(&s, "unattributed"), 0.0, "{}", s.text);

    // The server's own write to it is its call's.
    let answer = call(
        &client,
        "write_query",
        args(json!({"query": "INSERT INTO later VALUES (2)"})),
    )
    .await;
    assert_eq!(answer["content"][0]["text"], "Affected rows: 1", "{answer}");
    let s = metrics(addr).await;
    assert_eq!(
        rows(&s, "write_query", "later", "insert"),
        1.0,
        "{}",
        s.text
    );
    assert_eq!(commits(&s, "foreign"), 1.0, "{}", s.text);
    client.cancel().await.ok();
    server.drop(name).await;
}
