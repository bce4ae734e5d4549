//! Defects seen running verify against third-party database servers (issue 17), each
//! reproduced with tests/verify/python_server/sql_server.py (official MCP SDK): errors as
//! text, a wrong password, the wrong database, an empty SQLite file, a non-public
//! PostgreSQL schema, a secret in the environment, a startup failure on stderr, HTTP
//! endpoints that are not streamable HTTP.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use hintaudit_verify::{Report, ServerSpec, ToolStatus, Verifier, VerifyError};

use crate::cli::hintaudit;
use crate::support::*;

pub fn sql_server() -> PathBuf {
    repo().join("tests/verify/python_server/sql_server.py")
}

/// The stdio command line of sql_server.py on `db` (a path or a postgres URL).
pub fn sql_cmd(py: &str, db: &str, env: &[(&str, &str)], extra: &[&str]) -> String {
    let mut words: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    words.push(py.to_owned());
    words.push(sql_server().display().to_string());
    words.push("--db".into());
    words.push(db.to_owned());
    words.extend(extra.iter().map(|s| s.to_string()));
    shlex::try_join(words.iter().map(String::as_str)).expect("no NUL bytes")
}

/// A SQLite database with sql_server.py's tables and rows; its path and URL.
pub fn seeded(py: &str, dir: &Path, name: &str) -> (String, String) {
    let (path, url) = temp_db(dir, name);
    let path = path.display().to_string();
    let ok = Command::new(py)
        .arg(sql_server())
        .args(["--db", &path, "--init-only"])
        .status()
        .expect("python runs")
        .success();
    assert!(ok, "sql_server.py --init-only");
    (path, url)
}

pub fn planted() -> std::collections::BTreeSet<(String, String, String)> {
    triples(&[
        ("get_item", "read_only_write", "readOnlyHint"),
        ("archive_item", "undeclared_destructive", "destructiveHint"),
    ])
}

#[tokio::test]
async fn errors_as_text_are_no_evidence_and_never_advice() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (path, url) = seeded(&py, dir.path(), "sql.db");
    let report = Verifier::new(ServerSpec::Stdio(sql_cmd(&py, &path, &[], &[])), url)
        .with_suggest(true)
        .run()
        .await
        .expect("verify runs");
    assert_eq!(findings(&report), planted(), "{report:#?}");
    // Generated SQL never supports advice that loosens a hint.
    for t in ["write_query", "create_table", "add_note"] {
        let tool = report.tool(t).unwrap();
        assert!(tool.advice.is_empty(), "{t}: {:?}", tool.advice);
    }
    // The SQL probe is a harmless read of a watched table, not `hintaudit`.
    let read = report.tool("read_query").unwrap();
    assert_eq!(read.status, ToolStatus::Passed, "{read:#?}");
    assert_eq!(read.cases[0].made_up, ["query"]);
    // A create-style tool gets a fresh id (one past the largest), so its INSERT runs.
    let note = report.tool("add_note").unwrap();
    let call = &note.cases[0].calls[0];
    assert_eq!(call.error, None, "{note:#?}");
    assert_eq!(
        (call.changes[0].table.as_str(), call.changes[0].added),
        ("notes", 1)
    );
    // Suggestions cite the evidence of both planted lies.
    let get = report
        .tool("get_item")
        .unwrap()
        .suggestion
        .as_ref()
        .unwrap();
    assert_eq!(get.corrected.read_only, Some(false));
    assert!(get.evidence[0].contains("row updated in items"), "{get:?}");
    let archive = report
        .tool("archive_item")
        .unwrap()
        .suggestion
        .as_ref()
        .unwrap();
    assert_eq!(archive.corrected.destructive, Some(true));
    assert!(
        report.database_check.starts_with("confirmed"),
        "{}",
        report.database_check
    );
}

#[tokio::test]
async fn a_wrong_password_leaves_every_tool_not_exercised_and_exit_1() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (path, url) = seeded(&py, dir.path(), "sql.db");
    let cmd = sql_cmd(&py, &path, &[("SQL_FIXTURE_PASSWORD", "wrong")], &[]);
    let report = Verifier::new(ServerSpec::Stdio(cmd.clone()), url.as_str())
        .run()
        .await
        .expect("verify runs");
    for t in &report.tools {
        assert!(
            matches!(&t.status, ToolStatus::NotExercised(why) if why.contains("(isError false): Error: ")),
            "{}: {:?}",
            t.name,
            t.status
        );
        assert!(t.advice.is_empty());
    }
    let refused = |t: &str| match &report.tool(t).unwrap().status {
        ToolStatus::NotExercised(why) => why.contains("password authentication failed"),
        _ => false,
    };
    assert!(refused("write_query") && refused("get_item"), "{report:#?}");
    let out = hintaudit(&["--stdio", &cmd, "--database", &url]);
    assert_eq!(out.status.code(), Some(1), "not exercised is no pass");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not exercised"), "{stderr}");
    let out = hintaudit(&["--stdio", &cmd, "--database", &url, "--allow-unexercised"]);
    assert_eq!(out.status.code(), Some(0));
}

#[tokio::test]
async fn the_wrong_database_stops_the_run_with_exit_2() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (server_db, _) = seeded(&py, dir.path(), "server.db");
    let (_, other_url) = seeded(&py, dir.path(), "other.db");
    let cmd = sql_cmd(&py, &server_db, &[], &[]);
    let err = Verifier::new(ServerSpec::Stdio(cmd.clone()), other_url.as_str())
        .run()
        .await
        .expect_err("not the server's database");
    eprintln!("message: {err}");
    assert!(matches!(err, VerifyError::Database(_)), "{err}");
    assert!(
        err.to_string().contains("not the database the server uses"),
        "{err}"
    );
    // The command, on fresh files: the run above changed server.db, and the evidence is
    // a change there.
    let (server_db, _) = seeded(&py, dir.path(), "server2.db");
    let (_, other_url) = seeded(&py, dir.path(), "other2.db");
    let fresh = sql_cmd(&py, &server_db, &[], &[]);
    let out = hintaudit(&["--stdio", &fresh, "--database", &other_url]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "no report");

    // An empty SQLite file (one the server created) has nothing to watch.
    let (empty, empty_url) = temp_db(dir.path(), "empty.db");
    std::fs::File::create(&empty).unwrap();
    let err = Verifier::new(ServerSpec::Stdio(cmd), empty_url.as_str())
        .run()
        .await
        .expect_err("no tables");
    assert!(err.to_string().contains("no table to watch"), "{err}");
}

/// A fresh PostgreSQL database for one test, dropped on drop (with its verify copies).
pub struct PgDb {
    pub admin: String,
    pub name: String,
}

impl PgDb {
    pub async fn create(prefix: &str) -> Option<PgDb> {
        use sqlx::Connection;
        let admin = std::env::var("HINTAUDIT_PG_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
        let reachable = sqlx::PgConnection::connect(&admin).await;
        if !available(
            "PostgreSQL",
            reachable.is_ok(),
            hintaudit_test_support::required("HINTAUDIT_REQUIRE_PG"),
            &format!("cannot connect to {admin}"),
        ) {
            return None;
        }
        let mut c = reachable.unwrap();
        let name = format!("{prefix}_{}", std::process::id());
        for sql in [
            format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            format!("CREATE DATABASE {name}"),
        ] {
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                .execute(&mut c)
                .await
                .unwrap();
        }
        Some(PgDb { admin, name })
    }

    pub fn url(&self) -> String {
        let base = self
            .admin
            .rsplit_once('/')
            .map_or(self.admin.as_str(), |(b, _)| b);
        format!("{base}/{}", self.name)
    }
}

impl Drop for PgDb {
    fn drop(&mut self) {
        for name in [
            format!("{}_hintaudit_copy", self.name),
            format!("{}_hintaudit_pristine", self.name),
            self.name.clone(),
        ] {
            let _ = Command::new("psql")
                .arg(&self.admin)
                .args([
                    "-qc",
                    &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

pub fn psycopg(py: &str) -> bool {
    let ok = Command::new(py)
        .args(["-c", "import psycopg"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    available(
        "python with psycopg",
        ok,
        false,
        "pip install -r tests/verify/python_server/requirements.txt",
    )
}

#[tokio::test]
async fn tables_outside_public_are_watched_and_reset_copies_the_database() {
    let Some(py) = python_or_skip() else { return };
    if !psycopg(&py) {
        return;
    }
    let Some(db) = PgDb::create("hv17_schema").await else {
        return;
    };
    let url = db.url();
    let cmd = sql_cmd(&py, &url, &[], &["--schema", "shop"]);
    let init = Command::new(&py)
        .arg(sql_server())
        .args(["--db", &url, "--schema", "shop", "--init-only"])
        .status()
        .unwrap();
    assert!(init.success());
    // --reset: the server runs on a TEMPLATE copy; the original keeps its rows.
    let run = || async {
        Verifier::new(ServerSpec::Stdio(cmd.clone()), url.as_str())
            .with_reset(true)
            .run()
            .await
            .expect("verify runs")
    };
    let first: Report = run().await;
    assert_eq!(findings(&first), planted(), "{first:#?}");
    assert_eq!(
        first.database_copy.as_deref(),
        Some(format!("{url}_hintaudit_copy").as_str())
    );
    // get_item and archive_item change the copy: it is made again before the next tool.
    assert!(first.database_resets >= 2, "{first:#?}");
    let second = run().await;
    assert_eq!(comparable(&first), comparable(&second));
    let rows = Command::new("psql")
        .arg(&url)
        .args(["-Atc", "SELECT count(*), sum(views) FROM shop.items"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&rows.stdout).trim(),
        "4|0",
        "original untouched"
    );
    // Another database with the same tables: no session of the server on it, no change
    // though write tools ran: not the server's database.
    let Some(other) = PgDb::create("hv17_other").await else {
        return;
    };
    let seeded = Command::new(&py)
        .arg(sql_server())
        .args(["--db", &other.url(), "--schema", "shop", "--init-only"])
        .status()
        .unwrap();
    assert!(seeded.success());
    let err = Verifier::new(ServerSpec::Stdio(cmd.clone()), other.url())
        .run()
        .await
        .expect_err("not the server's database");
    assert!(
        err.to_string().contains("not the database the server uses"),
        "{err}"
    );
    // --schema narrows the snapshot; a schema with no table is the wrong database.
    let err = Verifier::new(ServerSpec::Stdio(cmd.clone()), url.as_str())
        .with_schema("public")
        .run()
        .await
        .expect_err("nothing to watch in public");
    assert!(err.to_string().contains("no table to watch"), "{err}");
}

/// A report without its timings, for comparing two runs.
pub fn comparable(r: &Report) -> Report {
    let mut r = r.clone();
    r.elapsed_seconds = 0.0;
    // Scans depend on the cluster's WAL position, which other databases move too; server
    // logs carry timestamps.
    r.stats = Default::default();
    r.server_stderr.clear();
    // Which sign confirmed the database (the server's session, seen or not yet at the check,
    // or its first write) is a race; that it was confirmed is what must repeat.
    if let Some((verdict, _)) = r.database_check.split_once(':') {
        r.database_check = verdict.to_owned();
    }
    r
}

#[test]
fn secrets_reach_no_output_format() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (path, url) = seeded(&py, dir.path(), "sql.db");
    let secret = "right-hunter2";
    let cmd = sql_cmd(&py, &path, &[("SQL_FIXTURE_PASSWORD", secret)], &[]);
    for format in ["table", "json", "junit", "sarif"] {
        let out = hintaudit(&[
            "--stdio",
            &cmd,
            "--database",
            &url,
            "--format",
            format,
            "--suggest",
        ]);
        assert_eq!(out.status.code(), Some(1), "{format}: planted findings");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stdout.contains("hunter2"), "{format}: {stdout}");
        assert!(!stderr.contains("hunter2"), "{format}: {stderr}");
        assert!(
            stdout.contains("SQL_FIXTURE_PASSWORD=***"),
            "{format}: {stdout}"
        );
        // The server logged the password on stderr: the excerpt keeps the line, masked.
        assert!(
            stdout.contains("connecting with password ***"),
            "{format}: {stdout}"
        );
    }
}

#[test]
fn a_startup_failure_shows_the_last_20_stderr_lines() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (path, url) = seeded(&py, dir.path(), "sql.db");
    let cmd = sql_cmd(&py, &path, &[("FIXTURE_STDERR_LINES", "30")], &[]);
    let out = hintaudit(&["--stdio", &cmd, "--database", &url]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("startup line 11\n"), "{stderr}");
    assert!(stderr.contains("startup line 30"), "{stderr}");
    assert!(!stderr.contains("startup line 10\n"), "{stderr}");
}

#[tokio::test]
async fn http_errors_say_what_is_wrong() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (path, url) = seeded(&py, dir.path(), "sql.db");
    let closed = free_port();
    let err = Verifier::new(
        ServerSpec::Url(format!("http://127.0.0.1:{closed}/mcp")),
        url.as_str(),
    )
    .run()
    .await
    .expect_err("nothing listens");
    assert!(err.to_string().contains("connection refused"), "{err}");
    let port = free_port();
    let _server = Server(
        Command::new(&py)
            .arg(sql_server())
            .args(["--db", &path, "--sse", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python starts"),
    );
    wait_for_port(port, Duration::from_secs(30));
    let err = Verifier::new(
        ServerSpec::Url(format!("http://127.0.0.1:{port}/sse")),
        url.as_str(),
    )
    .with_timeout(Duration::from_secs(10))
    .run()
    .await
    .expect_err("legacy SSE");
    eprintln!("message: {err}");
    assert!(
        err.to_string()
            .contains("only streamable HTTP is supported"),
        "{err}"
    );
}
