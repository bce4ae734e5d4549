//! Updates and deletes of rows the call inserted itself (known by the hook's row id) are no
//! overwrite and no loss: a "create" that fills in its new row is not destructive.

use super::*;

/// A call's row change on `table` with row id `id` (committed unless said otherwise), caused by
/// statement `stmt`.
fn change(table: &str, op: RowOperation, id: Option<i64>, stmt: usize) -> RowChange {
    RowChange {
        row_id: id,
        ..rows(table, op, 1, stmt, true).remove(0)
    }
}

/// An INSERT then an UPDATE or DELETE statement, with these row changes.
fn effect(changes: Vec<RowChange>) -> Effect {
    Effect {
        statements: vec![
            stmt(Operation::Insert, "items"),
            stmt(Operation::Update, "items"),
            stmt(Operation::Update, "orders"),
        ],
        row_changes: changes,
        ..Default::default()
    }
}

#[test]
fn changes_to_rows_the_call_inserted_are_not_destructive() {
    use RowOperation::{Delete, Insert, Update};
    let rolled_back = RowChange {
        committed: false,
        ..change("items", Insert, Some(5), 0)
    };
    let cases: Vec<(&str, DeclaredHints, Vec<RowChange>, Vec<&str>)> = vec![
        (
            "insert, then update of that row",
            hints(F, F, U, F),
            vec![
                change("items", Insert, Some(5), 0),
                change("items", Update, Some(5), 1),
            ],
            vec![],
        ),
        (
            "insert, then delete of that row",
            hints(F, F, U, F),
            vec![
                change("items", Insert, Some(5), 0),
                change("items", Delete, Some(5), 1),
            ],
            vec![],
        ),
        (
            "insert, then update of another row",
            hints(F, F, U, F),
            vec![
                change("items", Insert, Some(5), 0),
                change("items", Update, Some(6), 1),
            ],
            vec!["undeclared_destructive"],
        ),
        (
            "update of a row id before an insert with that id",
            hints(F, F, U, F),
            vec![
                change("items", Update, Some(5), 1),
                change("items", Insert, Some(5), 0),
            ],
            vec!["undeclared_destructive"],
        ),
        (
            "rolled-back insert, then update of that row id",
            hints(F, F, U, F),
            vec![rolled_back, change("items", Update, Some(5), 1)],
            vec!["undeclared_destructive"],
        ),
        (
            "the same row id in another table",
            hints(F, F, U, F),
            vec![
                change("items", Insert, Some(5), 0),
                change("orders", Update, Some(5), 2),
            ],
            vec!["undeclared_destructive"],
        ),
        (
            "row ids unknown",
            hints(F, F, U, F),
            vec![
                change("items", Insert, None, 0),
                change("items", Update, None, 1),
            ],
            vec!["undeclared_destructive"],
        ),
        (
            "a read-only tool still wrote: the insert",
            hints(T, U, U, F),
            vec![
                change("items", Insert, Some(5), 0),
                change("items", Update, Some(5), 1),
            ],
            vec!["read_only_write"],
        ),
    ];
    // Padded past 32 row changes (inserts into another table, which change no verdict), the
    // call's own rows are found through a map instead of a linear search: the same verdicts.
    for (pad, (name, hints, changes, expected)) in [0, 40]
        .into_iter()
        .flat_map(|pad| cases.iter().map(move |case| (pad, case)))
    {
        let mut changes = changes.clone();
        changes.extend((0..pad).map(|k| change("log", Insert, Some(1000 + k), 0)));
        let judge = Judge::new(Policy::default());
        let e = effect(changes);
        let v = judge.judge(&ToolCall {
            tool: "create_item",
            hints: *hints,
            arguments: None,
            effect: &e,
        });
        assert_eq!(&rules(&v), expected, "case {name}, padded by {pad}");
        // The insert is a write either way.
        let facts = Facts::from_effect(&e, &Policy::default());
        assert!(
            facts.written_tables.contains("items"),
            "case {name}, padded by {pad}: {facts:?}"
        );
    }
}
