//! The reader on real repositories made by `git` on this machine, judged by
//! hintaudit-core: each operation the git MCP servers perform, and the lies a tool can tell.

use std::path::Path;
use std::process::Command;

use hintaudit_core::files::{RepoFacts, judge_repository};

use super::*;

/// `git` with a fixed identity and no user configuration; `None` (the test skips, saying
/// why) when git is not installed, unless HINTAUDIT_REQUIRE_GIT (or _ALL) asks for it.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let mut cmd = Command::new("git");
    cmd.args(["-c", "user.name=T", "-c", "user.email=t@example.com"])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir);
    crate::testing::output(cmd, "HINTAUDIT_REQUIRE_GIT")
}

/// A repository with one commit of `a.txt` and a change to it not staged.
fn repo() -> Option<(tempfile::TempDir, RepoLocation)> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    git(p, &["init", "-q"])?;
    std::fs::write(p.join("a.txt"), "one\n").unwrap();
    git(p, &["add", "a.txt"])?;
    git(p, &["commit", "-qm", "first"])?;
    std::fs::write(p.join("a.txt"), "one\ntwo\n").unwrap();
    let found = find_repositories(p);
    assert_eq!(found.len(), 1, "{found:?}");
    let location = found[0].clone();
    Some((dir, location))
}

fn facts(l: &RepoLocation) -> RepoFacts {
    Repository::open(l).unwrap().facts().unwrap()
}

/// A row: what it is, the operation, the evidence wanted (and whether destructive).
type Op<'a> = Box<dyn FnOnce() + 'a>;

/// Runs `op` on the repository and judges what it did: (evidence, destructive).
fn judged(l: &RepoLocation, op: impl FnOnce()) -> (String, bool) {
    let before = facts(l);
    op();
    let after = Repository::open(l).unwrap();
    let change = judge_repository(&before, &after.facts().unwrap(), &after.oracle().unwrap());
    (change.describe(), change.is_destructive())
}

#[test]
fn what_the_git_server_does_loses_nothing() {
    let Some((dir, l)) = repo() else { return };
    let p = dir.path();
    let g = |args: &[&str]| git(p, args).unwrap();
    let rows: Vec<(&str, Op, &str)> = vec![
        (
            "git add",
            Box::new(|| {
                g(&["add", "a.txt"]);
            }),
            "1 index entry replaced or removed, old content kept, 1 object written",
        ),
        (
            "git commit",
            Box::new(|| {
                g(&["commit", "-qm", "second"]);
            }),
            "branch main moved forward, 2 objects written",
        ),
        (
            "git branch",
            Box::new(|| {
                g(&["branch", "topic"]);
            }),
            "branch topic created",
        ),
        (
            "git checkout",
            Box::new(|| {
                g(&["checkout", "-q", "topic"]);
            }),
            "HEAD switched to topic",
        ),
        (
            "git checkout of the first commit (detached)",
            Box::new(|| {
                g(&["checkout", "-q", "HEAD~1"]);
            }),
            "HEAD detached, 1 index entry replaced or removed, old content kept",
        ),
        (
            "back to main",
            Box::new(|| {
                g(&["checkout", "-q", "main"]);
            }),
            "HEAD switched to main, 1 index entry replaced or removed, old content kept",
        ),
        (
            "git gc: refs and objects packed, reflogs written",
            Box::new(|| {
                g(&["gc", "-q"]);
            }),
            "",
        ),
    ];
    for (what, op, want) in rows {
        let (text, destructive) = judged(&l, op);
        assert_eq!(text, want, "{what}");
        assert!(!destructive, "{what}: {text}");
    }
}

#[test]
fn lost_history_and_lost_staged_content_are_destructive() {
    let Some((dir, l)) = repo() else { return };
    let p = dir.path();
    let g = |args: &[&str]| git(p, args).unwrap();
    g(&["commit", "-qam", "second"]);
    let rows: Vec<(&str, Op, &str, bool)> = vec![
        (
            "a branch kept by another moved back: additive",
            Box::new(|| {
                g(&["branch", "keep"]);
                g(&["reset", "-q", "--soft", "HEAD~1"]);
            }),
            "branch keep created, branch main moved (its old commit kept by other refs)",
            false,
        ),
        (
            "the branch keeping it deleted, the commit now unreachable",
            Box::new(|| {
                g(&["branch", "-D", "keep"]);
            }),
            "branch keep deleted (commits left unreachable)",
            true,
        ),
        (
            "staged content replaced by other staged content",
            Box::new(|| {
                std::fs::write(p.join("a.txt"), "staged once\n").unwrap();
                g(&["add", "a.txt"]);
                std::fs::write(p.join("a.txt"), "staged twice\n").unwrap();
                g(&["add", "a.txt"]);
            }),
            "staged content lost for a.txt, 2 objects written",
            true,
        ),
    ];
    for (what, op, want, destructive) in rows {
        let (text, d) = judged(&l, op);
        assert_eq!((text.as_str(), d), (want, destructive), "{what}");
    }
}

#[test]
fn values_for_arguments() {
    let Some((dir, l)) = repo() else { return };
    git(dir.path(), &["branch", "topic"]).unwrap();
    let head = git(dir.path(), &["rev-parse", "HEAD"]).unwrap();
    let v = Repository::open(&l).unwrap().values().unwrap();
    assert_eq!(v.current_branch.as_deref(), Some("main"));
    assert_eq!(v.branches, ["main", "topic"]);
    assert_eq!(v.commits, [head]);
    assert_eq!(v.tracked, ["a.txt"]);
    assert_eq!(v.modified, ["a.txt"]);
    assert_eq!(v.work_tree.as_deref(), Some(dir.path()));
    let blob = git(dir.path(), &["hash-object", "a.txt"]).unwrap();
    let content = std::fs::read(dir.path().join("a.txt")).unwrap();
    assert_eq!(blob_id(&content).unwrap().to_string(), blob);
}

#[test]
fn bare_repositories_are_found_by_content() {
    let dir = tempfile::tempdir().unwrap();
    let Some(_) = git(dir.path(), &["init", "-q", "--bare", "store"]) else {
        return;
    };
    std::fs::create_dir(dir.path().join("refs")).unwrap();
    let found = find_repositories(dir.path());
    assert_eq!(
        found,
        [RepoLocation {
            git_dir: dir.path().join("store"),
            work_tree: None,
        }]
    );
}
