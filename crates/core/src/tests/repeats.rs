//! Idempotency: repeats with the same arguments.
#![allow(clippy::type_complexity)]

use serde_json::json;

use super::*;

fn update_self(expr: Option<(&str, &str)>) -> Effect {
    let mut e = hooked(Operation::Update, RowOperation::Update, "counters", 1);
    e.statements[0].set_columns = vec!["views".into()].into();
    if let Some((c, x)) = expr {
        e.statements[0].non_convergent = vec![(c.into(), x.into())].into();
    }
    e
}

/// A commit the database log showed (`hintaudit proxy`): one row of `counters` updated, with
/// the row image `image` (none: [`RowImage::Unknown`]).
fn logged_update(image: RowImage) -> Effect {
    let images = match image {
        RowImage::Unknown => vec![],
        image => vec![ImagedUpdates {
            table: "counters".into(),
            image,
            rows: 1,
        }],
    };
    Effect {
        transactions: vec![TransactionObservation {
            wrote: true,
            tables: vec![TableWrites {
                table: "counters".into(),
                inserted: 0,
                updated: 1,
                deleted: 0,
            }],
            committed: true,
            source: ObservationSource::Log,
            images,
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// A TRUNCATE the database log showed; `empty`: of a table it showed empty already.
fn logged_truncate(empty: bool) -> Effect {
    let mut s = stmt(Operation::Truncate, "counters");
    s.rows_affected = empty.then_some(0);
    s.observed = empty;
    Effect {
        statements: vec![s],
        ..Default::default()
    }
}

#[test]
fn idempotency_on_repeats() {
    let idem = hints(F, T, T, F);
    let args = json!({"id": 7});
    let other_args = json!({"id": 8});
    // (case, policy, first effect, repeat effect, another call in between?, expected rules on the repeat)
    let cases: Vec<(&str, Policy, Effect, Effect, Option<Effect>, Vec<&str>)> = vec![
        (
            "create inserts again",
            Policy::default(),
            hooked(Operation::Insert, RowOperation::Insert, "appointments", 1),
            hooked(Operation::Insert, RowOperation::Insert, "appointments", 1),
            None,
            vec!["idempotency_broken"],
        ),
        (
            "upsert: second time nothing inserted",
            Policy::default(),
            hooked(Operation::Insert, RowOperation::Insert, "appointments", 1),
            Effect {
                statements: vec![stmt(Operation::Insert, "appointments")],
                ..Default::default()
            },
            None,
            vec![],
        ),
        (
            "UPDATE to constants converges",
            Policy::default(),
            update_self(None),
            update_self(None),
            None,
            vec![],
        ),
        (
            "UPDATE views = views + 1 on a clean repeat",
            Policy::default(),
            update_self(Some(("views", "views + 1"))),
            update_self(Some(("views", "views + 1"))),
            None,
            vec!["idempotency_broken"],
        ),
        (
            "same, but the column is bookkeeping",
            Policy::default().with_ignored_column("views"),
            update_self(Some(("views", "views + 1"))),
            update_self(Some(("views", "views + 1"))),
            None,
            vec![],
        ),
        (
            "another call wrote the table in between: not judged",
            Policy::default(),
            hooked(Operation::Insert, RowOperation::Insert, "appointments", 1),
            hooked(Operation::Insert, RowOperation::Insert, "appointments", 1),
            Some(hooked(
                Operation::Delete,
                RowOperation::Delete,
                "appointments",
                1,
            )),
            vec![],
        ),
        (
            "another call wrote an unrelated table in between: judged",
            Policy::default(),
            hooked(Operation::Insert, RowOperation::Insert, "appointments", 1),
            hooked(Operation::Insert, RowOperation::Insert, "appointments", 1),
            Some(hooked(
                Operation::Delete,
                RowOperation::Delete,
                "patients",
                1,
            )),
            vec!["idempotency_broken"],
        ),
        (
            "delete twice: the repeat deletes nothing",
            Policy::default(),
            hooked(Operation::Delete, RowOperation::Delete, "appointments", 1),
            Effect {
                statements: vec![stmt(Operation::Delete, "appointments")],
                ..Default::default()
            },
            None,
            vec![],
        ),
        (
            "row images prove a change on repeat",
            Policy::default(),
            {
                let mut e = update_self(None);
                e.row_changes[0].image = RowImage::Changed(vec!["updated_at".into()]);
                e
            },
            {
                let mut e = update_self(None);
                e.row_changes[0].image = RowImage::Changed(vec!["updated_at".into()]);
                e
            },
            None,
            vec!["idempotency_broken"],
        ),
        (
            "the database log's images: a counter changes again",
            Policy::default(),
            logged_update(RowImage::Unknown),
            logged_update(RowImage::Changed(vec!["views".into()])),
            None,
            vec!["idempotency_broken"],
        ),
        (
            "the database log's images: a re-set to the same values",
            Policy::default(),
            logged_update(RowImage::Changed(vec!["qty".into()])),
            logged_update(RowImage::Unchanged),
            None,
            vec![],
        ),
        (
            "the database log's images: only an ignored column changes again",
            Policy::default().with_ignored_column("updated_at"),
            logged_update(RowImage::Unknown),
            logged_update(RowImage::Changed(vec!["updated_at".into()])),
            None,
            vec![],
        ),
        (
            "the database log without images: an update is no net change",
            Policy::default(),
            logged_update(RowImage::Unknown),
            logged_update(RowImage::Unknown),
            None,
            vec![],
        ),
        (
            "the database log: a TRUNCATE of a table it showed empty",
            Policy::default(),
            logged_truncate(false),
            logged_truncate(true),
            None,
            vec![],
        ),
        (
            "the database log: a TRUNCATE of a table it did not show empty",
            Policy::default(),
            logged_truncate(false),
            logged_truncate(false),
            None,
            vec!["idempotency_broken"],
        ),
    ];
    for (name, policy, first, repeat, between, want) in cases {
        let judge = Judge::new(policy);
        let call = |e: &Effect, a: &serde_json::Value| {
            judge.judge(&ToolCall {
                tool: "t",
                hints: idem,
                arguments: Some(a),
                effect: e,
            })
        };
        let v1 = call(&first, &args);
        assert_eq!(v1.repeat, Some(Repeat::First), "case {name}");
        assert!(
            !rules(&v1).contains(&"idempotency_broken"),
            "case {name}: first call"
        );
        if let Some(b) = &between {
            judge.judge(&ToolCall {
                tool: "other",
                hints: idem,
                arguments: Some(&other_args),
                effect: b,
            });
        }
        let v2 = call(&repeat, &args);
        let got: Vec<&str> = rules(&v2)
            .into_iter()
            .filter(|r| *r == "idempotency_broken")
            .collect();
        assert_eq!(got, want, "case {name}: {:#?}", v2.findings);
        // A call with other arguments is a first call, never judged for idempotency.
        let v3 = call(&repeat, &other_args);
        assert!(
            !rules(&v3).contains(&"idempotency_broken"),
            "case {name}: other args"
        );
    }
}

#[test]
fn idempotency_is_judged_only_when_declared() {
    let e = hooked(Operation::Insert, RowOperation::Insert, "appointments", 1);
    for h in [hints(F, F, F, F), hints(F, F, U, F), hints(T, U, T, F)] {
        let judge = Judge::new(Policy::default().with_ignored_table("appointments"));
        for _ in 0..2 {
            let v = judge.judge(&ToolCall {
                tool: "t",
                hints: h,
                arguments: None,
                effect: &e,
            });
            assert!(v.findings.is_empty(), "{h:?}: {:?}", v.findings);
        }
    }
}

/// A call that changed `path` in a watched tree (`hintaudit proxy --watch`).
fn changed_file(path: &str, kind: crate::files::ChangeKind) -> Effect {
    Effect {
        files: vec![crate::files::FileChange {
            path: path.into(),
            kind,
        }],
        ..Default::default()
    }
}

/// The memory server's delete, repeated: each row is what happened between the two deletes
/// of `delete_entities` (both changed `memory.jsonl`), and whether the repeat is judged
/// `idempotency_broken`. A write given to no call disturbs the repeat as another call's does.
#[test]
fn writes_by_others_disturb_file_repeats() {
    use crate::files::ChangeKind::{Overwritten, RenamedTo};
    enum Between {
        Nothing,
        Call(Effect),
        Elsewhere(Vec<StateKey<'static>>),
    }
    let delete = changed_file("memory.jsonl", Overwritten);
    let cases = [
        ("nothing wrote in between", Between::Nothing, true),
        (
            "another tool's call rewrote the file",
            Between::Call(changed_file("memory.jsonl", Overwritten)),
            false,
        ),
        (
            "another tool's call renamed a file onto it",
            Between::Call(changed_file("tmp.jsonl", RenamedTo("memory.jsonl".into()))),
            false,
        ),
        (
            "another tool's call wrote another file",
            Between::Call(changed_file("other.jsonl", Overwritten)),
            true,
        ),
        (
            "an ambiguous or unattributed write of the file",
            Between::Elsewhere(vec![StateKey::file("memory.jsonl")]),
            false,
        ),
        (
            "an unattributed write of another file",
            Between::Elsewhere(vec![StateKey::file("other.jsonl")]),
            true,
        ),
        (
            "a foreign commit to a table of the same name",
            Between::Elsewhere(vec![StateKey::table("memory.jsonl")]),
            true,
        ),
    ];
    let args = json!({"entityNames": ["Carol"]});
    for (name, between, broken) in cases {
        let judge = Judge::new(Policy::default());
        let delete_call = || ToolCall {
            tool: "delete_entities",
            hints: hints(F, T, T, F),
            arguments: Some(&args),
            effect: &delete,
        };
        assert_eq!(judge.judge(&delete_call()).repeat, Some(Repeat::First));
        match &between {
            Between::Nothing => {}
            Between::Call(effect) => {
                judge.judge(&ToolCall {
                    tool: "create_entities",
                    hints: hints(F, F, F, F),
                    arguments: Some(&args),
                    effect,
                });
            }
            Between::Elsewhere(keys) => judge.written_elsewhere(keys),
        }
        let v = judge.judge(&delete_call());
        let want = if broken {
            Repeat::Clean
        } else {
            Repeat::Disturbed
        };
        assert_eq!(v.repeat, Some(want), "case {name}");
        assert_eq!(
            rules(&v).contains(&"idempotency_broken"),
            broken,
            "case {name}: {:#?}",
            v.findings
        );
    }
}
