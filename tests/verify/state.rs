//! Kinds of state inside watched trees (issue 46): the official git MCP server from PyPI
//! (`mcp-server-git` 2026.10.19, installed by `.ci/run` in a virtual environment of its
//! own) and the project's fixture (tests/verify/python_server/state_server.py), each tool
//! exercised on the state it needs, with arguments drawn from the state.

use std::process::Command;

use hintaudit_test_support::git::git;
use hintaudit_verify::{Report, ServerSpec, ToolReport, ToolStatus, Verifier};

use crate::files::tree_state;
use crate::support::*;

/// The `mcp-server-git` command (`HINTAUDIT_MCP_SERVER_GIT`, set by `.ci/run`, or on
/// `PATH`), or a printed skip.
fn git_server_or_skip() -> Option<String> {
    let server =
        std::env::var("HINTAUDIT_MCP_SERVER_GIT").unwrap_or_else(|_| "mcp-server-git".to_owned());
    available(
        "the official git MCP server (mcp-server-git)",
        answers_help(&server),
        false,
        "python3 -m venv V && V/bin/pip install mcp-server-git==2026.10.19, then \
         HINTAUDIT_MCP_SERVER_GIT=V/bin/mcp-server-git",
    )
    .then_some(server)
}

/// A repository with one commit and a changed file, as the issue tried it.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    std::fs::write(p.join("a.txt"), "hello\n").unwrap();
    git(p, &["add", "a.txt"]);
    git(p, &["commit", "-qm", "first"]);
    std::fs::write(p.join("a.txt"), "hello\nmore\n").unwrap();
    dir
}

fn tool<'r>(report: &'r Report, name: &str) -> &'r ToolReport {
    report
        .tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("{name} in {report:#?}"))
}

/// The evidence of a tool's findings, joined.
fn evidence(report: &Report, name: &str) -> String {
    let findings = tool(report, name).findings.iter();
    findings
        .map(|f| f.evidence.as_str())
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Each tool named passed.
fn passed(report: &Report, names: &[&str]) {
    for name in names {
        let t = tool(report, name);
        assert_eq!(t.status, ToolStatus::Passed, "{t:#?}");
    }
}

/// Every tool but those named exercised; those say why not.
fn exercised_but(report: &Report, allowed: &[&str]) {
    for t in &report.tools {
        if let ToolStatus::NotExercised(why) = &t.status {
            assert!(
                allowed.contains(&t.name.as_str()),
                "{} not exercised: {why}",
                t.name
            );
            assert!(!why.is_empty());
        }
    }
}

async fn run_git_server(server: &str, dir: &std::path::Path) -> Report {
    let cmd = shlex::try_join([server, "--repository", dir.to_str().unwrap()]).unwrap();
    Verifier::without_database(ServerSpec::Stdio(cmd))
        .with_watch(dir)
        .run()
        .await
        .expect("a report")
}

/// Every tool of the git server is exercised (git_checkout, git_show, git_diff and
/// git_branch included: branch names, revisions and `branch_type`'s quoted values come from
/// the repository and the schema); each says the state it met and where its arguments came
/// from; the repository is left as it was.
#[tokio::test]
async fn the_official_git_server_is_exercised_on_its_repository() {
    let Some(server) = git_server_or_skip() else {
        return;
    };
    let dir = repository();
    let before = tree_state(dir.path());
    let head = git(dir.path(), &["rev-parse", "HEAD"]);
    let report = run_git_server(&server, dir.path()).await;
    assert_eq!(report.tools.len(), 12, "{report:#?}");
    exercised_but(&report, &[]);
    for t in ["git_checkout", "git_show", "git_diff", "git_branch"] {
        let t = tool(&report, t);
        assert!(
            t.notes
                .iter()
                .any(|n| n.starts_with("state met: git repository .git")),
            "{t:#?}"
        );
    }
    let generated = |name: &str| -> Vec<String> {
        tool(&report, name)
            .cases
            .iter()
            .flat_map(|c| {
                c.generated
                    .iter()
                    .map(|(a, from)| format!("{a} from {from}"))
            })
            .collect()
    };
    assert!(generated("git_show").contains(&"revision from a commit of the git repository".into()));
    assert!(
        generated("git_branch")
            .contains(&"branch_type from a value quoted in the description".into())
    );
    assert!(
        generated("git_checkout")
            .contains(&"branch_name from a branch of the git repository".into())
    );
    assert!(generated("git_checkout").contains(&"branch_name from a new branch name".into()));
    let order: Vec<&str> = report.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        order[..2],
        ["git_add", "git_create_branch"],
        "creators first: {order:?}"
    );
    assert_eq!(order.last(), Some(&"git_reset"), "{order:?}");
    assert_eq!(
        tree_state(dir.path()),
        before,
        "the repository is as it was"
    );
    assert_eq!(git(dir.path(), &["rev-parse", "HEAD"]), head);
}

/// Issue 46's Done-when for the git server: no finding at warning or above, and no advice
/// loosening git_commit, git_add, git_reset, git_create_branch or git_checkout.
#[tokio::test]
#[ignore = "issue 46 item 2: git_reset runs after git_commit and meets nothing staged, so it \
            writes nothing and gets could_be_read_only advice (git itself is folded now: no \
            finding at warning or above)"]
async fn the_official_git_server_gets_no_false_finding() {
    let Some(server) = git_server_or_skip() else {
        return;
    };
    let dir = repository();
    let report = run_git_server(&server, dir.path()).await;
    let serious: Vec<_> = report
        .findings()
        .filter(|f| f.severity >= hintaudit_core::Severity::Warning)
        .collect();
    assert!(serious.is_empty(), "{serious:#?}");
    let loosened: Vec<_> = [
        "git_commit",
        "git_add",
        "git_reset",
        "git_create_branch",
        "git_checkout",
    ]
    .into_iter()
    .map(|t| tool(&report, t))
    .filter(|t| !t.advice.is_empty())
    .collect();
    assert!(loosened.is_empty(), "{loosened:#?}");
}

async fn run_fixture(py: &str, dir: &std::path::Path) -> Report {
    let server = repo().join("tests/verify/python_server/state_server.py");
    let cmd =
        shlex::try_join([py, server.to_str().unwrap(), "--dir", dir.to_str().unwrap()]).unwrap();
    Verifier::without_database(ServerSpec::Stdio(cmd))
        .with_watch(dir)
        .run()
        .await
        .expect("a report")
}

fn seeded(py: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = repo().join("tests/verify/python_server/state_server.py");
    let ok = Command::new(py)
        .arg(server)
        .args(["--dir", data.to_str().unwrap(), "--seed"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "seeding the fixture's data directory");
    dir
}

/// The fixture's planted lies are found, each tool exercised with the state's values (an
/// existing settings key, task name, branch, note path, and a note id drawn from the SQLite
/// file in the tree), documents judged by record, and the tree left as it was.
#[tokio::test]
async fn the_state_fixture_has_its_lies_found_on_existing_state() {
    let Some(py) = python_or_skip() else {
        return;
    };
    let dir = seeded(&py);
    let data = dir.path().join("data");
    let before = tree_state(&data);
    let report = run_fixture(&py, &data).await;
    exercised_but(&report, &[]);
    let found = findings(&report);
    for lie in [
        ("repo_status", "read_only_write", "readOnlyHint"),
        ("sync_branch", "undeclared_destructive", "destructiveHint"),
        ("set_setting", "undeclared_destructive", "destructiveHint"),
        ("log_task", "idempotency_broken", "idempotentHint"),
        ("close_note", "undeclared_destructive", "destructiveHint"),
        ("save_note", "undeclared_destructive", "destructiveHint"),
    ] {
        assert!(
            found.contains(&triples(&[lie]).pop_first().unwrap()),
            "{lie:?}: {found:#?}"
        );
    }
    passed(
        &report,
        &["add_task", "create_branch", "read_settings", "list_tasks"],
    );
    let evidence = |name: &str| evidence(&report, name);
    assert!(
        evidence("set_setting").contains("settings.json: 1 record changed (1 value replaced)"),
        "{}",
        evidence("set_setting")
    );
    assert!(
        evidence("save_note").contains("overwrote (old content lost) notes/a.txt"),
        "{}",
        evidence("save_note")
    );
    let json = hintaudit_verify::Format::Json.render(&report, hintaudit_core::Severity::Warning);
    assert!(
        !json.contains("a private line") && !json.contains("Buy tea"),
        "no content in a report"
    );
    assert_eq!(tree_state(&data), before, "the data directory is as it was");
}

/// Issue 46's Done-when for the fixture: its lies found with evidence of their kind (a
/// commit left unreachable, a row deleted), and 0 false findings (commit_notes keeps
/// history; add_note_row is an insert).
#[tokio::test]
async fn the_state_fixture_gets_no_false_finding() {
    let Some(py) = python_or_skip() else {
        return;
    };
    let dir = seeded(&py);
    let report = run_fixture(&py, &dir.path().join("data")).await;
    passed(
        &report,
        &["commit_notes", "add_note_row", "add_task", "create_branch"],
    );
    let evidence = |name: &str| evidence(&report, name);
    assert!(
        evidence("sync_branch").contains("commits left unreachable"),
        "{}",
        evidence("sync_branch")
    );
    assert!(
        evidence("close_note").contains("deleted from notes"),
        "{}",
        evidence("close_note")
    );
}
