//! `--reset` on MySQL/MariaDB: a dump and restore of one database (schema) into another on
//! the same server, through one connection: every table's `SHOW CREATE TABLE` and its rows,
//! then its triggers.

use hintaudit_core::DatabaseUrl;
use sqlx::mysql::MySqlConnection;
use sqlx::{AssertSqlSafe, Connection as _, Row};

use super::super::backend::reset_err;
use super::super::quote_ident;
use crate::error::VerifyError;

/// Copies the database `url` names to `copy` on the same server, replacing it.
pub(super) async fn dump_and_restore(url: &DatabaseUrl, copy: &str) -> Result<(), VerifyError> {
    let name = url.database().unwrap_or_default();
    let mut c = MySqlConnection::connect(url.driver_url())
        .await
        .map_err(reset_err("connecting"))?;
    let (orig, copy) = (quote_ident(name, '`'), quote_ident(copy, '`'));
    let mut script = vec![
        format!("DROP DATABASE IF EXISTS {copy}"),
        format!("CREATE DATABASE {copy}"),
        "SET foreign_key_checks = 0".to_owned(),
    ];
    for ddl in tables(&mut c, &orig).await? {
        script.push(format!("USE {copy}"));
        script.push(ddl.create);
        script.push(format!(
            "INSERT INTO {copy}.{q} SELECT * FROM {orig}.{q}",
            q = ddl.table
        ));
    }
    script.push(format!("USE {copy}"));
    script.extend(triggers(&mut c, &orig).await?);
    script.push("SET foreign_key_checks = 1".to_owned());
    script.push(format!("USE {orig}"));
    for sql in script {
        sqlx::raw_sql(AssertSqlSafe(sql))
            .execute(&mut c)
            .await
            .map_err(reset_err("restoring the copy"))?;
    }
    c.close().await.map_err(reset_err("closing"))
}

/// A base table: its quoted name and its `CREATE TABLE`.
struct TableDdl {
    table: String,
    create: String,
}

/// The base tables of the connection's database (`orig`, quoted), with their DDL.
async fn tables(c: &mut MySqlConnection, orig: &str) -> Result<Vec<TableDdl>, VerifyError> {
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT CAST(table_name AS CHAR) FROM information_schema.tables \
         WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE' ORDER BY 1",
    )
    .fetch_all(&mut *c)
    .await
    .map_err(reset_err("listing tables"))?;
    let mut out = Vec::with_capacity(names.len());
    for t in &names {
        let table = quote_ident(t, '`');
        let row = sqlx::query(AssertSqlSafe(format!("SHOW CREATE TABLE {orig}.{table}")))
            .fetch_one(&mut *c)
            .await
            .map_err(reset_err("SHOW CREATE TABLE"))?;
        let create = row.try_get(1).map_err(reset_err("SHOW CREATE TABLE"))?;
        out.push(TableDdl { table, create });
    }
    Ok(out)
}

/// The `CREATE TRIGGER` statements of the connection's database (`orig`, quoted).
async fn triggers(c: &mut MySqlConnection, orig: &str) -> Result<Vec<String>, VerifyError> {
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT CAST(trigger_name AS CHAR) FROM information_schema.triggers \
         WHERE trigger_schema = DATABASE() ORDER BY 1",
    )
    .fetch_all(&mut *c)
    .await
    .map_err(reset_err("listing triggers"))?;
    let mut out = Vec::with_capacity(names.len());
    for t in &names {
        let sql = format!("SHOW CREATE TRIGGER {orig}.{}", quote_ident(t, '`'));
        let row = sqlx::query(AssertSqlSafe(sql))
            .fetch_one(&mut *c)
            .await
            .map_err(reset_err("SHOW CREATE TRIGGER"))?;
        out.push(row.try_get(2).map_err(reset_err("SHOW CREATE TRIGGER"))?);
    }
    Ok(out)
}
