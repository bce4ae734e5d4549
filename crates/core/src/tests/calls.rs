//! Rules judged on one call.
#![allow(clippy::type_complexity)]

use super::*;

#[test]
fn single_call_rules() {
    let audit_log = Policy::default().with_ignored_table("audit_log");
    let mut update_bookkeeping = hooked(Operation::Update, RowOperation::Update, "appointments", 1);
    update_bookkeeping.statements[0].set_columns = vec!["last_viewed_at".into()].into();
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
    pg_hidden.opaque_calls = vec!["mark_viewed".into()].into();
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
        ..Default::default()
    };
    let image = |img: RowImage| {
        let mut e = hooked(Operation::Update, RowOperation::Update, "appointments", 1);
        e.row_changes[0].image = img;
        e
    };

    // (case, policy, hints, effect, expected rules, expected confidence of the first finding)
    let cases: Vec<Case> = vec![
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
                    ..Default::default()
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
                outbound: vec![OutboundReach::new("POST", "api.example.com", None)],
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
                outbound: vec![OutboundReach::new("GET", "maps.example.com", None)],
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
                outbound: vec![OutboundReach::new("GET", "127.0.0.1", None)],
                ..Default::default()
            },
            vec![],
            None,
        ),
        (
            "read tool POSTs inside the closed world",
            Policy::default(),
            hints(T, U, U, F),
            Effect {
                outbound: vec![OutboundReach::new("POST", "localhost", Some(8080))],
                ..Default::default()
            },
            vec![],
            None,
        ),
        (
            "read tool POSTs to loopback configured as outside",
            Policy::default().with_closed_world(
                crate::ClosedWorld::default()
                    .with_outside("127.0.0.1:9")
                    .unwrap(),
            ),
            hints(T, U, U, F),
            Effect {
                outbound: vec![OutboundReach::new("POST", "127.0.0.1", Some(9))],
                ..Default::default()
            },
            vec!["read_only_write", "undeclared_open_world"],
            Some(Confidence::Confirmed),
        ),
        (
            "directory reading: a GET outside does not alert",
            Policy::default().with_open_world_reading(crate::OpenWorldReading::StateChange),
            hints(T, U, U, F),
            Effect {
                outbound: vec![OutboundReach::new("GET", "maps.example.com", None)],
                ..Default::default()
            },
            vec![],
            None,
        ),
        (
            "directory reading: a PUT outside alerts",
            Policy::default().with_open_world_reading(crate::OpenWorldReading::StateChange),
            hints(F, F, U, F),
            Effect {
                outbound: vec![OutboundReach::new("PUT", "maps.example.com", None)],
                ..Default::default()
            },
            vec!["undeclared_open_world"],
            Some(Confidence::Confirmed),
        ),
        (
            "CIDR closed world covers a private address",
            Policy::default().with_closed_world(
                crate::ClosedWorld::default()
                    .with_entry("10.0.0.0/8")
                    .unwrap(),
            ),
            hints(F, F, U, F),
            Effect {
                outbound: vec![OutboundReach::new("DELETE", "10.2.3.4", Some(443))],
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
                outbound: vec![OutboundReach::new("GET", "maps.example.com", None)],
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
    judge_cases(cases);
}
