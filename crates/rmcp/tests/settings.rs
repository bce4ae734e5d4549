//! Settings a user makes through `HINTAUDIT_CONFIG` apply, or the layer says loudly that they
//! do not (issue 26). Each case runs in a child process (this test binary again, one test,
//! with the variable set): the variable is process-wide, and the warning is once per process.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

use std::path::PathBuf;
use std::process::{Command, Output};

mod shop;

use hintaudit_rmcp::HintAuditLayer;
use shop::{Shop, call_get_item};
use tower::Layer;

/// Set in the child: which case it runs.
const CHILD: &str = "HINTAUDIT_SETTINGS_TEST_CHILD";

/// The child's side: runs one case and prints what it saw on stdout.
#[tokio::test]
async fn child() {
    let Ok(case) = std::env::var(CHILD) else {
        return;
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
    let layer = match case.as_str() {
        "new" => {
            let layer = HintAuditLayer::new();
            // A second handler (as a streamable HTTP server makes per session): no second
            // warning.
            drop(layer.layer(Shop::new()));
            layer
        }
        "from_env" => match HintAuditLayer::from_env() {
            Ok(layer) => layer,
            Err(e) => {
                println!("error: {e}");
                return;
            }
        },
        other => panic!("unknown case {other}"),
    };
    println!("answer: {}", call_get_item(layer).await);
}

/// Runs `case` in a child with `HINTAUDIT_CONFIG` naming a file holding `toml`.
fn run_child(case: &str, name: &str, toml: &str) -> (String, String) {
    run_child_with(case, name, toml, None)
}

/// [`run_child`], with `HINTAUDIT_HISTORY_KEY` set to `key` (removed when `None`).
fn run_child_with(case: &str, name: &str, toml: &str, key: Option<&str>) -> (String, String) {
    let dir = std::env::temp_dir().join(format!("hintaudit-settings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file: PathBuf = dir.join(name);
    std::fs::write(&file, toml).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap());
    child
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CHILD, case)
        .env("HINTAUDIT_CONFIG", &file);
    match key {
        Some(key) => child.env(hintaudit_rmcp::HISTORY_KEY_ENV, key),
        None => child.env_remove(hintaudit_rmcp::HISTORY_KEY_ENV),
    };
    let out: Output = child.output().expect("the test binary runs");
    let _ = std::fs::remove_file(&file);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    (stdout, stderr)
}

#[test]
fn from_env_applies_the_file_the_variable_names() {
    let (stdout, stderr) = run_child("from_env", "enforce.toml", "mode = \"enforce\"\n");
    assert!(stdout.contains("answer: enforced=true"), "{stdout}");
    assert!(!stderr.contains("HINTAUDIT_CONFIG is set"), "{stderr}");
}

#[test]
fn a_layer_that_did_not_read_the_variable_warns_once() {
    let (stdout, stderr) = run_child("new", "unread.toml", "mode = \"enforce\"\n");
    assert!(stdout.contains("answer: enforced=false"), "{stdout}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("HINTAUDIT_CONFIG is set"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("WARN") && warnings[0].contains("unread.toml"),
        "{stderr}"
    );
}

#[test]
fn a_bad_file_is_an_error_naming_file_line_and_key() {
    let (stdout, _) = run_child("from_env", "bad.toml", "\nmode = \"enforcing\"\n");
    // The harness prints `test child ... ` before the child's own line.
    let line = stdout
        .lines()
        .find_map(|l| l.find("error: ").map(|i| &l[i..]))
        .unwrap_or_else(|| panic!("an error: {stdout}"));
    assert!(line.contains("bad.toml:2:"), "{line}");
    assert!(line.contains(": mode: "), "{line}");
    assert!(!stdout.contains("answer:"), "no server started: {stdout}");
}

/// `history_url` without the secret the replicas share is refused at start-up, naming both.
#[test]
fn a_history_url_without_its_key_is_an_error() {
    let toml = "history_url = \"redis://127.0.0.1:9/0\"\n";
    let (stdout, _) = run_child_with("from_env", "fleet.toml", toml, None);
    let line = stdout
        .lines()
        .find_map(|l| l.find("error: ").map(|i| &l[i..]))
        .unwrap_or_else(|| panic!("an error: {stdout}"));
    assert!(
        line.contains("history_url") && line.contains("HINTAUDIT_HISTORY_KEY"),
        "{line}"
    );
    assert!(!stdout.contains("answer:"), "no server started: {stdout}");
}

/// With its key, a `history_url` whose store does not answer (nothing listens on the discard
/// port) leaves the call and its answer as they are.
#[test]
fn a_store_that_does_not_answer_changes_no_answer() {
    let toml = "history_url = \"redis://127.0.0.1:9/0\"\nmode = \"enforce\"\n";
    let (stdout, stderr) = run_child_with(
        "from_env",
        "down.toml",
        toml,
        Some("a test secret of 16+ chars"),
    );
    assert!(
        stdout.contains("answer: enforced=true"),
        "{stdout}\n{stderr}"
    );
}
