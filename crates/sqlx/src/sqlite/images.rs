//! Row images from SQLite's preupdate hook (the `preupdate-hook` feature): which columns an
//! UPDATE really changed, and whether a trigger made the change (query depth > 0).
//!
//! The hook compares old and new values in place, on the worker thread, without running SQL.
//! Column names come from a per-pool cache the executor fills with `PRAGMA table_info`
//! before the first call-scoped write to a table (once per table, and again after DDL).

use sqlx::sqlite::{
    PreupdateHookResult, Sqlite, SqliteConnection, SqliteOperation, SqliteValueRef,
};
use sqlx::{Decode, Row, TypeInfo, ValueRef};

use super::columns::{Columns, Image};

/// Whether two SQLite values are equal (same storage class and same content).
fn same(a: SqliteValueRef<'_>, b: SqliteValueRef<'_>) -> Option<bool> {
    let (ta, tb) = (
        a.type_info().name().to_owned(),
        b.type_info().name().to_owned(),
    );
    if a.is_null() || b.is_null() {
        return Some(a.is_null() && b.is_null());
    }
    if ta != tb {
        return Some(false);
    }
    Some(match ta.as_str() {
        "INTEGER" | "BOOLEAN" => {
            <i64 as Decode<Sqlite>>::decode(a).ok()? == <i64 as Decode<Sqlite>>::decode(b).ok()?
        }
        "REAL" => {
            let (x, y) = (
                <f64 as Decode<Sqlite>>::decode(a).ok()?,
                <f64 as Decode<Sqlite>>::decode(b).ok()?,
            );
            x.to_bits() == y.to_bits()
        }
        "TEXT" => {
            <&str as Decode<Sqlite>>::decode(a).ok()? == <&str as Decode<Sqlite>>::decode(b).ok()?
        }
        _ => {
            <&[u8] as Decode<Sqlite>>::decode(a).ok()?
                == <&[u8] as Decode<Sqlite>>::decode(b).ok()?
        }
    })
}

/// The image of one preupdate event, and whether a trigger made it.
pub(crate) fn image(r: &PreupdateHookResult<'_>) -> (Image, bool) {
    let nested = r.get_query_depth() > 0;
    if r.operation != SqliteOperation::Update {
        return (Image::Unknown, nested);
    }
    let mut changed = Vec::new();
    for i in 0..r.get_column_count() {
        let (Ok(old), Ok(new)) = (r.get_old_column_value(i), r.get_new_column_value(i)) else {
            return (Image::Unknown, nested);
        };
        match same(old, new) {
            Some(true) => {}
            Some(false) => changed.push(u16::try_from(i).unwrap_or(u16::MAX)),
            None => return (Image::Unknown, nested),
        }
    }
    if r.get_old_row_id().ok() != r.get_new_row_id().ok() {
        // The rowid moved: a change even when every column is equal.
        return (Image::Changed(changed), nested);
    }
    let image = if changed.is_empty() {
        Image::Unchanged
    } else {
        Image::Changed(changed)
    };
    (image, nested)
}

/// Fills the column-name cache for `tables` (lower-cased, maybe `schema.table`) that it does
/// not hold yet, with `PRAGMA table_info` on `conn`. Errors are ignored: names stay unknown.
pub(crate) async fn learn_columns(
    conn: &mut SqliteConnection,
    columns: &Columns,
    tables: &[String],
) {
    for table in tables {
        // The hooks name tables without their schema.
        let (schema, name) = match table.split_once('.') {
            Some((s, t)) => (format!("\"{}\".", s.replace('"', "\"\"")), t),
            None => (String::new(), table.as_str()),
        };
        if columns.get(name).is_some() {
            continue;
        }
        let sql = format!(
            "PRAGMA {schema}table_info(\"{}\")",
            name.replace('"', "\"\"")
        );
        let rows = match sqlx::query(sqlx::AssertSqlSafe(sql))
            .fetch_all(&mut *conn)
            .await
        {
            Ok(rows) => rows,
            Err(_) => continue,
        };
        let names: Vec<String> = rows
            .iter()
            .filter_map(|r| r.try_get::<String, _>("name").ok())
            .map(|n| n.to_lowercase())
            .collect();
        if !names.is_empty() {
            columns.put(name.to_owned(), names);
        }
    }
}
