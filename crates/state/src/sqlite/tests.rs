//! SQLite files found by header and put back whole, on databases the `sqlite3` shell makes.

use std::path::Path;
use std::process::Command;

use super::*;

/// Runs `sql` with the `sqlite3` shell on `db`; `None` (the test skips, saying why) when it
/// is not installed, unless HINTAUDIT_REQUIRE_SQLITE3 (or _ALL) asks for it.
fn sqlite3(db: &Path, sql: &str) -> Option<String> {
    let mut cmd = Command::new("sqlite3");
    cmd.arg(db).arg(sql);
    crate::testing::output(cmd, "HINTAUDIT_REQUIRE_SQLITE3")
}

#[test]
fn databases_found_by_header_and_put_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let db = p.join("data/notes.store");
    fs::create_dir(p.join("data")).unwrap();
    let made = "PRAGMA journal_mode=WAL; CREATE TABLE notes(id INTEGER PRIMARY KEY, t TEXT); \
                INSERT INTO notes VALUES (1, 'kept');";
    let Some(_) = sqlite3(&db, made) else { return };
    fs::write(p.join("notes.db.txt"), "SQLite format 2, not a database").unwrap();
    fs::write(p.join("data/fake.db"), "").unwrap();
    assert_eq!(
        find_sqlite_files(p),
        std::slice::from_ref(&db),
        "by content, not by name"
    );

    let copy = SqliteCopy::save(&db).unwrap();
    sqlite3(
        &db,
        "DELETE FROM notes; INSERT INTO notes VALUES (2, 'new');",
    )
    .unwrap();
    // A -wal and -shm left behind by a connection, as a server's would be.
    fs::write(companion(&db, "-wal"), b"stray log").unwrap();
    fs::write(companion(&db, "-shm"), b"stray index").unwrap();
    copy.restore().unwrap();
    assert!(!companion(&db, "-wal").exists() && !companion(&db, "-shm").exists());
    assert_eq!(sqlite3(&db, "SELECT id, t FROM notes").unwrap(), "1|kept");
    assert_eq!(sqlite3(&db, "PRAGMA integrity_check").unwrap(), "ok");
}

/// A copy taken while the log holds committed pages keeps them: the log is copied and put
/// back with the database.
#[test]
fn a_log_with_commits_is_kept_with_its_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("n.db");
    let Some(_) = sqlite3(&db, "CREATE TABLE t(x); PRAGMA journal_mode=WAL;") else {
        return;
    };
    // The shell checkpoints and removes the log when it closes: keep the log by copying
    // it aside while a second shell holds the database open in a transaction.
    let mut holder = Command::new("sqlite3")
        .arg(&db)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::{BufRead, Write};
    let stdin = holder.stdin.as_mut().unwrap();
    writeln!(stdin, "BEGIN; SELECT count(*) FROM t;").unwrap();
    stdin.flush().unwrap();
    // Its answer says the read transaction holds its snapshot.
    let mut line = String::new();
    std::io::BufReader::new(holder.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "0");
    sqlite3(&db, "INSERT INTO t VALUES (42);").unwrap();
    let copy = SqliteCopy::save(&db).unwrap();
    assert!(copy.had[0], "the log exists while a reader holds it");
    drop(holder.stdin.take());
    holder.wait().unwrap();
    sqlite3(&db, "DELETE FROM t;").unwrap();
    copy.restore().unwrap();
    assert_eq!(sqlite3(&db, "SELECT x FROM t").unwrap(), "42");
    assert_eq!(sqlite3(&db, "PRAGMA integrity_check").unwrap(), "ok");
}
