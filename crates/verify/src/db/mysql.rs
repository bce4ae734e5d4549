//! MySQL and MariaDB: `information_schema` for the catalog; cells read as text
//! (`CAST(... AS CHAR)`), binary columns as `HEX(...)`; no change marker (every snapshot
//! rescans); a dump and restore for `--reset`'s copy (copy.rs).

mod copy;

use async_trait::async_trait;
use futures_util::TryStreamExt;
use hintaudit_core::DatabaseUrl;
use sqlx::mysql::MySqlConnection;
use sqlx::{AssertSqlSafe, Connection as _, Row};

use super::backend::{Backend, Connection, reset_err};
use super::{DbSession, RawTable, max_value_sql, quote_ident};
use crate::error::VerifyError;
use crate::objects::RawObject;
use crate::sequences::RawSequence;
use crate::snapshot::{Cell, TableScan, TableShape, TableSnapshot};

/// MySQL's and MariaDB's [`Backend`]: databases (schemas) on a server, copied through the
/// original's connection.
pub(crate) struct MySql;

#[async_trait]
impl Backend for MySql {
    async fn connect(&self, url: &DatabaseUrl) -> Result<Box<dyn Connection>, sqlx::Error> {
        Ok(Box::new(MySqlConnection::connect(url.driver_url()).await?))
    }

    async fn copy_database(&self, url: &DatabaseUrl, copy: &str) -> Result<(), VerifyError> {
        copy::dump_and_restore(url, copy).await
    }

    async fn drop_database(&self, url: &DatabaseUrl, name: &str) -> Result<(), VerifyError> {
        let mut c = MySqlConnection::connect(url.driver_url())
            .await
            .map_err(reset_err("connecting"))?;
        let sql = format!("DROP DATABASE IF EXISTS {}", quote_ident(name, '`'));
        sqlx::raw_sql(AssertSqlSafe(sql))
            .execute(&mut c)
            .await
            .map_err(reset_err("dropping the pristine copy"))?;
        c.close().await.map_err(reset_err("closing"))
    }
}

#[async_trait]
impl Connection for MySqlConnection {
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

    async fn sessions(&mut self) -> Result<Option<Vec<DbSession>>, sqlx::Error> {
        sessions(self).await.map(Some)
    }

    fn begin_read(&self) -> &'static str {
        "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"
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
        let sql = max_value_sql(table, column, '`', "CAST({} AS CHAR)");
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

/// The names of this database's `information_schema.tables` entries of `table_type` (`BASE
/// TABLE`, `SEQUENCE`), sorted.
async fn names_of_type(c: &mut MySqlConnection, ty: &str) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT CAST(table_name AS CHAR) FROM information_schema.tables \
         WHERE table_schema = DATABASE() AND table_type = ? ORDER BY 1",
    )
    .bind(ty)
    .fetch_all(&mut *c)
    .await
}

async fn tables(c: &mut MySqlConnection) -> Result<Vec<RawTable>, sqlx::Error> {
    let names = names_of_type(c, "BASE TABLE").await?;
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

/// MariaDB's sequences (`CREATE SEQUENCE`; MySQL has none): state `next_not_cached_value`
/// and `cycle_count`, read from the sequence itself (one dropped meanwhile is left out). With a cache (the default, 1000) a
/// session's `NEXTVAL` inside its cache leaves them unchanged: a blind spot.
async fn sequences(c: &mut MySqlConnection) -> Result<Vec<RawSequence>, sqlx::Error> {
    let names = names_of_type(c, "SEQUENCE").await?;
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let sql = format!(
            "SELECT CAST(CONCAT(next_not_cached_value, '/', cycle_count) AS CHAR), \
                    CAST(cache_size AS SIGNED) \
             FROM {}",
            quote_ident(&name, '`')
        );
        let (state, cache): (String, i64) =
            match sqlx::query_as(AssertSqlSafe(sql)).fetch_one(&mut *c).await {
                Ok(row) => row,
                // Dropped since it was listed: as if it had not been.
                Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("42S02") => continue,
                Err(e) => return Err(e),
            };
        let blind = (cache > 1).then(|| {
            format!(
                "sequence {name} caches {cache} values per session (CACHE {cache}): a NEXTVAL \
                 inside a session's cache moves nothing verify can read"
            )
        });
        out.push(RawSequence {
            name,
            state: Some(state),
            blind,
            owner: None,
        });
    }
    Ok(out)
}

const OBJECTS: &str = "\
    SELECT 'index' AS k, CONCAT(index_name, ' on ', table_name) AS n, table_name AS t, \
           GROUP_CONCAT(CONCAT(column_name, ':', non_unique, ':', index_type) ORDER BY seq_in_index) AS d \
      FROM information_schema.statistics WHERE table_schema = DATABASE() \
      GROUP BY table_name, index_name \
    UNION ALL SELECT 'view', table_name, NULL, view_definition \
      FROM information_schema.views WHERE table_schema = DATABASE() \
    UNION ALL SELECT 'function', CONCAT(LOWER(routine_type), ' ', routine_name), NULL, \
           CONCAT(COALESCE(routine_definition, ''), '|', COALESCE(dtd_identifier, '')) \
      FROM information_schema.routines WHERE routine_schema = DATABASE() \
    UNION ALL SELECT 'trigger', CONCAT(trigger_name, ' on ', event_object_table), \
           event_object_table, CONCAT(action_timing, ' ', event_manipulation, ' ', action_statement) \
      FROM information_schema.triggers WHERE trigger_schema = DATABASE()";

/// Indexes, views, functions and procedures, triggers of this database, from
/// `information_schema`.
async fn objects(c: &mut MySqlConnection) -> Result<Vec<RawObject>, sqlx::Error> {
    let sql = format!(
        "SELECT CAST(k AS CHAR), CAST(n AS CHAR), CAST(t AS CHAR), CAST(d AS CHAR) \
         FROM ({OBJECTS}) AS o"
    );
    let rows: Vec<(String, String, Option<String>, Option<String>)> =
        sqlx::query_as(AssertSqlSafe(sql))
            .fetch_all(&mut *c)
            .await?;
    Ok(rows.into_iter().filter_map(RawObject::from_row).collect())
}

/// Sessions other than ours: their default database, whether it is ours, and the client's
/// port (`host` is `address:port` over TCP, a bare host name over a socket).
async fn sessions(c: &mut MySqlConnection) -> Result<Vec<DbSession>, sqlx::Error> {
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

async fn scan(c: &mut MySqlConnection, shape: TableShape) -> Result<TableSnapshot, sqlx::Error> {
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

async fn sample(
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
