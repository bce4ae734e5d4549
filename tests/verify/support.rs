//! Skips, fixtures and findings helpers shared by the verify tests.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hintaudit_verify::Report;

/// Returns true when the test may run; prints the reason and returns false when it must
/// skip; panics when it must not skip (`require` set).
pub fn available(what: &str, ok: bool, require: bool, reason: &str) -> bool {
    if ok {
        return true;
    }
    if require || hintaudit_test_support::required("HINTAUDIT_REQUIRE_ALL") {
        panic!("{what} is required here (HINTAUDIT_REQUIRE_*) but unavailable: {reason}");
    }
    eprintln!("skipped: {what} unavailable: {reason}");
    false
}

/// Whether `program --help` runs and succeeds (an installed command-line server).
pub fn answers_help(program: &str) -> bool {
    Command::new(program)
        .arg("--help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The Python interpreter, when it can import the official MCP SDK.
pub fn python() -> Option<String> {
    for py in ["python3", "python"] {
        let ok = Command::new(py)
            .args(["-c", "import mcp.server.mcpserver"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Some(py.to_owned());
        }
    }
    None
}

/// Python with `mcp`, or a printed skip.
pub fn python_or_skip() -> Option<String> {
    let py = python();
    available(
        "python with the mcp package",
        py.is_some(),
        false,
        "pip install -r tests/verify/python_server/requirements.txt",
    )
    .then(|| py.unwrap_or_default())
}

/// The repository root: the nearest ancestor of this package holding tests/verify.
pub fn repo() -> PathBuf {
    let start = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    start
        .ancestors()
        .find(|d| d.join("tests/verify/python_server").is_dir())
        .map(Path::to_path_buf)
        .unwrap_or(start)
}

pub fn python_server() -> PathBuf {
    repo().join("tests/verify/python_server/server.py")
}

/// A temporary SQLite path and its sqlx URL.
pub fn temp_db(dir: &Path, name: &str) -> (PathBuf, String) {
    let path = dir.join(name);
    let url = format!("sqlite://{}", path.display());
    (path, url)
}

/// The stdio command line for the Python fixture server, with optional env switches.
pub fn python_cmd(py: &str, db: &Path, env: &[(&str, &str)]) -> String {
    let mut words: Vec<String> = Vec::new();
    if !env.is_empty() {
        words.push("env".into());
        words.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
    }
    words.push(py.to_owned());
    words.push(python_server().display().to_string());
    words.push("--db".into());
    words.push(db.display().to_string());
    shlex::try_join(words.iter().map(String::as_str)).expect("no NUL bytes")
}

/// A free loopback port.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A child process killed on drop.
pub struct Server(pub Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until something accepts on the port (at most `limit`).
pub fn wait_for_port(port: u16, limit: Duration) {
    let start = Instant::now();
    while start.elapsed() < limit {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("nothing listens on 127.0.0.1:{port} after {limit:?}");
}

/// The report's findings as (tool, rule, hint) triples.
pub fn findings(report: &Report) -> BTreeSet<(String, String, String)> {
    report
        .findings()
        .map(|f| {
            (
                f.tool.clone(),
                f.rule.as_str().to_owned(),
                f.hint.spec_name().to_owned(),
            )
        })
        .collect()
}

/// Builds a triple set from string slices.
pub fn triples(items: &[(&str, &str, &str)]) -> BTreeSet<(String, String, String)> {
    items
        .iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect()
}

pub use hintaudit_test_support::workspace_bin;
