//! The ledger's rules, call by call and commit by commit.

use super::*;

fn commit(lsn: Lsn) -> Commit {
    Commit {
        lsn,
        tables: vec![TableWrites {
            table: "items".into(),
            inserted: 0,
            updated: 1,
            deleted: 0,
        }],
        truncated: vec![],
    }
}

/// A call of `tool` over `(start, end)`.
fn call(l: &mut Ledger, tool: &str, start: Lsn, end: Option<Lsn>) -> u64 {
    let id = l.begin(Arc::from(tool));
    l.started(id, start);
    if let Some(end) = end {
        l.ended(id, end);
    }
    id
}

#[test]
fn one_call_in_flight_gets_the_commit() {
    let mut l = Ledger::new(100);
    let a = call(&mut l, "get_item", 10, None);
    assert_eq!(l.decoded(commit(15)), None);
    l.ended(a, 20);
    let share = l.judge(a);
    assert_eq!(share.attributed, [commit(15)]);
    assert!(share.ambiguous.is_empty());
    assert_eq!(l.settled(Settled::Attributed), 1);
    assert_eq!((l.waiting(), l.calls()), (0, 0), "pruned");
}

#[test]
fn no_call_in_flight_is_unattributed() {
    let mut l = Ledger::new(100);
    let a = call(&mut l, "get_item", 10, Some(20));
    assert_eq!(l.decoded(commit(25)), Some(Settled::Unattributed));
    assert_eq!(
        l.decoded(commit(10)),
        Some(Settled::Unattributed),
        "at start: before"
    );
    assert!(l.judge(a).attributed.is_empty());
    assert_eq!(l.settled(Settled::Unattributed), 2);
}

#[test]
fn overlapping_calls_of_two_tools_are_ambiguous_for_both() {
    let mut l = Ledger::new(100);
    let a = call(&mut l, "archive_item", 10, None);
    let b = call(&mut l, "get_item", 12, None);
    l.decoded(commit(11)); // only a was in flight (b started at 12)
    l.decoded(commit(15)); // both
    l.ended(a, 16);
    let share_a = l.judge(a);
    assert_eq!(share_a.attributed, [commit(11)]);
    let tools: Vec<&str> = share_a.ambiguous[0].1.iter().map(|t| &**t).collect();
    assert_eq!(tools, ["archive_item", "get_item"]);
    l.ended(b, 30);
    let share_b = l.judge(b);
    assert!(share_b.attributed.is_empty(), "never blamed on b");
    assert_eq!(share_b.ambiguous.len(), 1);
    assert_eq!(l.settled(Settled::Ambiguous), 1, "counted once");
    assert_eq!(l.settled(Settled::Attributed), 1);
}

#[test]
fn overlapping_calls_of_one_tool_attribute_once() {
    let mut l = Ledger::new(100);
    let a = call(&mut l, "get_item", 10, None);
    let b = call(&mut l, "get_item", 11, None);
    l.decoded(commit(15));
    l.ended(b, 20);
    assert_eq!(
        l.judge(b).attributed,
        [commit(15)],
        "first judged claims it"
    );
    l.ended(a, 21);
    assert!(l.judge(a).attributed.is_empty(), "not twice");
    assert_eq!(l.settled(Settled::Attributed), 1);
}

#[test]
fn a_call_whose_start_is_unknown_widens_the_set() {
    let mut l = Ledger::new(100);
    let a = call(&mut l, "get_item", 10, None);
    let _b = l.begin(Arc::from("archive_item")); // start not read yet
    l.decoded(commit(15));
    l.ended(a, 20);
    let share = l.judge(a);
    assert!(share.attributed.is_empty());
    assert_eq!(share.ambiguous.len(), 1);
}

#[test]
fn late_commits_and_a_full_ledger_are_dropped_and_counted() {
    let mut l = Ledger::new(2);
    let a = call(&mut l, "t", 10, None);
    let keep = call(&mut l, "u", 5, None); // keeps the floor low
    for lsn in [11, 12, 13] {
        l.decoded(commit(lsn));
    }
    assert_eq!(l.settled(Settled::Dropped), 1, "the oldest made room");
    l.ended(a, 14);
    l.ended(keep, 9);
    l.judge(keep);
    l.judge(a);
    let b = call(&mut l, "t", 20, Some(30));
    l.judge(b);
    // A commit whose only candidate was judged already.
    let c = call(&mut l, "t", 40, None);
    l.ended(c, 50);
    let d = call(&mut l, "t", 41, None);
    l.judge(c);
    assert_eq!(
        l.decoded(commit(45)),
        None,
        "d is still in flight: it waits"
    );
    l.ended(d, 42);
    assert_eq!(l.decoded(commit(46)), Some(Settled::Dropped));
}

#[test]
fn a_commit_read_after_its_late_call_was_judged_is_dropped_not_unattributed() {
    let mut l = Ledger::new(10);
    let a = call(&mut l, "t", 10, Some(20));
    let share = l.judge_late(a);
    assert!(share.gap && share.attributed.is_empty());
    assert_eq!(l.calls(), 0, "pruned: nothing in flight");
    assert_eq!(
        l.decoded(commit(15)),
        Some(Settled::Dropped),
        "inside a's interval"
    );
    assert_eq!(l.decoded(commit(20)), Some(Settled::Dropped), "at its end");
    assert_eq!(
        l.decoded(commit(25)),
        Some(Settled::Unattributed),
        "beyond it"
    );
    assert_eq!(
        l.decoded(commit(18)),
        Some(Settled::Unattributed),
        "the interval was passed"
    );
    assert_eq!(l.settled(Settled::Dropped), 2);
    assert_eq!(l.settled(Settled::Unattributed), 2);
}

#[test]
fn a_forgotten_call_is_no_candidate_of_later_commits() {
    let mut l = Ledger::new(10);
    let a = call(&mut l, "t", 10, None);
    let b = call(&mut l, "u", 12, None);
    l.forget(b); // dropped before it answered
    l.decoded(commit(15));
    l.ended(a, 20);
    assert_eq!(l.judge(a).attributed, [commit(15)]);
}

#[test]
fn a_gap_marks_the_calls_it_overlaps() {
    let mut l = Ledger::new(10);
    let a = call(&mut l, "t", 10, Some(20));
    let b = call(&mut l, "t", 30, Some(40));
    l.gap(15, 25);
    assert!(l.judge(a).gap);
    assert!(!l.judge(b).gap);
}
