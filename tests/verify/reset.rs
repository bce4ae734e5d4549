//! `--reset` between tools: a tool that changed the copy is followed by a fresh copy, so
//! the next tool sees the original rows (sql_server.py, official MCP SDK, on SQLite).

use hintaudit_verify::{Cases, Report, ServerSpec, Verifier};

use crate::real_servers::{comparable, seeded, sql_cmd};
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
