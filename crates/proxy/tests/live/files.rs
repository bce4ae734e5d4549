//! `hintaudit proxy --watch DIR` (issue 37): the fixture's planted file lies
//! (tests/verify/python_server/files_server.py) found live through the proxy, and the
//! official npm filesystem and memory servers (pinned, `HINTAUDIT_NPM_PREFIX`) behind it
//! with honest arguments: no finding at warning or above, no loosening advice logged.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use hintaudit_telemetry::MetricName;
use hintaudit_test_support::npm::{MEMORY_SEED, official_server_or_skip};
use hintaudit_test_support::scrape::Scraped;
use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use tokio::io::AsyncReadExt;

use crate::support::*;

/// A client of `hintaudit proxy ARGS --metrics ADDR` over stdio; the proxy's stderr is
/// collected by the returned task (it ends when the proxy exits).
async fn proxy(args: &[&str]) -> (Client, SocketAddr, tokio::task::JoinHandle<String>) {
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let mut cmd = tokio::process::Command::new(hintaudit());
    cmd.arg("proxy")
        .args(args)
        .args(["--metrics", &addr.to_string()]);
    let (proc, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .expect("hintaudit starts");
    let mut stderr = stderr.expect("stderr piped");
    let log = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text).await;
        text
    });
    let client = ().serve(proc).await.expect("MCP handshake over stdio");
    (client, addr, log)
}

/// Findings at warning or above, as `(tool, rule)` with their count.
fn serious(s: &Scraped) -> Vec<(String, String, f64)> {
    s.samples(MetricName::HintViolations.as_str())
        .filter(|x| x.labels.get("severity") != Some("info") && s.number(x) > 0.0)
        .map(|x| {
            let label = |k| x.labels.get(k).unwrap_or_default().to_owned();
            (label("tool"), label("rule"), s.number(x))
        })
        .collect()
}

fn files_server() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/verify/python_server/files_server.py")
        .canonicalize()
        .expect("tests/verify/python_server/files_server.py")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_file_lies_are_found_live() {
    let Some(py) = python_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(d.join("b.txt"), "bravo\nkept?\n").unwrap();
    std::fs::write(d.join("old.tmp"), "scratch\n").unwrap();
    let upstream = shlex::try_join([py, files_server().to_str().unwrap(), "--dir"])
        .map(|c| format!("{c} {}", shlex::try_quote(d.to_str().unwrap()).unwrap()))
        .unwrap();
    let watch = d.to_str().unwrap();
    let (client, addr, log) = proxy(&[
        "--stdio",
        &upstream,
        "--watch",
        watch,
        "--ignore-path",
        "cache/**",
    ])
    .await;
    client.list_all_tools().await.expect("tools/list");
    let calls = [
        ("read_note", json!({"name": "a.txt"})),
        ("save_note", json!({"name": "b.txt", "text": "replaced"})),
        ("append_entry", json!({"text": "one"})),
        ("append_entry", json!({"text": "one"})),
        ("cleanup", json!({})),
        ("archive_note", json!({"name": "a.txt"})),
        ("list_notes", json!({})),
        ("add_note", json!({"name": "c.txt", "text": "new"})),
        ("store_note", json!({"name": "c.txt", "text": "new"})),
    ];
    for (tool, arguments) in calls {
        let answer = call(&client, tool, args(arguments)).await;
        assert!(answer.get("error").is_none(), "{tool}: {answer}");
    }
    // Each answer came back once its end marker was read: the metrics are final.
    let s = metrics(addr).await;
    let lies = [
        ("read_note", "read_only_write"),
        ("save_note", "undeclared_destructive"),
        ("append_entry", "idempotency_broken"),
        ("cleanup", "undeclared_destructive"),
        ("archive_note", "undeclared_destructive"),
    ];
    for (tool, rule) in lies {
        assert_eq!(violations(&s, tool, rule), 1.0, "{tool} {rule}\n{}", s.text);
    }
    let mut found: Vec<(String, String)> =
        serious(&s).into_iter().map(|(t, r, _)| (t, r)).collect();
    found.sort();
    let mut want: Vec<(String, String)> = lies
        .iter()
        .map(|(t, r)| ((*t).to_owned(), (*r).to_owned()))
        .collect();
    want.sort();
    // list_notes (its cache is bookkeeping), add_note (creates) and store_note (the same
    // content through a temporary file) are clean.
    assert_eq!(found, want, "{}", s.text);
    let gaps = s.value(MetricName::CaptureGaps.as_str(), &[("backend", "files")]);
    assert_eq!(gaps, Some(0.0), "{}", s.text);
    client.cancel().await.ok();
    let log = log.await.unwrap();
    assert!(
        log.contains("files (watched)"),
        "the findings name file evidence: {log}"
    );
}

/// The filesystem server's tools, each called once with honest arguments.
fn filesystem_calls(root: &Path) -> Vec<(&'static str, serde_json::Value)> {
    let at = |p: &str| root.join(p).display().to_string();
    vec![
        ("read_file", json!({"path": at("a.txt")})),
        ("read_text_file", json!({"path": at("a.txt"), "head": 1})),
        (
            "read_multiple_files",
            json!({"paths": [at("a.txt"), at("b.txt")]}),
        ),
        (
            "write_file",
            json!({"path": at("notes.md"), "content": "# notes\n"}),
        ),
        (
            "edit_file",
            json!({"path": at("a.txt"), "edits": [{"oldText": "beta", "newText": "gamma"}]}),
        ),
        ("create_directory", json!({"path": at("docs/deep")})),
        (
            "write_file",
            json!({"path": at("docs/deep/x.md"), "content": "x\n"}),
        ),
        ("list_directory", json!({"path": at("")})),
        ("directory_tree", json!({"path": at("src")})),
        (
            "move_file",
            json!({"source": at("b.txt"), "destination": at("src/b.txt")}),
        ),
        ("search_files", json!({"path": at(""), "pattern": "main"})),
        ("get_file_info", json!({"path": at("a.txt")})),
        ("list_allowed_directories", json!({})),
    ]
}

/// No finding at warning or above, no loosening advice in the proxy's log, no gap.
async fn assert_honest(client: Client, addr: SocketAddr, log: tokio::task::JoinHandle<String>) {
    let s = metrics(addr).await;
    assert!(serious(&s).is_empty(), "{:?}\n{}", serious(&s), s.text);
    let gaps = s.value(MetricName::CaptureGaps.as_str(), &[("backend", "files")]);
    assert_eq!(gaps, Some(0.0), "{}", s.text);
    client.cancel().await.ok();
    let log = log.await.unwrap();
    for loosening in [
        "could_be_read_only",
        "could_be_non_destructive",
        "could_be_idempotent",
    ] {
        assert!(!log.contains(loosening), "{loosening}: {log}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_filesystem_server_behind_the_proxy_is_honest() {
    let Some(entry) = official_server_or_skip("server-filesystem") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::write(root.join("a.txt"), "alpha\nbeta\n").unwrap();
    std::fs::write(root.join("b.txt"), "bravo\n").unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    let upstream =
        shlex::try_join(["node", entry.to_str().unwrap(), root.to_str().unwrap()]).unwrap();
    let (client, addr, log) =
        proxy(&["--stdio", &upstream, "--watch", root.to_str().unwrap()]).await;
    client.list_all_tools().await.expect("tools/list");
    for (tool, arguments) in filesystem_calls(&root) {
        let answer = call(&client, tool, args(arguments)).await;
        assert!(answer.get("error").is_none(), "{tool}: {answer}");
    }
    // The writes were seen: the new file in the new nested directory among them.
    assert!(root.join("docs/deep/x.md").is_file());
    assert_honest(client, addr, log).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_memory_server_behind_the_proxy_adds_without_destroying() {
    let Some(entry) = official_server_or_skip("server-memory") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("memory.jsonl");
    std::fs::write(&store, MEMORY_SEED).unwrap();
    let env = format!("MEMORY_FILE_PATH={}", store.display());
    let upstream = shlex::try_join([env.as_str(), "node", entry.to_str().unwrap()]).unwrap();
    let (client, addr, log) = proxy(&[
        "--stdio",
        &upstream,
        "--watch",
        dir.path().to_str().unwrap(),
    ])
    .await;
    client.list_all_tools().await.expect("tools/list");
    let calls = [
        (
            "create_entities",
            json!({"entities": [{"name": "Bob", "entityType": "person", "observations": ["likes tea"]}]}),
        ),
        (
            "create_relations",
            json!({"relations": [{"from": "Alice", "to": "Bob", "relationType": "knows"}]}),
        ),
        (
            "add_observations",
            json!({"observations": [{"entityName": "Alice", "contents": ["plays chess"]}]}),
        ),
        ("read_graph", json!({})),
        ("search_nodes", json!({"query": "Alice"})),
        (
            "delete_observations",
            json!({"deletions": [{"entityName": "Alice", "observations": ["reads"]}]}),
        ),
        ("delete_entities", json!({"entityNames": ["Carol"]})),
    ];
    for (tool, arguments) in calls {
        let answer = call(&client, tool, args(arguments)).await;
        assert!(answer.get("error").is_none(), "{tool}: {answer}");
    }
    let text = std::fs::read_to_string(&store).unwrap();
    assert!(
        text.contains("plays chess"),
        "the server wrote its store: {text}"
    );
    assert_honest(client, addr, log).await;
}

/// The `_meta` key of a disclosure (docs/design.md, *Observed effects disclosed*).
const DISCLOSED: &str = "io.hintaudit/effects";

/// `hintaudit_evidence_incomplete_total{source="files"}`.
fn incomplete_files(s: &Scraped) -> f64 {
    let name = MetricName::EvidenceIncomplete.as_str();
    s.value(name, &[("source", "files")]).unwrap_or(-1.0)
}

/// Issue 45's "done when", through the proxy with `--watch` and `--disclose-effects`: a call
/// that wrote files lists them in its `_meta`; a call during a watch gap (the watched
/// directory itself removed and made again: its watch is gone) is disclosed `incomplete`
/// and counted once; the watch comes back and the next calls are observed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disclosed_effects_list_file_changes_and_a_watch_gap_is_incomplete() {
    let Some(py) = python_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes");
    std::fs::create_dir(&notes).unwrap();
    std::fs::write(notes.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(notes.join("b.txt"), "bravo\n").unwrap();
    let watch = notes.to_str().unwrap();
    let upstream = shlex::try_join([py, files_server().to_str().unwrap(), "--dir", watch])
        .map(|c| format!("{c} --with-replace"))
        .unwrap();
    let (client, addr, log) = proxy(&[
        "--stdio",
        &upstream,
        "--watch",
        watch,
        "--ignore-path",
        "cache/**",
        "--disclose-effects",
    ])
    .await;
    client.list_all_tools().await.expect("tools/list");
    let disclosed = |answer: &serde_json::Value| answer["_meta"][DISCLOSED].clone();

    let saved = call(
        &client,
        "save_note",
        args(json!({"name": "b.txt", "text": "x"})),
    )
    .await;
    assert_eq!(
        disclosed(&saved),
        json!({
            "status": "observed", "pending": [], "incomplete": [], "tables": [],
            "files": [{"target": "b.txt", "change": "overwritten"}],
            "reported": [], "outbound": [],
            "findings": [{"rule": "undeclared_destructive", "severity": "critical",
                          "hint": "destructiveHint", "confidence": "likely"}],
        }),
        "{saved}"
    );
    let archived = call(&client, "archive_note", args(json!({"name": "a.txt"}))).await;
    assert_eq!(
        disclosed(&archived)["files"],
        json!([
            {"target": "a.txt", "change": "deleted"},
            {"target": "archive", "change": "added"},
            {"target": "archive/a.txt", "change": "added"},
        ]),
        "{archived}"
    );
    assert_eq!(incomplete_files(&metrics(addr).await), 0.0);

    // The watched directory removed and made again within the call: what was written in
    // it before the watch came back may be lost.
    let replaced = call(
        &client,
        "replace_notes",
        args(json!({"name": "r.txt", "text": "r"})),
    );
    let replaced = disclosed(&replaced.await);
    assert_eq!(replaced["status"], "incomplete", "{replaced}");
    assert_eq!(replaced["incomplete"], json!(["files"]), "{replaced}");
    let s = metrics(addr).await;
    assert_eq!(incomplete_files(&s), 1.0, "{}", s.text);
    let gaps = s.value(MetricName::CaptureGaps.as_str(), &[("backend", "files")]);
    assert_eq!(gaps, Some(1.0), "{}", s.text);

    // A call that begins while the directory is not watched yet is incomplete too (and
    // counted); by its start the watch is back, so the call after it is whole.
    let listed = disclosed(&call(&client, "list_notes", args(json!({}))).await);
    let status = listed["status"].as_str();
    assert!(
        matches!(status, Some("observed" | "incomplete")),
        "{listed}"
    );
    let again = if status == Some("incomplete") {
        2.0
    } else {
        1.0
    };
    let added = call(
        &client,
        "add_note",
        args(json!({"name": "c.txt", "text": "c"})),
    )
    .await;
    assert_eq!(
        disclosed(&added),
        json!({
            "status": "observed", "pending": [], "incomplete": [], "tables": [],
            "files": [{"target": "c.txt", "change": "added"}],
            "reported": [], "outbound": [], "findings": [],
        }),
        "{added}"
    );
    assert_eq!(incomplete_files(&metrics(addr).await), again);
    client.cancel().await.ok();
    let log = log.await.unwrap();
    assert!(log.contains("was removed (events lost)"), "{log}");
}
