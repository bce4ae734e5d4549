//! The official MCP servers whose state is files, from npm at a pinned version
//! (`@modelcontextprotocol/server-filesystem` and `server-memory`, installed by `.ci/run`
//! under `HINTAUDIT_NPM_PREFIX`): used by verify's and the proxy's tests.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The pinned version of both servers.
pub const NPM_VERSION: &str = "2026.8.31";

/// A memory server's store to start from (`MEMORY_FILE_PATH`): two entities (Alice, who
/// has an observation, and Carol) and a relation, one JSON value per line, no newline at
/// the end.
pub const MEMORY_SEED: &str = concat!(
    r#"{"type":"entity","name":"Alice","entityType":"person","observations":["reads"]}"#,
    "\n",
    r#"{"type":"entity","name":"Carol","entityType":"person","observations":[]}"#,
    "\n",
    r#"{"type":"relation","from":"Alice","to":"Carol","relationType":"knows"}"#,
);

/// The entry point (`dist/index.js`) of an official server package (`server-filesystem`)
/// under `HINTAUDIT_NPM_PREFIX` (default `~/.cache/hintaudit-npm`), with `node` runnable;
/// or a printed skip (a panic under `HINTAUDIT_REQUIRE_NPM` or `HINTAUDIT_REQUIRE_ALL`, as
/// `.ci/run` sets them).
pub fn official_server_or_skip(package: &str) -> Option<PathBuf> {
    let prefix = std::env::var("HINTAUDIT_NPM_PREFIX").map_or_else(
        |_| PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/hintaudit-npm"),
        PathBuf::from,
    );
    let entry = prefix.join(format!(
        "node_modules/@modelcontextprotocol/{package}/dist/index.js"
    ));
    let node = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if node && entry.is_file() {
        return Some(entry);
    }
    let what = format!("node and @modelcontextprotocol/{package}@{NPM_VERSION}");
    let how = format!(
        "npm install --prefix {} @modelcontextprotocol/{package}@{NPM_VERSION}",
        prefix.display()
    );
    assert!(
        !crate::required("HINTAUDIT_REQUIRE_NPM"),
        "{what} is required here (HINTAUDIT_REQUIRE_*) but unavailable: {how}"
    );
    eprintln!("skipped: {what} unavailable: {how}");
    None
}
