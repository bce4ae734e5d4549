//! Third-party servers nobody here wrote, run as a new user would (issue 26): the reference
//! SQLite MCP server from PyPI (`mcp-server-sqlite` 2025.4.25, installed by `.ci/run`).

use std::process::Command;

use hintaudit_verify::{ServerSpec, ToolStatus, Verifier};

use crate::cli::hintaudit;
use crate::support::*;

/// What the tests were written against: the reference server, on the last MCP SDK of the
/// 1.x line (it does not run on the 2.x SDK the other fixtures use), in a virtual
/// environment of its own.
const REFERENCE_SQLITE: &str = "mcp-server-sqlite==2025.4.25 'mcp[cli]==1.30.0'";

/// The `mcp-server-sqlite` command (`HINTAUDIT_MCP_SERVER_SQLITE`, set by `.ci/run`, or
/// on `PATH`), or a printed skip.
fn reference_sqlite_or_skip() -> Option<String> {
    let server = std::env::var("HINTAUDIT_MCP_SERVER_SQLITE")
        .unwrap_or_else(|_| "mcp-server-sqlite".to_owned());
    available(
        "the reference SQLite MCP server (mcp-server-sqlite)",
        answers_help(&server),
        false,
        &format!(
            "python3 -m venv V && V/bin/pip install {REFERENCE_SQLITE}, then \
             HINTAUDIT_MCP_SERVER_SQLITE=V/bin/mcp-server-sqlite"
        ),
    )
    .then_some(server)
}

/// A SQLite file with one table of two rows; its path and URL.
fn seeded(dir: &std::path::Path, name: &str) -> (String, String) {
    let (path, url) = temp_db(dir, name);
    let ok = Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); \
             c.executescript(\"CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT); \
             INSERT INTO items VALUES (1, 'anchor'), (2, 'buoy');\"); c.close()",
        ])
        .arg(&path)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "seeding {}", path.display());
    (path.display().to_string(), url)
}

/// Its tools declare no hints: writes are only the cautious default, and the write tools'
/// generated arguments fail, so nothing changes. Verify reports; it does not refuse the run
/// as "not the database the server uses".
#[tokio::test]
async fn the_reference_sqlite_server_gets_a_report_not_a_refusal() {
    let Some(server) = reference_sqlite_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (path, url) = seeded(dir.path(), "reference.db");
    let cmd = shlex::try_join([server.as_str(), "--db-path", &path]).unwrap();
    let report = Verifier::new(ServerSpec::Stdio(cmd.clone()), url.as_str())
        .run()
        .await
        .expect("a report, not an error");
    let check = &report.database_check;
    assert!(
        ["confirmed:", "likely:", "unconfirmed:"]
            .iter()
            .any(|v| check.starts_with(v)),
        "{check}"
    );
    for t in [
        "list_tables",
        "read_query",
        "describe_table",
        "append_insight",
    ] {
        let tool = report.tool(t).unwrap_or_else(|| panic!("{t} listed"));
        assert_eq!(tool.status, ToolStatus::Passed, "{tool:#?}");
    }
    // The write tools' generated SQL fails (a SELECT probe, a placeholder): not exercised.
    for t in ["write_query", "create_table"] {
        let tool = report.tool(t).unwrap();
        assert!(
            matches!(tool.status, ToolStatus::NotExercised(_)),
            "{tool:#?}"
        );
    }
    // The command: a report on stdout and exit 1 (tools not exercised), not exit 2.
    let out = hintaudit(&["--stdio", &cmd, "--database", &url]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("database check: "), "{stdout}");

    // With a write that runs (a cases file), the database is confirmed: by its change, or
    // by the server seen holding the file open while the call ran (whichever comes first).
    let cases = dir.path().join("cases.toml");
    std::fs::write(
        &cases,
        "[[case]]\ntool = \"write_query\"\narguments = { query = \"INSERT INTO items (name) VALUES ('compass')\" }\n",
    )
    .unwrap();
    let report = Verifier::new(ServerSpec::Stdio(cmd), url.as_str())
        .with_cases_file(&cases)
        .unwrap()
        .with_tool("write_query")
        .run()
        .await
        .expect("verify runs");
    assert!(
        report.database_check.starts_with("confirmed: "),
        "{}",
        report.database_check
    );
    let write = report.tool("write_query").unwrap();
    assert_eq!(write.cases[0].calls[0].changes[0].added, 1, "{write:#?}");
}
