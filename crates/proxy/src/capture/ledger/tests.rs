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
        truncated_empty: vec![],
        images: vec![],
        writer: None,
    }
}

/// A call of `tool` over `(start, end)`, on upstream connection 0.
fn call(l: &mut Ledger, tool: &str, start: Lsn, end: Option<Lsn>) -> u64 {
    on(l, 0, tool, start, end)
}

/// A call of `tool` on upstream connection `session` over `(start, end)`.
fn on(l: &mut Ledger, session: u64, tool: &str, start: Lsn, end: Option<Lsn>) -> u64 {
    let id = l.begin(Arc::from(tool), session);
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
    assert_eq!(l.decoded(commit(15), Origin::AnyCall), None);
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
    assert_eq!(
        l.decoded(commit(25), Origin::AnyCall),
        Some(Settled::Unattributed)
    );
    assert_eq!(
        l.decoded(commit(10), Origin::AnyCall),
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
    l.decoded(commit(11), Origin::AnyCall); // only a was in flight (b started at 12)
    l.decoded(commit(15), Origin::AnyCall); // both
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
    l.decoded(commit(15), Origin::AnyCall);
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
    let _b = l.begin(Arc::from("archive_item"), 0); // start not read yet
    l.decoded(commit(15), Origin::AnyCall);
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
        l.decoded(commit(lsn), Origin::AnyCall);
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
        l.decoded(commit(45), Origin::AnyCall),
        None,
        "d is still in flight: it waits"
    );
    l.ended(d, 42);
    assert_eq!(
        l.decoded(commit(46), Origin::AnyCall),
        Some(Settled::Dropped)
    );
}

#[test]
fn a_commit_read_after_its_late_call_was_judged_is_dropped_not_unattributed() {
    let mut l = Ledger::new(10);
    let a = call(&mut l, "t", 10, Some(20));
    let share = l.judge_late(a);
    assert!(share.late && !share.gap && share.attributed.is_empty());
    assert_eq!(l.calls(), 0, "pruned: nothing in flight");
    assert_eq!(
        l.decoded(commit(15), Origin::AnyCall),
        Some(Settled::Dropped),
        "inside a's interval"
    );
    assert_eq!(
        l.decoded(commit(20), Origin::AnyCall),
        Some(Settled::Dropped),
        "at its end"
    );
    assert_eq!(
        l.decoded(commit(25), Origin::AnyCall),
        Some(Settled::Unattributed),
        "beyond it"
    );
    assert_eq!(
        l.decoded(commit(18), Origin::AnyCall),
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
    l.decoded(commit(15), Origin::AnyCall);
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

/// Calls on several connections at once, and commits whose writer is known: each row is
/// (calls as (connection, tool, start, end), commit position and origin, what it settles
/// as, and the call it is attributed to).
#[test]
fn a_known_writer_narrows_the_candidates_to_its_connection() {
    type Row = (
        &'static [(u64, &'static str, Lsn, Lsn)],
        Lsn,
        Origin,
        Settled,
        Option<usize>,
    );
    let two_sessions: &[(u64, &str, Lsn, Lsn)] =
        &[(1, "get_item", 10, 30), (2, "archive_item", 12, 32)];
    let rows: [Row; 7] = [
        // By position alone both calls were in flight: ambiguous.
        (two_sessions, 20, Origin::AnyCall, Settled::Ambiguous, None),
        // The writer was connection 2's child: its call's, exactly.
        (
            two_sessions,
            20,
            Origin::Session(2),
            Settled::Attributed,
            Some(1),
        ),
        (
            two_sessions,
            20,
            Origin::Session(1),
            Settled::Attributed,
            Some(0),
        ),
        // Connection 3 has no call in flight: unattributed, never blamed on 1 or 2.
        (
            two_sessions,
            20,
            Origin::Session(3),
            Settled::Unattributed,
            None,
        ),
        // Another replica's server, or any other writer: never this proxy's calls.
        (two_sessions, 20, Origin::Foreign, Settled::Foreign, None),
        // Two calls on one connection (a child serving two calls at once), two tools.
        (
            &[(1, "get_item", 10, 30), (1, "archive_item", 12, 32)],
            20,
            Origin::Session(1),
            Settled::Ambiguous,
            None,
        ),
        // Connection 1's call had ended before the commit: not its.
        (
            &[(1, "get_item", 10, 15), (2, "archive_item", 12, 32)],
            20,
            Origin::Session(1),
            Settled::Unattributed,
            None,
        ),
    ];
    for (i, (calls, lsn, origin, want, owner)) in rows.into_iter().enumerate() {
        let mut l = Ledger::new(100);
        let ids: Vec<u64> = calls
            .iter()
            .map(|(session, tool, start, _)| on(&mut l, *session, tool, *start, None))
            .collect();
        for (id, (_, _, _, end)) in ids.iter().zip(calls) {
            if *end < lsn {
                l.ended(*id, *end);
            }
        }
        let at_once = l.decoded(commit(lsn), origin);
        let mut shares = Vec::new();
        for (id, (_, _, _, end)) in ids.iter().zip(calls) {
            l.ended(*id, *end);
            shares.push(l.judge(*id));
        }
        let got = Settled::ALL
            .into_iter()
            .find(|s| l.settled(*s) == 1)
            .expect("settled once");
        assert_eq!(got, want, "row {i}");
        assert_eq!(
            at_once.is_some(),
            matches!(want, Settled::Unattributed | Settled::Foreign),
            "row {i}"
        );
        for (k, share) in shares.iter().enumerate() {
            let theirs = owner == Some(k);
            assert_eq!(
                share.attributed == [commit(lsn)],
                theirs,
                "row {i}, call {k}"
            );
            assert!(theirs || share.attributed.is_empty(), "row {i}, call {k}");
        }
        let told: usize = shares.iter().map(|s| s.ambiguous.len()).sum();
        let candidates = match origin {
            Origin::Session(s) => calls
                .iter()
                .filter(|c| c.0 == s && c.2 < lsn && lsn <= c.3)
                .count(),
            Origin::AnyCall => calls.len(),
            Origin::Foreign => 0,
        };
        let want_told = if want == Settled::Ambiguous {
            candidates
        } else {
            0
        };
        assert_eq!(
            told, want_told,
            "row {i}: only candidates are told of an ambiguous commit"
        );
    }
}

/// A commit to `table` at `lsn`.
fn commit_to(lsn: Lsn, table: &str) -> Commit {
    let mut c = commit(lsn);
    c.tables[0].table = table.into();
    c
}

/// Commits settled as no judged call's wait, by position, to be told to the judge; an
/// attributed one never does. One row per outcome, then the order they are taken in.
#[test]
fn writes_by_no_judged_call_wait_for_the_judge_by_position() {
    let mut l = Ledger::new(100);
    // Unattributed: no call in flight.
    assert_eq!(
        l.decoded(commit_to(5, "orders"), Origin::AnyCall),
        Some(Settled::Unattributed)
    );
    // Foreign: another writer's.
    assert_eq!(
        l.decoded(commit_to(6, "stock"), Origin::Foreign),
        Some(Settled::Foreign)
    );
    // Ambiguous: calls of two tools in flight; attributed: one call of one tool.
    let a = call(&mut l, "add_item", 10, None);
    let b = call(&mut l, "get_item", 12, None);
    l.decoded(commit_to(11, "mine"), Origin::AnyCall);
    l.decoded(commit_to(15, "shared"), Origin::AnyCall);
    l.ended(a, 16);
    let share = l.judge(a);
    assert_eq!(share.attributed, [commit_to(11, "mine")]);
    // Unattributed, after every call ended.
    l.ended(b, 20);
    l.judge(b);
    l.decoded(commit_to(30, "later"), Origin::AnyCall);
    let names = |s: BTreeSet<String>| s.into_iter().collect::<Vec<_>>();
    assert_eq!(names(l.take_written_elsewhere(4)), Vec::<String>::new());
    assert_eq!(
        names(l.take_written_elsewhere(16)),
        ["orders", "shared", "stock"]
    );
    assert_eq!(
        names(l.take_written_elsewhere(16)),
        Vec::<String>::new(),
        "taken once"
    );
    assert_eq!(names(l.take_written_elsewhere(Lsn::MAX)), ["later"]);
}
