//! Writes by others disturb repeats (issue 45, item 5): the official memory server (npm,
//! pinned, honest hints) behind `hintaudit proxy --watch`, four sessions, each with a `node`
//! child of its own writing one `memory.jsonl`.
//!
//! First the four sessions create, relate, add and read at once. Then, in an order the test
//! sets, session A deletes an entity twice while something else re-creates it between the
//! two deletes: another session's call alone (attributed to it), another session's call while
//! a third session's call of another tool is held in flight (ambiguous: the third session's
//! `node` is stopped, and the test goes on once the proxy has marked that call begun), and
//! the test itself writing the file while no call is in flight (unattributed). Each second
//! delete changes the file again, yet none is `idempotency_broken`: something else wrote the
//! file in between. A delete repeated with nothing in between changes nothing: no finding.
//! (The concurrent part's lost updates are real and may be found as such: only
//! `idempotency_broken` is asserted on.)
//! (A genuine non-idempotent repeat through the proxy's watch is still caught:
//! files.rs, `planted_file_lies_are_found_live`, `append_entry`.)
#![cfg(target_os = "linux")]

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use hintaudit_test_support::npm::{MEMORY_SEED, official_server_or_skip};
use serde_json::json;

use crate::support::*;

/// The pids of the processes whose parent is `parent`.
fn children(parent: u32) -> BTreeSet<i32> {
    procfs::process::all_processes()
        .expect("/proc")
        .filter_map(Result::ok)
        .filter_map(|p| p.stat().ok())
        .filter(|s| u32::try_from(s.ppid).is_ok_and(|pp| pp == parent))
        .map(|s| s.pid)
        .collect()
}

/// A session of the proxy at `addr`, and its `node` child (the child its `initialize`
/// started: the one new child of the proxy).
async fn session(addr: SocketAddr, proxy: u32) -> (Client, i32) {
    let before = children(proxy);
    let client = http_client(&format!("http://{addr}/mcp")).await;
    let new: Vec<i32> = children(proxy).difference(&before).copied().collect();
    assert_eq!(new.len(), 1, "one child per session: {new:?}");
    (client, new[0])
}

fn signal(pid: i32, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill {sig} {pid}");
}

/// Call-start markers (`b-ID`) the proxy's file watch holds now, in its private directory
/// under `tmp` (its `TMPDIR`): one per call in flight.
fn calls_in_flight(tmp: &Path) -> usize {
    let dirs = std::fs::read_dir(tmp).expect("TMPDIR");
    dirs.filter_map(Result::ok)
        .filter(|d| {
            d.file_name()
                .to_string_lossy()
                .starts_with("hintaudit-proxy-calls-")
        })
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten())
        .filter_map(Result::ok)
        .filter(|m| m.file_name().to_string_lossy().starts_with("b-"))
        .count()
}

/// Waits until the proxy has marked one call in flight (a condition the proxy sets when it
/// begins the call; at most 30 s, then fails).
async fn until_one_in_flight(tmp: &Path) {
    for _ in 0..1500 {
        if calls_in_flight(tmp) == 1 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the proxy never marked the held call in flight");
}

async fn ok(client: &Client, tool: &str, arguments: serde_json::Value) {
    let answer = call(client, tool, args(arguments)).await;
    assert!(answer.get("error").is_none(), "{tool}: {answer}");
    let failed = answer.get("isError").and_then(serde_json::Value::as_bool);
    assert_ne!(failed, Some(true), "{tool}: {answer}");
}

fn entity(name: &str) -> serde_json::Value {
    json!({"entities": [{"name": name, "entityType": "thing", "observations": []}]})
}

fn delete(name: &str) -> serde_json::Value {
    json!({"entityNames": [name]})
}

/// Session `s` creates, relates, adds to and reads its own entity: four sessions at once.
/// Their read-modify-writes of one file race (the server's lost updates are real), so a tool
/// may answer a tool error here; none may fail as a request.
async fn busy(client: &Client, s: usize) {
    let me = format!("S{s}");
    let calls = [
        ("create_entities", entity(&me)),
        (
            "create_relations",
            json!({"relations": [{"from": me, "to": "Alice", "relationType": "knows"}]}),
        ),
        (
            "add_observations",
            json!({"observations": [{"entityName": me, "contents": ["busy"]}]}),
        ),
        ("read_graph", json!({})),
        ("search_nodes", json!({"query": me})),
    ];
    for (tool, arguments) in calls {
        let answer = call(client, tool, args(arguments)).await;
        assert!(answer.get("error").is_none(), "{tool}: {answer}");
    }
}

fn memory_server() -> Option<PathBuf> {
    official_server_or_skip("server-memory")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_by_other_sessions_disturb_the_memory_servers_repeats() {
    let Some(entry) = memory_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (trees, tmp) = (dir.path().join("store"), dir.path().join("tmp"));
    std::fs::create_dir_all(&trees).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    let store = trees.join("memory.jsonl");
    std::fs::write(&store, MEMORY_SEED).unwrap();
    let env = format!("MEMORY_FILE_PATH={}", store.display());
    let upstream = shlex::try_join([env.as_str(), "node", entry.to_str().unwrap()]).unwrap();
    let log = dir.path().join("proxy.log");
    let (proxy, addr) = proxy_logged(
        &["--stdio", &upstream, "--watch", trees.to_str().unwrap()],
        &[("TMPDIR", tmp.to_str().unwrap())],
        &log,
    )
    .await;
    let pid = proxy.0.id().expect("the proxy runs");
    let mut sessions = Vec::new();
    for _ in 0..4 {
        sessions.push(session(addr, pid).await);
    }
    let [(a, _), (b, _), (c, c_node), (d, _)] = &sessions[..] else {
        unreachable!()
    };
    a.list_all_tools().await.expect("tools/list");
    // Four sessions at once, each on its own entity.
    let all = [a, b, c, d];
    futures_util::future::join_all(all.iter().enumerate().map(|(i, s)| busy(s, i))).await;

    // Another session re-creates the entity between A's deletes, alone: its write is its own.
    ok(b, "create_entities", entity("X")).await;
    ok(a, "delete_entities", delete("X")).await;
    ok(b, "create_entities", entity("X")).await;
    ok(a, "delete_entities", delete("X")).await;

    // Again while C's read is held in flight: calls of two tools, the write is ambiguous.
    ok(b, "create_entities", entity("Y")).await;
    ok(a, "delete_entities", delete("Y")).await;
    signal(*c_node, "-STOP");
    let held = tokio::spawn({
        let c = c.peer().clone();
        let params = rmcp::model::CallToolRequestParams::new("read_graph")
            .with_arguments(serde_json::Map::new());
        async move { c.call_tool(params).await }
    });
    until_one_in_flight(&tmp).await;
    ok(b, "create_entities", entity("Y")).await;
    signal(*c_node, "-CONT");
    held.await.unwrap().expect("the held read answers");
    ok(a, "delete_entities", delete("Y")).await;

    // Again with no call in flight: the test writes the entity back itself (unattributed).
    // D's read, which writes nothing, begins after the watch has read that write (the kernel
    // queues its events first), so A's delete comes after it.
    ok(b, "create_entities", entity("Z")).await;
    ok(a, "delete_entities", delete("Z")).await;
    let mut text = std::fs::read_to_string(&store).unwrap();
    text.push('\n');
    text.push_str(r#"{"type":"entity","name":"Z","entityType":"thing","observations":[]}"#);
    std::fs::write(&store, text).unwrap();
    ok(d, "read_graph", json!({})).await;
    ok(a, "delete_entities", delete("Z")).await;

    // Nothing in between: the repeat changes nothing.
    ok(a, "delete_entities", delete("Z")).await;

    let s = metrics(addr).await;
    assert!(
        std::fs::read_to_string(&store)
            .unwrap()
            .lines()
            .all(|l| !l.contains("\"X\"") && !l.contains("\"Y\"") && !l.contains("\"Z\"")),
        "every second delete deleted again"
    );
    assert_eq!(
        violations(&s, "delete_entities", "idempotency_broken"),
        0.0,
        "{}",
        s.text
    );
    // No repeat anywhere was judged broken (the concurrent part repeats nothing).
    let broken: f64 = s
        .samples(hintaudit_telemetry::MetricName::HintViolations.as_str())
        .filter(|x| x.labels.get("rule") == Some("idempotency_broken"))
        .map(|x| s.number(x))
        .sum();
    assert_eq!(broken, 0.0, "{}", s.text);
    drop(sessions);
    drop(proxy);
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.contains("a file change while calls of several tools were in flight"),
        "the held read made B's write ambiguous: {log}"
    );
}
