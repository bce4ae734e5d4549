//! Table-driven tests of the judge: one row per (hints, effect) case, the expected rules in
//! the row.
#![allow(clippy::type_complexity)]

use serde_json::json;

use crate::*;

fn hints(ro: Option<bool>, d: Option<bool>, i: Option<bool>, ow: Option<bool>) -> DeclaredHints {
    DeclaredHints {
        read_only: ro,
        destructive: d,
        idempotent: i,
        open_world: ow,
    }
}

fn stmt(op: Operation, table: &str) -> StatementEffect {
    let mut s = StatementEffect::new(op, vec![table.to_owned()]);
    s.observed = true;
    s
}

fn rows(table: &str, op: RowOperation, n: usize, stmt: usize, committed: bool) -> Vec<RowChange> {
    (0..n)
        .map(|_| RowChange {
            table: table.into(),
            operation: op,
            statement: Some(stmt),
            committed,
            image: RowImage::Unknown,
            nested: None,
        })
        .collect()
}

/// An effect of one statement on `table` with `n` hooked rows.
fn hooked(op: Operation, row_op: RowOperation, table: &str, n: usize) -> Effect {
    Effect {
        statements: vec![stmt(op, table)],
        row_changes: rows(table, row_op, n, 0, true),
        ..Default::default()
    }
}

fn read(table: &str) -> Effect {
    let mut s = StatementEffect::new(Operation::Select, vec![]);
    s.read_tables = vec![table.into()];
    Effect {
        statements: vec![s],
        ..Default::default()
    }
}

fn rules(v: &Verdict) -> Vec<&'static str> {
    v.findings.iter().map(|f| f.rule.as_str()).collect()
}

const T: Option<bool> = Some(true);
const F: Option<bool> = Some(false);
const U: Option<bool> = None;

#[test]
fn single_call_rules() {
    let audit_log = Policy::default().with_ignored_table("audit_log");
    let mut update_bookkeeping = hooked(Operation::Update, RowOperation::Update, "appointments", 1);
    update_bookkeeping.statements[0].set_columns = vec!["last_viewed_at".into()];
    let mut upd_unobserved_pg = stmt(Operation::Update, "appointments");
    upd_unobserved_pg.observed = false;
    upd_unobserved_pg.rows_affected = Some(2);
    let mut del_zero_pg = stmt(Operation::Delete, "appointments");
    del_zero_pg.observed = false;
    del_zero_pg.rows_affected = Some(0);
    let mut failed = stmt(Operation::Insert, "appointments");
    failed.outcome = StatementOutcome::Failed;
    let mut unknown = StatementEffect::new(Operation::Unknown, vec![]);
    unknown.summary = "UNKNOWN".into();
    let mut drop = stmt(Operation::Ddl, "appointments");
    drop.drops = true;
    let mut replace = stmt(Operation::Upsert, "patients");
    replace.overwrites = true;
    let mut pg_hidden = StatementEffect::new(Operation::Select, vec![]);
    pg_hidden.opaque_calls = vec!["mark_viewed".into()];
    pg_hidden.observed = true;
    let oracle = |committed: bool| TransactionObservation {
        wrote: true,
        tables: vec![TableWrites {
            table: "public.appointments".into(),
            inserted: 0,
            updated: 1,
            deleted: 0,
        }],
        committed,
    };
    let image = |img: RowImage| {
        let mut e = hooked(Operation::Update, RowOperation::Update, "appointments", 1);
        e.row_changes[0].image = img;
        e
    };

    // (case, policy, hints, effect, expected rules, expected confidence of the first finding)
    let cases: Vec<(
        &str,
        Policy,
        DeclaredHints,
        Effect,
        Vec<&str>,
        Option<Confidence>,
    )> = vec![
        (
            "read tool reads",
            Policy::default(),
            hints(T, U, U, F),
            read("appointments"),
            vec![],
            None,
        ),
        (
            "read tool updates a row",
            Policy::default(),
            hints(T, U, U, F),
            hooked(Operation::Update, RowOperation::Update, "appointments", 1),
            vec!["read_only_write"],
            Some(Confidence::Confirmed),
        ),
        (
            "read-only, destructive unset, deletes: never judged destructive",
            Policy::default(),
            hints(T, U, U, U),
            hooked(Operation::Delete, RowOperation::Delete, "appointments", 3),
            vec!["read_only_write"],
            Some(Confidence::Confirmed),
        ),
        (
            "read tool appends to an ignored audit table",
            audit_log.clone(),
            hints(T, F, U, F),
            hooked(Operation::Insert, RowOperation::Insert, "audit_log", 1),
            vec![],
            None,
        ),
        (
            "read tool appends to a watched audit table",
            Policy::default(),
            hints(T, F, U, F),
            hooked(Operation::Insert, RowOperation::Insert, "audit_log", 1),
            vec!["read_only_write"],
            Some(Confidence::Confirmed),
        ),
        (
            "read tool's write rolled back",
            Policy::default(),
            hints(T, U, U, F),
            Effect {
                statements: vec![stmt(Operation::Insert, "appointments")],
                row_changes: rows("appointments", RowOperation::Insert, 1, 0, false),
                ..Default::default()
            },
            vec!["read_only_write_attempt"],
            Some(Confidence::Confirmed),
        ),
        (
            "read tool's UPDATE matched nothing",
            Policy::default(),
            hints(T, U, U, F),
            Effect {
                statements: vec![stmt(Operation::Update, "appointments")],
                ..Default::default()
            },
            vec!["read_only_write_attempt"],
            Some(Confidence::Confirmed),
        ),
        (
            "read tool's write failed",
            Policy::default(),
            hints(T, U, U, F),
            Effect {
                statements: vec![failed],
                ..Default::default()
            },
            vec!["read_only_write_attempt"],
            Some(Confidence::Confirmed),
        ),
        (
            "read tool's unparseable, unobserved statement",
            Policy::default(),
            hints(T, U, U, F),
            Effect {
                statements: vec![unknown],
                ..Default::default()
            },
            vec!["read_only_write"],
            Some(Confidence::Likely),
        ),
        (
            "read tool on PostgreSQL: oracle sees a write hidden in a function",
            Policy::default(),
            hints(T, U, U, F),
            Effect {
                statements: vec![pg_hidden.clone()],
                transactions: vec![oracle(true)],
                ..Default::default()
            },
            vec!["read_only_write"],
            Some(Confidence::Confirmed),
        ),
        (
            "read tool on PostgreSQL: hidden write rolled back",
            Policy::default(),
            hints(T, U, U, F),
            Effect {
                statements: vec![pg_hidden],
                transactions: vec![oracle(false)],
                ..Default::default()
            },
            vec!["read_only_write_attempt"],
            Some(Confidence::Confirmed),
        ),
        (
            "read tool: oracle says wrote but no table changed (FOR UPDATE)",
            Policy::default(),
            hints(T, U, U, F),
            Effect {
                statements: vec![stmt(Operation::SelectForUpdate, "appointments")],
                transactions: vec![TransactionObservation {
                    wrote: true,
                    tables: vec![],
                    committed: true,
                }],
                ..Default::default()
            },
            vec![],
            None,
        ),
        (
            "read tool makes a POST",
            Policy::default(),
            hints(T, U, U, U),
            Effect {
                outbound: vec![OutboundReach {
                    host: "api.example.com".into(),
                    method: "POST".into(),
                }],
                ..Default::default()
            },
            vec!["read_only_write"],
            Some(Confidence::Confirmed),
        ),
        (
            "non-destructive tool inserts",
            Policy::default(),
            hints(F, F, U, F),
            hooked(Operation::Insert, RowOperation::Insert, "appointments", 1),
            vec![],
            None,
        ),
        (
            "non-destructive tool deletes",
            Policy::default(),
            hints(F, F, U, F),
            hooked(Operation::Delete, RowOperation::Delete, "appointments", 4),
            vec!["undeclared_destructive"],
            Some(Confidence::Confirmed),
        ),
        (
            "non-destructive tool, readOnly unset, overwrites",
            Policy::default(),
            hints(U, F, U, F),
            hooked(Operation::Update, RowOperation::Update, "appointments", 1),
            vec!["undeclared_destructive"],
            Some(Confidence::Confirmed),
        ),
        (
            "destructive unset (default true) deletes",
            Policy::default(),
            hints(F, U, U, F),
            hooked(Operation::Delete, RowOperation::Delete, "appointments", 1),
            vec![],
            None,
        ),
        (
            "non-destructive update confined to ignored columns",
            Policy::default().with_ignored_column("last_viewed_at"),
            hints(F, F, U, F),
            update_bookkeeping.clone(),
            vec![],
            None,
        ),
        (
            "same update, column not ignored",
            Policy::default(),
            hints(F, F, U, F),
            update_bookkeeping,
            vec!["undeclared_destructive"],
            Some(Confidence::Confirmed),
        ),
        (
            "row images: unchanged update is no overwrite",
            Policy::default(),
            hints(F, F, U, F),
            image(RowImage::Unchanged),
            vec![],
            None,
        ),
        (
            "row images: change confined to ignored column",
            Policy::default().with_ignored_column("appointments.updated_at"),
            hints(F, F, U, F),
            image(RowImage::Changed(vec!["updated_at".into()])),
            vec![],
            None,
        ),
        (
            "row images: real change",
            Policy::default().with_ignored_column("updated_at"),
            hints(F, F, U, F),
            image(RowImage::Changed(vec![
                "updated_at".into(),
                "status".into(),
            ])),
            vec!["undeclared_destructive"],
            Some(Confidence::Confirmed),
        ),
        (
            "PostgreSQL update without oracle: rows affected",
            Policy::default(),
            hints(F, F, U, F),
            Effect {
                statements: vec![upd_unobserved_pg],
                ..Default::default()
            },
            vec!["undeclared_destructive"],
            Some(Confidence::Confirmed),
        ),
        (
            "PostgreSQL delete of 0 rows is nothing destructive",
            Policy::default(),
            hints(F, F, U, F),
            Effect {
                statements: vec![del_zero_pg],
                ..Default::default()
            },
            vec![],
            None,
        ),
        (
            "non-destructive tool drops a table",
            Policy::default(),
            hints(F, F, U, F),
            Effect {
                statements: vec![drop],
                ..Default::default()
            },
            vec!["undeclared_destructive"],
            Some(Confidence::Likely),
        ),
        (
            "non-destructive REPLACE on SQLite (hooks blind to conflict deletes)",
            Policy::default(),
            hints(F, F, U, F),
            Effect {
                statements: vec![replace],
                row_changes: rows("patients", RowOperation::Insert, 1, 0, true),
                ..Default::default()
            },
            vec!["undeclared_destructive"],
            Some(Confidence::Likely),
        ),
        (
            "non-destructive tool's trigger overwrites another table",
            Policy::default(),
            hints(F, F, U, F),
            Effect {
                statements: vec![stmt(Operation::Insert, "confirmations")],
                row_changes: [
                    rows("confirmations", RowOperation::Insert, 1, 0, true),
                    rows("appointments", RowOperation::Update, 1, 0, true),
                ]
                .concat(),
                ..Default::default()
            },
            vec!["undeclared_destructive"],
            Some(Confidence::Confirmed),
        ),
        (
            "closed-world tool reaches out",
            Policy::default(),
            hints(T, U, U, F),
            Effect {
                outbound: vec![OutboundReach {
                    host: "maps.example.com".into(),
                    method: "GET".into(),
                }],
                ..Default::default()
            },
            vec!["undeclared_open_world"],
            Some(Confidence::Confirmed),
        ),
        (
            "closed-world tool reaches loopback",
            Policy::default(),
            hints(T, U, U, F),
            Effect {
                outbound: vec![OutboundReach {
                    host: "127.0.0.1".into(),
                    method: "GET".into(),
                }],
                ..Default::default()
            },
            vec![],
            None,
        ),
        (
            "open world unset reaches out",
            Policy::default(),
            hints(T, U, U, U),
            Effect {
                outbound: vec![OutboundReach {
                    host: "maps.example.com".into(),
                    method: "GET".into(),
                }],
                ..Default::default()
            },
            vec![],
            None,
        ),
        (
            "reported file overwrite by a non-destructive tool",
            Policy::default(),
            hints(F, F, U, F),
            Effect {
                explicit: vec![ExplicitEffect {
                    target: "file:/exports/a.csv".into(),
                    change: ExplicitChange::Overwrite,
                }],
                ..Default::default()
            },
            vec!["undeclared_destructive"],
            Some(Confidence::Confirmed),
        ),
    ];
    for (name, policy, h, effect, want, conf) in cases {
        let judge = Judge::new(policy);
        let v = judge.judge(&ToolCall {
            tool: "t",
            hints: h,
            arguments: None,
            effect: &effect,
        });
        assert_eq!(rules(&v), want, "case: {name}\nfindings: {:#?}", v.findings);
        assert_eq!(
            v.findings.first().map(|f| f.confidence),
            conf,
            "confidence, case: {name}"
        );
        for f in &v.findings {
            assert!(!f.evidence.is_empty(), "case {name}: empty evidence");
        }
    }
}

fn update_self(expr: Option<(&str, &str)>) -> Effect {
    let mut e = hooked(Operation::Update, RowOperation::Update, "counters", 1);
    e.statements[0].set_columns = vec!["views".into()];
    if let Some((c, x)) = expr {
        e.statements[0].non_convergent = vec![(c.into(), x.into())];
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

#[test]
fn listing_rules() {
    let judge = Judge::new(Policy::default());
    let cases = [
        (hints(T, U, U, F), vec![]),
        (
            hints(U, U, U, U),
            vec![
                ("hint_missing", Hint::ReadOnly),
                ("hint_missing", Hint::Destructive),
                ("hint_missing", Hint::Idempotent),
                ("hint_missing", Hint::OpenWorld),
            ],
        ),
        (
            hints(T, T, U, F),
            vec![("hint_contradiction", Hint::Destructive)],
        ),
        (hints(F, F, U, F), vec![("hint_missing", Hint::Idempotent)]),
    ];
    for (i, (h, want)) in cases.into_iter().enumerate() {
        let tool = format!("tool{i}");
        let got: Vec<(&str, Hint)> = judge
            .judge_listing(&tool, h)
            .iter()
            .map(|f| (f.rule.as_str(), f.hint))
            .collect();
        assert_eq!(got, want, "{h:?}");
        // Listing again with the same hints: same findings, no hints_changed.
        assert_eq!(judge.judge_listing(&tool, h).len(), want.len());
    }
    // The hints of tool0 change: hints_changed on the changed hint, every time they differ.
    let changed = judge.judge_listing("tool0", hints(F, T, U, F));
    let hc: Vec<&Finding> = changed
        .iter()
        .filter(|f| f.rule == Rule::HintsChanged)
        .collect();
    assert_eq!(hc.len(), 1);
    assert_eq!(hc[0].hint, Hint::ReadOnly);
    assert_eq!(hc[0].severity, Severity::Warning);
    assert!(
        hc[0].evidence.contains("ro=true") && hc[0].evidence.contains("ro=false"),
        "{}",
        hc[0].evidence
    );
}

#[test]
fn advice_after_enough_quiet_calls() {
    let judge = Judge::new(Policy::default().with_advice_after_calls(3));
    let cautious = hints(U, U, U, U);
    let reads = read("appointments");
    let inserts = hooked(Operation::Insert, RowOperation::Insert, "log", 1);
    let noop_update = Effect {
        statements: vec![stmt(Operation::Update, "appointments")],
        ..Default::default()
    };
    for i in 0..2 {
        judge.judge(&ToolCall {
            tool: "reader",
            hints: cautious,
            arguments: Some(&json!(i)),
            effect: &reads,
        });
    }
    assert!(
        judge.advice("reader", cautious).is_empty(),
        "before the threshold"
    );
    judge.judge(&ToolCall {
        tool: "reader",
        hints: cautious,
        arguments: None,
        effect: &reads,
    });
    assert_eq!(
        judge.advice("reader", cautious),
        vec![Advice::CouldBeReadOnly, Advice::CouldBeClosedWorld]
    );
    // A declared read-only, closed-world tool gets none.
    assert!(judge.advice("reader", hints(T, U, U, F)).is_empty());

    for i in 0..3 {
        judge.judge(&ToolCall {
            tool: "appender",
            hints: cautious,
            arguments: Some(&json!(i)),
            effect: &inserts,
        });
    }
    assert_eq!(
        judge.advice("appender", cautious),
        vec![Advice::CouldBeNonDestructive, Advice::CouldBeClosedWorld]
    );

    // A tool whose repeats change nothing, and that writes (attempts count as writes).
    for _ in 0..3 {
        judge.judge(&ToolCall {
            tool: "setter",
            hints: cautious,
            arguments: None,
            effect: &noop_update,
        });
    }
    assert!(
        judge
            .advice("setter", cautious)
            .contains(&Advice::CouldBeIdempotent)
    );
    assert!(
        !judge
            .advice("setter", cautious)
            .contains(&Advice::CouldBeReadOnly)
    );
}

#[test]
fn verdict_label_is_the_worst_severity() {
    let judge = Judge::new(Policy::default());
    let e = hooked(Operation::Delete, RowOperation::Delete, "appointments", 1);
    let v = judge.judge(&ToolCall {
        tool: "t",
        hints: hints(T, U, U, F),
        arguments: None,
        effect: &e,
    });
    assert_eq!(v.label(), "critical");
    let v = judge.judge(&ToolCall {
        tool: "t",
        hints: hints(F, U, U, U),
        arguments: None,
        effect: &e,
    });
    assert_eq!(v.label(), "clean");
}

#[test]
fn evidence_is_summarized_and_bounded() {
    let mut e = Effect::default();
    for (i, t) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        e.statements.push(stmt(Operation::Delete, t));
        e.row_changes
            .extend(rows(t, RowOperation::Delete, 2, i, true));
    }
    let judge = Judge::new(Policy::default());
    let v = judge.judge(&ToolCall {
        tool: "t",
        hints: hints(F, F, U, F),
        arguments: None,
        effect: &e,
    });
    assert_eq!(v.findings.len(), 1);
    assert_eq!(
        v.findings[0].evidence,
        "2 rows deleted from a; 2 rows deleted from b; 2 rows deleted from c (+2 more)"
    );
}
