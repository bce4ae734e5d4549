//! The tables the log is read for: `sqlite_schema`'s rows of type `table` with a root page,
//! each known by its schema row's rowid so that a rename or a moved root page is the same
//! table. `sqlite_schema` itself is followed as the table [`SCHEMA`] (root page 1).

use hashbrown::HashMap;

use crate::record::{Affinity, Value};
use crate::sql::{ColumnDef, Default, TableDef, parse_create_table};

/// A table followed: its schema row's rowid ([`SCHEMA`] for `sqlite_schema`).
pub(crate) type TableId = i64;

/// `sqlite_schema` itself.
pub(crate) const SCHEMA: TableId = i64::MIN;

/// The database's text encoding (header offset 56).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    Utf8,
    Utf16Le,
    Utf16Be,
}

impl Encoding {
    /// Text of this encoding as a string (invalid sequences replaced).
    pub(crate) fn decode(self, bytes: &[u8]) -> String {
        let units = |be: bool| {
            bytes.chunks_exact(2).map(move |c| {
                if be {
                    u16::from_be_bytes([c[0], c[1]])
                } else {
                    u16::from_le_bytes([c[0], c[1]])
                }
            })
        };
        match self {
            Encoding::Utf8 => String::from_utf8_lossy(bytes).into_owned(),
            Encoding::Utf16Le => char::decode_utf16(units(false))
                .map(|c| c.unwrap_or('\u{fffd}'))
                .collect(),
            Encoding::Utf16Be => char::decode_utf16(units(true))
                .map(|c| c.unwrap_or('\u{fffd}'))
                .collect(),
        }
    }
}

/// One table followed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Table {
    /// Its name, lower-cased.
    pub name: String,
    /// Its root page.
    pub root: u32,
    /// Its columns, when its `CREATE TABLE` was read; else its values are named by position.
    pub def: Option<TableDef>,
    /// Stored as an index b-tree keyed by its primary key (WITHOUT ROWID).
    pub without_rowid: bool,
}

impl Table {
    /// `sqlite_schema`: type, name, tbl_name, rootpage, sql.
    fn schema() -> Table {
        let column = |name: &str, affinity| ColumnDef {
            name: name.to_owned(),
            affinity,
            integer: false,
            stored: true,
            default: Default::Null,
            pk_desc: false,
        };
        Table {
            name: "sqlite_schema".to_owned(),
            root: 1,
            def: Some(TableDef {
                columns: vec![
                    column("type", Affinity::Text),
                    column("name", Affinity::Text),
                    column("tbl_name", Affinity::Text),
                    column("rootpage", Affinity::Integer),
                    column("sql", Affinity::Text),
                ],
                primary_key: Vec::new(),
                without_rowid: false,
            }),
            without_rowid: false,
        }
    }

    /// Rows reported in a commit's changes: not SQLite's own (`sqlite_schema`,
    /// `sqlite_sequence`, `sqlite_stat1`, …: the prefix is reserved).
    pub(crate) fn reported(&self) -> bool {
        !self.name.starts_with("sqlite_")
    }
}

/// What a `sqlite_schema` row says, when it is a table with a b-tree of its own.
pub(crate) fn table_of_row(values: &[Value<'_>], encoding: Encoding) -> Option<Table> {
    let text = |i: usize| match values.get(i) {
        Some(Value::Text(t)) => Some(encoding.decode(t)),
        _ => None,
    };
    if text(0)?.as_str() != "table" {
        return None;
    }
    let root = match values.get(3) {
        Some(Value::Int(r)) if *r > 0 => u32::try_from(*r).ok()?,
        _ => return None,
    };
    let name = text(1)?.to_lowercase();
    if name.starts_with("sqlite_") {
        return None;
    }
    let sql = text(4).unwrap_or_default();
    let def = parse_create_table(&sql);
    // A statement not read: WITHOUT ROWID from its words.
    let without_rowid = def.as_ref().map_or_else(
        || {
            let words: Vec<String> = sql
                .split_whitespace()
                .map(str::to_ascii_uppercase)
                .collect();
            words
                .windows(2)
                .any(|w| w[0] == "WITHOUT" && w[1].starts_with("ROWID"))
        },
        |d| d.without_rowid,
    );
    Some(Table {
        name,
        root,
        def,
        without_rowid,
    })
}

/// The tables followed, by id, and which `sqlite_schema` row says what of each.
#[derive(Debug, Clone)]
pub(crate) struct Schema {
    tables: HashMap<TableId, Table>,
    rows: HashMap<i64, TableId>,
    next: TableId,
}

/// What a commit changed in the schema.
#[derive(Debug, Default)]
pub(crate) struct SchemaChange {
    pub created: Vec<TableId>,
    pub dropped: Vec<(TableId, Table)>,
    /// Tables whose root page or definition changed, with their root page before.
    pub altered: Vec<(TableId, u32)>,
}

impl Schema {
    /// Only `sqlite_schema`.
    pub(crate) fn new() -> Schema {
        let mut tables = HashMap::new();
        tables.insert(SCHEMA, Table::schema());
        Schema {
            tables,
            rows: HashMap::new(),
            next: 1,
        }
    }

    pub(crate) fn get(&self, id: TableId) -> Option<&Table> {
        self.tables.get(&id)
    }

    /// Every table's id.
    pub(crate) fn ids(&self) -> Vec<TableId> {
        let mut ids: Vec<TableId> = self.tables.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// One commit's `sqlite_schema` rows: `rows` now read as the tables given (`None`: not a
    /// table followed, or deleted). A table whose row was deleted and another row of the same
    /// name written in the same commit (VACUUM writes the schema anew) stays the same table.
    pub(crate) fn apply(&mut self, rows: Vec<(i64, Option<Table>)>) -> SchemaChange {
        let mut change = SchemaChange::default();
        let mut gone: Vec<TableId> = Vec::new();
        let mut now: Vec<(i64, Table)> = Vec::new();
        for (rowid, table) in rows {
            let was = self.rows.remove(&rowid);
            match (was, table) {
                (Some(id), Some(t)) => self.replace(id, rowid, t, &mut change),
                (Some(id), None) => gone.push(id),
                (None, Some(t)) => now.push((rowid, t)),
                (None, None) => {}
            }
        }
        for (rowid, t) in now {
            match gone
                .iter()
                .position(|id| self.tables.get(id).is_some_and(|old| old.name == t.name))
            {
                Some(i) => {
                    let id = gone.swap_remove(i);
                    self.replace(id, rowid, t, &mut change);
                }
                None => {
                    let id = self.next;
                    self.next += 1;
                    self.rows.insert(rowid, id);
                    self.tables.insert(id, t);
                    change.created.push(id);
                }
            }
        }
        for id in gone {
            if let Some(t) = self.tables.remove(&id) {
                change.dropped.push((id, t));
            }
        }
        change
    }

    fn replace(&mut self, id: TableId, rowid: i64, t: Table, change: &mut SchemaChange) {
        self.rows.insert(rowid, id);
        if let Some(old) = self.tables.insert(id, t.clone())
            && (old.root != t.root || old.def != t.def || old.without_rowid != t.without_rowid)
        {
            change.altered.push((id, old.root));
        }
    }
}
