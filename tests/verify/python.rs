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
    // Creators run before readers, as in a session: the three seeded items out of stock and
    // the one add_item made (qty 0).
    let apply = &by_label("mode=apply").calls[0].changes;
    assert_eq!((apply[0].table.as_str(), apply[0].removed), ("items", 4));
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
    // Advice: stats wrote nothing and declares nothing; over HTTP (a `--url` server) its
    // outbound requests are not seen, so no advice that it is read-only, and a note why.
    let stats = report.tool("stats").unwrap();
    let advised = stats
        .advice
        .iter()
        .any(|a| a.as_str() == "could_be_read_only");
    assert_eq!(advised, report.outbound_watched, "{stats:#?}");
    let withheld = stats
        .notes
        .iter()
        .any(|n| n.starts_with("no could_be_read_only advice") && n.contains("--url"));
    assert_eq!(withheld, !report.outbound_watched, "{:?}", stats.notes);
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

/// A Python tool that makes HTTP requests is found through verify's recording proxy
/// (urllib honours HTTP_PROXY and HTTPS_PROXY): a POST from a tool declaring readOnlyHint
/// true and openWorldHint false is both `read_only_write` and `undeclared_open_world`; an
/// HTTPS GET is a CONNECT, an interaction and no write. Nothing is forwarded: the hosts do
/// not exist. The server's start-up request is reported as unattributed.
#[tokio::test]
async fn python_tools_making_http_requests_are_found_through_the_proxy() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (db, url) = temp_db(dir.path(), "fixture.db");
    let cmd = python_cmd(&py, &db, &[("FIXTURE_OUTSIDE", "1")]);
    let report = Verifier::new(ServerSpec::Stdio(cmd), url)
        .with_ignored_table("access_log")
        .with_tool("notify_owner")
        .with_tool("fetch_rates")
        .with_tool("stats")
        .with_tool("add_item") // a write: the database check needs one
        .run()
        .await
        .expect("verify runs");
    assert_eq!(
        findings(&report),
        triples(&[
            ("notify_owner", "read_only_write", "readOnlyHint"),
            ("notify_owner", "undeclared_open_world", "openWorldHint"),
            ("fetch_rates", "undeclared_open_world", "openWorldHint"),
            ("stats", "hint_missing", "readOnlyHint"),
            ("stats", "hint_missing", "destructiveHint"),
            ("stats", "hint_missing", "idempotentHint"),
            ("stats", "hint_missing", "openWorldHint"),
        ]),
        "{report:#?}"
    );
    let evidence = |tool: &str, rule: &str| {
        report
            .findings()
            .find(|f| f.tool == tool && f.rule.as_str() == rule)
            .map(|f| f.evidence.clone())
            .unwrap()
    };
    // Host and port only: the path and its token are never recorded.
    assert_eq!(
        evidence("notify_owner", "undeclared_open_world"),
        "outbound POST to notify.example:80 (spec reading: interaction outside the closed \
         world; directory reading: outside state changed)"
    );
    assert_eq!(
        evidence("notify_owner", "read_only_write"),
        "outbound POST to notify.example:80"
    );
    assert!(
        evidence("fetch_rates", "undeclared_open_world")
            .starts_with("outbound CONNECT to rates.example:443"),
        "{report:#?}"
    );
    for t in ["notify_owner", "fetch_rates"] {
        let tool = report.tool(t).unwrap();
        assert_eq!(tool.status, ToolStatus::Failed, "{t}");
        let call = &tool.cases[0].calls[0];
        assert!(call.error.is_some(), "refused by the proxy: {call:?}");
        assert_eq!(call.outbound.len(), 1, "{call:?}");
    }
    assert!(report.outbound_watched);
    let startup: Vec<String> = report
        .unattributed_outbound
        .iter()
        .map(|u| {
            format!(
                "{} {} {:?}",
                u.request.method,
                u.request.destination(),
                u.after
            )
        })
        .collect();
    assert_eq!(startup, ["GET startup.example:80 None"], "{report:#?}");
    // A tool that reached nothing, behind the proxy, may be closed-world.
    let stats = report.tool("stats").unwrap();
    assert!(
        stats
            .advice
            .iter()
            .any(|a| a.as_str() == "could_be_closed_world"),
        "{stats:#?}"
    );
    let json = hintaudit_verify::Format::Json.render(&report, hintaudit_core::Severity::Warning);
    assert!(!json.contains("s3cret") && json.contains("notify.example"));
    let table = hintaudit_verify::Format::Table.render(&report, hintaudit_core::Severity::Warning);
    assert!(
        table.contains("outbound       notify_owner  POST notify.example:80, not forwarded")
            && table.contains("unattributed: GET startup.example:80 (before the first call"),
        "{table}"
    );
}

/// Draft action metadata in the tools' `_meta` (FIXTURE_ACTION_METADATA=1, the Python SDK
/// 2.x keeps it there): the report names a benign outcome that deleted
/// (`undeclared_outcome`, with the listing's `action_metadata_contradiction`: benign and
/// destructiveHint true) and an internal destination that sent a request outside
/// (`undeclared_destination`, through the recording proxy); honest metadata and values the
/// draft does not define give no finding. Values are in mixed case.
#[tokio::test]
async fn python_tools_action_metadata_is_judged() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (db, url) = temp_db(dir.path(), "fixture.db");
    let env = [("FIXTURE_ACTION_METADATA", "1"), ("FIXTURE_OUTSIDE", "1")];
    let report = Verifier::new(ServerSpec::Stdio(python_cmd(&py, &db, &env)), url)
        .with_ignored_table("access_log")
        .with_tool("discard_item")
        .with_tool("ping_owner")
        .with_tool("peek_qty")
        .with_tool("note_item")
        .run()
        .await
        .expect("verify runs");
    assert_eq!(
        findings(&report),
        triples(&[
            ("discard_item", "undeclared_outcome", "destructiveHint"),
            (
                "discard_item",
                "action_metadata_contradiction",
                "destructiveHint"
            ),
            ("ping_owner", "undeclared_destination", "openWorldHint"),
        ]),
        "{report:#?}"
    );
    let discard = report.tool("discard_item").unwrap();
    assert_eq!(discard.status, ToolStatus::Failed);
    // JUnit: a testcase of each action rule for each of the four tools declaring some.
    let junit = hintaudit_verify::Format::Junit.render(&report, hintaudit_core::Severity::Warning);
    assert_eq!(
        junit.matches(r#"name="undeclared_outcome""#).count(),
        4,
        "{junit}"
    );
    assert!(
        junit.contains(r#"classname="discard_item" name="undeclared_outcome""#),
        "{junit}"
    );
}
