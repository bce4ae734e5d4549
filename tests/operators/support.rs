//! Paths and skips shared by the operator tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The repository root (this package's manifest directory).
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A path below the repository root.
pub fn repo_path(rel: &str) -> PathBuf {
    repo().join(rel)
}

/// Returns true when the test may run; prints the reason and returns false when it must
/// skip; panics when it must not skip (`HINTAUDIT_REQUIRE_ALL=1`, as CI sets).
pub fn available(what: &str, ok: bool, reason: &str) -> bool {
    if ok {
        return true;
    }
    if hintaudit_test_support::required("HINTAUDIT_REQUIRE_ALL") {
        panic!("{what} is required here (HINTAUDIT_REQUIRE_ALL=1) but unavailable: {reason}");
    }
    eprintln!("skipped: {what} unavailable: {reason}");
    false
}

/// Whether `program --version` (or the given probe arguments) runs.
pub fn runs(program: &str, probe: &[&str]) -> bool {
    Command::new(program)
        .args(probe)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
