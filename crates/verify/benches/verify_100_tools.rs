//! Benchmark: `hintaudit verify` on a server with 100 tools over a 100,000-row SQLite
//! database. Target: under 10 s. Run with `cargo bench -p hintaudit-verify`.
//!
//! The server is tests/verify/python_server/bench_server.py (official MCP Python SDK): 70
//! honest readers, 10 inserters, 10 idempotent updaters (called twice), 5 read-only tools
//! that write and 5 without hints. The database has `events` (100,000 rows, 7 columns) and
//! `notes`. Prints the wall time, the snapshot counters and the mean time of one full snapshot.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use hintaudit_verify::{ServerSpec, Verifier};
use sqlx::{Connection, sqlite::SqliteConnection};

const ROWS: i64 = 100_000;

fn repo() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .find(|d| d.join("tests/verify/python_server").is_dir())
        .map(|d| d.to_path_buf())
        .unwrap_or(here)
}

async fn make_db(path: &std::path::Path) -> String {
    let url = format!("sqlite://{}?mode=rwc", path.display());
    let mut c = SqliteConnection::connect(&url)
        .await
        .expect("create database");
    sqlx::raw_sql(
        "CREATE TABLE events (id INTEGER PRIMARY KEY, kind INTEGER NOT NULL, title TEXT NOT NULL,
            amount REAL, payload BLOB, status TEXT, views INTEGER NOT NULL DEFAULT 0);
         CREATE INDEX events_kind ON events (kind);
         CREATE TABLE notes (id INTEGER PRIMARY KEY, tool INTEGER, text TEXT);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
         INSERT INTO events (id, kind, title, amount, payload, status)
           SELECT i, i % 70, 'event number ' || i, i * 0.25, randomblob(16),
                  CASE WHEN i % 3 = 0 THEN NULL ELSE 'open' END FROM n;",
    )
    .execute(&mut c)
    .await
    .expect("fill database");
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM events")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(n, ROWS);
    format!("sqlite://{}", path.display())
}

#[tokio::main]
async fn main() {
    let python = ["python3", "python"].into_iter().find(|py| {
        Command::new(py)
            .args(["-c", "import mcp.server.mcpserver"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(py) = python else {
        println!("verify_100_tools: skipped: python with the mcp package is not installed");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("bench.db");
    let url = make_db(&db_path).await;
    let server = repo().join("tests/verify/python_server/bench_server.py");
    let cmd = format!("{py} {} --db {}", server.display(), db_path.display());

    let started = Instant::now();
    let report = Verifier::new(ServerSpec::Stdio(cmd), url.as_str())
        .with_timeout(Duration::from_secs(60))
        .run()
        .await
        .expect("verify runs");
    let elapsed = started.elapsed();
    let (passed, failed, not_exercised) = report.status_counts();
    let calls: usize = report
        .tools
        .iter()
        .flat_map(|t| t.cases.iter())
        .map(|c| c.calls.len())
        .sum();
    println!(
        "verify_100_tools: {} tools, {calls} calls, {ROWS} rows: {:.2} s \
         (passed {passed}, failed {failed}, not exercised {not_exercised}; findings {}; \
         snapshots {} of which {} scanned, {} rows hashed in {:.2} s: {:.0} ms per full snapshot)",
        report.tools.len(),
        elapsed.as_secs_f64(),
        report.findings().count(),
        report.stats.snapshots,
        report.stats.scans,
        report.stats.rows_scanned,
        report.stats.scan_millis as f64 / 1000.0,
        report.stats.scan_millis as f64 / report.stats.scans.max(1) as f64,
    );
    assert_eq!(report.tools.len(), 100);
    assert_eq!(failed, 5, "the five read-only tools that write");
    if elapsed > Duration::from_secs(10) {
        println!("verify_100_tools: over the 10 s target");
    }
}
