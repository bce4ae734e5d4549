//! Case 6, the property half: the statement classifier never panics, judges any text it
//! cannot parse by the cautious fallback (`unknown`, a possible write, never read-only), and
//! never lets a literal through into `db.query.text` or the summary, in every dialect in use.
//! Random text, real statements mutated, and statements carrying a planted literal. The
//! libFuzzer target over the same function is `fuzz/fuzz_targets/classify.rs`.

use hintaudit::core::Operation;
use hintaudit::sqlx::{SqlDialect, classify};
use proptest::prelude::*;

use crate::fallback::session_allowed;
use crate::support::{figure, size};

const DIALECTS: [SqlDialect; 3] = [SqlDialect::Sqlite, SqlDialect::Postgres, SqlDialect::MySql];

/// Real statements of the kinds servers send; the fuzz seed corpus holds the same.
pub const SEEDS: &[&str] = &[
    "SELECT id, name FROM patients WHERE name LIKE ? ORDER BY name LIMIT 10",
    "INSERT INTO appointments (patient_id, starts_at, reason) VALUES ($1, $2, $3) RETURNING id",
    "UPDATE appointments SET view_count = view_count + 1, last_viewed_at = now() WHERE id = ?",
    "DELETE FROM appointments WHERE id = ? AND status = 'cancelled'",
    "INSERT INTO t (k, v) VALUES (1, 'a') ON CONFLICT (k) DO UPDATE SET v = excluded.v",
    "INSERT INTO t (k, v) VALUES (1, 'a') ON DUPLICATE KEY UPDATE v = VALUES(v)",
    "WITH moved AS (DELETE FROM a WHERE x < 3 RETURNING *) INSERT INTO b SELECT * FROM moved",
    "SELECT * FROM accounts WHERE id = 1 FOR UPDATE",
    "BEGIN; UPDATE a SET n = n - 1 WHERE id = 1; COMMIT",
    "CREATE TABLE IF NOT EXISTS log (id INTEGER PRIMARY KEY, at TEXT)",
    "TRUNCATE TABLE sessions",
    "SELECT nextval('seq'), pg_sleep(0.1), random()",
    "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v",
    "REPLACE INTO kv (k, v) VALUES ('a', 'b')",
    "SAVEPOINT sp1; RELEASE SAVEPOINT sp1",
    "CALL refresh_totals(42)",
    "SELECT $$dollar$$, E'esc\\'aped', X'DEADBEEF', N'national' FROM dual",
    "PRAGMA user_version = 7",
    "PRAGMA table_info(appointments)",
];

/// Inputs the fuzzer found breaking a property, kept as regressions (each also in
/// `fuzz/corpus/classify/regression-*`).
const FUZZ_CRASHES: &[&str] = &[
    // An unparsed PRAGMA with a value was a session statement, not the cautious fallback.
    "PRAGMA RE id = 1 FMR UPDAT$$$$$SELECT '$$$$$$$$$$$$$$$$CT '$$$$$$$$$$$$$$$$E",
];

#[test]
fn fuzz_crashes_stay_fixed() {
    for sql in FUZZ_CRASHES {
        for d in DIALECTS {
            fallback_holds(sql, d).unwrap();
        }
    }
}

const CANARY: &str = "CANARYqz7Lit";

/// Statements holding the canary in a literal or a comment, per dialect.
fn planted(d: SqlDialect) -> Vec<String> {
    let c = CANARY;
    let mut v = vec![
        format!("INSERT INTO t (a) VALUES ('{c}')"),
        format!("SELECT * FROM t WHERE a = '{c}' AND b = 12345678901"),
        format!("UPDATE t SET a = '{c}' WHERE id = 1"),
        format!("SELECT 1 /* {c} */"),
        format!("-- {c}\nSELECT 1"),
        format!("SELECT '{c}"),
        format!("INSERT INTO t VALUES ('{c}'"),
        format!("SELECT X'{c}'"),
    ];
    match d {
        SqlDialect::Postgres => {
            v.push(format!("SELECT $${c}$$"));
            v.push(format!("SELECT $tag${c}$tag$"));
            v.push(format!("SELECT E'{c}\\''"));
            v.push(format!("SELECT U&'{c}'"));
        }
        SqlDialect::MySql => {
            v.push(format!("SELECT \"{c}\""));
            v.push(format!("INSERT INTO t (a) VALUES (\"{c}\")"));
            v.push(format!("SELECT * FROM t WHERE a = \"{c}\" # {c}"));
        }
        _ => {
            v.push(format!("SELECT * FROM t WHERE a = x'{c}'"));
        }
    }
    v
}

/// Whether `sql`'s classification lets the canary out: through the sanitized text, the
/// summary or the operation name.
fn leaks(sql: &str, d: SqlDialect) -> Option<String> {
    let c = classify(sql, d);
    let outs = [&c.sanitized, &*c.effect.summary, &c.operation_name];
    outs.iter().any(|o| o.contains(CANARY)).then(|| {
        format!(
            "{d:?} {sql:?} -> {:?} / {:?} / {:?}",
            c.sanitized, c.effect.summary, c.operation_name
        )
    })
}

/// The cautious fallback: unparsed means unknown, a possible write (except a `PRAGMA` setting
/// or read, see `fallback.rs`).
fn fallback_holds(sql: &str, d: SqlDialect) -> Result<(), TestCaseError> {
    let c = classify(sql, d);
    let exempt = c.effect.operation == Operation::Session && session_allowed(sql);
    if !c.parsed && !exempt {
        prop_assert_eq!(c.effect.operation, Operation::Unknown, "{:?} {:?}", d, sql);
        prop_assert!(!c.proved_read_only(), "{:?} {:?}", d, sql);
    }
    Ok(())
}

#[test]
fn planted_literals_never_reach_the_query_text_or_summary() {
    let mut checked = 0;
    let mut leaked = Vec::new();
    for d in DIALECTS {
        for sql in planted(d) {
            checked += 1;
            leaked.extend(leaks(&sql, d));
        }
    }
    figure(
        "privacy.classifier",
        &[
            ("statements", checked.to_string()),
            ("canaries_leaked", leaked.len().to_string()),
            ("property_cases_each", config().cases.to_string()),
            ("dialects", DIALECTS.len().to_string()),
        ],
    );
    assert!(leaked.is_empty(), "literals leaked:\n{}", leaked.join("\n"));
}

/// A real statement mutated: characters inserted, deleted or replaced, or the text cut.
fn mutated() -> impl Strategy<Value = String> {
    (
        proptest::sample::select(SEEDS),
        proptest::collection::vec((any::<prop::sample::Index>(), 0u8..4, any::<char>()), 1..6),
    )
        .prop_map(|(seed, edits)| {
            let mut chars: Vec<char> = seed.chars().collect();
            for (at, kind, ch) in edits {
                if chars.is_empty() {
                    chars.push(ch);
                    continue;
                }
                let i = at.index(chars.len());
                match kind {
                    0 => chars.insert(i, ch),
                    1 => {
                        chars.remove(i);
                    }
                    2 => chars[i] = ch,
                    _ => chars.truncate(i),
                }
            }
            chars.into_iter().collect()
        })
}

/// Text from SQL's own alphabet: keywords, quotes, comment and dollar-quote openers.
fn sql_soup() -> impl Strategy<Value = String> {
    let pieces = proptest::sample::select(
        &[
            "SELECT ",
            "INSERT ",
            "INTO ",
            "UPDATE ",
            "SET ",
            "DELETE ",
            "FROM ",
            "WHERE ",
            "WITH ",
            "(",
            ")",
            "'",
            "\"",
            "`",
            "$$",
            "$a$",
            "/*",
            "*/",
            "--",
            "\n",
            ";",
            "?",
            "$1",
            ":n",
            "t",
            "=",
            "+",
            "1",
            "E'",
            "X'",
            "RETURNING ",
            "ON CONFLICT ",
            "DO ",
            "BEGIN",
            "COMMIT",
            "CREATE ",
            "TABLE ",
            "DROP ",
            "now()",
            "nextval(",
            ",",
            ".",
            "*",
            " ",
            "\\",
            "#",
        ][..],
    );
    proptest::collection::vec(pieces, 0..40).prop_map(|v| v.concat())
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: size(256, 20_000) as u32,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn classify_never_panics_and_falls_back_cautiously_on_any_text(sql in any::<String>()) {
        for d in DIALECTS {
            fallback_holds(&sql, d)?;
        }
    }

    #[test]
    fn mutated_statements_are_classified_without_panic_or_read_only_fallback(sql in mutated()) {
        for d in DIALECTS {
            fallback_holds(&sql, d)?;
        }
    }

    #[test]
    fn sql_shaped_text_is_classified_without_panic(sql in sql_soup()) {
        for d in DIALECTS {
            fallback_holds(&sql, d)?;
        }
    }

    #[test]
    fn a_literal_in_any_statement_stays_out_of_the_query_text(
        seed in proptest::sample::select(SEEDS),
        quote in proptest::sample::select(&["'", "$$", "/*", "-- "][..]),
        cut in any::<prop::sample::Index>(),
    ) {
        // The canary goes in a literal or comment at a token boundary of a real statement.
        let words: Vec<&str> = seed.split(' ').collect();
        let at = cut.index(words.len() + 1);
        let lit = match quote {
            "'" => format!("'{CANARY}'"),
            "$$" => format!("$${CANARY}$$"),
            "/*" => format!("/* {CANARY} */"),
            _ => format!("-- {CANARY}\n"),
        };
        let sql = [&words[..at], &[lit.as_str()], &words[at..]].concat().join(" ");
        for d in DIALECTS {
            if quote == "$$" && d != SqlDialect::Postgres {
                continue;
            }
            prop_assert!(leaks(&sql, d).is_none(), "{}", leaks(&sql, d).unwrap_or_default());
        }
    }
}
