//! The Python fixture server (official MCP SDK) over stdio and streamable HTTP, on SQLite:
//! `hintaudit verify` reports its planted findings and no others.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::Duration;

use hintaudit_verify::{Report, ServerSpec, ToolStatus, Verifier};

use crate::support::*;

/// The planted findings of tests/verify/python_server/server.py.
pub fn planted() -> BTreeSet<(String, String, String)> {
    triples(&[
        ("view_item", "read_only_write", "readOnlyHint"),
        ("cleanup", "read_only_write", "readOnlyHint"),
        ("save_search", "read_only_write", "readOnlyHint"),
        ("archive_item", "undeclared_destructive", "destructiveHint"),
        ("tag_item", "idempotency_broken", "idempotentHint"),
        ("stats", "hint_missing", "readOnlyHint"),
        ("stats", "hint_missing", "destructiveHint"),
        ("stats", "hint_missing", "idempotentHint"),
        ("stats", "hint_missing", "openWorldHint"),
        ("peek", "hint_contradiction", "destructiveHint"),
        ("item_count", "hints_changed", "readOnlyHint"),
    ])
}

pub async fn verify_python_stdio(py: &str, dir: &std::path::Path) -> Report {
    let (db, url) = temp_db(dir, "fixture.db");
    Verifier::new(ServerSpec::Stdio(python_cmd(py, &db, &[])), url)
        .with_ignored_table("access_log")
        .with_timeout(Duration::from_secs(30))
        .run()
        .await
        .expect("verify runs")
}

fn check(report: &Report) {
    assert_eq!(findings(report), planted(), "{report:#?}");
    let status = |t: &str| report.tool(t).expect(t).status.clone();
    for t in [
        "view_item",
        "cleanup",
        "save_search",
        "archive_item",
        "tag_item",
    ] {
        assert_eq!(status(t), ToolStatus::Failed, "{t}");
    }
    for t in [
        "list_items",
        "get_item",
        "peek",
        "stats",
        "add_item",
        "rename_item",
        "restock",
        "item_count",
    ] {
        assert_eq!(status(t), ToolStatus::Passed, "{t}");
    }
    match status("run_report") {
        ToolStatus::NotExercised(why) => assert!(why.contains("\"spec\""), "{why}"),
        other => panic!("run_report: {other:?}"),
    }
    assert!(report.tool("run_report").unwrap().cases.is_empty());
    // The mode-dependent tool: preview leaves no diff, apply deletes.
    let cleanup = report.tool("cleanup").unwrap();
    let by_label = |l: &str| {
        cleanup
            .cases
            .iter()
            .find(|c| c.label.contains(l))
            .unwrap_or_else(|| panic!("case {l}: {cleanup:#?}"))
    };
    assert!(by_label("mode=preview").calls[0].changes.is_empty());
    let apply = &by_label("mode=apply").calls[0].changes;
    assert_eq!((apply[0].table.as_str(), apply[0].removed), ("items", 3));
    // A failed call that wrote is still a write.
    let save = &report.tool("save_search").unwrap().cases[0].calls[0];
    assert!(save.error.is_some() && !save.changes.is_empty());
    // Idempotent tools ran twice; the dishonest one changed again on the repeat.
    let tag = &report.tool("tag_item").unwrap().cases[0];
    assert_eq!(tag.calls.len(), 2);
    assert_eq!(tag.calls[1].changes[0].added, 1);
    // Evidence from the core judge, confirmed by the diff.
    let f = report
        .findings()
        .find(|f| f.tool == "archive_item")
        .unwrap();
    assert_eq!(f.evidence, "1 row deleted from items");
    assert_eq!(f.confidence.as_str(), "confirmed");
    // The honest reader appends to the bookkeeping table, which is ignored.
    let list = report.tool("list_items").unwrap();
    assert!(list.cases[0].calls[0].changes.is_empty());
    // Advice: stats wrote nothing and declares nothing.
    let stats = report.tool("stats").unwrap();
    assert!(
        stats
            .advice
            .iter()
            .any(|a| a.as_str() == "could_be_read_only")
    );
}

#[tokio::test]
async fn python_server_over_stdio_reports_exactly_its_planted_findings() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let report = verify_python_stdio(&py, dir.path()).await;
    check(&report);
}

#[tokio::test]
async fn python_server_over_http_reports_exactly_its_planted_findings() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (db, url) = temp_db(dir.path(), "fixture.db");
    let port = free_port();
    let _server = Server(
        Command::new(&py)
            .arg(python_server())
            .arg("--db")
            .arg(&db)
            .arg("--http")
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python starts"),
    );
    wait_for_port(port, Duration::from_secs(30));
    let report = Verifier::new(ServerSpec::Url(format!("http://127.0.0.1:{port}/mcp")), url)
        .with_ignored_table("access_log")
        .run()
        .await
        .expect("verify runs");
    check(&report);
}

#[tokio::test]
async fn cases_file_arguments_and_setup_sql_are_used() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (db, url) = temp_db(dir.path(), "fixture.db");
    let cases_path = dir.path().join("cases.toml");
    std::fs::write(
        &cases_path,
        r#"
        [[case]]
        tool = "archive_item"
        name = "a fresh item"
        setup = "INSERT INTO items (id, name, qty) VALUES (500, 'spare', 1)"
        arguments = { id = 500 }

        [[case]]
        tool = "archive_item"
        name = "a missing item"
        arguments = { id = 99999 }

        [[case]]
        tool = "cleanup"
        arguments = { mode = "preview" }
        "#,
    )
    .unwrap();
    let report = Verifier::new(ServerSpec::Stdio(python_cmd(&py, &db, &[])), url)
        .with_ignored_table("access_log")
        .with_cases_file(&cases_path)
        .unwrap()
        .run()
        .await
        .unwrap();
    let archive = report.tool("archive_item").unwrap();
    let labels: Vec<&str> = archive.cases.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(labels, ["a fresh item", "a missing item"]);
    assert_eq!(archive.cases[0].calls[0].changes[0].removed, 1);
    assert!(archive.cases[1].calls[0].changes.is_empty());
    // With only the preview case from the file, cleanup is honest here.
    assert_eq!(report.tool("cleanup").unwrap().status, ToolStatus::Passed);
    assert_eq!(report.tool("cleanup").unwrap().cases.len(), 1);
}
