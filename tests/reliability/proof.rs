//! The read-only proof, as a property that cannot be tuned to the escape corpus
//! (`crates/sqlx/tests/escapes`): generated writes, wrapped in the forms real read-only
//! escapes take and in forms invented here (case, comments, option lists in any order, the
//! `ANALYSE` spelling, several statements, transaction control inside), are never proved
//! read-only, in any dialect; and whatever is proved holds no write by statement analysis
//! (`fallback::proof_broken`, which the libFuzzer target checks on every input too).

use hintaudit::sqlx::{SqlDialect, classify};
use proptest::prelude::*;

use crate::fallback::proof_broken;
use crate::support::size;

const DIALECTS: [SqlDialect; 3] = [SqlDialect::Sqlite, SqlDialect::Postgres, SqlDialect::MySql];

/// A table or sequence name no keyword list holds.
fn name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_]{0,6}".prop_map(|s| format!("t_{s}"))
}

/// A function no built-in list holds: a user function, whatever it declares.
fn user_function() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_]{0,6}".prop_map(|s| format!("fn_{s}"))
}

/// A statement that writes, or may: DML, DDL, sequences, user functions, procedures.
fn write() -> impl Strategy<Value = String> {
    (name(), user_function(), 0..1000u32, 0..13u8).prop_map(|(t, f, n, kind)| match kind {
        0 => format!("INSERT INTO {t} VALUES ({n})"),
        1 => format!("UPDATE {t} SET a = {n} WHERE id = {n}"),
        2 => format!("DELETE FROM {t} WHERE id = {n}"),
        3 => format!("DELETE FROM {t}"),
        4 => format!("TRUNCATE {t}"),
        5 => format!("DROP TABLE {t}"),
        6 => format!("CREATE TABLE {t} (a int)"),
        7 => format!("SELECT {f}({n})"),
        8 => format!("SELECT nextval('{t}')"),
        9 => format!("SELECT setval('{t}', {n})"),
        10 => format!("CALL {f}({n})"),
        11 => format!("SELECT * FROM {t} WHERE a = {f}()"),
        _ => format!("INSERT INTO {t} SELECT * FROM {t} ON CONFLICT DO NOTHING"),
    })
}

/// An `EXPLAIN` option list holding `ANALYZE` (or `ANALYSE`), turned on, among others.
fn analyze_options() -> impl Strategy<Value = String> {
    let on = proptest::sample::select(&["", " true", " on", " 1", " TRUE"][..]);
    let word = proptest::sample::select(&["ANALYZE", "analyze", "Analyse", "ANALYSE"][..]);
    let others = proptest::collection::vec(
        proptest::sample::select(
            &[
                "FORMAT JSON",
                "VERBOSE",
                "BUFFERS",
                "COSTS off",
                "TIMING",
                "SUMMARY true",
            ][..],
        ),
        0..3,
    );
    (word, on, others, any::<prop::sample::Index>()).prop_map(|(w, on, mut others, at)| {
        let i = at.index(others.len() + 1);
        others.insert(i, "");
        let mut list: Vec<String> = others.iter().map(|s| s.to_string()).collect();
        list[i] = format!("{w}{on}");
        format!("({})", list.join(", "))
    })
}

/// `w` in one of the forms read-only escapes take.
fn wrapped() -> impl Strategy<Value = String> {
    (write(), analyze_options(), name(), 0..12u8).prop_map(|(w, opts, t, form)| {
        let dml = ["INSERT", "UPDATE", "DELETE"]
            .iter()
            .any(|k| w.starts_with(k));
        match form {
            0 => w,
            1 => format!("EXPLAIN ANALYZE {w}"),
            2 => format!("EXPLAIN {opts} {w}"),
            3 => format!("SELECT 1; {w}"),
            4 => format!("{w}; SELECT 1"),
            5 => format!("SELECT 1; COMMIT; {w}"),
            6 if dml => format!("WITH x AS ({w} RETURNING *) SELECT * FROM x"),
            7 => format!("DO $$ BEGIN {w}; END $$"),
            8 => format!("PREPARE p AS {w}; EXECUTE p"),
            9 => format!("SELECT * INTO {t} FROM ({w}) AS s"),
            10 => format!("CREATE TABLE {t} AS {w}"),
            _ => format!("BEGIN; {w}; COMMIT"),
        }
    })
}

/// Case changed word by word, comments and newlines between words.
fn disguised() -> impl Strategy<Value = String> {
    (wrapped(), proptest::collection::vec(0..4u8, 64)).prop_map(|(sql, noise)| {
        let mut out = String::new();
        for (i, word) in sql.split(' ').enumerate() {
            let n = noise[i % noise.len()];
            let word = match n {
                1 => word.to_lowercase(),
                2 => word.to_uppercase(),
                _ => word.to_owned(),
            };
            if i > 0 {
                out.push_str(match n {
                    3 => " /* read only */ ",
                    2 => "\n",
                    _ => " ",
                });
            }
            out.push_str(&word);
        }
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: size(512, 20_000) as u32,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_wrapped_write_is_never_proved_read_only(sql in disguised()) {
        for d in DIALECTS {
            let c = classify(&sql, d);
            prop_assert!(!c.proved_read_only(), "{:?} proved {:?}", d, sql);
        }
    }

    #[test]
    fn what_is_proved_holds_no_write(sql in wrapped()) {
        for d in DIALECTS {
            let c = classify(&sql, d);
            prop_assert!(proof_broken(&c).is_none(), "{:?} {:?}: {:?}", d, sql, proof_broken(&c));
        }
    }
}
