//! Listing rules and suggestions through the proxy, read from its log as an operator reads
//! it (stderr at the proxy's default level): the upstream's tools/list is linted at start-up,
//! before any client lists it (`hint_missing`, `hint_contradiction`); a client's listing with
//! other hints is `hints_changed`, and does not repeat the lints at INFO; a suggestion is
//! MCP's JSON annotations, and says `destructiveHint: true` for a read-only tool the database
//! log caught updating a row.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::support::*;

/// The lines a child wrote on stderr so far.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Waits until some line holds every one of `parts` (at most 30 s); that line.
    async fn line_with(&self, parts: &[&str]) -> String {
        for _ in 0..300 {
            let found = self
                .lines()
                .into_iter()
                .find(|l| parts.iter().all(|p| l.contains(p)));
            if let Some(line) = found {
                return line;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no log line with {parts:?}:\n{}", self.lines().join("\n"))
    }

    /// The INFO lines of `tool`'s listing lints.
    fn lints(&self, tool: &str) -> Vec<String> {
        let tool = format!("tool=\"{tool}\"");
        self.lines()
            .into_iter()
            .filter(|l| l.contains(" INFO ") && l.contains("hint lint:") && l.contains(&tool))
            .collect()
    }
}

/// `hintaudit proxy ARGS` as the stdio server of an MCP client, at its default log level,
/// with its stderr collected.
async fn proxy_with_log(args: &[&str]) -> (Client, Log) {
    let mut cmd = tokio::process::Command::new(hintaudit());
    cmd.arg("proxy").args(args).env_remove("RUST_LOG");
    let (proc, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn hintaudit proxy");
    let log = Log::default();
    let lines = log.0.clone();
    let stderr = stderr.expect("piped stderr");
    tokio::spawn(async move {
        let mut reader = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            lines.lock().unwrap_or_else(|e| e.into_inner()).push(line);
        }
    });
    let client = ().serve(proc).await.expect("MCP handshake over stdio");
    (client, log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_listing_is_linted_and_suggestions_are_mcp_json() {
    let Some((admin, py)) = parts().await else {
        return;
    };
    let name = "hintaudit_proxy_listing";
    let db = fresh_db(&admin, name).await;
    let upstream = fixture(py, &db, "FIXTURE_UNANNOTATED=1");
    let (client, log) = proxy_with_log(&["--stdio", &upstream, "--database", &db]).await;

    // The start-up tools/list is the upstream's: count_items declares no annotations, so
    // each of its four hints is missing; peek_items declares readOnlyHint and
    // destructiveHint both true. Said at INFO before any client listed the tools.
    for hint in [
        "readOnlyHint",
        "destructiveHint",
        "idempotentHint",
        "openWorldHint",
    ] {
        let h = format!("hint=\"{hint}\"");
        log.line_with(&["tool=\"count_items\"", "rule=\"hint_missing\"", &h])
            .await;
    }
    log.line_with(&["tool=\"peek_items\"", "rule=\"hint_contradiction\""])
        .await;
    assert_eq!(log.lints("count_items").len(), 4, "{:?}", log.lines());
    assert_eq!(log.lints("peek_items").len(), 1, "{:?}", log.lines());
    // get_item declares readOnlyHint true and openWorldHint false: the hints it leaves unset
    // are not meaningful for a read-only tool, so it has no lint.
    assert!(
        log.lints("get_item").is_empty(),
        "{:?}",
        log.lints("get_item")
    );

    // get_item's UPDATE, from the database log: read_only_write, and a suggestion in MCP's
    // JSON form that also says destructiveHint true (the log counted an updated row).
    let a = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
    call(&client, "get_item", a(json!({"id": 1}))).await;
    let line = log
        .line_with(&["suggested annotations", "tool=\"get_item\""])
        .await;
    assert!(
        line.contains(
            r#"annotations={"readOnlyHint": false, "destructiveHint": true, "openWorldHint": false}"#
        ),
        "{line}"
    );
    assert!(!line.contains("#[tool"), "{line}");

    // count_items now declares other hints: the client's tools/list differs from the one
    // the proxy audited at start-up, so it is hints_changed (a warning).
    call(&client, "annotate_count_items", a(json!({}))).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "peek_items"));
    let line = log
        .line_with(&["tool=\"count_items\"", "rule=\"hints_changed\""])
        .await;
    assert!(line.contains(" WARN "), "{line}");
    assert!(
        line.contains("to ro=true d=unset i=unset ow=false"),
        "{line}"
    );

    // The client's listing linted peek_items again: at DEBUG, not repeated at INFO. A later
    // line shows the listing's lines, if any, were written before it.
    call(&client, "archive_item", a(json!({"id": 2}))).await;
    log.line_with(&["suggested annotations", "tool=\"archive_item\""])
        .await;
    assert_eq!(log.lints("peek_items").len(), 1, "{:?}", log.lines());
    assert_eq!(log.lints("count_items").len(), 4, "{:?}", log.lines());

    client.cancel().await.ok();
    drop_db(&admin, name).await;
}
