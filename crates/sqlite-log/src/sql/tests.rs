//! The column lists read from `CREATE TABLE`, each checked against what SQLite itself makes of
//! the statement (`PRAGMA table_xinfo`, `PRAGMA index_xinfo` of a WITHOUT ROWID table's key).

use super::*;

/// (name, declared type, pk position (1-based, 0: none), stored) of each column, per SQLite.
fn sqlite_says(sql: &str) -> (Vec<(String, String, i64, bool)>, bool) {
    let db = rusqlite::Connection::open_in_memory().expect("memory database");
    db.execute_batch(sql).expect(sql);
    let table: String = db
        .query_row(
            "SELECT name FROM sqlite_schema WHERE type = 'table' \
             UNION ALL SELECT name FROM sqlite_temp_schema WHERE type = 'table'",
            [],
            |r| r.get(0),
        )
        .expect("the table");
    let mut stmt = db
        .prepare("SELECT name, type, pk, hidden FROM pragma_table_xinfo(?1)")
        .unwrap();
    let cols = stmt
        .query_map([&table], |r| {
            Ok((
                r.get::<_, String>(0)?.to_lowercase(),
                r.get(1)?,
                r.get(2)?,
                r.get::<_, i64>(3)? != 2,
            ))
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let without_rowid = db
        .query_row(
            "SELECT wr FROM pragma_table_list WHERE name = ?1",
            [&table],
            |r| r.get::<_, i64>(0),
        )
        .unwrap()
        == 1;
    (cols, without_rowid)
}

#[test]
fn column_lists_match_sqlites_own_reading() {
    let cases = [
        "CREATE TABLE t(a UNSIGNED BIG INT, \"b\" VARYING CHARACTER(255), c)",
        "CREATE TABLE t(x PRIMARY KEY ASC ON CONFLICT REPLACE, y)",
        "CREATE TABLE t(id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL DEFAULT 'x', n REAL DEFAULT -1.5)",
        "CREATE TABLE [my t](`a b` text, [c] blob, PRIMARY KEY(c, `a b`)) WITHOUT ROWID",
        "CREATE TABLE t(a, b AS (a+1) VIRTUAL, c GENERATED ALWAYS AS (a*2) STORED, d INT CHECK (d > 0) COLLATE NOCASE, e AS (a || 'x'))",
        "CREATE TABLE t(a INT, b TEXT) STRICT",
        "CREATE TABLE t(a INT PRIMARY KEY, b TEXT) WITHOUT ROWID, STRICT",
        "CREATE TABLE t(a INT, FOREIGN KEY(a) REFERENCES u(x) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED)",
        "CREATE TABLE t(a -- comment, with a comma\n INT /* c, ) */, b DATETIME DEFAULT CURRENT_TIMESTAMP)",
        "CREATE TABLE \"t\"\"q\"(\"a\"\"b\")",
        "CREATE TABLE t(key, value, \"default\")",
        "CREATE TABLE t(a INTEGER CONSTRAINT pk PRIMARY KEY DESC, b)",
        "CREATE TABLE t(a float(10,2), b decimal(10, 5), c character varying)",
        "CREATE TABLE t(a,b, UNIQUE(a) ON CONFLICT IGNORE, CHECK (a > (b + 1)))",
        "CREATE TABLE IF NOT EXISTS main.t(a)",
        "CREATE TABLE t(a INTEGER NOT NULL PRIMARY KEY, b)",
        "CREATE TEMP TABLE t(a DEFAULT (1+2), b DEFAULT x'00ff', c DEFAULT +5, d DEFAULT TRUE)",
        "CREATE TABLE t('quoted' TEXT, b, c, PRIMARY KEY (b DESC, c COLLATE NOCASE)) WITHOUT ROWID",
        "CREATE TABLE ümlaut(ä, b)",
    ];
    for sql in cases {
        let (want, without_rowid) = sqlite_says(sql);
        let got = parse_create_table(sql).unwrap_or_else(|| panic!("not read: {sql}"));
        let names: Vec<&str> = got.columns.iter().map(|c| c.name.as_str()).collect();
        let want_names: Vec<&str> = want.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(names, want_names, "{sql}");
        for (c, w) in got.columns.iter().zip(&want) {
            assert_eq!(
                c.affinity,
                Affinity::of(&w.1),
                "{sql}: {}'s type {:?}",
                c.name,
                w.1
            );
            assert_eq!(c.stored, w.3, "{sql}: {} stored", c.name);
        }
        let mut pk: Vec<(i64, usize)> = want
            .iter()
            .enumerate()
            .filter(|(_, w)| w.2 > 0)
            .map(|(i, w)| (w.2, i))
            .collect();
        pk.sort();
        let pk: Vec<usize> = pk.into_iter().map(|(_, i)| i).collect();
        assert_eq!(got.primary_key, pk, "{sql}: primary key");
        assert_eq!(got.without_rowid, without_rowid, "{sql}: WITHOUT ROWID");
    }
}

#[test]
fn literal_defaults_are_read_and_expressions_are_unknown() {
    let got = parse_create_table(
        "CREATE TABLE t(a DEFAULT 7, b DEFAULT -2.5, c DEFAULT 'it''s', d DEFAULT x'00ff', \
         e DEFAULT NULL, f DEFAULT (1 + 2), g DEFAULT CURRENT_TIME, h, i DEFAULT 0x10, j DEFAULT -x)",
    )
    .expect("read");
    let defaults: Vec<Default> = got.columns.into_iter().map(|c| c.default).collect();
    assert_eq!(
        defaults,
        vec![
            Default::Int(7),
            Default::Real(-2.5),
            Default::Text("it's".into()),
            Default::Blob(vec![0, 255]),
            Default::Null,
            Default::Unknown,
            Default::Unknown,
            Default::Null,
            Default::Int(16),
            Default::Unknown,
        ]
    );
}

#[test]
fn statements_that_are_not_a_column_list_are_refused() {
    for sql in [
        "CREATE INDEX i ON t(a)",
        "CREATE TABLE t(a",
        "CREATE TABLE t('unterminated)",
        "",
        "(",
    ] {
        assert_eq!(parse_create_table(sql), None, "{sql}");
    }
}
