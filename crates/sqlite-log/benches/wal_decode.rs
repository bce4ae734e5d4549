//! What reading the log costs per commit, against the database's size (docs/performance.md,
//! "The SQLite log"): databases of 1,000 to 100,000 rows (~120 bytes each), and on each
//! HINTAUDIT_BENCH_COMMITS (default 200) commits of one kind, each read by the follower right
//! after it. Prints per commit: the pages the commit wrote, the bytes the follower read besides
//! its frames (the pages before the commit, from the database file or earlier frames) and of
//! the WAL along the chain, and the wall time of `Follower::read` (snapshot, frames, decoding;
//! its PASSIVE checkpoint every 1,000 frames; p50 and p99); and, once per database, the first
//! read's bytes and the database's pages.
//!
//! `cargo bench -p hintaudit-sqlite-log --bench wal_decode`

use std::time::{Duration, Instant};

use hintaudit_sqlite_log::{Event, Follower};
use rusqlite::Connection;

/// One kind of commit, as SQL with `{i}` for the commit's number.
const KINDS: &[(&str, &str)] = &[
    (
        "insert 1 row",
        "INSERT INTO notes(title, body) VALUES ('new {i}', printf('%.100c', 'n'))",
    ),
    (
        "update 1 row",
        "UPDATE notes SET views = views + 1 WHERE id = 1 + ({i} * 7919) % (SELECT max(id) FROM notes)",
    ),
    (
        "update 10 rows",
        "UPDATE notes SET views = views + 1 WHERE id BETWEEN 100 AND 109",
    ),
    (
        "delete 1 row",
        "DELETE FROM notes WHERE id = (SELECT max(id) FROM notes)",
    ),
];

fn main() {
    let commits: usize = std::env::var("HINTAUDIT_BENCH_COMMITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    println!(
        "| rows | first read: bytes, pages | commit | pages written | page bytes read | WAL bytes read | read p50 | read p99 |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for rows in [1_000u32, 10_000, 100_000] {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("bench.db");
        let server = fill(&path, rows);
        let mut f = Follower::new(&path, 1).expect("follower");
        f.read().expect("first read");
        let first = f.stats();
        let opened = format!(
            "{} B, {} pages",
            first.page_bytes + first.frame_bytes,
            db_pages(&path)
        );
        for (name, sql) in KINDS {
            let row = measure(&server, &mut f, sql, commits);
            println!(
                "| {rows} | {opened} | {name} | {:.1} | {:.0} | {:.0} | {} | {} |",
                row.pages,
                row.bytes,
                row.wal,
                us(row.p50),
                us(row.p99)
            );
        }
    }
}

/// A database of `rows` rows in WAL mode, checkpointed, its server connection open.
fn fill(path: &std::path::Path, rows: u32) -> Connection {
    let server = Connection::open(path).expect("server");
    server
        .execute_batch(&format!(
            "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=1000;
             CREATE TABLE notes(id INTEGER PRIMARY KEY, title TEXT NOT NULL, views INTEGER NOT NULL DEFAULT 0, body TEXT);
             CREATE INDEX notes_title ON notes(title);
             WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < {rows})
             INSERT INTO notes(title, body) SELECT 'note ' || x, printf('%.100c', 'b') FROM s;
             PRAGMA wal_checkpoint(TRUNCATE);"
        ))
        .expect("fill");
    server
}

fn db_pages(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len() / 4096)
}

struct Row {
    pages: f64,
    bytes: f64,
    wal: f64,
    p50: Duration,
    p99: Duration,
}

/// `commits` commits of `sql`, each read right after it.
fn measure(server: &Connection, f: &mut Follower, sql: &str, commits: usize) -> Row {
    let (mut pages, mut times) = (0usize, Vec::with_capacity(commits));
    let before = f.stats();
    for i in 0..commits {
        server
            .execute_batch(&sql.replace("{i}", &i.to_string()))
            .expect("commit");
        let start = Instant::now();
        let events = f.read().expect("read");
        times.push(start.elapsed());
        for e in events {
            match e {
                Event::Commit { changes, .. } => pages += changes.pages_written,
                Event::Gap(g) => panic!("a gap: {}", g.reason),
            }
        }
    }
    let after = f.stats();
    times.sort();
    let n = commits as f64;
    Row {
        pages: pages as f64 / n,
        bytes: (after.page_bytes - before.page_bytes) as f64 / n,
        wal: (after.frame_bytes - before.frame_bytes) as f64 / n,
        p50: times[times.len() / 2],
        p99: times[(times.len() * 99 / 100).min(times.len() - 1)],
    }
}

fn us(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}
