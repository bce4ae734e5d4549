use super::*;
use crate::facts::collect::lines;
use crate::facts::evidence::Wanted;

use Operation::{Ddl, Delete, Insert, Select, Truncate, Unknown, Update, Upsert};

/// A statement writing `table` (none when empty), nothing else known.
fn st(operation: Operation, table: &str) -> StatementEffect {
    let tables = [table].into_iter().filter(|t| !t.is_empty());
    StatementEffect::new(operation, tables.map(str::to_owned).collect())
}

fn affected(n: u64, s: StatementEffect) -> StatementEffect {
    StatementEffect {
        rows_affected: Some(n),
        ..s
    }
}

fn observed(s: StatementEffect) -> StatementEffect {
    StatementEffect {
        observed: true,
        ..s
    }
}

fn set(columns: &[&str], s: StatementEffect) -> StatementEffect {
    let set_columns = columns.iter().map(|c| c.to_string()).collect::<Vec<_>>();
    StatementEffect {
        set_columns: set_columns.into(),
        ..s
    }
}

fn overwrites(s: StatementEffect) -> StatementEffect {
    StatementEffect {
        overwrites: true,
        ..s
    }
}

/// `views = views + 1`.
fn views_plus_one(s: StatementEffect) -> StatementEffect {
    StatementEffect {
        non_convergent: vec![("views".to_owned(), "views + 1".to_owned())].into(),
        ..set(&["views"], s)
    }
}

/// A case: its name, the statement, whether hooks saw it change rows, the tables the oracle
/// saw, the evidence as [`lines`].
type Case = (
    &'static str,
    StatementEffect,
    bool,
    &'static [&'static str],
    Vec<&'static str>,
);

/// One row per statement, whether hooks saw it change rows, the tables the oracle saw:
/// the evidence it gives.
#[test]
fn statement_evidence() {
    let cases: Vec<Case> = vec![
        ("a read: none", read(), false, &[], vec![]),
        (
            "rows counted: an insert",
            affected(2, st(Insert, "t")),
            false,
            &[],
            vec![
                "writes: INSERT t: 2 rows affected (confirmed)",
                "net_changes: INSERT t: 2 rows affected (confirmed)",
            ],
        ),
        (
            "rows counted: a delete",
            affected(1, st(Delete, "t")),
            false,
            &[],
            vec![
                "writes: DELETE t: 1 row affected (confirmed)",
                "destructive: DELETE t: 1 row affected (confirmed)",
                "net_changes: DELETE t: 1 row affected (confirmed)",
            ],
        ),
        (
            "rows counted: an update setting a column from itself",
            affected(1, views_plus_one(st(Update, "t"))),
            false,
            &[],
            vec![
                "writes: UPDATE t: 1 row affected (confirmed)",
                "destructive: UPDATE t: 1 row affected (confirmed)",
                "net_changes: UPDATE t: 1 row affected (SET views = views + 1) (likely)",
            ],
        ),
        (
            "rows counted: an update of ignored columns",
            affected(1, set(&["updated_at"], st(Update, "t"))),
            false,
            &[],
            vec!["writes: UPDATE t: 1 row affected (confirmed)"],
        ),
        (
            "rows counted: an overwriting upsert",
            affected(1, views_plus_one(overwrites(st(Upsert, "t")))),
            false,
            &[],
            vec![
                "writes: UPSERT t: 1 row affected (confirmed)",
                "destructive: UPSERT t: 1 row affected; an upsert that may have overwritten (likely)",
                "net_changes: UPSERT t: 1 row affected (SET views = views + 1) (likely)",
            ],
        ),
        (
            "rows counted: a non-overwriting upsert",
            affected(1, st(Upsert, "t")),
            false,
            &[],
            vec!["writes: UPSERT t: 1 row affected (confirmed)"],
        ),
        (
            "zero rows counted: an attempt",
            affected(0, st(Update, "t")),
            false,
            &[],
            vec!["attempts: UPDATE t: 0 rows affected (confirmed)"],
        ),
        (
            "rows not reported: an update with SET columns",
            set(&["name"], st(Update, "t")),
            false,
            &[],
            vec![
                "writes: UPDATE t: a write (rows not reported) (likely)",
                "destructive: UPDATE t: a write (rows not reported) (likely)",
            ],
        ),
        (
            "rows not reported: an update without known SET columns",
            st(Update, "t"),
            false,
            &[],
            vec!["writes: UPDATE t: a write (rows not reported) (likely)"],
        ),
        (
            "rows not reported: a delete",
            st(Delete, "t"),
            false,
            &[],
            vec![
                "writes: DELETE t: a write (rows not reported) (likely)",
                "destructive: DELETE t: a write (rows not reported) (likely)",
            ],
        ),
        (
            "rows not reported: an overwriting upsert",
            overwrites(st(Upsert, "t")),
            false,
            &[],
            vec![
                "writes: UPSERT t: a write (rows not reported) (likely)",
                "destructive: UPSERT t: a write (rows not reported) (likely)",
            ],
        ),
        (
            "rows not reported: an insert",
            st(Insert, "t"),
            false,
            &[],
            vec!["writes: INSERT t: a write (rows not reported) (likely)"],
        ),
        (
            "a failed write: an attempt",
            failed(affected(1, st(Delete, "t"))),
            false,
            &[],
            vec!["attempts: DELETE t: failed (confirmed)"],
        ),
        (
            "TRUNCATE",
            st(Truncate, "t"),
            false,
            &[],
            vec![
                "writes: TRUNCATE t: table truncated (likely)",
                "destructive: TRUNCATE t: table truncated (likely)",
                "net_changes: TRUNCATE t: table truncated (likely)",
            ],
        ),
        (
            "TRUNCATE of a table the database log showed empty: an attempt",
            observed(affected(0, st(Truncate, "t"))),
            false,
            &[],
            vec!["attempts: TRUNCATE t: the table was already empty (likely)"],
        ),
        (
            "TRUNCATE counted 0 by a driver, not observed (a multi-statement text): truncated",
            affected(0, st(Truncate, "t")),
            false,
            &[],
            vec![
                "writes: TRUNCATE t: table truncated (likely)",
                "destructive: TRUNCATE t: table truncated (likely)",
                "net_changes: TRUNCATE t: table truncated (likely)",
            ],
        ),
        (
            "DDL",
            st(Ddl, "t"),
            false,
            &[],
            vec!["writes: DDL t: schema change (likely)"],
        ),
        (
            "DROP",
            drops(st(Ddl, "t")),
            false,
            &[],
            vec![
                "writes: DDL t: schema change (likely)",
                "destructive: DDL t: DROP (likely)",
            ],
        ),
        (
            "observed, no row change: changed nothing",
            observed(affected(1, st(Update, "t"))),
            false,
            &[],
            vec!["attempts: UPDATE t: changed nothing (confirmed)"],
        ),
        (
            "observed and hooked: the row changes speak",
            observed(affected(1, st(Update, "t"))),
            true,
            &[],
            vec![],
        ),
        (
            "observed by the oracle: the oracle speaks",
            observed(st(Delete, "t")),
            false,
            &["t"],
            vec![],
        ),
        (
            "observed, hooked, an overwriting upsert: hooks are blind to conflict deletes",
            observed(overwrites(st(Upsert, "t"))),
            true,
            &[],
            vec!["destructive: UPSERT t: upsert may overwrite existing rows (likely)"],
        ),
        (
            "observed by the oracle, an overwriting upsert: the oracle speaks",
            observed(overwrites(st(Upsert, "t"))),
            false,
            &["t"],
            vec![],
        ),
        (
            "a write to ignored tables only: none",
            affected(1, st(Delete, "access_log")),
            false,
            &[],
            vec![],
        ),
        (
            "a write naming no table",
            affected(1, st(Insert, "")),
            false,
            &[],
            vec![
                "writes: INSERT: 1 row affected (confirmed)",
                "net_changes: INSERT: 1 row affected (confirmed)",
            ],
        ),
        (
            "unparseable: a possible write",
            st(Unknown, ""),
            false,
            &[],
            vec!["writes: UNKNOWN: unparseable statement, a possible write (likely)"],
        ),
        (
            "unparseable, observed: none",
            observed(st(Unknown, "")),
            false,
            &[],
            vec![],
        ),
        (
            "unparseable and failed: none",
            failed(st(Unknown, "")),
            false,
            &[],
            vec![],
        ),
        (
            "rolled back: an attempt, in those words",
            StatementEffect {
                outcome: StatementOutcome::RolledBack,
                ..st(Delete, "t")
            },
            false,
            &[],
            vec!["attempts: DELETE t: rolled back (confirmed)"],
        ),
        (
            "not proved read-only and not observed: a likely write, with why",
            StatementEffect {
                unobserved: Some("calls f, not known to be read-only; the oracle is off".into()),
                ..read()
            },
            false,
            &[],
            vec![
                "writes: SELECT: may write, not observed (calls f, not known to be read-only; the oracle is off) (likely)",
            ],
        ),
        (
            "not observed but failed: none",
            StatementEffect {
                unobserved: Some("why".into()),
                ..failed(read())
            },
            false,
            &[],
            vec![],
        ),
    ];
    for (name, statement, hooked, oracle, want) in cases {
        let (evidence, _) = collect(statement, hooked, oracle);
        assert_eq!(evidence, want, "{name}");
    }
}

/// One row per statement: the tables it touched and wrote, and whether it counts as a
/// write statement.
#[test]
fn statement_tables() {
    let counted = ["written: t", "touched: t", "any write statement"];
    let ran = ["touched: t", "any write statement"];
    let cases: Vec<(&str, StatementEffect, &[&str])> = vec![
        (
            "a read: touched, ignored tables not",
            read(),
            &["touched: t"],
        ),
        (
            "rows counted",
            affected(1, st(Delete, "Public.T")),
            &counted,
        ),
        ("rows not reported", st(Update, "t"), &counted),
        ("TRUNCATE", st(Truncate, "t"), &counted),
        ("DDL", st(Ddl, "t"), &counted),
        (
            "zero rows counted: ran, wrote nothing",
            affected(0, st(Update, "t")),
            &ran,
        ),
        ("failed: ran, wrote nothing", failed(st(Delete, "t")), &ran),
        ("observed: the hooks tell", observed(st(Delete, "t")), &ran),
        (
            "a write to ignored tables only",
            st(Delete, "access_log"),
            &[],
        ),
        (
            "a write naming no table",
            st(Insert, ""),
            &["any write statement"],
        ),
        ("unparseable: no write statement", st(Unknown, ""), &[]),
    ];
    for (name, statement, want) in cases {
        let (_, tables) = collect(statement, false, &[]);
        assert_eq!(tables, want, "{name}");
    }
}

/// A temporary table is the session's own object: a write to it in the same call is no
/// effect, a write to another table still is.
#[test]
fn session_objects_are_not_the_environment() {
    let create = StatementEffect {
        session_tables: vec!["tmp".to_owned()].into(),
        ..st(Operation::Session, "")
    };
    let effect = Effect {
        statements: vec![
            create,
            affected(2, st(Insert, "tmp")),
            affected(1, st(Insert, "t")),
        ],
        ..Default::default()
    };
    let mut c = Collector::facts(Wanted::ALL);
    record_statements(
        &effect,
        &Policy::default(),
        &Marks::default(),
        &Default::default(),
        &mut c,
    );
    let got = lines(&c.finish());
    assert!(
        got.contains(&"writes: INSERT t: 1 row affected (confirmed)".to_owned()),
        "{got:?}"
    );
    assert!(!got.iter().any(|l| l.contains("tmp")), "{got:?}");
}

fn read() -> StatementEffect {
    StatementEffect {
        read_tables: vec!["t".to_owned(), "access_log".to_owned()].into(),
        ..st(Select, "")
    }
}

fn failed(s: StatementEffect) -> StatementEffect {
    StatementEffect {
        outcome: StatementOutcome::Failed,
        ..s
    }
}

fn drops(s: StatementEffect) -> StatementEffect {
    StatementEffect { drops: true, ..s }
}

/// The facts of `statement` alone, as lines: (evidence, tables and flags).
fn collect(
    statement: StatementEffect,
    hooked: bool,
    oracle: &[&str],
) -> (Vec<String>, Vec<String>) {
    let policy = Policy::default()
        .with_ignored_table("access_log")
        .with_ignored_column("updated_at");
    let effect = Effect {
        statements: vec![statement],
        ..Default::default()
    };
    let mut marks = Marks::default();
    if hooked {
        marks.set(0);
    }
    let oracle = oracle.iter().map(|t| Cow::Borrowed(*t)).collect();
    let mut c = Collector::facts(Wanted::ALL);
    record_statements(&effect, &policy, &marks, &oracle, &mut c);
    let evidence = ["writes: ", "attempts: ", "destructive: ", "net_changes: "];
    lines(&c.finish())
        .into_iter()
        .partition(|l| evidence.iter().any(|e| l.starts_with(e)))
}
