//! SQLite: `sqlite_master` and `pragma_table_info` for the catalog, typed cells; `PRAGMA
//! data_version` as the change marker; `VACUUM INTO` for `--reset`'s copy.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::TryStreamExt;
use hintaudit_core::DatabaseUrl;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqliteValueRef};
use sqlx::{AssertSqlSafe, Connection as _, Decode, Row, TypeInfo, ValueRef};

use super::backend::{Backend, Connection, reset_err};
use super::{RawTable, max_value_sql, quote_ident};
use crate::error::VerifyError;
use crate::objects::{ObjectKind, RawObject};
use crate::sequences::RawSequence;
use crate::snapshot::{Cell, TableScan, TableShape, TableSnapshot};

/// SQLite's [`Backend`]: a database is a file.
pub(crate) struct Sqlite;

#[async_trait]
impl Backend for Sqlite {
    async fn connect(&self, url: &DatabaseUrl) -> Result<Box<dyn Connection>, sqlx::Error> {
        let opts = SqliteConnectOptions::from_str(url.driver_url())?
            .create_if_missing(false)
            .busy_timeout(Duration::from_secs(10))
            // Rows cross from sqlx's worker thread in batches: fewer wake-ups per scan
            // (bounded: at most this many rows in flight).
            .row_buffer_size(1024);
        Ok(Box::new(SqliteConnection::connect_with(&opts).await?))
    }

    async fn copy_database(&self, url: &DatabaseUrl, copy: &str) -> Result<(), VerifyError> {
        let _ = std::fs::remove_file(copy);
        let opts = SqliteConnectOptions::from_str(url.driver_url())
            .map_err(reset_err("opening the database"))?
            .create_if_missing(false)
            .read_only(true);
        let mut c = SqliteConnection::connect_with(&opts)
            .await
            .map_err(reset_err("opening the database"))?;
        sqlx::query("VACUUM INTO ?")
            .bind(copy)
            .execute(&mut c)
            .await
            .map_err(reset_err("copying the database"))?;
        c.close().await.map_err(reset_err("closing"))
    }

    /// Removes the file `name` and its journals.
    async fn drop_database(&self, _url: &DatabaseUrl, name: &str) -> Result<(), VerifyError> {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            match std::fs::remove_file(format!("{name}{suffix}")) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(VerifyError::Database(format!(
                        "--reset: removing {}: {e}",
                        Path::new(name).display()
                    )));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Connection for SqliteConnection {
    async fn tables(&mut self, _schemas: &[String]) -> Result<Vec<RawTable>, sqlx::Error> {
        tables(self).await
    }

    async fn sequences(&mut self, _schemas: &[String]) -> Result<Vec<RawSequence>, sqlx::Error> {
        sequences(self).await
    }

    async fn objects(&mut self, _schemas: &[String]) -> Result<Vec<RawObject>, sqlx::Error> {
        objects(self).await
    }

    async fn scan(&mut self, shape: TableShape) -> Result<TableSnapshot, sqlx::Error> {
        scan(self, shape).await
    }

    async fn change_marker(&mut self) -> Result<Option<String>, sqlx::Error> {
        change_marker(self).await
    }

    async fn sqlite_file(&mut self) -> Result<Option<PathBuf>, sqlx::Error> {
        file(self).await
    }

    fn begin_read(&self) -> &'static str {
        "BEGIN"
    }

    async fn execute_script(&mut self, sql: &str) -> Result<(), sqlx::Error> {
        let sql = AssertSqlSafe(sql.to_owned());
        sqlx::raw_sql(sql).execute(self).await.map(drop)
    }

    async fn max_value(
        &mut self,
        table: &TableShape,
        column: &str,
    ) -> Result<Option<String>, sqlx::Error> {
        let sql = max_value_sql(table, column, '"', "CAST({} AS TEXT)");
        sqlx::query_scalar(AssertSqlSafe(sql)).fetch_one(self).await
    }

    async fn sample(
        &mut self,
        table: &TableShape,
        column: &str,
        limit: u32,
    ) -> Result<Vec<String>, sqlx::Error> {
        sample(self, table, column, limit).await
    }
}

async fn tables(c: &mut SqliteConnection) -> Result<Vec<RawTable>, sqlx::Error> {
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

/// The `AUTOINCREMENT` counter of every table that has one (`sqlite_sequence`, which exists
/// once such a table does), named `sqlite_sequence.<table>`; a table not inserted into yet
/// has none (state `-`).
async fn sequences(c: &mut SqliteConnection) -> Result<Vec<RawSequence>, sqlx::Error> {
    let exists: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_sequence'",
    )
    .fetch_one(&mut *c)
    .await?;
    if exists == 0 {
        return Ok(Vec::new());
    }
    let rows: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT m.name, CAST(s.seq AS TEXT) FROM sqlite_master m \
         LEFT JOIN sqlite_sequence s ON s.name = m.name \
         WHERE m.type = 'table' AND m.sql LIKE '%AUTOINCREMENT%' ORDER BY m.name",
    )
    .fetch_all(&mut *c)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(table, seq)| RawSequence {
            name: format!("sqlite_sequence.{table}"),
            state: Some(seq.unwrap_or_else(|| "-".to_owned())),
            blind: None,
            owner: Some(table),
        })
        .collect())
}

/// Indexes (automatic ones too), views and triggers, from `sqlite_master`.
async fn objects(c: &mut SqliteConnection) -> Result<Vec<RawObject>, sqlx::Error> {
    let rows: Vec<(String, String, String, String)> = sqlx::query_as(
        "SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master \
         WHERE type IN ('index', 'view', 'trigger') ORDER BY type, name",
    )
    .fetch_all(&mut *c)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(kind, name, table, sql)| {
            let kind = ObjectKind::from_catalog(&kind)?;
            Some(RawObject {
                owner: (kind != ObjectKind::View).then_some(table),
                kind,
                name,
                definition: sql,
            })
        })
        .collect())
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
        0 => Cell::Int(<i64 as Decode<sqlx::Sqlite>>::decode(v).map_err(decode_err)?),
        1 => Cell::Real(<f64 as Decode<sqlx::Sqlite>>::decode(v).map_err(decode_err)?),
        2 => Cell::Blob(<&[u8] as Decode<sqlx::Sqlite>>::decode(v).map_err(decode_err)?),
        _ => Cell::Text(<&str as Decode<sqlx::Sqlite>>::decode(v).map_err(decode_err)?),
    })
}

async fn scan(c: &mut SqliteConnection, shape: TableShape) -> Result<TableSnapshot, sqlx::Error> {
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

async fn change_marker(c: &mut SqliteConnection) -> Result<Option<String>, sqlx::Error> {
    let v: i64 = sqlx::query_scalar("PRAGMA data_version")
        .fetch_one(&mut *c)
        .await?;
    Ok(Some(v.to_string()))
}

/// The database file, canonical (`None` for an in-memory or temporary database).
async fn file(c: &mut SqliteConnection) -> Result<Option<PathBuf>, sqlx::Error> {
    let file: Option<String> =
        sqlx::query_scalar("SELECT file FROM pragma_database_list WHERE name = 'main'")
            .fetch_optional(&mut *c)
            .await?;
    Ok(file
        .filter(|f| !f.is_empty())
        .map(|f| std::fs::canonicalize(&f).unwrap_or_else(|_| PathBuf::from(f))))
}

async fn sample(
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
