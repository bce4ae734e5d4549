//! PostgreSQL: `pg_catalog` for the catalog; every cell read as its text form (`::text`),
//! which is canonical per type (floats print shortest-exact, bytea as hex); the WAL insert
//! position as the change marker; `CREATE DATABASE … TEMPLATE` for `--reset`'s copy.

use async_trait::async_trait;
use futures_util::TryStreamExt;
use hintaudit_core::DatabaseUrl;
use sqlx::postgres::PgConnection;
use sqlx::{AssertSqlSafe, Connection as _, Row};

use super::backend::{Backend, Connection, reset_err};
use super::{DbSession, RawTable, max_value_sql, quote_ident};
use crate::error::VerifyError;
use crate::objects::RawObject;
use crate::sequences::RawSequence;
use crate::snapshot::{Cell, TableScan, TableShape, TableSnapshot};

/// PostgreSQL's [`Backend`]: databases on a server, copied from the maintenance database
/// `postgres`.
pub(crate) struct Postgres;

/// A connection to the maintenance database `postgres` of `url`'s server.
async fn maintenance(url: &DatabaseUrl) -> Result<PgConnection, VerifyError> {
    let url = url
        .with_database("postgres")
        .ok_or_else(|| VerifyError::Usage("--reset: --database must name a database".into()))?;
    PgConnection::connect(url.driver_url())
        .await
        .map_err(reset_err("connecting to the postgres database"))
}

#[async_trait]
impl Backend for Postgres {
    async fn connect(&self, url: &DatabaseUrl) -> Result<Box<dyn Connection>, sqlx::Error> {
        Ok(Box::new(PgConnection::connect(url.driver_url()).await?))
    }

    /// Nobody may be connected to the original while it is copied.
    async fn copy_database(&self, url: &DatabaseUrl, copy: &str) -> Result<(), VerifyError> {
        let name = url.database().unwrap_or_default();
        let mut c = maintenance(url).await?;
        let (orig, copy) = (quote_ident(name, '"'), quote_ident(copy, '"'));
        for sql in [
            format!("DROP DATABASE IF EXISTS {copy} WITH (FORCE)"),
            format!("CREATE DATABASE {copy} TEMPLATE {orig}"),
        ] {
            sqlx::raw_sql(AssertSqlSafe(sql))
                .execute(&mut c)
                .await
                .map_err(reset_err(
                    "CREATE DATABASE ... TEMPLATE (is a session still connected to the original?)",
                ))?;
        }
        c.close().await.map_err(reset_err("closing"))
    }

    async fn drop_database(&self, url: &DatabaseUrl, name: &str) -> Result<(), VerifyError> {
        let mut c = maintenance(url).await?;
        let sql = format!("DROP DATABASE IF EXISTS {}", quote_ident(name, '"'));
        sqlx::raw_sql(AssertSqlSafe(sql))
            .execute(&mut c)
            .await
            .map_err(reset_err("dropping the pristine copy"))?;
        c.close().await.map_err(reset_err("closing"))
    }
}

#[async_trait]
impl Connection for PgConnection {
    async fn tables(&mut self, schemas: &[String]) -> Result<Vec<RawTable>, sqlx::Error> {
        tables(self, schemas).await
    }

    async fn sequences(&mut self, schemas: &[String]) -> Result<Vec<RawSequence>, sqlx::Error> {
        sequences(self, schemas).await
    }

    async fn objects(&mut self, schemas: &[String]) -> Result<Vec<RawObject>, sqlx::Error> {
        objects(self, schemas).await
    }

    async fn scan(&mut self, shape: TableShape) -> Result<TableSnapshot, sqlx::Error> {
        scan(self, shape).await
    }

    async fn change_marker(&mut self) -> Result<Option<String>, sqlx::Error> {
        change_marker(self).await
    }

    async fn sessions(&mut self) -> Result<Option<Vec<DbSession>>, sqlx::Error> {
        sessions(self).await.map(Some)
    }

    fn begin_read(&self) -> &'static str {
        "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
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
        let sql = max_value_sql(table, column, '"', "({})::text");
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
async fn tables(c: &mut PgConnection, schemas: &[String]) -> Result<Vec<RawTable>, sqlx::Error> {
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

async fn scan(c: &mut PgConnection, shape: TableShape) -> Result<TableSnapshot, sqlx::Error> {
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

/// The catalog rows of the watched sequences; their values are read one by one.
const SEQUENCES: &str = "SELECT n.nspname::text, c.relname::text, n.nspname = current_schema(), \
            s.seqcache, coalesce(has_sequence_privilege(c.oid, 'SELECT,USAGE'), false), \
            CASE WHEN tn.nspname = current_schema() THEN t.relname::text \
                 ELSE tn.nspname || '.' || t.relname END \
     FROM pg_class c \
     JOIN pg_namespace n ON n.oid = c.relnamespace \
     JOIN pg_sequence s ON s.seqrelid = c.oid \
     LEFT JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid \
       AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i') \
     LEFT JOIN pg_class t ON t.oid = d.refobjid \
     LEFT JOIN pg_namespace tn ON tn.oid = t.relnamespace \
     WHERE c.relkind = 'S' AND n.nspname NOT IN ('pg_catalog', 'information_schema') \
       AND n.nspname NOT LIKE 'pg\\_temp%' \
       AND (cardinality($1::text[]) = 0 OR n.nspname = ANY ($1::text[])) \
     ORDER BY 1, 2";

/// Sequences of every non-system schema, or of `schemas` when it is not empty, with the
/// table a `serial` or identity column ties them to: state `last_value` and `is_called`,
/// read from each sequence (one that another session drops meanwhile is left out). With
/// `CACHE` above 1 a session's `nextval` inside its cache leaves them unchanged, and
/// without privilege they cannot be read: both are blind spots.
async fn sequences(
    c: &mut PgConnection,
    schemas: &[String],
) -> Result<Vec<RawSequence>, sqlx::Error> {
    type Row = (String, String, bool, i64, bool, Option<String>);
    let rows: Vec<Row> = sqlx::query_as(SEQUENCES)
        .bind(schemas)
        .fetch_all(&mut *c)
        .await?;
    let mut out = Vec::with_capacity(rows.len());
    for (schema, name, current, cache, readable, owner) in rows {
        let state = if readable {
            let sql = format!(
                "SELECT last_value::text || '/' || is_called::text FROM {}.{}",
                quote_ident(&schema, '"'),
                quote_ident(&name, '"')
            );
            match sqlx::query_scalar::<_, String>(AssertSqlSafe(sql))
                .fetch_one(&mut *c)
                .await
            {
                Ok(state) => state,
                // Dropped since the catalog was read: as if it had not been listed.
                Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("42P01") => continue,
                Err(e) => return Err(e),
            }
        } else {
            // Its moves are not seen; its creation and drop are.
            "unreadable".to_owned()
        };
        let name = if current {
            name
        } else {
            format!("{schema}.{name}")
        };
        let blind = if !readable {
            Some(format!(
                "sequence {name} cannot be read (no SELECT or USAGE privilege): its moves are not seen"
            ))
        } else if cache > 1 {
            Some(format!(
                "sequence {name} caches {cache} values per session (CACHE {cache}): a nextval \
                 inside a session's cache moves nothing verify can read"
            ))
        } else {
            None
        };
        out.push(RawSequence {
            name,
            state: Some(state),
            blind,
            owner,
        });
    }
    Ok(out)
}

/// Catalog columns only (no `pg_get_*def`, which open relations and fail on an object
/// another session drops meanwhile); each definition as the text of its catalog row.
const OBJECTS: &str = "\
    WITH ns AS ( \
      SELECT oid, nspname::text AS schema, nspname = current_schema() AS cur FROM pg_namespace \
       WHERE nspname NOT IN ('pg_catalog', 'information_schema') \
         AND nspname NOT LIKE 'pg\\_toast%' AND nspname NOT LIKE 'pg\\_temp%' \
         AND (cardinality($1::text[]) = 0 OR nspname = ANY ($1::text[]))) \
    SELECT o.kind, CASE WHEN ns.cur THEN o.name ELSE ns.schema || '.' || o.name END, \
           CASE WHEN o.owner IS NULL OR ns.cur THEN o.owner ELSE ns.schema || '.' || o.owner END, \
           md5(coalesce(o.def, '')) \
    FROM ns JOIN ( \
      SELECT 'index' AS kind, c.relnamespace AS nsp, c.relname::text AS name, \
             t.relname::text AS owner, concat_ws('|', c.relam, i.indkey::text, i.indclass::text, \
             i.indisunique, i.indexprs::text, i.indpred::text) AS def \
        FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid \
      UNION ALL \
      SELECT 'view', c.relnamespace, c.relname::text, NULL, r.ev_action::text \
        FROM pg_class c JOIN pg_rewrite r ON r.ev_class = c.oid AND r.rulename = '_RETURN' \
       WHERE c.relkind IN ('v', 'm') \
      UNION ALL \
      SELECT 'function', p.pronamespace, p.proname || '(' || oidvectortypes(p.proargtypes) || ')', \
             NULL, concat_ws('|', p.prosrc, p.probin, p.prorettype, p.prolang, p.provolatile, \
             p.proretset, p.proargnames::text, p.proconfig::text, p.prokind) \
        FROM pg_proc p WHERE p.prokind IN ('f', 'p') \
      UNION ALL \
      SELECT 'trigger', c.relnamespace, t.tgname || ' on ' || c.relname, c.relname::text, \
             concat_ws('|', t.tgfoid, t.tgtype, t.tgenabled, t.tgattr::text, encode(t.tgargs, 'hex'), \
             t.tgqual::text) \
        FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE NOT t.tgisinternal \
      UNION ALL \
      SELECT 'type', ty.typnamespace, ty.typname::text, NULL, concat_ws('|', ty.typtype, \
             ty.typbasetype, ty.typtypmod, ty.typnotnull, ty.typdefault, \
             (SELECT string_agg(e.enumlabel::text, ',' ORDER BY e.enumsortorder) \
                FROM pg_enum e WHERE e.enumtypid = ty.oid), \
             (SELECT string_agg(k.conbin::text, ',' ORDER BY k.conname) \
                FROM pg_constraint k WHERE k.contypid = ty.oid)) \
        FROM pg_type ty WHERE ty.typtype IN ('e', 'd') \
    ) o ON o.nsp = ns.oid";

/// Indexes, views and materialized views (their definitions), functions and procedures
/// (named with their argument types), triggers, enum and domain types of every non-system
/// schema, or of `schemas` when it is not empty; definitions as md5 digests.
async fn objects(c: &mut PgConnection, schemas: &[String]) -> Result<Vec<RawObject>, sqlx::Error> {
    let rows: Vec<(String, String, Option<String>, Option<String>)> = sqlx::query_as(OBJECTS)
        .bind(schemas)
        .fetch_all(&mut *c)
        .await?;
    Ok(rows.into_iter().filter_map(RawObject::from_row).collect())
}

/// Client sessions other than ours: their database, its name is ours, and the client's port
/// (`None` over a Unix socket).
async fn sessions(c: &mut PgConnection) -> Result<Vec<DbSession>, sqlx::Error> {
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

/// The WAL insert position: it moves on every logged write in the cluster; and a digest of
/// every sequence's `last_value`, since `nextval` writes WAL only every 32 values. Unlogged
/// tables write no WAL, so with any of them watched there is no marker.
async fn change_marker(c: &mut PgConnection) -> Result<Option<String>, sqlx::Error> {
    let row: (Option<String>, bool) = sqlx::query_as(
        "SELECT CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_current_wal_insert_lsn()::text \
                || ' ' || (SELECT md5(coalesce(string_agg(schemaname || '.' || sequencename \
                           || '=' || coalesce(last_value::text, '-'), ',' \
                           ORDER BY schemaname, sequencename), '')) FROM pg_sequences) END, \
         EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE c.relkind IN ('r', 'p') AND c.relpersistence = 'u' \
                   AND n.nspname NOT IN ('pg_catalog', 'information_schema'))",
    )
    .fetch_one(&mut *c)
    .await?;
    Ok(if row.1 { None } else { row.0 })
}

async fn sample(
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
