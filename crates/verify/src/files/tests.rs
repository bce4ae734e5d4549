//! The snapshot, diff, findings (the core judge's, over snapshot-seen changes) and restore of
//! watched trees, on real temporary directories.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use hintaudit_core::files::FileSource;
use hintaudit_core::{Confidence, DeclaredHints, Effect, Finding, Judge, Policy, Rule, ToolCall};

use super::diff::{ChangeKind, FileChange, FileDiff, diff};
use super::tree::Trees;
use hintaudit_core::files::content_change;

/// A tree with a few files: `a.txt`, `log.txt`, `store.jsonl`, `sub/b.txt`, `cache/x`.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    fs::write(p.join("a.txt"), "alpha\n").unwrap();
    fs::write(p.join("log.txt"), "one\n").unwrap();
    fs::write(p.join("store.jsonl"), "{\"e\":1}\n{\"r\":1}\n").unwrap();
    fs::create_dir(p.join("sub")).unwrap();
    fs::write(p.join("sub/b.txt"), "beta\n").unwrap();
    fs::create_dir(p.join("cache")).unwrap();
    fs::write(p.join("cache/x"), "1").unwrap();
    dir
}

fn trees(dir: &Path) -> Trees {
    Trees::new(&[dir.to_path_buf()], &["cache".to_owned()]).unwrap()
}

type Act = fn(&Path);

/// A table row: the case, what the server does, the changes expected, bookkeeping paths.
type Row = (&'static str, Act, Vec<(&'static str, ChangeKind)>, usize);

#[test]
fn changes_are_judged_on_content() {
    let cases: [Row; 12] = [
        ("nothing", |_| {}, vec![], 0),
        (
            "create",
            |p| fs::write(p.join("new.txt"), "n").unwrap(),
            vec![("new.txt", ChangeKind::Created)],
            0,
        ),
        (
            "append",
            |p| fs::write(p.join("log.txt"), "one\ntwo\n").unwrap(),
            vec![("log.txt", ChangeKind::Appended)],
            0,
        ),
        (
            "jsonl rewritten with a record added",
            |p| fs::write(p.join("store.jsonl"), "{\"e\":1}\n{\"e\":2}\n{\"r\":1}\n").unwrap(),
            vec![(
                "store.jsonl",
                ChangeKind::Records(hintaudit_core::files::RecordsChange {
                    added: 1,
                    ..Default::default()
                }),
            )],
            0,
        ),
        (
            "overwrite",
            |p| fs::write(p.join("a.txt"), "gamma\n").unwrap(),
            vec![("a.txt", ChangeKind::Overwritten)],
            0,
        ),
        (
            "delete",
            |p| fs::remove_file(p.join("sub/b.txt")).unwrap(),
            vec![("sub/b.txt", ChangeKind::Deleted)],
            0,
        ),
        (
            "rename",
            |p| fs::rename(p.join("a.txt"), p.join("sub/a.txt")).unwrap(),
            vec![("a.txt", ChangeKind::RenamedTo("sub/a.txt".into()))],
            0,
        ),
        (
            "same content through a temporary file and a rename",
            |p| {
                fs::write(p.join(".a.tmp"), "alpha\n").unwrap();
                fs::rename(p.join(".a.tmp"), p.join("a.txt")).unwrap();
            },
            vec![],
            0,
        ),
        (
            "ignored path",
            |p| fs::write(p.join("cache/y"), "2").unwrap(),
            vec![],
            1,
        ),
        (
            "mode",
            |p| fs::set_permissions(p.join("a.txt"), fs::Permissions::from_mode(0o600)).unwrap(),
            vec![("a.txt", ChangeKind::ModeChanged)],
            0,
        ),
        (
            "file made a directory",
            |p| {
                fs::remove_file(p.join("a.txt")).unwrap();
                fs::create_dir(p.join("a.txt")).unwrap();
            },
            vec![("a.txt", ChangeKind::Replaced)],
            0,
        ),
        (
            "directory removed",
            |p| fs::remove_dir_all(p.join("sub")).unwrap(),
            vec![
                ("sub", ChangeKind::Deleted),
                ("sub/b.txt", ChangeKind::Deleted),
            ],
            0,
        ),
    ];
    for (name, act, want, bookkeeping) in cases {
        let dir = tree();
        fs::set_permissions(dir.path().join("a.txt"), fs::Permissions::from_mode(0o644)).unwrap();
        let mut t = trees(dir.path());
        let before = t.take(None).unwrap();
        act(dir.path());
        let after = t.take(Some(&before)).unwrap();
        let d = diff(&t, &before, &after);
        let got: Vec<(&str, ChangeKind)> = d
            .changes
            .iter()
            .map(|c| (c.path.as_str(), c.kind.clone()))
            .collect();
        assert_eq!(got, want, "{name}");
        assert_eq!(d.bookkeeping, bookkeeping, "{name}: bookkeeping");
    }
}

#[test]
fn content_changes() {
    let records = |changed, items_added, items_removed| {
        ChangeKind::Records(hintaudit_core::files::RecordsChange {
            changed,
            items_added,
            items_removed,
            ..Default::default()
        })
    };
    let cases: [(&str, &str, ChangeKind); 9] = [
        (
            "{\"name\":\"a\",\"obs\":[\"x\"]}\n{\"r\":1}",
            "{\"name\":\"a\",\"obs\":[\"x\",\"y\"]}\n{\"r\":1}",
            records(1, 1, 0),
        ),
        (
            "{\"name\":\"a\",\"obs\":[\"x\",\"y\"]}",
            "{\"name\":\"a\",\"obs\":[\"y\"]}",
            records(1, 0, 1),
        ),
        ("a\n", "a\nb\n", ChangeKind::Appended),
        ("", "x", ChangeKind::Appended),
        ("a", "a\nb\n", ChangeKind::Appended),
        ("a\nb\n", "a\nc\nb\n", ChangeKind::LinesKept),
        ("a\nb\n", "b\na\n", ChangeKind::LinesKept),
        ("a\na\n", "a\n", ChangeKind::Overwritten),
        ("abc", "abd", ChangeKind::Overwritten),
    ];
    for (old, new, want) in cases {
        assert_eq!(
            content_change(old.as_bytes(), new.as_bytes()),
            want,
            "{old:?} -> {new:?}"
        );
    }
}

/// The findings the core judge gives a call of a tool declaring `hints` that made `changes`
/// as verify's snapshots saw them (`crate::verifier`'s effect of a call); with `repeat`, the
/// call is made twice with the same arguments and the second one judged, as a case of an
/// idempotent tool is.
fn file_findings(
    tool: &str,
    hints: DeclaredHints,
    changes: &[FileChange],
    repeat: bool,
) -> Vec<Finding> {
    let judge = Judge::new(Policy::default());
    let effect = Effect {
        files: changes.to_vec(),
        files_source: FileSource::Snapshot,
        ..Effect::default()
    };
    let args = serde_json::json!({"name": "n.txt"});
    let call = ToolCall {
        tool,
        hints,
        arguments: Some(&args),
        effect: &effect,
    };
    if repeat {
        judge.judge(&call);
    }
    judge.judge(&call).findings
}

#[test]
fn findings_follow_the_hints() {
    let hints = |ro, d, i| DeclaredHints {
        read_only: Some(ro),
        destructive: d,
        idempotent: i,
        open_world: Some(false),
    };
    let created = FileChange {
        path: "n.txt".into(),
        kind: ChangeKind::Created,
    };
    let deleted = FileChange {
        path: "old.txt".into(),
        kind: ChangeKind::Deleted,
    };
    let cases = [
        (
            "read-only tool appends to a log",
            hints(true, None, None),
            vec![created.clone()],
            false,
            vec![Rule::ReadOnlyWrite],
        ),
        (
            "additive tool creates",
            hints(false, Some(false), Some(false)),
            vec![created.clone()],
            false,
            vec![],
        ),
        (
            "additive tool deletes",
            hints(false, Some(false), Some(false)),
            vec![created.clone(), deleted.clone()],
            false,
            vec![Rule::UndeclaredDestructive],
        ),
        (
            "destructive tool deletes",
            hints(false, Some(true), None),
            vec![deleted.clone()],
            false,
            vec![],
        ),
        (
            "idempotent tool, first call",
            hints(false, Some(false), Some(true)),
            vec![created.clone()],
            false,
            vec![],
        ),
        (
            "idempotent tool changes again on a repeat",
            hints(false, Some(false), Some(true)),
            vec![created.clone()],
            true,
            vec![Rule::IdempotencyBroken],
        ),
        (
            "non-idempotent tool repeats",
            hints(false, Some(false), Some(false)),
            vec![created.clone()],
            true,
            vec![],
        ),
        (
            "nothing changed",
            hints(true, None, None),
            vec![],
            true,
            vec![],
        ),
    ];
    for (name, h, changes, repeat, want) in cases {
        let got: Vec<Rule> = file_findings("t", h, &changes, repeat)
            .iter()
            .map(|f| f.rule)
            .collect();
        assert_eq!(got, want, "{name}");
    }
    let found = file_findings("t", hints(true, None, None), &[created, deleted], false);
    assert_eq!(
        found[0].evidence,
        "files (snapshot): created n.txt; deleted old.txt"
    );
    assert_eq!(
        found[0].confidence,
        Confidence::Confirmed,
        "seen by snapshots"
    );
}

#[test]
fn restore_puts_every_path_back() {
    let dir = tree();
    let p = dir.path();
    std::os::unix::fs::symlink("a.txt", p.join("link")).unwrap();
    fs::set_permissions(p.join("log.txt"), fs::Permissions::from_mode(0o600)).unwrap();
    let mut t = trees(p);
    let pristine = t.take(None).unwrap();
    fs::write(p.join("a.txt"), "changed").unwrap();
    fs::remove_dir_all(p.join("sub")).unwrap();
    fs::write(p.join("sub"), "a file where a directory was").unwrap();
    fs::rename(p.join("store.jsonl"), p.join("moved.jsonl")).unwrap();
    fs::create_dir_all(p.join("new/deeper")).unwrap();
    fs::write(p.join("new/deeper/f"), "f").unwrap();
    fs::set_permissions(p.join("log.txt"), fs::Permissions::from_mode(0o644)).unwrap();
    fs::remove_file(p.join("link")).unwrap();
    std::os::unix::fs::symlink("log.txt", p.join("link")).unwrap();
    fs::write(p.join("cache/x"), "bookkeeping changed too").unwrap();
    let touched = t.restore(&pristine).unwrap();
    assert!(touched >= 8, "{touched} paths restored");
    let now = t.take(Some(&pristine)).unwrap();
    let d = diff(&t, &pristine, &now);
    assert_eq!(d, FileDiff::default(), "the tree is as it was");
    assert_eq!(fs::read_to_string(p.join("a.txt")).unwrap(), "alpha\n");
    assert_eq!(fs::read_to_string(p.join("cache/x")).unwrap(), "1");
    assert_eq!(fs::read_link(p.join("link")).unwrap(), Path::new("a.txt"));
    assert_eq!(t.restore(&pristine).unwrap(), 0, "nothing left to restore");
}

#[test]
fn only_moved_or_racy_files_are_read_again() {
    let dir = tree();
    let p = dir.path();
    let old = SystemTime::now() - Duration::from_secs(60);
    for f in ["a.txt", "log.txt", "store.jsonl", "sub/b.txt", "cache/x"] {
        fs::File::options()
            .write(true)
            .open(p.join(f))
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    let mut t = trees(p);
    let first = t.take(None).unwrap();
    assert_eq!(t.stats().files_read, 5);
    let second = t.take(Some(&first)).unwrap();
    assert_eq!(
        t.stats().files_read,
        5,
        "nothing moved, nothing racy: no file read"
    );
    fs::write(p.join("new.txt"), "fresh").unwrap();
    // An mtime ahead of the snapshot is racily clean whenever the snapshot runs.
    let ahead = SystemTime::now() + Duration::from_secs(3600);
    let f = fs::File::options()
        .write(true)
        .open(p.join("new.txt"))
        .unwrap();
    f.set_modified(ahead).unwrap();
    let third = t.take(Some(&second)).unwrap();
    assert_eq!(t.stats().files_read, 6, "the new file");
    t.take(Some(&third)).unwrap();
    assert_eq!(t.stats().files_read, 7, "racily clean: read again");
    assert!(t.is_ignored("cache") && t.is_ignored("cache/deep/x") && !t.is_ignored("cached"));
    let globs = ["tmp/**".to_owned(), "**/*.log".to_owned()];
    let g = Trees::new(&[p.to_path_buf()], &globs).unwrap();
    for (path, ignored) in [
        ("tmp", true),
        ("tmp/a/b", true),
        ("a.log", true),
        ("x/a.log", true),
        ("tmpx", false),
        ("a.txt", false),
    ] {
        assert_eq!(g.is_ignored(path), ignored, "{path}");
    }
}

/// The cost per 10,000 files (docs/performance.md): `cargo test -p hintaudit-verify --lib
/// --release cost_per_10000_files -- --ignored --nocapture`. Prints, asserts nothing on time.
#[test]
#[ignore = "a measurement: run it alone, in release"]
fn cost_per_10000_files() {
    use std::time::Instant;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let old = SystemTime::now() - Duration::from_secs(60);
    let line = "a line of text of about eighty bytes, as a note or a source file would have\n";
    for d in 0..100 {
        fs::create_dir(p.join(format!("d{d:03}"))).unwrap();
        for f in 0..100 {
            let path = p.join(format!("d{d:03}/f{f:03}.txt"));
            fs::write(&path, line.repeat(12)).unwrap();
            fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
    }
    let mut t = trees(p);
    let timed = |what: &str, f: &mut dyn FnMut()| {
        let start = Instant::now();
        f();
        println!("{what}: {:.1} ms", start.elapsed().as_secs_f64() * 1e3);
    };
    let mut first = None;
    timed(
        "first snapshot (10,000 files of 1 KB read, hashed, stored)",
        &mut || {
            first = Some(t.take(None).unwrap());
        },
    );
    let first = first.unwrap();
    let mut second = None;
    timed("snapshot, nothing changed (stat only)", &mut || {
        second = Some(t.take(Some(&first)).unwrap());
    });
    let second = second.unwrap();
    for d in 0..100 {
        fs::write(p.join(format!("d{d:03}/f000.txt")), "overwritten\n").unwrap();
    }
    let mut third = None;
    timed("snapshot, 100 files changed", &mut || {
        third = Some(t.take(Some(&second)).unwrap());
    });
    let third = third.unwrap();
    let mut changes = 0;
    timed("diff of those two snapshots", &mut || {
        changes = diff(&t, &second, &third).changes.len();
    });
    assert_eq!(changes, 100);
    timed("restore of the 100 files", &mut || {
        t.restore(&first).unwrap();
    });
    println!("files read in all: {}", t.stats().files_read);
}
