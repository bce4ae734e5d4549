//! A database server nobody here wrote, under 1, 4 and 16 concurrent clients, on PostgreSQL
//! and MariaDB (issue 36's Done-when): DBHub (`@bytebase/dbhub`, pinned in
//! `hintaudit_test_support::npm`), a TypeScript server whose custom tools take their hints
//! from their SQL's first keyword. Two of its tools lie as DBHub itself declares them: each
//! `SELECT`s a function that writes (`show_item` counts a view, `drop_item` deletes the row),
//! so DBHub declares both read-only. The other two are honest (`add_note` inserts and is
//! declared a destructive write; `find_item` reads). One `--stdio` child per session; every
//! commit is attributed to exactly its call, and the findings are the same at every size:
//! every lie found, nothing else.

use std::collections::BTreeMap;
use std::path::Path;

use hintaudit_telemetry::MetricName;
use hintaudit_test_support::npm::dbhub_or_skip;
use hintaudit_test_support::scrape::Scraped;
use serde_json::{Value, json};

use crate::mariadb::mysql_or_skip;
use crate::support::*;
use crate::writers::{Server, run_clients};

/// The tables and the two writing functions, per backend.
fn schema(server: &Server) -> Vec<String> {
    let items = "CREATE TABLE items (id INT PRIMARY KEY, name TEXT, views INT NOT NULL DEFAULT 0)";
    let notes = "CREATE TABLE notes (id INT PRIMARY KEY, body TEXT)";
    let mut sql = vec![items.to_owned(), notes.to_owned()];
    match server {
        Server::Pg(_) => sql.extend([
            "INSERT INTO items (id, name) SELECT g, 'item ' || g FROM generate_series(1, 999) g"
                .to_owned(),
            "CREATE FUNCTION view_item(i INT) RETURNS INT LANGUAGE sql AS \
             'UPDATE items SET views = views + 1 WHERE id = i RETURNING views'"
                .to_owned(),
            "CREATE FUNCTION purge_item(i INT) RETURNS INT LANGUAGE sql AS \
             'WITH d AS (DELETE FROM items WHERE id = i RETURNING 1) SELECT count(*)::int FROM d'"
                .to_owned(),
        ]),
        Server::My(_) => sql.extend([
            "INSERT INTO items (id, name) WITH RECURSIVE g(n) AS \
             (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 999) \
             SELECT n, CONCAT('item ', n) FROM g"
                .to_owned(),
            "CREATE FUNCTION view_item(i INT) RETURNS INT MODIFIES SQL DATA BEGIN \
             UPDATE items SET views = views + 1 WHERE id = i; \
             RETURN (SELECT views FROM items WHERE id = i); END"
                .to_owned(),
            "CREATE FUNCTION purge_item(i INT) RETURNS INT MODIFIES SQL DATA BEGIN \
             DELETE FROM items WHERE id = i; RETURN ROW_COUNT(); END"
                .to_owned(),
        ]),
    }
    sql
}

/// DBHub's `dbhub.toml` on `dsn`: the four custom tools, their parameters numbered (`$1`,
/// PostgreSQL) or not (`?`).
fn config(dsn: &str, numbered: bool) -> String {
    let p = |n: usize| {
        if numbered {
            format!("${n}")
        } else {
            "?".into()
        }
    };
    let id = "[[tools.parameters]]\nname = \"id\"\ntype = \"integer\"\ndescription = \"The item's id\"\n";
    format!(
        "[[sources]]\nid = \"main\"\ndsn = \"{dsn}\"\n\n\
         [[tools]]\nname = \"show_item\"\ndescription = \"Show an item's views, counting this one\"\n\
         source = \"main\"\nstatement = \"SELECT view_item({p1}) AS views\"\n{id}\n\
         [[tools]]\nname = \"drop_item\"\ndescription = \"Remove an item\"\n\
         source = \"main\"\nstatement = \"SELECT purge_item({p1}) AS removed\"\n{id}\n\
         [[tools]]\nname = \"find_item\"\ndescription = \"Find an item\"\n\
         source = \"main\"\nstatement = \"SELECT id, name FROM items WHERE id = {p1}\"\n{id}\n\
         [[tools]]\nname = \"add_note\"\ndescription = \"Add a note\"\n\
         source = \"main\"\nstatement = \"INSERT INTO notes (id, body) VALUES ({p1}, {p2})\"\n{id}\
         [[tools.parameters]]\nname = \"body\"\ntype = \"string\"\ndescription = \"The note\"\n",
        p1 = p(1),
        p2 = p(2),
    )
}

/// A fresh database `name` with the schema; the proxy's `--database` URL and DBHub's DSN.
async fn seeded(server: &Server, name: &str) -> (String, String) {
    let db = server.fresh(name).await;
    match server {
        Server::Pg(_) => {
            let pool = sqlx::PgPool::connect(&db).await.expect("connect");
            for sql in schema(server) {
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                    .execute(&pool)
                    .await
                    .expect("schema");
            }
            pool.close().await;
            let dsn = format!("{db}?sslmode=disable");
            (db, dsn)
        }
        Server::My(_) => {
            let pool = sqlx::MySqlPool::connect(&db).await.expect("connect");
            for sql in schema(server) {
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                    .execute(&pool)
                    .await
                    .expect("schema");
            }
            pool.close().await;
            let dsn = db.replacen("mysql://", "mariadb://", 1);
            (db, dsn)
        }
    }
}

/// Every `hintaudit_hint_violations_total` sample above 0, by tool and rule.
fn findings(s: &Scraped) -> BTreeMap<(String, String), f64> {
    let mut out = BTreeMap::new();
    for x in s.samples(MetricName::HintViolations.as_str()) {
        let (Some(tool), Some(rule)) = (x.labels.get("tool"), x.labels.get("rule")) else {
            continue;
        };
        *out.entry((tool.to_owned(), rule.to_owned())).or_default() += s.number(x);
    }
    out.retain(|_, n| *n > 0.0);
    out
}

/// Client `c`'s round `r`: each lie once and each honest tool once, on ids of its own.
fn round(c: usize, r: usize) -> Vec<(&'static str, Value)> {
    vec![
        ("show_item", json!({"id": 1 + c * 10 + r})),
        ("add_note", json!({"id": c * 10 + r, "body": "n"})),
        ("drop_item", json!({"id": 500 + c * 10 + r})),
        ("find_item", json!({"id": 900})),
    ]
}

/// `clients` sessions at once through one proxy in front of DBHub on `server`, `rounds`
/// rounds each; checks attribution and findings exactly.
async fn dbhub_clients(server: Server, entry: &Path, clients: usize, rounds: usize) {
    let backend = match server {
        Server::Pg(_) => "pg",
        Server::My(_) => "my",
    };
    // Its own database and config per backend and size: the tests run at once.
    let name = format!("hintaudit_proxy_dbhub_{backend}_{clients}");
    let (db, dsn) = seeded(&server, &name).await;
    let dir = std::env::temp_dir().join(format!("{name}_{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("config dir");
    let toml = dir.join("dbhub.toml");
    std::fs::write(&toml, config(&dsn, matches!(server, Server::Pg(_)))).expect("dbhub.toml");
    let upstream = format!(
        "node {} --transport stdio --config {}",
        entry.display(),
        toml.display()
    );
    let (proxy, addr) = proxy_http(&[
        "--stdio",
        &upstream,
        "--database",
        &db,
        "--handshake-timeout",
        "300",
    ])
    .await;
    run_clients(&format!("http://{addr}/mcp"), clients, rounds, round).await;

    let s = metrics(addr).await;
    let n = (clients * rounds) as f64;
    for attribution in ["ambiguous", "dropped", "foreign", "unattributed"] {
        assert_eq!(commits(&s, attribution), 0.0, "{attribution}: {}", s.text);
    }
    assert_eq!(commits(&s, "attributed"), 3.0 * n, "{}", s.text);
    assert_eq!(rows(&s, "show_item", "items", "update"), n, "{}", s.text);
    assert_eq!(rows(&s, "drop_item", "items", "delete"), n);
    assert_eq!(rows(&s, "add_note", "notes", "insert"), n);
    assert_eq!(rows(&s, "find_item", "items", "update"), 0.0);
    // Both lies found on every call, and nothing else: the honest tools have no finding.
    let expected: BTreeMap<(String, String), f64> = [
        ("show_item", "read_only_write", n),
        ("drop_item", "read_only_write", n),
    ]
    .into_iter()
    .map(|(t, r, k)| ((t.to_owned(), r.to_owned()), k))
    .collect();
    assert_eq!(findings(&s), expected, "{}", s.text);
    drop(proxy);
    std::fs::remove_dir_all(&dir).ok();
    server.drop(&name).await;
}

async fn on_postgres(clients: usize, rounds: usize) {
    let (Some(admin), Some(entry)) = (pg_or_skip().await, dbhub_or_skip()) else {
        return;
    };
    dbhub_clients(Server::Pg(admin), &entry, clients, rounds).await;
}

async fn on_mariadb(clients: usize, rounds: usize) {
    let (Some(admin), Some(entry)) = (mysql_or_skip().await, dbhub_or_skip()) else {
        return;
    };
    dbhub_clients(Server::My(admin), &entry, clients, rounds).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dbhub_one_client_lies_found_on_postgres() {
    on_postgres(1, 4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dbhub_four_clients_lies_found_on_postgres() {
    on_postgres(4, 3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dbhub_sixteen_clients_lies_found_on_postgres() {
    on_postgres(16, 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dbhub_one_client_lies_found_on_mariadb() {
    on_mariadb(1, 4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dbhub_four_clients_lies_found_on_mariadb() {
    on_mariadb(4, 3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dbhub_sixteen_clients_lies_found_on_mariadb() {
    on_mariadb(16, 2).await;
}
