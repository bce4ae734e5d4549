//! `git` for tests that build repositories: a fixed identity, no signing, no system or user
//! configuration, so that a developer's settings change no test.

use std::path::Path;
use std::process::Command;

/// Runs `git args` in `dir` and returns its standard output, trimmed.
///
/// # Panics
/// When git is not installed or the command fails (its output in the message).
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=T", "-c", "user.email=t@example.com"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git is installed");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}
