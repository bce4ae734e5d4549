//! Table-driven classifier tests: one row per statement, the expected classification in the row.

use super::*;
use hintaudit_core::Operation::*;

use SqlDialect::{Postgres as Pg, Sqlite as Lite};

struct Row {
    dialect: SqlDialect,
    sql: &'static str,
    op: Operation,
    /// Tables written.
    tables: &'static [&'static str],
    /// Tables read (None: not checked).
    read: Option<&'static [&'static str]>,
    /// `set_columns`.
    set: &'static [&'static str],
    overwrites: bool,
    /// Columns reported non-convergent.
    non_convergent: &'static [&'static str],
    opaque: &'static [&'static str],
    drops: bool,
    summary: &'static str,
}

const fn row(dialect: SqlDialect, sql: &'static str, op: Operation, summary: &'static str) -> Row {
    Row {
        dialect,
        sql,
        op,
        tables: &[],
        read: None,
        set: &[],
        overwrites: false,
        non_convergent: &[],
        opaque: &[],
        drops: false,
        summary,
    }
}

impl Row {
    const fn w(mut self, t: &'static [&'static str]) -> Self {
        self.tables = t;
        self
    }
    const fn r(mut self, t: &'static [&'static str]) -> Self {
        self.read = Some(t);
        self
    }
    const fn set(mut self, c: &'static [&'static str], nc: &'static [&'static str]) -> Self {
        self.set = c;
        self.non_convergent = nc;
        self
    }
    const fn over(mut self) -> Self {
        self.overwrites = true;
        self
    }
    const fn opaque(mut self, f: &'static [&'static str]) -> Self {
        self.opaque = f;
        self
    }
    const fn drops(mut self) -> Self {
        self.drops = true;
        self
    }
}

fn rows() -> Vec<Row> {
    vec![
        // Reads
        row(Lite, "SELECT * FROM appointments WHERE id = ?", Select, "SELECT appointments").r(&["appointments"]),
        row(Pg, "SELECT a.id FROM Appointments a JOIN patients p ON p.id = a.patient_id", Select, "SELECT appointments patients").r(&["appointments", "patients"]),
        row(Pg, "select count(*) from \"Bookings\" where day = $1", Select, "SELECT bookings").r(&["bookings"]),
        row(Pg, "SELECT id FROM public.appointments WHERE id IN (SELECT appointment_id FROM reminders)", Select, "SELECT public.appointments reminders").r(&["public.appointments", "reminders"]),
        row(Lite, "WITH recent AS (SELECT * FROM visits WHERE day > date('now', '-7 day')) SELECT count(*) FROM recent", Select, "SELECT visits").r(&["visits"]),
        row(Pg, "SELECT 1", Select, "SELECT").r(&[]),
        row(Pg, "SELECT lower(name), coalesce(note, '') FROM patients", Select, "SELECT patients").opaque(&[]),
        row(Pg, "SELECT mark_viewed($1)", Select, "SELECT").opaque(&["mark_viewed"]),
        row(Pg, "SELECT * FROM audit.touch_and_list($1)", Select, "SELECT").opaque(&["audit.touch_and_list"]),
        row(Pg, "SELECT * FROM generate_series(1, 10)", Select, "SELECT").r(&[]).opaque(&[]),
        row(Pg, "SELECT now(), random(), gen_random_uuid()", Select, "SELECT").opaque(&[]),
        row(Pg, "SELECT nextval('orders_id_seq')", Select, "SELECT").opaque(&["nextval"]),
        row(Pg, "SELECT * FROM appointments WHERE id = $1 FOR UPDATE", SelectForUpdate, "SELECT appointments").r(&["appointments"]),
        row(Pg, "SELECT * FROM slots FOR SHARE SKIP LOCKED", SelectForUpdate, "SELECT slots"),
        row(Pg, "EXPLAIN SELECT * FROM slots", Select, "EXPLAIN slots"),
        row(Pg, "EXPLAIN DELETE FROM slots", Select, "EXPLAIN slots"),
        row(Pg, "EXPLAIN ANALYZE DELETE FROM slots WHERE id = 1", Delete, "DELETE slots").w(&["slots"]),
        // Inserts and upserts
        row(Lite, "INSERT INTO audit_log (tool, at) VALUES (?, datetime('now'))", Insert, "INSERT audit_log").w(&["audit_log"]),
        row(Pg, "INSERT INTO appointments (patient, day) VALUES ($1, $2) RETURNING id", Insert, "INSERT appointments").w(&["appointments"]),
        row(Pg, "INSERT INTO archive SELECT * FROM appointments WHERE day < $1", Insert, "INSERT archive").w(&["archive"]).r(&["appointments"]),
        row(Pg, "INSERT INTO prefs (user_id, theme) VALUES ($1, $2) ON CONFLICT (user_id) DO UPDATE SET theme = EXCLUDED.theme", Upsert, "INSERT prefs").w(&["prefs"]).set(&["theme"], &[]).over(),
        row(Pg, "INSERT INTO counters AS t (k, n) VALUES ($1, 1) ON CONFLICT (k) DO UPDATE SET n = t.n + 1", Upsert, "INSERT counters").w(&["counters"]).set(&["n"], &["n"]).over(),
        row(Lite, "INSERT INTO counters (k, n) VALUES (?, 1) ON CONFLICT (k) DO UPDATE SET n = counters.n + excluded.n", Upsert, "INSERT counters").w(&["counters"]).set(&["n"], &["n"]).over(),
        row(Pg, "INSERT INTO tags (name) VALUES ($1) ON CONFLICT DO NOTHING", Upsert, "INSERT tags").w(&["tags"]),
        row(Lite, "INSERT OR IGNORE INTO tags (name) VALUES (?)", Upsert, "INSERT tags").w(&["tags"]),
        row(Lite, "INSERT OR REPLACE INTO settings (k, v) VALUES (?, ?)", Upsert, "INSERT settings").w(&["settings"]).over(),
        row(Lite, "REPLACE INTO settings (k, v) VALUES (?, ?)", Upsert, "INSERT settings").w(&["settings"]).over(),
        row(SqlDialect::MySql, "INSERT INTO hits (page, n) VALUES (?, 1) ON DUPLICATE KEY UPDATE n = n + 1", Upsert, "INSERT hits").w(&["hits"]).set(&["n"], &["n"]).over(),
        row(Pg, "MERGE INTO stock s USING deliveries d ON s.item = d.item WHEN MATCHED THEN UPDATE SET qty = s.qty + d.qty", Upsert, "MERGE stock").w(&["stock"]).over(),
        // Updates
        row(Pg, "UPDATE appointments SET status = 'cancelled' WHERE id = $1", Update, "UPDATE appointments").w(&["appointments"]).set(&["status"], &[]),
        row(Lite, "UPDATE posts SET views = views + 1 WHERE id = ?", Update, "UPDATE posts").w(&["posts"]).set(&["views"], &["views"]),
        row(Lite, "UPDATE accounts SET balance = balance - ? WHERE id = ?", Update, "UPDATE accounts").w(&["accounts"]).set(&["balance"], &["balance"]),
        row(Pg, "UPDATE notes SET body = body || $1 WHERE id = $2", Update, "UPDATE notes").w(&["notes"]).set(&["body"], &["body"]),
        row(Pg, "UPDATE users SET email = lower(trim(email)), name = coalesce(name, 'anon')", Update, "UPDATE users").w(&["users"]).set(&["email", "name"], &[]),
        row(Pg, "UPDATE sessions SET last_seen = now() WHERE id = $1", Update, "UPDATE sessions").w(&["sessions"]).set(&["last_seen"], &["last_seen"]),
        row(Lite, "UPDATE sessions SET seen = datetime('now') WHERE id = ?", Update, "UPDATE sessions").w(&["sessions"]).set(&["seen"], &["seen"]),
        row(Lite, "UPDATE sessions SET expires = datetime(expires, '+1 day') WHERE id = ?", Update, "UPDATE sessions").w(&["sessions"]).set(&["expires"], &["expires"]),
        row(Pg, "UPDATE subscriptions SET ends = ends + interval '1 month' WHERE id = $1", Update, "UPDATE subscriptions").w(&["subscriptions"]).set(&["ends"], &["ends"]),
        row(Lite, "UPDATE flags SET enabled = NOT enabled WHERE id = ?", Update, "UPDATE flags").w(&["flags"]).set(&["enabled"], &["enabled"]),
        row(Pg, "UPDATE tokens SET token = gen_random_uuid() WHERE user_id = $1", Update, "UPDATE tokens").w(&["tokens"]).set(&["token"], &["token"]),
        row(Pg, "UPDATE slots s SET booked = true FROM bookings b WHERE b.slot = s.id", Update, "UPDATE slots").w(&["slots"]).r(&["bookings"]).set(&["booked"], &[]),
        row(Pg, "UPDATE \"Public\".\"Items\" SET price = $1", Update, "UPDATE public.items").w(&["public.items"]).set(&["price"], &[]),
        row(Lite, "UPDATE t SET n = (SELECT max(n) FROM t2) WHERE id = ?", Update, "UPDATE t").w(&["t"]).r(&["t2"]).set(&["n"], &[]),
        // Deletes, truncates
        row(Pg, "DELETE FROM appointments WHERE id = $1", Delete, "DELETE appointments").w(&["appointments"]),
        row(Lite, "DELETE FROM sessions", Delete, "DELETE sessions").w(&["sessions"]),
        row(Pg, "WITH gone AS (DELETE FROM appointments WHERE day < $1 RETURNING id) SELECT count(*) FROM gone", Delete, "DELETE appointments").w(&["appointments"]).r(&[]),
        row(Pg, "WITH moved AS (DELETE FROM inbox WHERE id = $1 RETURNING *) INSERT INTO archive SELECT * FROM moved", Delete, "DELETE inbox archive").w(&["inbox", "archive"]),
        row(Pg, "DELETE FROM a USING b WHERE a.b_id = b.id", Delete, "DELETE a").w(&["a"]),
        row(Pg, "TRUNCATE appointments, reminders", Truncate, "TRUNCATE appointments reminders").w(&["appointments", "reminders"]),
        // DDL
        row(Lite, "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, body TEXT)", Ddl, "CREATE TABLE notes").w(&["notes"]),
        row(Pg, "DROP TABLE IF EXISTS notes", Ddl, "DROP TABLE notes").w(&["notes"]).drops(),
        row(Pg, "ALTER TABLE notes ADD COLUMN tag TEXT", Ddl, "ALTER TABLE notes").w(&["notes"]),
        row(Pg, "CREATE INDEX CONCURRENTLY notes_tag ON notes (tag)", Ddl, "CREATE INDEX notes").w(&["notes"]),
        row(Pg, "CREATE OR REPLACE FUNCTION f() RETURNS int AS $$ SELECT 1 $$ LANGUAGE sql", Ddl, "CREATE OR"),
        // Calls, transactions, session
        row(Pg, "CALL archive_old($1)", Call, "CALL").opaque(&["archive_old"]),
        row(Pg, "BEGIN", Transaction, "BEGIN"),
        row(Lite, "BEGIN IMMEDIATE", Transaction, "BEGIN"),
        row(Pg, "COMMIT", Transaction, "COMMIT"),
        row(Pg, "ROLLBACK TO SAVEPOINT s1", Transaction, "ROLLBACK"),
        row(Pg, "SAVEPOINT s1", Transaction, "SAVEPOINT"),
        row(Pg, "RELEASE SAVEPOINT s1", Transaction, "RELEASE"),
        row(Pg, "SET search_path TO app, public", Session, "SET"),
        row(Lite, "PRAGMA table_info(notes)", Session, "PRAGMA"),
        row(Lite, "PRAGMA foreign_keys = ON", Session, "PRAGMA"),
        row(Pg, "SHOW search_path", Session, "SHOW"),
        // Several statements in one text: the strongest wins.
        row(Lite, "SELECT 1; DELETE FROM t WHERE id = 1", Delete, "SELECT;DELETE t").w(&["t"]),
        // Unparseable
        row(Pg, "FROBNICATE the database", Unknown, "FROBNICATE"),
        row(Lite, "SELEC * FROM", Unknown, "SELEC"),
        row(Pg, "", Unknown, "UNKNOWN"),
    ]
}

#[test]
fn classifies_every_row() {
    let rows = rows();
    assert!(rows.len() >= 40, "{} rows", rows.len());
    let mut failures = Vec::new();
    for r in &rows {
        let c = classify(r.sql, r.dialect);
        let e = &c.effect;
        let nc: Vec<&str> = e.non_convergent.iter().map(|(c, _)| c.as_str()).collect();
        let mut bad = Vec::new();
        if e.operation != r.op {
            bad.push(format!("op {:?} != {:?}", e.operation, r.op));
        }
        if *e.tables != *r.tables {
            bad.push(format!("tables {:?} != {:?}", e.tables, r.tables));
        }
        if let Some(read) = r.read.filter(|read| *e.read_tables != **read) {
            bad.push(format!("read {:?} != {:?}", e.read_tables, read));
        }
        if *e.set_columns != *r.set {
            bad.push(format!("set {:?} != {:?}", e.set_columns, r.set));
        }
        if e.overwrites != r.overwrites {
            bad.push(format!("overwrites {} != {}", e.overwrites, r.overwrites));
        }
        if nc != r.non_convergent {
            bad.push(format!(
                "non_convergent {:?} != {:?}",
                e.non_convergent, r.non_convergent
            ));
        }
        if *e.opaque_calls != *r.opaque {
            bad.push(format!("opaque {:?} != {:?}", e.opaque_calls, r.opaque));
        }
        if e.drops != r.drops {
            bad.push(format!("drops {} != {}", e.drops, r.drops));
        }
        if *e.summary != *r.summary {
            bad.push(format!("summary {:?} != {:?}", e.summary, r.summary));
        }
        if !bad.is_empty() {
            failures.push(format!("{:?} {:?}: {}", r.dialect, r.sql, bad.join("; ")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} rows wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn sanitized_text_has_no_literals() {
    let cases = [
        (
            Pg,
            "SELECT * FROM t WHERE name = 'Ann' AND age > 42 AND id = $1",
            "SELECT * FROM t WHERE name = ? AND age > ? AND id = $1",
        ),
        (
            Lite,
            "INSERT INTO t (a, b) VALUES ('x', 3.5) -- secret 'y'\n",
            "INSERT INTO t (a, b) VALUES (?, ?)",
        ),
        (
            Lite,
            "UPDATE t SET a = x'00ff' WHERE b = ?",
            "UPDATE t SET a = ? WHERE b = ?",
        ),
        (
            Pg,
            "SELECT $$dollar$$, E'esc', 1e10 /* 'c' */ FROM t",
            "SELECT ?, ?, ? FROM t",
        ),
        (Pg, "SELECT 'unterminated", "?"),
    ];
    for (d, sql, want) in cases {
        assert_eq!(classify(sql, d).sanitized, want, "{sql}");
    }
}

#[test]
fn transaction_control_and_blocks() {
    assert_eq!(classify("BEGIN", Pg).tx_control, Some(TxControl::Begin));
    assert_eq!(classify("END", Pg).tx_control, Some(TxControl::Commit));
    assert_eq!(
        classify("ROLLBACK", Lite).tx_control,
        Some(TxControl::Rollback)
    );
    assert!(classify("CREATE INDEX CONCURRENTLY i ON t (a)", Pg).no_transaction_block);
    assert!(classify("VACUUM", Pg).no_transaction_block);
    assert!(classify("CREATE DATABASE x", Pg).no_transaction_block);
    assert!(classify("BEGIN; DELETE FROM t; COMMIT", Pg).no_transaction_block);
    assert!(!classify("DELETE FROM t WHERE id = 1", Pg).no_transaction_block);
    // Statements PostgreSQL refuses inside a transaction block, parsed by sqlparser or not.
    for sql in [
        "REINDEX DATABASE test",
        "reindex system test",
        "REINDEX TABLE CONCURRENTLY t",
        "CLUSTER",
        "CLUSTER VERBOSE",
        "CREATE TABLESPACE ts LOCATION '/srv/ts'",
        "DROP TABLESPACE ts",
        "ALTER DATABASE d SET TABLESPACE ts",
        "ALTER SYSTEM SET work_mem = '8MB'",
        "DROP SUBSCRIPTION s",
        "DISCARD ALL",
        "COMMIT PREPARED 'tx1'",
        "DROP INDEX CONCURRENTLY i",
        "SELECT 1; VACUUM t",
    ] {
        assert!(classify(sql, Pg).no_transaction_block, "{sql}");
    }
    // Those words inside names and literals do not count.
    for sql in [
        "SELECT * FROM cluster_nodes",
        "UPDATE subscriptions SET state = 'vacuum'",
        "INSERT INTO reindex_log (what) VALUES ('CREATE DATABASE x')",
        "ALTER DATABASE d SET work_mem = '8MB'",
        "INSERT INTO notes (body) VALUES ('done; vacuum the hall')",
    ] {
        assert!(!classify(sql, Pg).no_transaction_block, "{sql}");
    }
    assert!(classify("DELETE FROM t", Lite).delete_without_where);
    assert!(!classify("DELETE FROM t WHERE id = 1", Lite).delete_without_where);
}

#[test]
fn the_proof_decides_the_oracle() {
    assert!(classify("SELECT * FROM t", Pg).proved_read_only());
    assert!(classify("SELECT * FROM t FOR UPDATE", Pg).proved_read_only());
    assert!(!classify("SELECT mark_viewed($1)", Pg).proved_read_only());
    assert!(!classify("UPDATE t SET a = 1", Pg).proved_read_only());
    assert!(!classify("CALL p()", Pg).proved_read_only());
    assert!(!classify("garbage here", Pg).proved_read_only());
    assert!(classify("BEGIN", Pg).proved_read_only());
}

#[test]
fn cache_returns_the_same_classification() {
    let c = Classifier::new(SqlDialect::Sqlite, 2);
    let a = c.classify("SELECT * FROM t");
    let b = c.classify("SELECT * FROM t");
    assert!(Arc::ptr_eq(&a, &b));
    c.classify("SELECT 1");
    c.classify("SELECT 2"); // evicts the first from the LRU
    // At another address, past the memo (which keeps up to 16 texts by address besides):
    // classified anew.
    let elsewhere = String::from("SELECT * FROM t");
    assert!(!Arc::ptr_eq(&a, &c.classify(&elsewhere)));
}

#[test]
fn never_panics_on_garbage() {
    // A small deterministic fuzz: fragments of SQL glued in odd orders, and raw bytes.
    let parts = [
        "SELECT",
        "UPDATE",
        "t",
        "SET",
        "x",
        "=",
        "x",
        "+",
        "1",
        "(",
        ")",
        "'",
        "\"",
        "$1",
        "?",
        "WITH",
        "AS",
        "DELETE",
        "FROM",
        "WHERE",
        ";",
        "--",
        "/*",
        "*/",
        "ON CONFLICT",
        "DO",
        "NOTHING",
        "RETURNING",
        "*",
        "$$",
        "E'\\",
        "INSERT INTO",
        "VALUES",
        ",",
        "now()",
        "||",
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..3000 {
        let mut sql = String::new();
        for _ in 0..(seed % 12) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            sql.push_str(parts[(seed % parts.len() as u64) as usize]);
            sql.push(' ');
        }
        for d in [Lite, Pg, SqlDialect::MySql] {
            let c = classify(&sql, d);
            assert!(
                !c.sanitized.contains('\''),
                "literal left in {:?}: {sql}",
                c.sanitized
            );
        }
    }
    let deep = format!("SELECT {}1{}", "(".repeat(5000), ")".repeat(5000));
    assert_eq!(classify(&deep, Pg).effect.operation, Operation::Unknown);
}

/// The classifier's memo by address never answers for another text at the same address, and
/// texts at other addresses still find the cached classification.
#[test]
fn classifier_memo_compares_the_text() {
    let classifier = Classifier::new(SqlDialect::Sqlite, 8);
    let mut buffer = String::with_capacity(64);
    buffer.push_str("SELECT name FROM items");
    let read = classifier.classify(&buffer);
    assert_eq!(read.effect.operation, Operation::Select);
    // The same address, the same text: the memo's classification.
    assert!(Arc::ptr_eq(&read, &classifier.classify(&buffer)));
    // The same address, another text: classified anew.
    buffer.clear();
    buffer.push_str("DELETE FROM items");
    let delete = classifier.classify(&buffer);
    assert_eq!(delete.effect.operation, Operation::Delete);
    // The first text again, at another address: from the cache, not the memo's slot.
    let elsewhere = String::from("SELECT name FROM items");
    assert!(Arc::ptr_eq(&read, &classifier.classify(&elsewhere)));
    // And the buffer's text still answers for itself.
    assert!(Arc::ptr_eq(&delete, &classifier.classify(&buffer)));
}
