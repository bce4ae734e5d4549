use super::*;
use crate::effect::{Operation, StatementEffect};
use crate::facts::collect::{lines, update_of_t as update};
use crate::facts::evidence::Wanted;

use RowImage::{Changed, Unchanged};
use RowOperation::{Delete, Insert, Update};

/// A committed change of `table` by statement 0, without row images or row id.
fn change(table: &str, operation: RowOperation) -> RowChange {
    RowChange {
        table: table.into(),
        operation,
        statement: Some(0),
        committed: true,
        image: RowImage::Unknown,
        nested: None,
        row_id: None,
    }
}

fn id(row_id: i64, rc: RowChange) -> RowChange {
    RowChange {
        row_id: Some(row_id),
        ..rc
    }
}

/// A case: its name, the statements, the row changes (naming statement 0), the facts as
/// [`lines`].
type Case = (
    &'static str,
    Vec<StatementEffect>,
    Vec<RowChange>,
    Vec<&'static str>,
);

/// One row per set of row changes (and the statements they name): the facts they give.
#[test]
fn row_changes() {
    let t = |op| change("t", op);
    let cases: Vec<Case> = vec![
        (
            "committed inserts: a write and a net change",
            vec![],
            vec![t(Insert), t(Insert)],
            vec![
                "writes: 2 rows inserted into t (confirmed)",
                "net_changes: 2 rows inserted into t (confirmed)",
                "written: t",
                "touched: t",
            ],
        ),
        (
            "rolled back: an attempt",
            vec![],
            vec![RowChange {
                committed: false,
                ..t(Update)
            }],
            vec![
                "attempts: update t: 1 row rolled back (confirmed)",
                "touched: t",
            ],
        ),
        (
            "deletes: destructive",
            vec![],
            vec![t(Delete)],
            vec![
                "writes: 1 row deleted from t (confirmed)",
                "destructive: 1 row deleted from t (confirmed)",
                "net_changes: 1 row deleted from t (confirmed)",
                "written: t",
                "touched: t",
            ],
        ),
        (
            "deleting and updating rows the call inserted: only the inserts count",
            vec![],
            vec![id(1, t(Insert)), id(1, t(Update)), id(1, t(Delete))],
            vec![
                "writes: 1 row inserted into t (confirmed)",
                "net_changes: 1 row inserted into t (confirmed)",
                "written: t",
                "touched: t",
            ],
        ),
        (
            "a row deleted before its id was inserted existed before the call",
            vec![],
            vec![id(1, t(Delete)), id(1, t(Insert))],
            vec![
                "writes: 1 row deleted from t (confirmed)",
                "writes: 1 row inserted into t (confirmed)",
                "destructive: 1 row deleted from t (confirmed)",
                "net_changes: 1 row deleted from t (confirmed)",
                "net_changes: 1 row inserted into t (confirmed)",
                "written: t",
                "touched: t",
            ],
        ),
        (
            "equal row images: an update that changed nothing",
            vec![],
            vec![RowChange {
                image: Unchanged,
                ..t(Update)
            }],
            vec![
                "attempts: UPDATE t: 1 row matched, nothing changed (confirmed)",
                "touched: t",
            ],
        ),
        (
            "row images differing in ignored columns only: nothing changed",
            vec![],
            vec![RowChange {
                image: Changed(vec!["updated_at".into()]),
                ..t(Update)
            }],
            vec![
                "attempts: UPDATE t: 1 row matched, nothing changed (confirmed)",
                "touched: t",
            ],
        ),
        (
            "differing row images: an overwrite, and a confirmed net change",
            vec![],
            vec![
                RowChange {
                    image: Changed(vec!["views".into(), "at".into()]),
                    ..t(Update)
                },
                RowChange {
                    image: Unchanged,
                    ..t(Update)
                },
            ],
            vec![
                "writes: 1 row updated in t (confirmed)",
                "destructive: 1 row updated in t (confirmed)",
                "net_changes: 1 row updated in t (changed views, at) (confirmed)",
                "written: t",
                "touched: t",
            ],
        ),
        (
            "row images differing in unnamed columns",
            vec![],
            vec![RowChange {
                image: Changed(vec![]),
                ..t(Update)
            }],
            vec![
                "writes: 1 row updated in t (confirmed)",
                "destructive: 1 row updated in t (confirmed)",
                "net_changes: 1 row updated in t (row images differ) (confirmed)",
                "written: t",
                "touched: t",
            ],
        ),
        (
            "no row images: a SET from itself suggests a net change",
            vec![update(&["views"], &[("views", "views + 1")])],
            vec![t(Update), t(Update)],
            vec![
                "writes: 2 rows updated in t (confirmed)",
                "destructive: 2 rows updated in t (confirmed)",
                "net_changes: 2 rows updated in t (SET views = views + 1) (likely)",
                "written: t",
                "touched: t",
            ],
        ),
        (
            "no row images: a SET from itself of an ignored column is no net change",
            vec![update(&["views", "updated_at"], &[("updated_at", "now()")])],
            vec![t(Update)],
            vec![
                "writes: 1 row updated in t (confirmed)",
                "destructive: 1 row updated in t (confirmed)",
                "written: t",
                "touched: t",
            ],
        ),
        (
            "no row images: a SET of ignored columns only changed nothing",
            vec![update(&["updated_at"], &[("updated_at", "now()")])],
            vec![t(Update)],
            vec![
                "attempts: UPDATE t: 1 row matched, nothing changed (confirmed)",
                "touched: t",
            ],
        ),
        (
            "no row images, a trigger's update of another table: an overwrite",
            vec![update(&["updated_at"], &[])],
            vec![change("audit", Update)],
            vec![
                "writes: 1 row updated in audit (confirmed)",
                "destructive: 1 row updated in audit (confirmed)",
                "written: audit",
                "touched: audit",
            ],
        ),
        (
            "ignored tables give nothing; names are normalized",
            vec![],
            vec![change("access_log", Insert), change("Public.T", Insert)],
            vec![
                "writes: 1 row inserted into t (confirmed)",
                "net_changes: 1 row inserted into t (confirmed)",
                "written: t",
                "touched: t",
            ],
        ),
    ];
    let policy = Policy::default()
        .with_ignored_table("access_log")
        .with_ignored_column("updated_at");
    for (name, statements, row_changes, want) in cases {
        let effect = Effect {
            statements,
            row_changes,
            ..Default::default()
        };
        let mut c = Collector::facts(Wanted::ALL);
        record_row_changes(&effect, &policy, &mut c);
        assert_eq!(lines(&c.finish()), want, "{name}");
    }
}

/// The statements that caused a row change in a watched table are marked, past the 64 of
/// the bit mask too; a statement index past the statements marks nothing.
#[test]
fn hooked_statements_are_marked() {
    let effect = Effect {
        statements: vec![StatementEffect::new(Operation::Insert, vec![]); 70],
        row_changes: [(Some(3), "t"), (Some(66), "t"), (Some(5), "access_log")]
            .into_iter()
            .chain([(Some(70), "t"), (None, "t")])
            .map(|(statement, table)| RowChange {
                statement,
                ..change(table, Insert)
            })
            .collect(),
        ..Default::default()
    };
    let policy = Policy::default().with_ignored_table("access_log");
    let hooked = record_row_changes(&effect, &policy, &mut Collector::facts(Wanted::ALL));
    let marked: Vec<usize> = (0..80).filter(|&i| hooked.get(i)).collect();
    assert_eq!(marked, [3, 66]);
}
