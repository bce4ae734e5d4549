//! MySQL and MariaDB: `information_schema` for the catalog; cells read as text
//! (`CAST(... AS CHAR)`), binary columns as `HEX(...)`.

use futures_util::TryStreamExt;
use sqlx::mysql::MySqlConnection;
use sqlx::{AssertSqlSafe, Row};

use super::{DbSession, RawTable, quote_ident};
use crate::snapshot::{Cell, TableScan, TableShape, TableSnapshot};

const BINARY_TYPES: &[&str] = &[
    "binary",
    "varbinary",
    "tinyblob",
    "blob",
    "mediumblob",
    "longblob",
    "bit",
    "geometry",
    "point",
    "linestring",
    "polygon",
    "multipoint",
    "multilinestring",
    "multipolygon",
    "geometrycollection",
];

pub(super) async fn tables(c: &mut MySqlConnection) -> Result<Vec<RawTable>, sqlx::Error> {
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT CAST(table_name AS CHAR) FROM information_schema.tables \
         WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE' ORDER BY 1",
    )
    .fetch_all(&mut *c)
    .await?;
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let columns: Vec<(String, String)> = sqlx::query_as(
            "SELECT CAST(column_name AS CHAR), CAST(data_type AS CHAR) FROM information_schema.columns \
             WHERE table_schema = DATABASE() AND table_name = ? ORDER BY ordinal_position",
        )
        .bind(&name)
        .fetch_all(&mut *c)
        .await?;
        let key: Vec<String> = sqlx::query_scalar(
            "SELECT CAST(column_name AS CHAR) FROM information_schema.key_column_usage \
             WHERE table_schema = DATABASE() AND table_name = ? AND constraint_name = 'PRIMARY' \
             ORDER BY ordinal_position",
        )
        .bind(&name)
        .fetch_all(&mut *c)
        .await?;
        let binary = columns
            .iter()
            .filter(|(_, ty)| BINARY_TYPES.contains(&ty.to_ascii_lowercase().as_str()))
            .map(|(col, _)| col.clone())
            .collect();
        out.push(RawTable {
            sql_name: quote_ident(&name, '`'),
            name,
            columns: columns.into_iter().map(|(col, _)| col).collect(),
            key,
            binary,
        });
    }
    Ok(out)
}

/// Sessions other than ours: their default database, whether it is ours, and the client's
/// port (`host` is `address:port` over TCP, a bare host name over a socket).
pub(super) async fn sessions(c: &mut MySqlConnection) -> Result<Vec<DbSession>, sqlx::Error> {
    let rows: Vec<(Option<String>, i64, Option<String>)> = sqlx::query_as(
        "SELECT db, CAST(COALESCE(db = DATABASE(), 0) AS SIGNED), host \
         FROM information_schema.processlist WHERE id <> CONNECTION_ID()",
    )
    .fetch_all(&mut *c)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(database, here, host)| DbSession {
            database,
            here: here != 0,
            port: host
                .as_deref()
                .and_then(|h| h.rsplit_once(':'))
                .and_then(|(_, p)| p.parse().ok()),
        })
        .collect())
}

fn select_expr(column: &str, binary: bool) -> String {
    if binary {
        format!("HEX({})", quote_ident(column, '`'))
    } else {
        format!("CAST({} AS CHAR)", quote_ident(column, '`'))
    }
}

pub(super) async fn scan(
    c: &mut MySqlConnection,
    shape: TableShape,
) -> Result<TableSnapshot, sqlx::Error> {
    let cols: Vec<String> = shape
        .columns
        .iter()
        .zip(&shape.binary)
        .map(|(n, b)| select_expr(n, *b))
        .collect();
    let sql = format!("SELECT {} FROM {}", cols.join(", "), shape.sql_name);
    let n = cols.len();
    let mut scan = TableScan::new(shape);
    let mut rows = sqlx::query(AssertSqlSafe(sql)).fetch(&mut *c);
    while let Some(row) = rows.try_next().await? {
        for i in 0..n {
            let v: Option<&str> = row.try_get(i)?;
            scan.cell(i, &v.map_or(Cell::Null, Cell::Text));
        }
        scan.end_row();
    }
    Ok(scan.finish())
}

pub(super) async fn sample(
    c: &mut MySqlConnection,
    table: &TableShape,
    column: &str,
    limit: u32,
) -> Result<Vec<String>, sqlx::Error> {
    let binary = table
        .columns
        .iter()
        .position(|c| c == column)
        .is_some_and(|i| table.binary[i]);
    let col = quote_ident(column, '`');
    let sql = format!(
        "SELECT {} FROM {} WHERE {col} IS NOT NULL GROUP BY {col} ORDER BY {col} LIMIT {limit}",
        select_expr(column, binary),
        table.sql_name
    );
    sqlx::query_scalar(AssertSqlSafe(sql)).fetch_all(c).await
}
