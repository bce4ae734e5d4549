//! `promtool check metrics`, which lints an exposition (naming, help, types). Prometheus's
//! Debian package ships promtool; CI installs it and sets `HINTAUDIT_REQUIRE_PROMTOOL=1`.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::required;

/// Runs `promtool check metrics` on `text`: its verdict and remarks, or `None` when promtool
/// is not runnable and not [`required`] (then it prints `SKIPPED {what}` and why). Panics when
/// promtool is required but not runnable.
pub fn check(what: &str, text: &str) -> Option<(bool, String)> {
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) if !required("HINTAUDIT_REQUIRE_PROMTOOL") => {
            println!(
                "SKIPPED {what}: promtool not runnable ({e}); it ships in Prometheus's Debian \
                 package (apt-get install prometheus)"
            );
            return None;
        }
        Err(e) => panic!("promtool is required (HINTAUDIT_REQUIRE_PROMTOOL) but not runnable: {e}"),
    };
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(text.as_bytes()).expect("write to promtool");
    }
    let out = child.wait_with_output().expect("promtool runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some((out.status.success(), said))
}

/// Asserts that promtool passes `text` without a remark (when promtool runs; see [`check`]).
pub fn assert_accepts(what: &str, text: &str) {
    if let Some((ok, said)) = check(what, text) {
        assert!(ok, "promtool check metrics failed:\n{said}\n---\n{text}");
        assert!(said.trim().is_empty(), "promtool has lint remarks:\n{said}");
    }
}
