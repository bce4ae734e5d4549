//! SQLite: `sqlite_master` and `pragma_table_info` for the catalog, typed cells.

use std::path::PathBuf;

use futures_util::TryStreamExt;
use sqlx::sqlite::{Sqlite, SqliteConnection, SqliteValueRef};
use sqlx::{AssertSqlSafe, Decode, Row, TypeInfo, ValueRef};

use super::{RawTable, quote_ident};
use crate::snapshot::{Cell, TableScan, TableShape, TableSnapshot};

pub(super) async fn tables(c: &mut SqliteConnection) -> Result<Vec<RawTable>, sqlx::Error> {
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
    )
    .fetch_all(&mut *c)
    .await?;
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let cols: Vec<(String, i64)> =
            sqlx::query_as("SELECT name, pk FROM pragma_table_info(?) ORDER BY cid")
                .bind(&name)
                .fetch_all(&mut *c)
                .await?;
        let mut key: Vec<(i64, String)> = cols
            .iter()
            .filter(|(_, pk)| *pk > 0)
            .map(|(n, pk)| (*pk, n.clone()))
            .collect();
        key.sort();
        out.push(RawTable {
            sql_name: quote_ident(&name, '"'),
            name,
            columns: cols.into_iter().map(|(n, _)| n).collect(),
            key: key.into_iter().map(|(_, n)| n).collect(),
            binary: Vec::new(),
        });
    }
    Ok(out)
}

fn decode_err(e: sqlx::error::BoxDynError) -> sqlx::Error {
    sqlx::Error::Decode(e)
}

fn cell<'r>(v: SqliteValueRef<'r>) -> Result<Cell<'r>, sqlx::Error> {
    if v.is_null() {
        return Ok(Cell::Null);
    }
    // Match on the type name without keeping it: it borrows `v`, which decoding consumes.
    let kind = match v.type_info().name() {
        "INTEGER" | "BOOLEAN" => 0,
        "REAL" => 1,
        "BLOB" => 2,
        _ => 3,
    };
    Ok(match kind {
        0 => Cell::Int(<i64 as Decode<Sqlite>>::decode(v).map_err(decode_err)?),
        1 => Cell::Real(<f64 as Decode<Sqlite>>::decode(v).map_err(decode_err)?),
        2 => Cell::Blob(<&[u8] as Decode<Sqlite>>::decode(v).map_err(decode_err)?),
        _ => Cell::Text(<&str as Decode<Sqlite>>::decode(v).map_err(decode_err)?),
    })
}

pub(super) async fn scan(
    c: &mut SqliteConnection,
    shape: TableShape,
) -> Result<TableSnapshot, sqlx::Error> {
    let cols: Vec<String> = shape.columns.iter().map(|n| quote_ident(n, '"')).collect();
    let sql = format!("SELECT {} FROM {}", cols.join(", "), shape.sql_name);
    let n = cols.len();
    let mut scan = TableScan::new(shape);
    let mut rows = sqlx::query(AssertSqlSafe(sql)).fetch(&mut *c);
    while let Some(row) = rows.try_next().await? {
        for i in 0..n {
            scan.cell(i, &cell(row.try_get_raw(i)?)?);
        }
        scan.end_row();
    }
    Ok(scan.finish())
}

pub(super) async fn change_marker(c: &mut SqliteConnection) -> Result<Option<String>, sqlx::Error> {
    let v: i64 = sqlx::query_scalar("PRAGMA data_version")
        .fetch_one(&mut *c)
        .await?;
    Ok(Some(v.to_string()))
}

/// The database file, canonical (`None` for an in-memory or temporary database).
pub(super) async fn file(c: &mut SqliteConnection) -> Result<Option<PathBuf>, sqlx::Error> {
    let file: Option<String> =
        sqlx::query_scalar("SELECT file FROM pragma_database_list WHERE name = 'main'")
            .fetch_optional(&mut *c)
            .await?;
    Ok(file
        .filter(|f| !f.is_empty())
        .map(|f| std::fs::canonicalize(&f).unwrap_or_else(|_| PathBuf::from(f))))
}

pub(super) async fn sample(
    c: &mut SqliteConnection,
    table: &TableShape,
    column: &str,
    limit: u32,
) -> Result<Vec<String>, sqlx::Error> {
    let col = quote_ident(column, '"');
    let sql = format!(
        "SELECT CAST({col} AS TEXT) FROM {} WHERE {col} IS NOT NULL GROUP BY {col} ORDER BY {col} LIMIT {limit}",
        table.sql_name
    );
    sqlx::query_scalar(AssertSqlSafe(sql)).fetch_all(c).await
}
