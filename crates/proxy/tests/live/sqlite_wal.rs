//! A SQLite server behind the proxy, its writes read from the database's WAL (issue 48): the
//! Python fixture on stdlib sqlite3, which opens the file for each statement, on a database
//! in WAL mode made before the proxy starts (`--init-only`, `journal_mode=WAL`).
//!
//! The planted lies: a write in a read-only tool (get_item), a trigger's write (add_note of
//! a 'tidy' note deletes an item through a trigger the test adds), an upsert that overwrites
//! (save_item), an INSERT declared idempotent (log_visit), a DELETE declared additive
//! (archive_item) and `views = views + 1` declared idempotent (bump_views). Found with 0
//! false with one session; with 4 sessions, each where its tool was alone in flight, the
//! overlaps counted ambiguous and blamed on none. A server checkpointing after every commit
//! loses none; the server's own TRUNCATE checkpoint is busy while the proxy holds its
//! snapshot; a write in rollback-journal mode is a counted gap naming the pragma.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use hintaudit_test_support::scrape::Scraped;
use serde_json::json;

use crate::holds::Holds;
use crate::support::*;

/// The proxy's log filter: its own lines at DEBUG, so that each commit it reads is seen.
pub(crate) const DEBUG: (&str, &str) =
    ("RUST_LOG", "info,rmcp=off,sqlx=warn,hintaudit::proxy=debug");

/// The proxy's DEBUG line for each commit it read from the WAL.
const COMMIT_READ: &str = "capture: SQLite commit read";

/// Every rule a call's effects can break, for "nothing else was found".
const RULES: [&str; 4] = [
    "read_only_write",
    "read_only_write_attempt",
    "undeclared_destructive",
    "idempotency_broken",
];

/// A temporary directory with the fixture's database in WAL mode (seeded by the fixture's
/// `--init-only`), items 9 and 10 more, and the trigger: a note whose text is 'tidy'
/// deletes the item of its id. `None` after a printed skip.
pub(crate) fn wal_database() -> Option<(tempfile::TempDir, PathBuf, &'static str)> {
    let py = python_or_skip()?;
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("app.db");
    let init = std::process::Command::new(py)
        .arg(sql_server())
        .args(["--db", &db.display().to_string(), "--init-only"])
        .env("FIXTURE_SQLITE_PRAGMAS", "journal_mode=WAL")
        .status()
        .expect("python runs");
    assert!(init.success(), "the fixture's --init-only");
    let conn = rusqlite::Connection::open(&db).expect("open");
    conn.execute_batch(
        "INSERT INTO items (id, name) VALUES (9, 'ensign'), (10, 'fender');
         CREATE TRIGGER tidy AFTER INSERT ON notes WHEN NEW.text = 'tidy'
         BEGIN DELETE FROM items WHERE id = NEW.id; END;",
    )
    .expect("the trigger");
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .expect("journal_mode");
    assert_eq!(mode, "wal");
    Some((dir, db, py))
}

/// The proxy in front of the fixture (a child per session) on `db`, with `env` for the
/// fixture, logging at DEBUG into `log`.
pub(crate) async fn proxy(py: &str, db: &Path, env: &str, log: &Path) -> (Child, SocketAddr) {
    let upstream = fixture(py, &db.display().to_string(), env);
    let database = format!("sqlite:{}", db.display());
    let args = [
        "--stdio",
        &upstream,
        "--database",
        &database,
        "--capture-wait-ms",
        "30000",
    ];
    proxy_logged(&args, &[DEBUG], log).await
}

/// A tools/call that answered without an error.
pub(crate) async fn called(client: &Client, tool: &str, arguments: serde_json::Value) {
    let answer = call(client, tool, args(arguments)).await;
    assert!(answer.get("error").is_none(), "{tool}: {answer}");
    let text = answer["content"][0]["text"].as_str().unwrap_or_default();
    assert!(!text.starts_with("Error"), "{tool}: {answer}");
}

/// `hintaudit_capture_gaps_total{backend="sqlite"}`.
pub(crate) fn gaps(s: &Scraped) -> f64 {
    s.value("hintaudit_capture_gaps_total", &[("backend", "sqlite")])
        .unwrap_or(0.0)
}

/// Every finding of `RULES` is one of `expected` (tool, rule, count), with that count.
fn found_exactly(s: &Scraped, tools: &[&str], expected: &[(&str, &str, f64)]) {
    for tool in tools {
        for rule in RULES {
            let want = expected
                .iter()
                .find(|(t, r, _)| t == tool && *r == rule)
                .map_or(0.0, |(_, _, n)| *n);
            assert_eq!(violations(s, tool, rule), want, "{tool} {rule}\n{}", s.text);
        }
    }
}

/// The fixture's tools with the lies switched on.
const TOOLS: [&str; 10] = [
    "read_query",
    "write_query",
    "list_tables",
    "get_item",
    "archive_item",
    "add_note",
    "bump_views",
    "set_qty",
    "save_item",
    "log_visit",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_lies_are_found_live_on_sqlite_from_its_wal() {
    let Some((dir, db, py)) = wal_database() else {
        return;
    };
    let log = dir.path().join("proxy.log");
    let (_proxy, addr) = proxy(py, &db, "FIXTURE_LIES=1 FIXTURE_REPEATS=1", &log).await;
    let client = http_client(&format!("http://{addr}/mcp")).await;
    client.list_all_tools().await.expect("tools/list");
    called(&client, "get_item", json!({"id": 1})).await;
    called(&client, "archive_item", json!({"id": 2})).await;
    called(&client, "add_note", json!({"id": 9, "text": "tidy"})).await;
    called(&client, "add_note", json!({"id": 20, "text": "twenty"})).await;
    called(&client, "save_item", json!({"id": 3, "name": "sextant"})).await;
    called(&client, "save_item", json!({"id": 30, "name": "oar"})).await;
    for _ in 0..2 {
        called(&client, "log_visit", json!({"item": 1})).await;
        called(&client, "bump_views", json!({"id": 3})).await;
    }
    called(
        &client,
        "read_query",
        json!({"query": "SELECT * FROM items"}),
    )
    .await;
    called(&client, "list_tables", json!({})).await;

    let s = metrics(addr).await;
    found_exactly(
        &s,
        &TOOLS,
        &[
            ("get_item", "read_only_write", 1.0),
            ("archive_item", "undeclared_destructive", 1.0),
            ("add_note", "undeclared_destructive", 1.0),
            ("save_item", "undeclared_destructive", 1.0),
            ("log_visit", "idempotency_broken", 1.0),
            ("bump_views", "idempotency_broken", 1.0),
        ],
    );
    assert_eq!(
        rows(&s, "add_note", "items", "delete"),
        1.0,
        "the trigger's delete is the call's that fired it\n{}",
        s.text
    );
    assert_eq!(rows(&s, "save_item", "items", "insert"), 1.0, "{}", s.text);
    assert_eq!(rows(&s, "save_item", "items", "update"), 1.0, "{}", s.text);
    assert_eq!(commits(&s, "attributed"), 10.0, "{}", s.text);
    for other in ["ambiguous", "unattributed", "dropped"] {
        assert_eq!(commits(&s, other), 0.0, "{other}\n{}", s.text);
    }
    assert_eq!(gaps(&s), 0.0, "{}", s.text);
    assert_eq!(audit_errors(&s), 0.0, "{}", s.text);
}

/// Polls the proxy's log until it has read `n` commits in all (at most 60 s).
async fn read_commits(log: &Path, n: usize) {
    for _ in 0..600 {
        let logged = std::fs::read_to_string(log).unwrap_or_default();
        if logged.lines().filter(|l| l.contains(COMMIT_READ)).count() >= n {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!(
        "the proxy did not read {n} commits:\n{}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_sessions_find_each_lie_where_its_tool_was_alone_in_flight() {
    let Some((dir, db, py)) = wal_database() else {
        return;
    };
    let log = dir.path().join("proxy.log");
    let holds = Holds::new("sqlite_four_sessions");
    let env = format!(
        "FIXTURE_LIES=1 FIXTURE_REPEATS=1 FIXTURE_HOLD_AFTER={}",
        holds.env("archive_item")
    );
    let (_proxy, addr) = proxy(py, &db, &env, &log).await;
    let url = format!("http://{addr}/mcp");
    let mut sessions = Vec::new();
    for _ in 0..4 {
        let c = http_client(&url).await;
        c.list_all_tools().await.expect("tools/list");
        sessions.push(c);
    }
    // Session 1's archive_item deletes item 2, then stays in flight until released. Once the
    // proxy has read its commit, each other session's lie commits while it is in flight: a
    // set of two tools, blamed on neither.
    let held = {
        let c = sessions.remove(0);
        tokio::spawn(async move {
            called(&c, "archive_item", json!({"id": 2})).await;
            c
        })
    };
    read_commits(&log, 1).await;
    called(&sessions[0], "get_item", json!({"id": 1})).await;
    called(
        &sessions[1],
        "save_item",
        json!({"id": 3, "name": "sextant"}),
    )
    .await;
    called(&sessions[2], "add_note", json!({"id": 9, "text": "tidy"})).await;
    holds.release_all();
    let first = held.await.expect("archive_item answered");
    // Then each alone, from its own session, at once: every session's calls overlap
    // nothing but their own.
    let ((), (), (), ()) = tokio::join!(
        async {
            called(&sessions[0], "get_item", json!({"id": 1})).await;
        },
        async {
            called(
                &sessions[1],
                "save_item",
                json!({"id": 3, "name": "astrolabe"}),
            )
            .await;
        },
        async {
            called(&sessions[2], "add_note", json!({"id": 10, "text": "tidy"})).await;
        },
        async {
            called(&first, "read_query", json!({"query": "SELECT 1"})).await;
        },
    );
    for _ in 0..2 {
        called(&first, "log_visit", json!({"item": 1})).await;
        called(&first, "bump_views", json!({"id": 3})).await;
    }

    let s = metrics(addr).await;
    println!("{}", s.text);
    let ambiguous = commits(&s, "ambiguous");
    // The second round ran at once: its commits overlap each other's calls as the machine
    // schedules them, so each lie of it is found, or counted ambiguous, never blamed on
    // another tool.
    assert!(
        ambiguous >= 3.0,
        "the three overlaps of round one\n{}",
        s.text
    );
    let round_two_found = violations(&s, "get_item", "read_only_write")
        + violations(&s, "save_item", "undeclared_destructive")
        + violations(&s, "add_note", "undeclared_destructive");
    assert_eq!(
        round_two_found + (ambiguous - 3.0),
        3.0,
        "each of round two's lies found or counted ambiguous\n{}",
        s.text
    );
    assert_eq!(
        violations(&s, "archive_item", "undeclared_destructive"),
        1.0,
        "alone in flight at its commit\n{}",
        s.text
    );
    assert_eq!(violations(&s, "log_visit", "idempotency_broken"), 1.0);
    assert_eq!(violations(&s, "bump_views", "idempotency_broken"), 1.0);
    for tool in [
        "read_query",
        "list_tables",
        "write_query",
        "set_qty",
        "archive_item",
    ] {
        for rule in ["read_only_write", "read_only_write_attempt"] {
            assert_eq!(violations(&s, tool, rule), 0.0, "{tool} {rule}\n{}", s.text);
        }
    }
    assert_eq!(
        rows(&s, "archive_item", "items", "update"),
        0.0,
        "get_item's update is not archive_item's\n{}",
        s.text
    );
    for other in ["unattributed", "dropped"] {
        assert_eq!(commits(&s, other), 0.0, "{other}\n{}", s.text);
    }
    assert_eq!(gaps(&s), 0.0, "{}", s.text);
}
