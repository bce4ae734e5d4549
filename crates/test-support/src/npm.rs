//! MCP servers nobody here wrote, from npm at pinned versions, installed by `.ci/run` under
//! `HINTAUDIT_NPM_PREFIX`: the official servers whose state is files
//! (`@modelcontextprotocol/server-filesystem` and `server-memory`), used by verify's and the
//! proxy's tests, and DBHub (`@bytebase/dbhub`), a database server the proxy's tests drive.

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

/// The pinned version of DBHub (`@bytebase/dbhub`, Bytebase's database MCP server, MIT):
/// a TypeScript server nobody here wrote, whose custom tools take their hints from their SQL.
pub const DBHUB_VERSION: &str = "1.4.0";

/// The entry point (`dist/index.js`) of an official server package (`server-filesystem`)
/// under `HINTAUDIT_NPM_PREFIX` (default `~/.cache/hintaudit-npm`), with `node` runnable;
/// or a printed skip (a panic under `HINTAUDIT_REQUIRE_NPM` or `HINTAUDIT_REQUIRE_ALL`, as
/// `.ci/run` sets them).
pub fn official_server_or_skip(package: &str) -> Option<PathBuf> {
    entry_or_skip(&format!("@modelcontextprotocol/{package}"), NPM_VERSION)
}

/// DBHub's entry point (`@bytebase/dbhub@`[`DBHUB_VERSION`]`/dist/index.js`) under
/// `HINTAUDIT_NPM_PREFIX`, with `node` runnable; or a printed skip, as
/// [`official_server_or_skip`].
pub fn dbhub_or_skip() -> Option<PathBuf> {
    entry_or_skip("@bytebase/dbhub", DBHUB_VERSION)
}

/// `node_modules/<package>/dist/index.js` under the prefix, or a printed skip (a panic when
/// npm servers are required).
fn entry_or_skip(package: &str, version: &str) -> Option<PathBuf> {
    let prefix = std::env::var("HINTAUDIT_NPM_PREFIX").map_or_else(
        |_| PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/hintaudit-npm"),
        PathBuf::from,
    );
    let entry = prefix.join(format!("node_modules/{package}/dist/index.js"));
    let node = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if node && entry.is_file() {
        return Some(entry);
    }
    let what = format!("node and {package}@{version}");
    let how = format!(
        "npm install --prefix {} {package}@{version}",
        prefix.display()
    );
    assert!(
        !crate::required("HINTAUDIT_REQUIRE_NPM"),
        "{what} is required here (HINTAUDIT_REQUIRE_*) but unavailable: {how}"
    );
    eprintln!("skipped: {what} unavailable: {how}");
    None
}
