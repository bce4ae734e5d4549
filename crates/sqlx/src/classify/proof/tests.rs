//! The read-only proof, table-driven: one row per text, whether it is proved. The escapes are
//! the public ones database MCP servers have shipped and fixed, and their variants.

use crate::classify::{SqlDialect, classify};
use hintaudit_core::Operation;

use SqlDialect::{MySql as My, Postgres as Pg, Sqlite as Lite};

/// Texts proved read-only: they may skip the database's evidence.
#[rustfmt::skip]
const PROVED: &[(SqlDialect, &str)] = &[
    (Pg, "SELECT * FROM t WHERE id = $1"),
    (Pg, "SELECT count(*), max(a) FROM t JOIN u ON u.id = t.u GROUP BY t.b"),
    (Pg, "WITH r AS (SELECT * FROM t) SELECT * FROM r"),
    (Pg, "SELECT * FROM t FOR UPDATE"),
    (Pg, "VALUES (1), (2)"),
    (Pg, "SHOW search_path"),
    (Pg, "EXPLAIN DELETE FROM t WHERE id = 1"),
    (Pg, "EXPLAIN (FORMAT JSON) DELETE FROM t"),
    (Pg, "EXPLAIN (ANALYZE false) DELETE FROM t"),
    (Pg, "EXPLAIN (ANALYZE off, VERBOSE) UPDATE t SET a = 1"),
    (Pg, "SELECT set_config('app.user', $1, false)"),
    (Pg, "SELECT pg_advisory_lock(42)"),
    (Pg, "SELECT pg_catalog.lower(name) FROM t"),
    (Pg, "SELECT now(), random(), currval('t_id_seq')"),
    (Pg, "COPY t TO STDOUT"),
    (Pg, "COPY (SELECT * FROM t) TO STDOUT"),
    (Pg, "SET search_path = app, public"),
    (Pg, "BEGIN"),
    (Pg, "LOCK TABLE t IN SHARE MODE"),
    (Pg, "PREPARE q AS SELECT * FROM t WHERE id = $1"),
    (Pg, "SELECT a::text, b::int FROM t"),
    (My, "SELECT * FROM t LIMIT 1"),
    (My, "SHOW TABLES"),
    (Lite, "SELECT * FROM t"),
    (Lite, "PRAGMA table_info(t)"),
];

/// Texts not proved read-only: each may write, and must get the database's evidence.
#[rustfmt::skip]
const NOT_PROVED: &[(SqlDialect, &str)] = &[
    // EXPLAIN that runs its statement, in every spelling.
    (Pg, "EXPLAIN ANALYZE DELETE FROM t WHERE id = 1"),
    (Pg, "EXPLAIN (ANALYZE) DELETE FROM t WHERE id = 3"),
    (Pg, "EXPLAIN (ANALYZE, FORMAT JSON) DELETE FROM t"),
    (Pg, "EXPLAIN (FORMAT JSON, ANALYZE true) UPDATE t SET a = 1"),
    (Pg, "EXPLAIN (analyze on, buffers) INSERT INTO t VALUES (1)"),
    (Pg, "EXPLAIN ANALYZE VERBOSE DELETE FROM t"),
    (Pg, "explain analyse delete from t"),
    (Pg, "EXPLAIN (ANALYSE) DELETE FROM t"),
    (Pg, "EXPLAIN ANALYZE SELECT evil()"),
    // Writes hidden in a read's shape.
    (Pg, "SELECT 1; DELETE FROM t WHERE id = 2"),
    (Pg, "SELECT 1; COMMIT; DROP TABLE t"),
    (Pg, "COMMIT; DROP TABLE t"),
    (Pg, "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d"),
    (Pg, "SELECT * INTO new_t FROM t"),
    (Pg, "CREATE TABLE c AS SELECT * FROM t"),
    (Pg, "SELECT mark_viewed($1)"),
    (Pg, "SELECT public.lower(name) FROM t"),
    (Pg, "SELECT nextval('s')"),
    (Pg, "SELECT setval('s', 100)"),
    (Pg, "SELECT * FROM t WHERE a = lies_stable(1)"),
    (Pg, "SELECT * FROM my_srf()"),
    (Pg, "SELECT 'x'::my_domain"),
    (Pg, "SELECT 1 OPERATOR(public.+++) 2"),
    (Pg, "DO $$ BEGIN DELETE FROM t; END $$"),
    (Pg, "EXECUTE q"),
    (Pg, "PREPARE q AS SELECT evil()"),
    (Pg, "CALL p()"),
    (Pg, "ANALYZE t"),
    (Pg, "COPY t FROM STDIN"),
    (Pg, "COPY t TO '/tmp/x'"),
    (Pg, "CREATE TEMP TABLE x AS SELECT * FROM t"),
    (Pg, "ALTER SEQUENCE s RESTART"),
    (Pg, "TRUNCATE t"),
    (Pg, "garbage that does not parse"),
    // MySQL and MariaDB.
    (My, "ANALYZE DELETE FROM t WHERE id = 1"),
    (My, "ANALYZE FORMAT=JSON UPDATE t SET a = 1"),
    (My, "SELECT f() FROM t"),
    (My, "DO f()"),
    (My, "SET @x = (SELECT f())"),
    (My, "REPLACE INTO t VALUES (1)"),
    (My, "CALL p()"),
    (My, "SELECT * FROM t INTO OUTFILE '/tmp/x'"),
    (My, "SELECT 1; DELETE FROM t"),
    // SQLite.
    (Lite, "SELECT 1; DELETE FROM t"),
    (Lite, "ATTACH DATABASE 'x.db' AS x"),
    (Lite, "PRAGMA user_version = 5"),
    (Lite, "DELETE FROM t"),
];

#[test]
fn only_an_allowlisted_text_is_proved_read_only() {
    let mut wrong = Vec::new();
    for (d, sql) in PROVED {
        let c = classify(sql, *d);
        if !c.proved_read_only() {
            wrong.push(format!("not proved: {d:?} {sql}: {:?}", c.not_proved));
        }
    }
    for (d, sql) in NOT_PROVED {
        if classify(sql, *d).proved_read_only() {
            wrong.push(format!("proved: {d:?} {sql}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// A driver's row count is the write's own only for one top-level DML statement.
#[test]
fn a_row_count_is_evidence_only_for_its_own_statement() {
    let own = [
        "INSERT INTO t VALUES (1)",
        "UPDATE t SET a = 1",
        "DELETE FROM t WHERE id = 1",
        "INSERT INTO t VALUES (1) ON CONFLICT DO NOTHING",
    ];
    for sql in own {
        assert!(classify(sql, Pg).own_row_count, "{sql}");
    }
    let not_own = [
        "EXPLAIN ANALYZE DELETE FROM t WHERE id = 1",
        "EXPLAIN (ANALYZE) DELETE FROM t WHERE id = 1",
        "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d",
        "SELECT 1; DELETE FROM t",
        "PREPARE q AS DELETE FROM t",
        "SELECT * FROM t",
    ];
    for sql in not_own {
        assert!(!classify(sql, Pg).own_row_count, "{sql}");
    }
    assert!(!classify("ANALYZE DELETE FROM t", My).own_row_count);
}

/// What a text that runs a write is classified as: the write it runs, named in the summary
/// (so that evidence and refusals name the statement, not `EXPLAIN`).
#[test]
fn a_write_run_by_another_statement_is_classified_as_that_write() {
    let rows: &[(SqlDialect, &str, Operation, &str)] = &[
        (
            Pg,
            "EXPLAIN (ANALYZE) DELETE FROM t WHERE id = 3",
            Operation::Delete,
            "DELETE t",
        ),
        (
            Pg,
            "EXPLAIN (ANALYZE, FORMAT JSON) DELETE FROM t",
            Operation::Delete,
            "DELETE t",
        ),
        (
            Pg,
            "EXPLAIN ANALYZE DELETE FROM t",
            Operation::Delete,
            "DELETE t",
        ),
        (Pg, "EXPLAIN DELETE FROM t", Operation::Select, "EXPLAIN t"),
        (
            Pg,
            "SELECT * INTO new_t FROM t",
            Operation::Ddl,
            "SELECT INTO new_t",
        ),
        (
            My,
            "ANALYZE DELETE FROM t WHERE id = 1",
            Operation::Delete,
            "DELETE t",
        ),
        (
            Pg,
            "PREPARE q AS DELETE FROM t",
            Operation::Session,
            "PREPARE t",
        ),
    ];
    for (d, sql, op, summary) in rows {
        let c = classify(sql, *d);
        assert_eq!(
            (c.effect.operation, &*c.effect.summary),
            (*op, *summary),
            "{sql}"
        );
    }
}

/// Temporary tables are the session's own objects: a session statement that names them.
#[test]
fn a_temporary_table_is_a_session_object() {
    for sql in [
        "CREATE TEMP TABLE x AS SELECT * FROM t",
        "CREATE TEMPORARY TABLE x (a int)",
        "SELECT * INTO TEMP x FROM t",
    ] {
        let c = classify(sql, Pg);
        assert_eq!(c.effect.operation, Operation::Session, "{sql}");
        assert_eq!(*c.effect.session_tables, ["x"], "{sql}");
        assert!(c.effect.tables.is_empty(), "{sql}");
    }
    let c = classify("CREATE TABLE x (a int)", Pg);
    assert_eq!(c.effect.operation, Operation::Ddl);
    assert!(c.effect.session_tables.is_empty());
}

/// A PL/pgSQL block's `BEGIN … END` is not transaction control: a `DO` block can be wrapped
/// by the oracle; a text with a `COMMIT` of its own cannot.
#[test]
fn transaction_control_is_read_from_statement_starts() {
    assert!(!classify("DO $$ BEGIN DELETE FROM t; END $$", Pg).no_transaction_block);
    assert!(!classify("DO $x$ BEGIN PERFORM 1; COMMIT; END $x$", Pg).no_transaction_block);
    assert!(classify("SELECT 1; COMMIT; DELETE FROM t", Pg).no_transaction_block);
    assert!(classify("select 1 ; commit ; garbage garbage", Pg).no_transaction_block);
    assert!(classify("garbage; END", Pg).no_transaction_block);
}
