//! Case 3 on SQLite: the database file locked by another process (the `sqlite3` shell
//! holding `BEGIN EXCLUSIVE`), in WAL and in rollback-journal mode. The same calls run on a
//! bare sqlx pool and on an `AuditedPool` over their own copies of the file; every outcome
//! (ok, SQLite result code, sqlx error variant) and the rows left must be the same.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::time::Duration;

use hintaudit::core::CallScope;
use hintaudit::sqlx::AuditedPool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use sqlx::{Sqlite, SqlitePool};

use crate::outcome::{Outcomes, Side, either};
use crate::support::figure;

type SqliteSide = Side<SqlitePool, AuditedPool<Sqlite>>;

/// The `sqlite3` shell on `file`, inside `BEGIN EXCLUSIVE` once this returns; `None` when
/// the shell is not installed.
fn lock(file: &Path) -> Option<Child> {
    let mut child = match Command::new("sqlite3")
        .arg(file)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            if hintaudit_test_support::required("HINTAUDIT_REQUIRE_SQLITE3") {
                panic!("the sqlite3 shell is required: {e}");
            }
            eprintln!("skipping the locked-file case: no sqlite3 shell ({e})");
            return None;
        }
    };
    let stdin = child.stdin.as_mut().expect("stdin");
    stdin
        .write_all(b"BEGIN EXCLUSIVE;\nSELECT 'locked';\n")
        .expect("write to sqlite3");
    stdin.flush().expect("flush");
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().expect("stdout"))
        .read_line(&mut line)
        .expect("read from sqlite3");
    assert_eq!(line.trim(), "locked", "sqlite3 took the lock");
    Some(child)
}

/// Ends the shell's transaction and waits for it to exit.
fn unlock(mut child: Child) {
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"COMMIT;\n.quit\n").expect("write");
    drop(stdin);
    assert!(child.wait().expect("wait").success(), "sqlite3 exited");
}

/// A fresh file holding `t (id INTEGER PRIMARY KEY, n INTEGER)` in `mode`, and one side's
/// pool on it (busy timeout 200 ms).
async fn side(
    dir: &Path,
    audited: bool,
    mode: SqliteJournalMode,
) -> (SqliteSide, SqliteConnectOptions) {
    let file = dir.join(if audited { "audited.db" } else { "bare.db" });
    let options = SqliteConnectOptions::from_str(&format!("sqlite://{}?mode=rwc", file.display()))
        .expect("url")
        .journal_mode(mode)
        .busy_timeout(Duration::from_millis(200));
    let setup = SqlitePool::connect_with(options.clone())
        .await
        .expect("setup");
    sqlx::raw_sql(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER NOT NULL); INSERT INTO t (n) VALUES (0)",
    )
    .execute(&setup)
    .await
    .expect("table");
    setup.close().await;
    let pool_options = || SqlitePoolOptions::new().max_connections(3);
    let pool = if audited {
        Side::Audited(
            AuditedPool::options()
                .connect_with(pool_options(), options.clone())
                .await
                .expect("audited pool"),
        )
    } else {
        Side::Bare(
            pool_options()
                .connect_with(options.clone())
                .await
                .expect("bare pool"),
        )
    };
    (pool, options)
}

/// The calls made while the file is locked, and after it is released.
async fn calls(pool: &SqliteSide, file: &Path, out: &mut Outcomes) -> bool {
    let Some(shell) = lock(file) else {
        return false;
    };
    let locked = [
        ("locked.read", "SELECT count(*) FROM t"),
        ("locked.insert", "INSERT INTO t (n) VALUES (1)"),
        ("locked.update", "UPDATE t SET n = n + 1"),
        ("locked.ddl", "CREATE TABLE u (x)"),
    ];
    for (name, sql) in locked {
        let r = either!(pool.by_ref(), p => sqlx::raw_sql(sql).execute(p).await.map(|r| r.rows_affected()));
        out.note(name, &r);
    }
    let (insert, commit) = either!(pool.by_ref(), p => {
        match p.begin().await {
            Ok(mut tx) => {
                let insert = sqlx::raw_sql("INSERT INTO t (n) VALUES (2)").execute(&mut *tx).await.map(|_| ());
                (insert, tx.commit().await)
            }
            Err(e) => (Err(e), Ok(())),
        }
    });
    out.note("locked.tx.insert", &insert);
    out.note("locked.tx.commit", &commit);
    // Opening a connection reads the file too: acquiring may fail under the lock.
    let held = either!(pool.by_ref(), p => match p.acquire().await {
        Ok(mut c) => sqlx::raw_sql("INSERT INTO t (n) VALUES (3)").execute(&mut *c).await.map(|_| ()),
        Err(e) => Err(e),
    });
    out.note("locked.held_connection.insert", &held);
    unlock(shell);
    let after = [
        ("released.insert", "INSERT INTO t (n) VALUES (4)"),
        ("released.read", "SELECT count(*) FROM t"),
    ];
    for (name, sql) in after {
        let r = either!(pool.by_ref(), p => sqlx::raw_sql(sql).execute(p).await.map(|r| r.rows_affected()));
        out.note(name, &r);
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_sqlite_file_fails_calls_as_on_the_bare_server() {
    let mut scenarios = 0;
    let mut differences = Vec::new();
    for mode in [SqliteJournalMode::Wal, SqliteJournalMode::Delete] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut sides = Vec::new();
        for audited in [false, true] {
            let (pool, options) = side(dir.path(), audited, mode).await;
            let file = options.get_filename().to_owned();
            let mut out = Outcomes::default();
            if !CallScope::new("faults")
                .run(calls(&pool, &file, &mut out))
                .await
            {
                return;
            }
            either!(pool.by_ref(), p => p.close().await);
            let check = SqlitePool::connect_with(options).await.expect("check");
            let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM t")
                .fetch_one(&check)
                .await
                .expect("count");
            check.close().await;
            out.value("rows_left", rows);
            sides.push(out);
        }
        println!("locked sqlite file, {mode:?}: bare {:?}", sides[0].0);
        scenarios += sides[0].0.len();
        differences.extend(
            sides[1]
                .differences(&sides[0])
                .into_iter()
                .map(|d| format!("{mode:?} {d}")),
        );
    }
    figure(
        "faults.sqlite_locked",
        &[
            ("journal_modes", "2".to_owned()),
            ("scenarios", scenarios.to_string()),
            ("outcome_differs", differences.len().to_string()),
        ],
    );
    assert!(
        differences.is_empty(),
        "outcomes differ from bare: {differences:#?}"
    );
}
