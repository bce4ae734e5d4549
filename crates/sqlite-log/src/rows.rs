//! A changed row's record read into its image: each stored column's value hashed under the
//! column's name, in the record's storage order (fileformat2.html, "Record Format"; a rowid
//! table stores its columns in declaration order with an INTEGER PRIMARY KEY as NULL, the
//! rowid standing for it; a WITHOUT ROWID table stores its primary key's columns first).

use crate::changes::{Column, Row};
use crate::diff::{RawRow, RowKey};
use crate::record::{self, Affinity, Value};
use crate::schema::Table;
use crate::sql::{Default, TableDef};

/// The image of `raw`, a row of `table`; `None` when its payload is no record.
pub(crate) fn row(table: &Table, raw: &RawRow, seed: u64) -> Option<Row> {
    let values = record::values(&raw.payload)?;
    let key = match &raw.key {
        RowKey::Rowid(r) => vec![record::hash(seed, Affinity::Integer, &Value::Int(*r))],
        RowKey::Key(k) => k.clone(),
    };
    let columns = match &table.def {
        Some(def) => named(def, &values, raw.rowid, seed),
        None => positional(&values, 0, seed),
    };
    Some(Row {
        key,
        rowid: raw.rowid,
        columns,
    })
}

/// Values named by position (`@0`, `@1`, …) from `first`.
fn positional(values: &[Value<'_>], first: usize, seed: u64) -> Vec<Column> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| Column {
            name: format!("@{}", first + i),
            value: Some(record::hash(seed, Affinity::Blob, v)),
        })
        .collect()
}

/// The record's storage order: indexes into `def.columns`.
fn storage_order(def: &TableDef) -> Vec<usize> {
    let stored = (0..def.columns.len()).filter(|i| def.columns[*i].stored);
    if def.without_rowid {
        let pk = def.primary_key.iter().copied();
        pk.clone()
            .chain(stored.filter(|i| !def.primary_key.contains(i)))
            .collect()
    } else {
        stored.collect()
    }
}

/// The column that is an alias of the rowid: a rowid table's single-column primary key
/// declared `INTEGER` (not `PRIMARY KEY DESC` on the column; lang_createtable.html, "ROWIDs
/// and the INTEGER PRIMARY KEY").
fn rowid_alias(def: &TableDef) -> Option<usize> {
    match def.primary_key.as_slice() {
        [i] if !def.without_rowid => def
            .columns
            .get(*i)
            .filter(|c| c.integer && !c.pk_desc)
            .map(|_| *i),
        _ => None,
    }
}

fn named(def: &TableDef, values: &[Value<'_>], rowid: Option<i64>, seed: u64) -> Vec<Column> {
    let order = storage_order(def);
    let alias = rowid_alias(def);
    let mut columns: Vec<Option<Column>> = vec![None; def.columns.len()];
    for (slot, &i) in order.iter().enumerate() {
        let c = &def.columns[i];
        let value = match (values.get(slot), rowid) {
            (Some(Value::Null), Some(r)) if alias == Some(i) => {
                Some(record::hash(seed, c.affinity, &Value::Int(r)))
            }
            (Some(v), _) => Some(record::hash(seed, c.affinity, v)),
            (None, _) => default_hash(&c.default, c.affinity, seed),
        };
        columns[i] = Some(Column {
            name: c.name.clone(),
            value,
        });
    }
    let mut out: Vec<Column> = columns.into_iter().flatten().collect();
    out.extend(positional(
        values.get(order.len()..).unwrap_or_default(),
        order.len(),
        seed,
    ));
    out
}

/// The hash of a DEFAULT an older record reads as, when it is a literal.
fn default_hash(default: &Default, affinity: Affinity, seed: u64) -> Option<u64> {
    let text;
    let value = match default {
        Default::Null => Value::Null,
        Default::Int(i) if affinity == Affinity::Text => {
            text = i.to_string();
            Value::Text(text.as_bytes())
        }
        Default::Int(i) => Value::Int(*i),
        Default::Real(r) => Value::Real(*r),
        Default::Text(t) => Value::Text(t.as_bytes()),
        Default::Blob(b) => Value::Blob(b),
        Default::Unknown => return None,
    };
    Some(record::hash(seed, affinity, &value))
}
