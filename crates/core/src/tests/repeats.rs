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
