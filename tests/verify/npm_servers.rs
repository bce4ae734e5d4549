//! The official MCP servers whose state is files, from npm at pinned versions
//! (`@modelcontextprotocol/server-filesystem` and `server-memory` 2026.8.31, installed by
//! `.ci/run` under `HINTAUDIT_NPM_PREFIX`), under `hintaudit verify --watch` (issue 37):
//! honest servers get no finding at warning or above, no advice to loosen their writing
//! tools' hints, and their directory back as it was.

use std::path::Path;

use hintaudit_core::{Advice, Severity};
use hintaudit_verify::{Cases, Report, ServerSpec, ToolStatus, Verifier};
use serde_json::json;

use crate::files::tree_state;

use hintaudit_test_support::npm::{MEMORY_SEED, official_server_or_skip as server_or_skip};

/// A small project tree: two text files, a nested one, an empty directory.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("a.txt"), "alpha\nbeta\n").unwrap();
    std::fs::write(p.join("b.txt"), "bravo\n").unwrap();
    std::fs::create_dir_all(p.join("src/empty")).unwrap();
    std::fs::write(p.join("src/main.rs"), "fn main() {}\n").unwrap();
    dir
}

/// No finding at warning or above, no advice loosening a writing tool's hints, every tool
/// passed or not exercised.
fn assert_honest(report: &Report) {
    let serious: Vec<_> = report
        .findings()
        .filter(|f| f.severity >= Severity::Warning)
        .collect();
    assert!(serious.is_empty(), "{serious:#?}");
    for t in &report.tools {
        assert!(
            matches!(t.status, ToolStatus::Passed | ToolStatus::NotExercised(_)),
            "{}: {:?}",
            t.name,
            t.status
        );
        if t.hints.read_only != Some(true) {
            let loosening: Vec<_> = t
                .advice
                .iter()
                .filter(|a| !matches!(a, Advice::CouldBeClosedWorld))
                .collect();
            assert!(loosening.is_empty(), "{}: {loosening:?}", t.name);
        }
    }
}

async fn verify(cmd: String, dir: &Path, cases: Option<Cases>) -> Report {
    let mut v = Verifier::without_database(ServerSpec::Stdio(cmd))
        .with_watch(dir)
        .with_reset(true);
    if let Some(c) = cases {
        v = v.with_cases(c);
    }
    v.run().await.expect("a report")
}

#[tokio::test]
async fn the_filesystem_server_with_generated_arguments_is_honest() {
    let Some(entry) = server_or_skip("server-filesystem") else {
        return;
    };
    let dir = project();
    let before = tree_state(dir.path());
    let cmd = shlex::try_join([
        "node",
        entry.to_str().unwrap(),
        dir.path().to_str().unwrap(),
    ])
    .unwrap();
    let report = verify(cmd, dir.path(), None).await;
    assert_honest(&report);
    let exercised = report
        .tools
        .iter()
        .filter(|t| t.status == ToolStatus::Passed)
        .count();
    assert!(
        exercised >= 10,
        "path arguments from the tree exercise most tools: {report:#?}"
    );
    assert_eq!(tree_state(dir.path()), before, "DIR is as it was");
}

#[tokio::test]
async fn the_filesystem_server_with_honest_cases_passes_every_tool() {
    let Some(entry) = server_or_skip("server-filesystem") else {
        return;
    };
    let dir = project();
    let before = tree_state(dir.path());
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let at = |p: &str| root.join(p).display().to_string();
    let case =
        |tool: &str, arguments: serde_json::Value| json!({"tool": tool, "arguments": arguments});
    let cases = json!({"case": [
        case("read_file", json!({"path": at("a.txt")})),
        case("read_text_file", json!({"path": at("a.txt"), "head": 1})),
        case("read_media_file", json!({"path": at("b.txt")})),
        case("read_multiple_files", json!({"paths": [at("a.txt"), at("b.txt")]})),
        case("write_file", json!({"path": at("notes.md"), "content": "# notes\n"})),
        case("edit_file", json!({"path": at("a.txt"), "edits": [{"oldText": "beta", "newText": "gamma"}]})),
        case("create_directory", json!({"path": at("docs")})),
        case("list_directory", json!({"path": at("")})),
        case("list_directory_with_sizes", json!({"path": at("src")})),
        case("directory_tree", json!({"path": at("src")})),
        case("move_file", json!({"source": at("b.txt"), "destination": at("src/b.txt")})),
        case("search_files", json!({"path": at(""), "pattern": "main"})),
        case("get_file_info", json!({"path": at("a.txt")})),
        case("list_allowed_directories", json!({})),
    ]});
    let cases = Cases::parse(&cases.to_string(), true).unwrap();
    let cmd = shlex::try_join([
        "node",
        entry.to_str().unwrap(),
        dir.path().to_str().unwrap(),
    ])
    .unwrap();
    let report = verify(cmd, dir.path(), Some(cases)).await;
    assert_honest(&report);
    let not_passed: Vec<_> = report
        .tools
        .iter()
        .filter(|t| t.status != ToolStatus::Passed)
        .map(|t| (&t.name, &t.status))
        .collect();
    assert!(not_passed.is_empty(), "{not_passed:#?}");
    assert_eq!(tree_state(dir.path()), before, "DIR is as it was");
}

#[tokio::test]
async fn the_memory_server_adds_without_destroying() {
    let Some(entry) = server_or_skip("server-memory") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("memory.jsonl");
    std::fs::write(&store, MEMORY_SEED).unwrap();
    let before = tree_state(dir.path());
    let case =
        |tool: &str, arguments: serde_json::Value| json!({"tool": tool, "arguments": arguments});
    let cases = json!({"case": [
        case("create_entities", json!({"entities": [{"name": "Bob", "entityType": "person", "observations": ["likes tea"]}]})),
        case("create_relations", json!({"relations": [{"from": "Alice", "to": "Bob", "relationType": "knows"}]})),
        case("add_observations", json!({"observations": [{"entityName": "Alice", "contents": ["plays chess"]}]})),
        case("delete_entities", json!({"entityNames": ["Carol"]})),
        case("delete_observations", json!({"deletions": [{"entityName": "Alice", "observations": ["reads"]}]})),
        case("delete_relations", json!({"relations": [{"from": "Alice", "to": "Carol", "relationType": "knows"}]})),
        case("read_graph", json!({})),
        case("search_nodes", json!({"query": "Alice"})),
        case("open_nodes", json!({"names": ["Alice"]})),
    ]});
    let cases = Cases::parse(&cases.to_string(), true).unwrap();
    let env = format!("MEMORY_FILE_PATH={}", store.display());
    let cmd = shlex::try_join([env.as_str(), "node", entry.to_str().unwrap()]).unwrap();
    let report = verify(cmd.clone(), dir.path(), Some(cases)).await;
    assert_honest(&report);
    for t in &report.tools {
        assert_eq!(t.status, ToolStatus::Passed, "{}: {t:#?}", t.name);
    }
    assert_eq!(tree_state(dir.path()), before, "DIR is as it was");
    // With generated arguments: the same verdict, and the same tree afterwards; the tools
    // that change records act on records that exist (names, observations and a relation
    // drawn from memory.jsonl), in a session's order (relations and observations deleted
    // before the entities they belong to).
    let report = verify(cmd, dir.path(), None).await;
    assert_honest(&report);
    for t in [
        "add_observations",
        "delete_observations",
        "delete_relations",
    ] {
        let tool = report.tools.iter().find(|r| r.name == t).unwrap();
        let changed = tool.cases.iter().any(|c| {
            c.calls
                .first()
                .is_some_and(|call| call.files.iter().any(|f| f.path == "memory.jsonl"))
        });
        assert!(changed, "{t} acted on records that exist: {tool:#?}");
    }
    assert_eq!(tree_state(dir.path()), before, "DIR is as it was");
}
