//! PostgreSQL: `pg_catalog` for the catalog; every cell read as its text form (`::text`),
//! which is canonical per type (floats print shortest-exact, bytea as hex).

use futures_util::TryStreamExt;
use sqlx::postgres::PgConnection;
use sqlx::{AssertSqlSafe, Row};

use super::{DbSession, RawTable, quote_ident};
use crate::snapshot::{Cell, TableScan, TableShape, TableSnapshot};

const TABLES: &str = "SELECT n.nspname::text, c.relname::text, c.oid::int8, \
            n.nspname = current_schema() \
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
     WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition \
       AND n.nspname NOT IN ('pg_catalog', 'information_schema') \
       AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%' \
       AND (cardinality($1::text[]) = 0 OR n.nspname = ANY ($1::text[])) \
     ORDER BY 1, 2";

const COLUMNS: &str = "SELECT attname::text FROM pg_attribute \
     WHERE attrelid = $1::int8::oid AND attnum > 0 AND NOT attisdropped ORDER BY attnum";

const KEY: &str = "SELECT a.attname::text FROM pg_index i \
     JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) \
     WHERE i.indrelid = $1::int8::oid AND i.indisprimary \
     ORDER BY array_position(i.indkey::int2[], a.attnum)";

/// Tables of every non-system schema, or of `schemas` when it is not empty.
pub(super) async fn tables(
    c: &mut PgConnection,
    schemas: &[String],
) -> Result<Vec<RawTable>, sqlx::Error> {
    let rows: Vec<(String, String, i64, bool)> = sqlx::query_as(TABLES)
        .bind(schemas)
        .fetch_all(&mut *c)
        .await?;
    let mut out = Vec::with_capacity(rows.len());
    for (schema, name, oid, current) in rows {
        let columns: Vec<String> = sqlx::query_scalar(COLUMNS)
            .bind(oid)
            .fetch_all(&mut *c)
            .await?;
        let key: Vec<String> = sqlx::query_scalar(KEY).bind(oid).fetch_all(&mut *c).await?;
        out.push(RawTable {
            sql_name: format!("{}.{}", quote_ident(&schema, '"'), quote_ident(&name, '"')),
            // Named as the server's SQL names them: unqualified in the current schema.
            name: if current {
                name
            } else {
                format!("{schema}.{name}")
            },
            columns,
            key,
            binary: Vec::new(),
        });
    }
    Ok(out)
}

pub(super) async fn scan(
    c: &mut PgConnection,
    shape: TableShape,
) -> Result<TableSnapshot, sqlx::Error> {
    let cols: Vec<String> = shape
        .columns
        .iter()
        .map(|n| format!("{}::text", quote_ident(n, '"')))
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

/// Client sessions other than ours: their database, its name is ours, and the client's port
/// (`None` over a Unix socket).
pub(super) async fn sessions(c: &mut PgConnection) -> Result<Vec<DbSession>, sqlx::Error> {
    let rows: Vec<(Option<String>, bool, Option<i32>)> = sqlx::query_as(
        "SELECT datname::text, datname = current_database(), client_port FROM pg_stat_activity \
         WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'",
    )
    .fetch_all(&mut *c)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(database, here, port)| DbSession {
            database,
            here,
            port: port.and_then(|p| u16::try_from(p).ok()),
        })
        .collect())
}

/// The WAL insert position: it moves on every logged write in the cluster. Unlogged tables
/// write no WAL, so with any of them watched there is no marker.
pub(super) async fn change_marker(c: &mut PgConnection) -> Result<Option<String>, sqlx::Error> {
    let row: (Option<String>, bool) = sqlx::query_as(
        "SELECT CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_current_wal_insert_lsn()::text END, \
         EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE c.relkind IN ('r', 'p') AND c.relpersistence = 'u' \
                   AND n.nspname NOT IN ('pg_catalog', 'information_schema'))",
    )
    .fetch_one(&mut *c)
    .await?;
    Ok(if row.1 { None } else { row.0 })
}

pub(super) async fn sample(
    c: &mut PgConnection,
    table: &TableShape,
    column: &str,
    limit: u32,
) -> Result<Vec<String>, sqlx::Error> {
    let col = quote_ident(column, '"');
    let sql = format!(
        "SELECT {col}::text FROM {} WHERE {col} IS NOT NULL GROUP BY {col} ORDER BY {col} LIMIT {limit}",
        table.sql_name
    );
    sqlx::query_scalar(AssertSqlSafe(sql)).fetch_all(c).await
}
