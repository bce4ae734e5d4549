//! Files as state (issue 37): `hintaudit verify --watch DIR` on the project's fixture
//! server (tests/verify/python_server/files_server.py), whose planted file lies are found,
//! whose honest tools pass, and whose directory is left as it was.

use std::collections::BTreeMap;
use std::path::Path;

use hintaudit_verify::{Cases, ServerSpec, ToolStatus, Verifier};

use crate::support::*;

/// Every path under `dir` with its content (`None` for a directory): what "left as it
/// was" compares.
pub fn tree_state(dir: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            if p.is_dir() {
                out.insert(rel, None);
                stack.push(p);
            } else {
                out.insert(rel, Some(std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

/// The fixture's cases: honest arguments for every tool.
const CASES: &str = r#"
[[case]]
tool = "read_note"
arguments = { name = "a.txt" }
[[case]]
tool = "save_note"
arguments = { name = "a.txt", text = "replaced" }
[[case]]
tool = "append_entry"
arguments = { text = "entry" }
[[case]]
tool = "cleanup"
[[case]]
tool = "archive_note"
arguments = { name = "b.txt" }
[[case]]
tool = "list_notes"
[[case]]
tool = "add_note"
arguments = { name = "new.txt", text = "fresh" }
[[case]]
tool = "store_note"
arguments = { name = "a.txt", text = "stored" }
"#;

/// A notes directory: two notes, a scratch file, a journal.
fn notes() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("a.txt"), "alpha: a private line\n").unwrap();
    std::fs::write(p.join("b.txt"), "beta\n").unwrap();
    std::fs::write(p.join("scratch.tmp"), "scratch\n").unwrap();
    std::fs::write(p.join("journal.txt"), "first\n").unwrap();
    dir
}

#[tokio::test]
async fn planted_file_lies_are_found_and_the_tree_is_restored() {
    let Some(py) = python_or_skip() else {
        return;
    };
    let dir = notes();
    let before = tree_state(dir.path());
    let server = repo().join("tests/verify/python_server/files_server.py");
    let cmd = shlex::try_join([
        py.as_str(),
        server.to_str().unwrap(),
        "--dir",
        dir.path().to_str().unwrap(),
    ])
    .unwrap();
    let report = Verifier::without_database(ServerSpec::Stdio(cmd))
        .with_watch(dir.path())
        .with_ignored_path("cache/**")
        .with_cases(Cases::parse(CASES, false).unwrap())
        .with_reset(true)
        .run()
        .await
        .expect("a report");
    let behaviour: std::collections::BTreeSet<_> = findings(&report)
        .into_iter()
        .filter(|(_, rule, _)| rule != "hint_missing")
        .collect();
    assert_eq!(
        behaviour,
        triples(&[
            ("read_note", "read_only_write", "readOnlyHint"),
            ("save_note", "undeclared_destructive", "destructiveHint"),
            ("append_entry", "idempotency_broken", "idempotentHint"),
            ("cleanup", "undeclared_destructive", "destructiveHint"),
            ("archive_note", "undeclared_destructive", "destructiveHint"),
        ]),
        "{report:#?}"
    );
    for t in ["list_notes", "add_note", "store_note"] {
        let tool = report.tools.iter().find(|r| r.name == t).unwrap();
        assert_eq!(tool.status, ToolStatus::Passed, "{t}: {tool:#?}");
    }
    let evidence = |tool: &str| {
        let t = report.tools.iter().find(|r| r.name == tool).unwrap();
        t.findings
            .iter()
            .map(|f| f.evidence.clone())
            .collect::<Vec<_>>()
            .join(" | ")
    };
    assert!(
        evidence("read_note").contains("access.log"),
        "{}",
        evidence("read_note")
    );
    assert!(
        evidence("archive_note").contains("renamed b.txt to archive/b.txt"),
        "{}",
        evidence("archive_note")
    );
    assert!(
        evidence("save_note").contains("overwrote (old content lost) a.txt"),
        "{}",
        evidence("save_note")
    );
    let json = hintaudit_verify::Format::Json.render(&report, hintaudit_core::Severity::Warning);
    assert!(
        !json.contains("a private line"),
        "file contents never reach a report"
    );
    assert_eq!(tree_state(dir.path()), before, "the directory is as it was");
}

#[test]
fn without_a_database_or_a_watched_tree_there_is_no_run() {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        verify: hintaudit_verify::VerifyArgs,
    }
    let args = |extra: &[&str]| {
        let mut argv = vec!["hintaudit", "--stdio", "true"];
        argv.extend_from_slice(extra);
        Cli::parse_from(argv).verify
    };
    let err = args(&[])
        .verifier()
        .expect_err("neither --database nor --watch");
    assert!(
        matches!(err, hintaudit_verify::VerifyError::Usage(_)),
        "{err}"
    );
    assert!(err.to_string().contains("--watch DIR"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let watched = args(&["--watch", dir.path().to_str().unwrap()]);
    assert!(watched.verifier().is_ok(), "--watch alone is enough");
}
