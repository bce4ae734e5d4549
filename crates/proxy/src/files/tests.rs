//! The watch on real directories through real inotify: attribution by the calls in flight,
//! new directories, renames, bookkeeping, and the fingerprint's judgement of rewrites.

use std::fs;
use std::time::Duration;

use hintaudit_core::files::ChangeKind;

use super::*;

fn watch(dir: &std::path::Path, ignored: &[&str]) -> FileWatch {
    let ignored: Vec<String> = ignored.iter().map(|g| (*g).to_owned()).collect();
    FileWatch::start(&[dir.to_path_buf()], &ignored, Duration::from_secs(30)).unwrap()
}

fn kinds(share: &FileShare) -> Vec<(String, ChangeKind)> {
    share
        .changes
        .iter()
        .map(|c| (c.path.clone(), c.kind.clone()))
        .collect()
}

#[tokio::test]
async fn one_call_in_flight_gets_its_changes_judged_on_content() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    fs::write(p.join("log.txt"), "one\n").unwrap();
    fs::write(p.join("store.jsonl"), "{\"n\":\"A\",\"o\":[\"x\"]}\n").unwrap();
    fs::write(p.join("note.txt"), "keep me\n").unwrap();
    let w = watch(p, &["cache/**"]);
    let t = w.begin("write".into());
    fs::write(p.join("log.txt"), "one\ntwo\n").unwrap();
    fs::write(p.join("store.jsonl"), "{\"n\":\"A\",\"o\":[\"x\",\"y\"]}\n").unwrap();
    fs::write(p.join("note.txt"), "replaced\n").unwrap();
    fs::create_dir_all(p.join("new/deep")).unwrap();
    fs::write(p.join("new/deep/x.txt"), "x\n").unwrap();
    fs::create_dir_all(p.join("cache")).unwrap();
    fs::write(p.join("cache/c"), "c\n").unwrap();
    let share = w.finish(t).await;
    assert_eq!(
        kinds(&share),
        [
            ("log.txt".to_owned(), ChangeKind::Appended),
            ("new".to_owned(), ChangeKind::Created),
            ("new/deep".to_owned(), ChangeKind::Created),
            ("new/deep/x.txt".to_owned(), ChangeKind::Created),
            ("note.txt".to_owned(), ChangeKind::Overwritten),
            ("store.jsonl".to_owned(), ChangeKind::LinesKept),
        ],
        "{share:?}"
    );
    assert!(share.bookkeeping >= 1 && !share.gap, "{share:?}");
    // The next call: a rename, a write through a temporary file with the same content, a
    // write in the directory made by the call before.
    let t = w.begin("move".into());
    fs::rename(p.join("note.txt"), p.join("new/note.txt")).unwrap();
    fs::write(p.join("log.tmp"), "one\ntwo\n").unwrap();
    fs::rename(p.join("log.tmp"), p.join("log.txt")).unwrap();
    fs::remove_file(p.join("new/deep/x.txt")).unwrap();
    let share = w.finish(t).await;
    assert_eq!(
        kinds(&share),
        [
            ("new/deep/x.txt".to_owned(), ChangeKind::Deleted),
            (
                "note.txt".to_owned(),
                ChangeKind::RenamedTo("new/note.txt".into())
            ),
        ],
        "{share:?}"
    );
    assert_eq!(w.stats().gaps, 0);
    w.shutdown().await;
}

#[tokio::test]
async fn concurrent_calls_of_several_tools_are_ambiguous_of_one_tool_attributed() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let w = watch(p, &[]);
    let a = w.begin("a".into());
    let b = w.begin("b".into());
    fs::write(p.join("x.txt"), "x\n").unwrap();
    let share_a = w.finish(a).await;
    let share_b = w.finish(b).await;
    assert!(share_a.changes.is_empty(), "{share_a:?}");
    assert_eq!(share_a.ambiguous.len(), 1, "{share_a:?}");
    let tools: Vec<&str> = share_a.ambiguous[0].1.iter().map(|t| &**t).collect();
    assert_eq!(tools, ["a", "b"]);
    assert!(
        share_b.changes.is_empty() && share_b.ambiguous.is_empty(),
        "settled once"
    );

    let first = w.begin("same".into());
    let second = w.begin("same".into());
    fs::write(p.join("y.txt"), "y\n").unwrap();
    let share = w.finish(first).await;
    assert_eq!(
        kinds(&share),
        [("y.txt".to_owned(), ChangeKind::Created)],
        "{share:?}"
    );
    assert!(w.finish(second).await.changes.is_empty());
    // A write with no call in flight is no call's.
    fs::write(p.join("z.txt"), "z\n").unwrap();
    let t = w.begin("after".into());
    assert!(w.finish(t).await.changes.is_empty());
    let s = w.stats();
    assert_eq!((s.attributed, s.ambiguous), (1, 1), "{s:?}");
    w.shutdown().await;
}

/// Changes the watch gives to no call (ambiguous, unattributed) are told to the judge: the
/// repeat of a call that changed the same path is disturbed, not `idempotency_broken`; a
/// repeat with nothing in between is still judged.
#[tokio::test]
async fn changes_given_to_no_call_disturb_repeats() {
    use hintaudit_core::{DeclaredHints, Effect, Policy, Repeat, ToolCall};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    fs::write(p.join("memory.jsonl"), "a\n").unwrap();
    let w = watch(p, &[]);
    let judge = Arc::new(Judge::new(Policy::default()));
    w.disturb(judge.clone());
    let idempotent = DeclaredHints {
        read_only: Some(false),
        destructive: Some(true),
        idempotent: Some(true),
        open_world: Some(false),
    };
    // One call of `delete`, judged with its own share, as the proxy's layer does.
    let delete = async |content: &str| {
        let t = w.begin("delete".into());
        fs::write(p.join("memory.jsonl"), content).unwrap();
        let share = w.finish(t).await;
        let effect = Effect {
            files: share.changes,
            ..Effect::default()
        };
        judge.judge(&ToolCall {
            tool: "delete",
            hints: idempotent,
            arguments: None,
            effect: &effect,
        })
    };
    assert_eq!(delete("").await.repeat, Some(Repeat::First));
    // Unattributed: no call in flight; a call that writes nothing reads past it.
    fs::write(p.join("memory.jsonl"), "a\n").unwrap();
    let t = w.begin("read".into());
    assert!(w.finish(t).await.changes.is_empty());
    let v = delete("").await;
    assert_eq!(v.repeat, Some(Repeat::Disturbed), "{v:?}");
    // Ambiguous: calls of two tools in flight.
    let (a, b) = (w.begin("create".into()), w.begin("read".into()));
    fs::write(p.join("memory.jsonl"), "a\n").unwrap();
    assert_eq!(w.finish(a).await.ambiguous.len(), 1);
    w.finish(b).await;
    let v = delete("").await;
    assert_eq!(v.repeat, Some(Repeat::Disturbed), "{v:?}");
    // Nothing in between: a clean repeat that changes the file again is found.
    let v = delete("b\n").await;
    assert_eq!(v.repeat, Some(Repeat::Clean), "{v:?}");
    let rules: Vec<&str> = v.findings.iter().map(|f| f.rule.as_str()).collect();
    assert_eq!(rules, ["idempotency_broken"], "{v:?}");
    w.shutdown().await;
}

/// A watched root removed and made again inside a call: its watch is gone (`IN_IGNORED`), so
/// the call has a gap; the root is watched again once it is back, and a later call is whole.
#[tokio::test]
async fn a_root_removed_and_made_again_is_a_gap_then_watched_again() {
    let top = tempfile::tempdir().unwrap();
    let root = top.path().join("notes");
    fs::create_dir(&root).unwrap();
    fs::write(root.join("a.txt"), "a\n").unwrap();
    let w = watch(&root, &[]);
    let t = w.begin("replace".into());
    fs::remove_dir_all(&root).unwrap();
    fs::create_dir(&root).unwrap();
    fs::write(root.join("r.txt"), "r\n").unwrap();
    let share = w.finish(t).await;
    assert!(share.gap && !share.late, "{share:?}");
    assert_eq!(w.stats().gaps, 1);
    // By this call's start at the latest the root is watched again.
    let t = w.begin("between".into());
    let _ = w.finish(t).await;
    let t = w.begin("add".into());
    fs::write(root.join("c.txt"), "c\n").unwrap();
    let share = w.finish(t).await;
    assert!(!share.gap, "{share:?}");
    assert_eq!(
        kinds(&share),
        [("c.txt".to_owned(), ChangeKind::Created)],
        "{share:?}"
    );
    assert_eq!(w.stats().gaps, 1, "one gap per removal");
    w.shutdown().await;
}
