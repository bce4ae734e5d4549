//! Schema objects other than tables and sequences: indexes, views, functions and
//! procedures, triggers, types. The live audit counts any DDL as a write (and a `DROP` as
//! destructive); verify sees such DDL as an object created, dropped or altered (its
//! definition changed) between two snapshots, and hands it to the core judge as DDL
//! (`crate::effect`).
//!
//! A snapshot keeps one 16-byte hash of each object's definition, never the definition.
//! An object that belongs to a table created or dropped in the same diff (its primary key's
//! index, a trigger on it, a `serial` column's sequence) is part of that table's DDL and is
//! not listed again.

use std::collections::{BTreeMap, BTreeSet};

/// What changed in one table, or in one other schema object (a sequence, an index, a
/// view, …), between two snapshots.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TableDiff {
    /// The table, or the object of `kind`.
    pub table: String,
    /// What the object is: a table (the default), or an object without rows, whose
    /// `created`, `dropped`, `altered` (its definition changed) and, for a sequence,
    /// `moved` say what changed.
    pub kind: ObjectKind,
    /// A sequence's value moved (`nextval`, `setval`, `ALTER SEQUENCE … RESTART`): a write,
    /// not a destructive one.
    pub moved: bool,
    /// Rows present after and not before (by key, or by whole row without a key).
    pub added: u64,
    /// Rows present before and not after.
    pub removed: u64,
    /// Rows whose key stayed and whose other cells changed (keyed tables only).
    pub changed: u64,
    /// The table appeared.
    pub created: bool,
    /// The table disappeared.
    pub dropped: bool,
    /// The table's columns or primary key changed.
    pub altered: bool,
}

impl TableDiff {
    /// Whether anything changed.
    pub fn is_empty(&self) -> bool {
        self.added == 0
            && self.removed == 0
            && self.changed == 0
            && !self.created
            && !self.dropped
            && !self.altered
            && !self.moved
    }
}

/// What kind of object a diff entry is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ObjectKind {
    /// A table: rows added, removed, changed; created, dropped, altered.
    #[default]
    Table,
    /// A sequence: moved, created, dropped (no rows).
    Sequence,
    /// An index (PostgreSQL, MariaDB, SQLite).
    Index,
    /// A view or materialized view (its definition, not a materialized view's rows).
    View,
    /// A function or procedure.
    Function,
    /// A trigger.
    Trigger,
    /// A user-defined type (PostgreSQL enums and domains).
    Type,
}

impl ObjectKind {
    /// The SQL keyword: `TABLE`, `INDEX`, ...
    pub fn sql(self) -> &'static str {
        match self {
            ObjectKind::Table => "TABLE",
            ObjectKind::Sequence => "SEQUENCE",
            ObjectKind::Index => "INDEX",
            ObjectKind::View => "VIEW",
            ObjectKind::Function => "FUNCTION",
            ObjectKind::Trigger => "TRIGGER",
            ObjectKind::Type => "TYPE",
        }
    }

    /// From the names the backends' catalog queries give: `index`, `view`, `function`,
    /// `trigger`, `type`.
    pub(crate) fn from_catalog(kind: &str) -> Option<ObjectKind> {
        Some(match kind {
            "index" => ObjectKind::Index,
            "view" => ObjectKind::View,
            "function" => ObjectKind::Function,
            "trigger" => ObjectKind::Trigger,
            "type" => ObjectKind::Type,
            _ => return None,
        })
    }
}

/// One object as a backend's catalog lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawObject {
    pub kind: ObjectKind,
    /// The name as reports show it (schema-qualified outside PostgreSQL's current schema;
    /// a trigger or MariaDB index as `name on table`, a function with its argument types).
    pub name: String,
    /// Its definition (or a digest of it) as the catalog gives it.
    pub definition: String,
    /// The table it belongs to (an index's, a trigger's), named as reports name tables.
    pub owner: Option<String>,
}

impl RawObject {
    /// One row of a backend's catalog query: (kind as [`ObjectKind::from_catalog`] reads
    /// it, name, owning table, definition); `None` for a kind it does not know.
    pub fn from_row(
        (kind, name, owner, definition): (String, String, Option<String>, Option<String>),
    ) -> Option<RawObject> {
        Some(RawObject {
            kind: ObjectKind::from_catalog(&kind)?,
            name,
            definition: definition.unwrap_or_default(),
            owner,
        })
    }
}

/// An object in a snapshot: the hash of its definition and the table it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ObjectState {
    pub hash: u128,
    pub owner: Option<String>,
}

impl From<RawObject> for ((ObjectKind, String), ObjectState) {
    fn from(o: RawObject) -> Self {
        let hash = xxhash_rust::xxh3::xxh3_128(o.definition.as_bytes());
        (
            (o.kind, o.name),
            ObjectState {
                hash,
                owner: o.owner,
            },
        )
    }
}

/// The objects created, dropped or altered between two snapshots, by kind and name, leaving
/// out those that belong to a table in `tables_made_or_dropped`.
pub(crate) fn diff(
    before: &BTreeMap<(ObjectKind, String), ObjectState>,
    after: &BTreeMap<(ObjectKind, String), ObjectState>,
    tables_made_or_dropped: &BTreeSet<&str>,
) -> Vec<TableDiff> {
    let mut keys: Vec<&(ObjectKind, String)> = before.keys().chain(after.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|key| {
            let (b, a) = (before.get(key), after.get(key));
            let owner = a.or(b).and_then(|s| s.owner.as_deref());
            if owner.is_some_and(|t| tables_made_or_dropped.contains(t)) {
                return None;
            }
            let altered = matches!((b, a), (Some(b), Some(a)) if b.hash != a.hash);
            (b.is_none() || a.is_none() || altered).then(|| TableDiff {
                table: key.1.clone(),
                kind: key.0,
                created: b.is_none(),
                dropped: a.is_none(),
                altered,
                ..TableDiff::default()
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn objects(
        list: &[(ObjectKind, &str, &str, Option<&str>)],
    ) -> BTreeMap<(ObjectKind, String), ObjectState> {
        list.iter()
            .map(|(kind, name, def, owner)| {
                RawObject {
                    kind: *kind,
                    name: (*name).to_owned(),
                    definition: (*def).to_owned(),
                    owner: owner.map(str::to_owned),
                }
                .into()
            })
            .collect()
    }

    #[test]
    fn created_dropped_altered_and_owned_by_a_new_table() {
        use ObjectKind::*;
        let before = objects(&[
            (Index, "items_name", "btree (name)", Some("items")),
            (View, "cheap", "SELECT 1", None),
            (Function, "f(integer)", "body", None),
        ]);
        let after = objects(&[
            (Index, "items_name", "btree (name)", Some("items")),
            (View, "cheap", "SELECT 2", None),
            (Trigger, "audit on items", "AFTER INSERT", Some("items")),
            (Index, "notes_pkey", "btree (id)", Some("notes")),
        ]);
        let made: BTreeSet<&str> = ["notes"].into();
        let d = diff(&before, &after, &made);
        let got: Vec<(ObjectKind, &str, bool, bool, bool)> = d
            .iter()
            .map(|d| (d.kind, d.table.as_str(), d.created, d.dropped, d.altered))
            .collect();
        // (kind, name, created, dropped, altered), in kind order; notes_pkey came with notes.
        assert_eq!(
            got,
            [
                (View, "cheap", false, false, true),
                (Function, "f(integer)", false, true, false),
                (Trigger, "audit on items", true, false, false),
            ]
        );
        assert!(diff(&before, &before, &BTreeSet::new()).is_empty());
        assert_eq!(ObjectKind::from_catalog("view"), Some(View));
        assert_eq!(ObjectKind::from_catalog("table"), None);
    }
}
