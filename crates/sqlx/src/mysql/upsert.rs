//! Upserts told apart by MySQL's affected-rows convention, read from the OK packet.
//!
//! For `INSERT … ON DUPLICATE KEY UPDATE` the server counts 1 per inserted row, 2 per
//! updated row and 0 per row left unchanged; sqlx connects with `CLIENT_FOUND_ROWS`, which
//! counts an unchanged row as 1. `REPLACE` counts 1 per inserted row plus 1 per row it
//! deleted to make room. So, for a `VALUES` list of `r` rows that affected `n`:
//! `n - r` rows were overwritten (updated, or deleted and replaced), and none when
//! `n ≤ r`. That is exact for one `VALUES` row, and for several as long as each row hits
//! at most one unique key. `INSERT … SELECT` has no row count to compare with: its
//! statement stays `likely`.

use hintaudit_core::{Operation, TableWrites};
use sqlparser::ast::{SetExpr, Statement};
use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::Parser;

use crate::classify::Classification;

/// What the affected-rows convention says of an upsert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Upsert {
    /// No existing row was overwritten: the rows were inserted (or, under
    /// `CLIENT_FOUND_ROWS`, left unchanged).
    NoOverwrite,
    /// Rows overwritten, per table: confirmed destructive.
    Overwrote(TableWrites),
}

/// The number of `VALUES` rows of a single `INSERT`/`REPLACE` text.
fn values_rows(sql: &str) -> Option<u64> {
    let statements = Parser::parse_sql(&MySqlDialect {}, sql).ok()?;
    let [Statement::Insert(insert)] = statements.as_slice() else {
        return None;
    };
    match insert.source.as_deref().map(|q| q.body.as_ref()) {
        Some(SetExpr::Values(v)) => u64::try_from(v.rows.len()).ok(),
        _ => None,
    }
}

/// Reads an upsert's `rows` affected; `None` for anything else, for upserts that cannot
/// overwrite (`INSERT IGNORE`), and when the row count is unknown.
pub(crate) fn judge(class: &Classification, sql: &str, rows: u64) -> Option<Upsert> {
    let e = &class.effect;
    if e.operation != Operation::Upsert || !e.overwrites || rows == 0 {
        return None;
    }
    let r = values_rows(sql)?;
    if rows <= r {
        return Some(Upsert::NoOverwrite);
    }
    let table = e.tables.first()?;
    let table = table.rsplit('.').next().unwrap_or(table).trim_matches('`');
    Some(Upsert::Overwrote(TableWrites {
        table: table.to_owned(),
        inserted: 0,
        updated: rows - r,
        deleted: 0,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::{SqlDialect, classify};

    /// One row per (statement, rows affected): what the convention says.
    #[test]
    fn convention() {
        let over = |n| {
            Some(Upsert::Overwrote(TableWrites {
                table: "hits".into(),
                inserted: 0,
                updated: n,
                deleted: 0,
            }))
        };
        let odku = "INSERT INTO hits (page, n) VALUES (?, 1) ON DUPLICATE KEY UPDATE n = n + 1";
        let two = "INSERT INTO hits (page, n) VALUES (?, 1), (?, 1) ON DUPLICATE KEY UPDATE n = 1";
        let cases: Vec<(&str, u64, Option<Upsert>)> = vec![
            (odku, 1, Some(Upsert::NoOverwrite)),
            (odku, 2, over(1)),
            (odku, 0, None),
            (two, 3, over(1)),
            (two, 2, Some(Upsert::NoOverwrite)),
            ("REPLACE INTO hits (page, n) VALUES (?, 1)", 2, over(1)),
            (
                "REPLACE INTO hits (page, n) VALUES (?, 1)",
                1,
                Some(Upsert::NoOverwrite),
            ),
            ("INSERT IGNORE INTO hits (page, n) VALUES (?, 1)", 1, None),
            (
                "INSERT INTO hits SELECT * FROM h2 ON DUPLICATE KEY UPDATE n = 1",
                4,
                None,
            ),
            ("INSERT INTO hits (page, n) VALUES (?, 1)", 1, None),
        ];
        for (sql, rows, want) in cases {
            let class = classify(sql, SqlDialect::MySql);
            assert_eq!(judge(&class, sql, rows), want, "{sql} / {rows}");
        }
    }
}
