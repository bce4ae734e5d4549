//! The follower against real SQLite databases written by another connection (the bundled
//! library, as a server in the same process would) and by another process (Python's stdlib
//! sqlite3, a different SQLite version): every commit read once, as the rows it changed.
#![allow(clippy::too_many_lines)]

mod changes;
mod checkpoints;
mod modes;
mod schema;

use std::path::{Path, PathBuf};

use hintaudit_sqlite_log::{Changes, Event, Follower, GapReason, TableChanges, Update};
use rusqlite::Connection;

/// A database in a directory of its own, and a server connection to it in WAL mode.
pub struct Db {
    /// Removed with the test.
    pub dir: tempfile::TempDir,
    /// The database file.
    pub path: PathBuf,
    /// The server's connection.
    pub server: Connection,
}

impl Db {
    /// A new database in WAL mode, automatic checkpoints off unless `autocheckpoint`, with
    /// `schema` applied.
    pub fn new(schema: &str, autocheckpoint: u32) -> Db {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("app.db");
        let server = Connection::open(&path).expect("server connection");
        server
            .execute_batch(&format!(
                "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint={autocheckpoint};"
            ))
            .expect("WAL mode");
        server.execute_batch(schema).expect("schema");
        Db { dir, path, server }
    }

    /// Runs `sql` as one transaction.
    pub fn tx(&self, sql: &str) {
        self.server
            .execute_batch(&format!("BEGIN; {sql}; COMMIT;"))
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// A follower of it that checkpoints after every read, its first read done (nothing to
    /// report).
    pub fn follower(&self) -> Follower {
        let mut f = Follower::new(&self.path, 7)
            .expect("follower")
            .with_checkpoint_frames(0);
        let first = f.read().expect("first read");
        assert_eq!(
            commits(&first).len(),
            0,
            "history is not reported: {first:?}"
        );
        assert!(f.following(), "in WAL mode: following");
        f
    }
}

/// The commits among `events`, asserting there is no gap.
pub fn commits(events: &[Event]) -> Vec<Changes> {
    events
        .iter()
        .map(|e| match e {
            Event::Commit { changes, .. } => changes.clone(),
            Event::Gap(g) => panic!("a gap: {} at {:?}", g.reason, g.at),
        })
        .collect()
}

/// The gaps' reasons among `events`.
pub fn gaps(events: &[Event]) -> Vec<GapReason> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Gap(g) => Some(g.reason.clone()),
            Event::Commit { .. } => None,
        })
        .collect()
}

/// Reads once and returns the commits (no gap allowed).
pub fn read(f: &mut Follower) -> Vec<Changes> {
    commits(&f.read().expect("read"))
}

/// `table`'s changes in `c`, or an empty entry.
pub fn table(c: &Changes, table: &str) -> TableChanges {
    c.tables
        .iter()
        .find(|t| t.table == table)
        .cloned()
        .unwrap_or_else(|| TableChanges {
            table: table.into(),
            ..Default::default()
        })
}

/// (inserted, updated, deleted) rowids of `t`.
pub fn rowids(t: &TableChanges) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
    let ids = |rows: &mut dyn Iterator<Item = Option<i64>>| {
        rows.map(|r| r.expect("a rowid")).collect::<Vec<_>>()
    };
    (
        ids(&mut t.inserted.iter().map(|r| r.rowid)),
        ids(&mut t.updated.iter().map(|u| u.new.rowid)),
        ids(&mut t.deleted.iter().map(|r| r.rowid)),
    )
}

/// The columns whose hashes differ between an update's images.
pub fn changed(u: &Update) -> Vec<String> {
    u.new
        .columns
        .iter()
        .filter(|c| {
            u.old
                .columns
                .iter()
                .find(|o| o.name == c.name)
                .is_none_or(|o| o.value != c.value)
        })
        .map(|c| c.name.clone())
        .collect()
}

/// A recursive CTE `s(value)` of 1 to `n`, to put before an `INSERT … SELECT … FROM s`.
pub fn series(n: u32) -> String {
    format!(
        "WITH RECURSIVE s(value) AS (SELECT 1 UNION ALL SELECT value + 1 FROM s WHERE value < {n}) "
    )
}

/// `python3` with the stdlib sqlite3 module, or a printed reason and `None`.
pub fn python() -> Option<&'static str> {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import sqlite3"])
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Some("python3")
    } else {
        assert!(
            std::env::var_os("HINTAUDIT_REQUIRE_ALL").is_none(),
            "python3 with sqlite3 is required"
        );
        eprintln!("skipped: python3 with the sqlite3 module is not on PATH");
        None
    }
}

/// A server in another process: Python's stdlib sqlite3 on the database, running the SQL it
/// is sent, one statement batch per line, and answering each with its last statement's rows
/// as JSON. Its locks are another process's, as a real server's are.
pub struct PyServer {
    child: std::process::Child,
    to: std::process::ChildStdin,
    from: std::io::BufReader<std::process::ChildStdout>,
}

const PY_SERVER: &str = r#"
import json, sqlite3, sys
# A RESTART or TRUNCATE checkpoint waits on its busy handler before it answers busy: 0.2 s,
# not Python's 5 s, so that the tests that get busy do not wait long. Writes never wait on
# the follower.
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0.2)
for line in sys.stdin:
    sql = json.loads(line)
    try:
        *head, last = [s for s in sql.split(";") if s.strip()]
        for s in head:
            c.execute(s)
        rows = c.execute(last).fetchall()
        print(json.dumps({"rows": rows}), flush=True)
    except Exception as e:
        print(json.dumps({"error": str(e)}), flush=True)
"#;

impl PyServer {
    /// The server on `db`, in WAL mode with automatic checkpoints every `autocheckpoint`
    /// pages (0: off).
    pub fn start(py: &str, db: &Path, autocheckpoint: u32) -> PyServer {
        use std::process::{Command, Stdio};
        let mut child = Command::new(py)
            .args(["-u", "-c", PY_SERVER])
            .arg(db)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        let to = child.stdin.take().expect("stdin");
        let from = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        let mut s = PyServer { child, to, from };
        s.sql(&format!(
            "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint={autocheckpoint}"
        ));
        s
    }

    /// Runs `sql` (statements separated by `;`, no `;` inside a literal) and returns its last
    /// statement's rows.
    pub fn sql(&mut self, sql: &str) -> Vec<Vec<serde_json::Value>> {
        use std::io::{BufRead, Write};
        writeln!(self.to, "{}", serde_json::Value::String(sql.to_owned())).expect("send");
        let mut line = String::new();
        self.from.read_line(&mut line).expect("answer");
        let answer: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        if let Some(e) = answer.get("error") {
            panic!("{sql}: {e}");
        }
        serde_json::from_value(answer["rows"].clone()).expect("rows")
    }
}

impl Drop for PyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `script` in Python with `db` as `sys.argv[1]`.
pub fn run_python(py: &str, db: &Path, script: &str) {
    let out = std::process::Command::new(py)
        .arg("-c")
        .arg(script)
        .arg(db)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "python: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
