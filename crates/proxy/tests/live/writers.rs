//! Attribution by writer: 4 and 16 concurrent clients, each a session with a `--stdio` child
//! of its own, every commit attributed to exactly its call and every planted lie found with
//! no false finding; and two proxies on one database (`--stdio` and `--upstream`), where
//! neither blames its calls for the other's writes. The same checks run on PostgreSQL (here)
//! and on MariaDB (writers_mariadb.rs), through [`Server`].

use std::net::SocketAddr;

use serde_json::{Value, json};

use crate::holds::{Held, Holds};
use crate::mariadb::{exec, mysql_url};
use crate::support::*;

/// The database server a writers test runs on, by its admin pool.
#[derive(Clone)]
pub(crate) enum Server {
    Pg(sqlx::PgPool),
    My(sqlx::MySqlPool),
}

impl Server {
    /// A new, empty database `name`; its URL.
    pub(crate) async fn fresh(&self, name: &str) -> String {
        match self {
            Server::Pg(admin) => fresh_db(admin, name).await,
            Server::My(admin) => {
                exec(
                    admin,
                    [drop_database(name), format!("CREATE DATABASE {name}")],
                )
                .await;
                format!("{}/{name}", mysql_url().trim_end_matches('/'))
            }
        }
    }

    /// A new database `name` with the fixture's tables (made as its server would at
    /// start-up) and 1,000 more items (ids 100 to 1099) for the clients to archive; its URL.
    pub(crate) async fn seeded(&self, name: &str, py: &str) -> String {
        let db = self.fresh(name).await;
        let status = std::process::Command::new(py)
            .arg(sql_server())
            .args(["--db", &db, "--init-only"])
            .status()
            .expect("python runs");
        assert!(status.success(), "the fixture's tables");
        match self {
            Server::Pg(_) => {
                let pool = sqlx::PgPool::connect(&db).await.expect("connect");
                sqlx::query(
                    "INSERT INTO items (id, name) SELECT g, 'item ' || g \
                     FROM generate_series(100, 1099) g",
                )
                .execute(&pool)
                .await
                .expect("items");
                pool.close().await;
            }
            Server::My(admin) => {
                let items = format!(
                    "INSERT INTO {name}.items (id, name) WITH RECURSIVE g(n) AS \
                     (SELECT 100 UNION ALL SELECT n + 1 FROM g WHERE n < 1099) \
                     SELECT n, CONCAT('item ', n) FROM g"
                );
                exec(admin, [items]).await;
            }
        }
        db
    }

    /// Drops database `name` (PostgreSQL: once the proxy's slot has gone with it).
    pub(crate) async fn drop(&self, name: &str) {
        match self {
            Server::Pg(admin) => drop_db(admin, name).await,
            Server::My(admin) => exec(admin, [drop_database(name)]).await,
        }
    }
}

fn drop_database(name: &str) -> String {
    format!("DROP DATABASE IF EXISTS {name}")
}

/// Client `c`'s round `r`: two lies (get_item's UPDATE, archive_item's DELETE) and two honest
/// writes (add_note, write_query), each one commit, and a read.
fn round(c: usize, r: usize) -> Vec<(&'static str, Value)> {
    let note = 10_000 + c * 100 + r;
    vec![
        ("get_item", json!({"id": 1 + c % 4})),
        ("add_note", json!({"id": note, "text": "n"})),
        ("archive_item", json!({"id": 100 + c * 10 + r})),
        (
            "write_query",
            json!({"query": format!("UPDATE notes SET text = 'm' WHERE id = {note}")}),
        ),
        ("read_query", json!({"query": "SELECT count(*) FROM items"})),
    ]
}

/// `clients` sessions on the proxy at `url`, opened one after another (their `--stdio`
/// children start then), whose calls then run all at once: each client makes `rounds` rounds
/// of `calls(client, round)`, one call at a time, and every call must succeed (no JSON-RPC
/// error, no `isError`, no answer that starts with "Error").
pub(crate) async fn run_clients(
    url: &str,
    clients: usize,
    rounds: usize,
    calls: fn(usize, usize) -> Vec<(&'static str, Value)>,
) {
    let mut sessions = Vec::new();
    for _ in 0..clients {
        sessions.push(http_client(url).await);
    }
    let mut tasks = Vec::new();
    for (c, client) in sessions.into_iter().enumerate() {
        tasks.push(tokio::spawn(async move {
            for r in 0..rounds {
                for (tool, arguments) in calls(c, r) {
                    let answer = call(&client, tool, args(arguments)).await;
                    assert!(answer.get("error").is_none(), "{tool}: {answer}");
                    assert_ne!(answer["isError"], json!(true), "{tool}: {answer}");
                    let text = answer["content"][0]["text"].as_str().unwrap_or_default();
                    assert!(!text.starts_with("Error"), "{tool}: {text}");
                }
            }
            client.cancel().await.ok();
        }));
    }
    for t in tasks {
        t.await.expect("a client's rounds");
    }
}

/// `clients` clients at once through one proxy on `server` (`--stdio` upstream, a child per
/// session), `rounds` rounds each.
pub(crate) async fn concurrent_clients(server: Server, py: &str, clients: usize, rounds: usize) {
    let name = format!("hintaudit_proxy_writers_{clients}");
    let db = server.seeded(&name, py).await;
    // A child per session: on a loaded machine 16 Python servers take a while to start.
    let upstream = fixture(py, &db, "");
    let (_proxy, addr) = proxy_http(&[
        "--stdio",
        &upstream,
        "--database",
        &db,
        "--handshake-timeout",
        "300",
    ])
    .await;
    run_clients(&format!("http://{addr}/mcp"), clients, rounds, round).await;

    // Once no call is pending (`metrics` waits for it) every call is judged: metrics are final.
    let s = metrics(addr).await;
    let n = (clients * rounds) as f64;
    assert_eq!(commits(&s, "ambiguous"), 0.0, "{}", s.text);
    assert_eq!(commits(&s, "dropped"), 0.0, "{}", s.text);
    assert_eq!(commits(&s, "foreign"), 0.0, "{}", s.text);
    assert_eq!(commits(&s, "attributed"), 4.0 * n, "{}", s.text);
    assert_eq!(violations(&s, "get_item", "read_only_write"), n);
    assert_eq!(violations(&s, "archive_item", "undeclared_destructive"), n);
    for honest in ["add_note", "write_query", "read_query"] {
        for rule in [
            "read_only_write",
            "undeclared_destructive",
            "idempotency_broken",
        ] {
            assert_eq!(violations(&s, honest, rule), 0.0, "{honest} {rule}");
        }
    }
    assert_eq!(violations(&s, "archive_item", "idempotency_broken"), 0.0);
    // Each commit went to its own call: every tool's rows are its own, exactly.
    assert_eq!(rows(&s, "get_item", "items", "update"), n, "{}", s.text);
    assert_eq!(rows(&s, "archive_item", "items", "delete"), n);
    assert_eq!(rows(&s, "add_note", "notes", "insert"), n);
    assert_eq!(rows(&s, "write_query", "notes", "update"), n);
    for (tool, table, op) in [
        ("get_item", "notes", "insert"),
        ("add_note", "items", "update"),
        ("archive_item", "notes", "update"),
        ("read_query", "items", "update"),
    ] {
        assert_eq!(rows(&s, tool, table, op), 0.0, "{tool} {table} {op}");
    }
    drop(_proxy);
    server.drop(&name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_concurrent_clients_each_commit_is_exactly_its_calls() {
    if let Some((admin, py)) = parts().await {
        concurrent_clients(Server::Pg(admin), py, 4, 3).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_concurrent_clients_each_commit_is_exactly_its_calls() {
    if let Some((admin, py)) = parts().await {
        concurrent_clients(Server::Pg(admin), py, 16, 2).await;
    }
}

/// A read-only call of `query`, held in flight 8 s, as a task.
fn slow_read(url: String, query: String) -> tokio::task::JoinHandle<Value> {
    tokio::spawn(async move {
        let client = http_client(&url).await;
        let answer = call(&client, "read_query", args(json!({ "query": query }))).await;
        client.cancel().await.ok();
        answer
    })
}

/// Lies told through `url` while the other proxy's slow read is in flight.
async fn lie_through(url: &str, item: u64) {
    let client = http_client(url).await;
    call(&client, "get_item", args(json!({"id": 1}))).await;
    call(&client, "archive_item", args(json!({ "id": item }))).await;
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_proxies_on_one_database_never_blame_their_calls_for_the_others_writes() {
    if let Some((admin, py)) = parts().await {
        two_proxies(Server::Pg(admin), py).await;
    }
}

/// Two proxies on one database of `server`: A (`--stdio`) and B (`--upstream`, an HTTP
/// server of its own). Each serves a read-only call, held in flight until the test releases
/// it, while the other's server writes.
pub(crate) async fn two_proxies(server: Server, py: &str) {
    let name = "hintaudit_proxy_two";
    let db = server.seeded(name, py).await;
    let mut holds = Holds::new(name);
    let hold = holds.env("read_query");
    // A: a --stdio child per session, whose read_query stays in flight until released.
    let stdio = fixture(py, &db, &format!("FIXTURE_HOLD_AFTER={hold}"));
    let (_a, a) = proxy_http(&["--stdio", &stdio, "--database", &db]).await;
    // B: an HTTP server of its own (another replica's), the same tool held the same way.
    let (_server, upstream) = fixture_http(py, &db, &[("FIXTURE_HOLD_AFTER", &hold)]).await;
    let (_b, b) = proxy_http(&["--upstream", &upstream, "--database", &db]).await;
    let url = |addr: SocketAddr| format!("http://{addr}/mcp");

    // B serves a read-only call while A's server writes, then the other way round.
    for (reader, writer, item) in [(b, a, 100), (a, b, 101)] {
        let slow = slow_read(url(reader), "SELECT 1 AS marker".into());
        // Its query has run and it is held: its proxy registered it before.
        let [held] = <[Held; 1]>::try_from(holds.held(1).await).expect("one held read");
        lie_through(&url(writer), item).await;
        assert!(
            !slow.is_finished(),
            "the read answered while held: the hold does not hold"
        );
        holds.release(&held);
        let answer = slow.await.expect("the slow read answered");
        assert!(answer.get("error").is_none(), "{answer}");
    }

    for (me, other) in [(a, "B"), (b, "A")] {
        let s = until(me, |s| commits(s, "foreign") >= 2.0).await;
        assert_eq!(
            violations(&s, "read_query", "read_only_write"),
            0.0,
            "the read blamed for {other}'s writes: {}",
            s.text
        );
        assert_eq!(
            commits(&s, "foreign"),
            2.0,
            "{other}'s two commits: {}",
            s.text
        );
        assert_eq!(commits(&s, "ambiguous"), 0.0, "{}", s.text);
        assert_eq!(commits(&s, "attributed"), 2.0, "its own two: {}", s.text);
        assert_eq!(violations(&s, "get_item", "read_only_write"), 1.0);
        assert_eq!(
            violations(&s, "archive_item", "undeclared_destructive"),
            1.0
        );
    }
    drop((_a, _b, _server));
    server.drop(name).await;
}
