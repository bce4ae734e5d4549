//! `--reset` between tools: a tool that changed the copy is followed by a fresh copy, so
//! the next tool sees the original rows (sql_server.py, official MCP SDK, on SQLite); and a
//! server configured by parts, reset in place (PostgreSQL).

use hintaudit_verify::{Cases, Report, ServerSpec, Verifier};

use crate::real_servers::{PgDb, comparable, planted, psycopg, seeded, sql_cmd, sql_server};
use crate::support::*;

/// archive_item deletes item 1; write_query then renames item 1, which changes a row
/// only when the row is there.
const CASES: &str = r#"
[[case]]
tool = "archive_item"
arguments = { id = 1 }

[[case]]
tool = "write_query"
arguments = { query = "UPDATE items SET name = name || '!' WHERE id = 1" }
"#;

async fn run(py: &str, path: &str, url: &str, reset: bool) -> Report {
    Verifier::new(ServerSpec::Stdio(sql_cmd(py, path, &[], &[])), url)
        .with_cases(Cases::parse(CASES, false).expect("cases parse"))
        .with_tool("archive_item")
        .with_tool("write_query")
        .with_reset(reset)
        .run()
        .await
        .expect("verify runs")
}

/// Rows write_query's call changed in items.
fn renamed(report: &Report) -> u64 {
    let tool = report.tool("write_query").expect("write_query ran");
    tool.cases[0].calls[0]
        .changes
        .iter()
        .map(|d| d.changed)
        .sum()
}

#[tokio::test]
async fn reset_restores_the_pristine_rows_before_the_next_tool() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (path, url) = seeded(&py, dir.path(), "sql.db");
    let first = run(&py, &path, &url, true).await;
    let names: Vec<&str> = first.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["archive_item", "write_query"]);
    assert!(
        !first.tool("archive_item").unwrap().cases[0].calls[0]
            .changes
            .is_empty(),
        "archive_item deleted item 1: {first:#?}"
    );
    assert_eq!(
        renamed(&first),
        1,
        "write_query saw item 1 again: {first:#?}"
    );
    assert_eq!(first.database_resets, 1);
    let second = run(&py, &path, &url, true).await;
    assert_eq!(comparable(&first), comparable(&second));
    // Without --reset the same run works on the database itself: item 1 is gone when
    // write_query runs.
    let plain = run(&py, &path, &url, false).await;
    assert_eq!(renamed(&plain), 0, "{plain:#?}");
    assert_eq!(plain.database_resets, 0);
}

/// `psql -Atc sql` on `url`: its output, trimmed.
fn psql(url: &str, sql: &str) -> String {
    let out = std::process::Command::new("psql")
        .arg(url)
        .args(["-Atc", sql])
        .output()
        .expect("psql runs");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A server told where its database is by parts (`DB_HOST`, `DB_NAME`, …), as many are:
/// `--reset` resets the database `--database` names in place (issue 26). Two runs give the
/// same report, and the database ends as it began, its pristine copy dropped. A database
/// whose name does not say it is a test one is refused, untouched.
#[tokio::test]
async fn a_server_configured_by_parts_is_reset_in_place() {
    let Some(py) = python_or_skip() else { return };
    if !psycopg(&py) {
        return;
    }
    let Some(db) = PgDb::create("hv26_test_parts").await else {
        return;
    };
    let url = db.url();
    let init = std::process::Command::new(&py)
        .arg(sql_server())
        .args(["--db", &url, "--init-only"])
        .status()
        .unwrap();
    assert!(init.success());
    // postgres://user@host:port/name, as the parts a server is given.
    let authority = url.split("://").nth(1).unwrap().split('/').next().unwrap();
    let (user, host_port) = authority.split_once('@').unwrap();
    let (host, port) = host_port.split_once(':').unwrap_or((host_port, "5432"));
    let parts = [
        ("DB_HOST", host),
        ("DB_PORT", port),
        ("DB_USER", user),
        ("DB_NAME", db.name.as_str()),
    ];
    let mut words: Vec<String> = parts.iter().map(|(k, v)| format!("{k}={v}")).collect();
    words.extend([py.clone(), sql_server().display().to_string()]);
    let cmd = shlex::try_join(words.iter().map(String::as_str)).unwrap();
    let run = || async {
        Verifier::new(ServerSpec::Stdio(cmd.clone()), url.as_str())
            .with_reset(true)
            .run()
            .await
            .expect("a report, not an error")
    };
    let first = run().await;
    assert_eq!(findings(&first), planted(), "{first:#?}");
    assert!(first.database_resets >= 2, "{first:#?}");
    let pristine = format!("{}_hintaudit_pristine", db.name);
    assert!(
        first
            .database_copy
            .as_deref()
            .is_some_and(|c| c.ends_with(&pristine)),
        "{:?}",
        first.database_copy
    );
    let second = run().await;
    assert_eq!(comparable(&first), comparable(&second));
    assert_eq!(
        psql(&url, "SELECT count(*), sum(views) FROM items"),
        "4|0",
        "the database ends as it began"
    );
    let left = format!("SELECT count(*) FROM pg_database WHERE datname = '{pristine}'");
    assert_eq!(psql(&url, &left), "0", "the pristine copy is dropped");

    // Not a test database by its name: refused before anything is touched.
    let Some(other) = PgDb::create("hv26_parts").await else {
        return;
    };
    let err = Verifier::new(ServerSpec::Stdio(cmd), other.url())
        .with_reset(true)
        .run()
        .await
        .expect_err("refused");
    assert!(
        err.to_string()
            .contains("does not say it is a test database"),
        "{err}"
    );
    let made = format!(
        "SELECT count(*) FROM pg_database WHERE datname = '{}_hintaudit_pristine'",
        other.name
    );
    assert_eq!(psql(&url, &made), "0");
}
