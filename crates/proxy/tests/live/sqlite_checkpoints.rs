//! The SQLite WAL under checkpoints and modes the proxy does not choose: a server that
//! checkpoints after every commit (`wal_autocheckpoint=1`) loses no commit; the server's own
//! TRUNCATE checkpoint gets SQLITE_BUSY while the proxy holds its snapshot (and, waiting on
//! a busy timeout, gets through once the proxy's next read moves it, losing nothing); a
//! database left in rollback-journal mode makes each write a counted gap whose message names
//! `PRAGMA journal_mode=WAL`.

use std::path::Path;

use serde_json::json;

use crate::sqlite_wal::{called, gaps, proxy, wal_database};
use crate::support::*;

/// The proxy's line when the database it waited for is in WAL mode and followed.
const WAL_NOW: &str = "is in WAL mode: its WAL is followed";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_checkpoints_after_every_commit_loses_no_commit() {
    let Some((dir, db, py)) = wal_database() else {
        return;
    };
    let log = dir.path().join("proxy.log");
    let env = "FIXTURE_SQLITE_PRAGMAS=wal_autocheckpoint=1";
    let (_proxy, addr) = proxy(py, &db, env, &log).await;
    let client = http_client(&format!("http://{addr}/mcp")).await;
    let notes = 30;
    for id in 0..notes {
        called(&client, "add_note", json!({"id": 100 + id, "text": "n"})).await;
        if id % 10 == 0 {
            called(&client, "archive_item", json!({"id": 1 + id / 10})).await;
        }
    }
    let s = metrics(addr).await;
    assert_eq!(
        rows(&s, "add_note", "notes", "insert"),
        f64::from(notes),
        "{}",
        s.text
    );
    assert_eq!(
        rows(&s, "archive_item", "items", "delete"),
        3.0,
        "{}",
        s.text
    );
    assert_eq!(
        violations(&s, "archive_item", "undeclared_destructive"),
        3.0
    );
    assert_eq!(
        commits(&s, "attributed"),
        f64::from(notes) + 3.0,
        "{}",
        s.text
    );
    assert_eq!(gaps(&s), 0.0, "{}", s.text);
    assert_eq!(audit_errors(&s), 0.0, "{}", s.text);
    let wal = std::fs::metadata(dir.path().join("app.db-wal")).map_or(0, |m| m.len());
    assert!(
        wal < 64 * 4120,
        "the server's checkpoints went on beside the proxy's snapshot (WAL {wal} bytes)"
    );
}

/// The server's `PRAGMA wal_checkpoint(TRUNCATE)` on a connection of its own waiting at most
/// `timeout_ms` on a lock: (busy, WAL frames, frames checkpointed).
fn truncate(db: &Path, timeout_ms: u64) -> (i64, i64, i64) {
    let conn = rusqlite::Connection::open(db).expect("open");
    conn.busy_timeout(std::time::Duration::from_millis(timeout_ms))
        .expect("busy timeout");
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })
    .expect("checkpoint")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_truncate_checkpoint_is_busy_while_the_proxy_holds_its_snapshot() {
    let Some((dir, db, py)) = wal_database() else {
        return;
    };
    let log = dir.path().join("proxy.log");
    let (_proxy, addr) = proxy(py, &db, "", &log).await;
    let client = http_client(&format!("http://{addr}/mcp")).await;
    called(&client, "archive_item", json!({"id": 2})).await;
    metrics(addr).await;
    // The proxy's snapshot was taken after the commit, with its frames not checkpointed:
    // a TRUNCATE checkpoint copies them, then cannot restart the WAL under the snapshot.
    let (busy, frames, done) = truncate(&db, 0);
    assert_eq!(busy, 1, "SQLITE_BUSY while the proxy holds its snapshot");
    assert!(
        frames > 0 && done == frames,
        "every frame copied: {frames} {done}"
    );
    let wal = std::fs::metadata(dir.path().join("app.db-wal")).map_or(0, |m| m.len());
    assert!(wal > 0, "the WAL is kept whole");
    // Waiting on a busy timeout, it gets through at the proxy's next read, which takes its
    // new snapshot from the database file (every frame is copied) and lets the old one go.
    let (busy, _, _) = truncate(&db, 60_000);
    assert_eq!(busy, 0, "the proxy's next read let the checkpoint through");
    // The WAL restarts under the proxy: the next commit is read from its first frame.
    called(&client, "archive_item", json!({"id": 3})).await;
    let s = metrics(addr).await;
    assert_eq!(
        violations(&s, "archive_item", "undeclared_destructive"),
        2.0,
        "{}\n{}",
        s.text,
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    assert_eq!(gaps(&s), 0.0, "{}", s.text);
    assert_eq!(audit_errors(&s), 0.0, "{}", s.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_in_rollback_journal_mode_is_a_gap_naming_the_pragma() {
    let Some(py) = python_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("app.db");
    let init = std::process::Command::new(py)
        .arg(sql_server())
        .args(["--db", &db.display().to_string(), "--init-only"])
        .status()
        .expect("python runs");
    assert!(init.success(), "the fixture's --init-only");
    let log = dir.path().join("proxy.log");
    let (_proxy, addr) = proxy(py, &db, "", &log).await;
    let client = http_client(&format!("http://{addr}/mcp")).await;
    called(&client, "archive_item", json!({"id": 2})).await;
    let s = until(addr, |s| gaps(s) >= 1.0).await;
    assert_eq!(gaps(&s), 1.0, "{}", s.text);
    assert_eq!(
        violations(&s, "archive_item", "undeclared_destructive"),
        0.0,
        "nothing was read: no finding, and the call is marked incomplete"
    );
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        logged.contains("PRAGMA journal_mode=WAL"),
        "the gap names the pragma:\n{logged}"
    );
    // Switched to WAL mode (as a server's first connection may), the next write is read.
    let conn = rusqlite::Connection::open(&db).expect("open");
    let mode: String = conn
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .expect("journal_mode");
    assert_eq!(mode, "wal");
    drop(conn);
    followed(&log).await;
    called(&client, "archive_item", json!({"id": 3})).await;
    let s = metrics(addr).await;
    assert_eq!(
        violations(&s, "archive_item", "undeclared_destructive"),
        1.0,
        "{}",
        s.text
    );
    assert_eq!(gaps(&s), 1.0, "{}", s.text);
}

/// Polls the proxy's log until it says the database is followed in WAL mode (at most 60 s).
async fn followed(log: &Path) {
    for _ in 0..600 {
        let logged = std::fs::read_to_string(log).unwrap_or_default();
        if logged.contains(WAL_NOW) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!(
        "the proxy did not follow the WAL:\n{}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}
