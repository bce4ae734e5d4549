//! Snapshots of the watched tables and the diff between two of them.
//!
//! A snapshot keeps, per table, one `(key hash, row hash)` pair of 16 + 16 bytes per row
//! (XXH3-128), sorted by key hash, and a table digest: never the row data. Rows are keyed by their
//! primary key, or by the whole row when the table has none (then the snapshot is a multiset
//! of row hashes). Cells are hashed with their column names, the columns sorted by name, so a
//! table rebuilt with its columns in another order snapshots the same.

use std::collections::{BTreeMap, BTreeSet};

pub use crate::objects::TableDiff;
use crate::objects::{ObjectKind, ObjectState};

/// One cell value as a backend decoded it, before hashing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Cell<'a> {
    /// SQL NULL.
    Null,
    /// An integer (SQLite INTEGER).
    Int(i64),
    /// A float (SQLite REAL), hashed by its bits.
    Real(f64),
    /// Text; PostgreSQL and MySQL values arrive as their text form.
    Text(&'a str),
    /// Bytes (SQLite BLOB).
    Blob(&'a [u8]),
}

impl Cell<'_> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Cell::Null => out.push(0),
            Cell::Int(i) => {
                out.push(1);
                out.extend_from_slice(&i.to_le_bytes());
            }
            Cell::Real(f) => {
                out.push(2);
                out.extend_from_slice(&f.to_bits().to_le_bytes());
            }
            Cell::Text(s) => {
                out.push(3);
                out.extend_from_slice(&(s.len() as u64).to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
            Cell::Blob(b) => {
                out.push(4);
                out.extend_from_slice(&(b.len() as u64).to_le_bytes());
                out.extend_from_slice(b);
            }
        }
    }
}

/// The 128-bit hash of one row or key, and of a table digest: XXH3-128. On inputs this short
/// it is many times faster than BLAKE3 (a scan hashes every row; BLAKE3 made a 100,000-row
/// snapshot take 245 ms against 104 ms). It is not cryptographic: collisions are a 2^-64
/// matter at a billion rows, and the data is the test database's.
fn hash16(bytes: &[u8]) -> u128 {
    xxhash_rust::xxh3::xxh3_128(bytes)
}

/// The shape of one table as the catalog describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableShape {
    /// The table name as reports show it (schema-qualified outside PostgreSQL's current
    /// schema).
    pub name: String,
    /// The table as SQL names it, quoted.
    pub sql_name: String,
    /// Watched columns, sorted by name.
    pub columns: Vec<String>,
    /// Indexes into `columns` of the primary key, in key order; empty when there is none.
    pub key: Vec<usize>,
    /// Per column: whether the backend must read it as bytes (MySQL binary types).
    pub binary: Vec<bool>,
}

/// Builds one table's snapshot from rows streamed by a backend.
pub(crate) struct TableScan {
    shape: TableShape,
    /// Per column: part of the primary key. Key cells are hashed in column order.
    is_key: Vec<bool>,
    rows: Vec<(u128, u128)>,
    row_buf: Vec<u8>,
    key_buf: Vec<u8>,
}

impl TableScan {
    /// A scan of a table of this shape.
    pub fn new(shape: TableShape) -> Self {
        let is_key = (0..shape.columns.len())
            .map(|i| shape.key.contains(&i))
            .collect();
        TableScan {
            shape,
            is_key,
            rows: Vec::new(),
            row_buf: Vec::with_capacity(256),
            key_buf: Vec::with_capacity(64),
        }
    }

    /// Adds one row; `cells` follow the order of [`TableShape::columns`].
    #[cfg(test)]
    pub fn push(&mut self, cells: &[Cell<'_>]) {
        for (i, cell) in cells.iter().enumerate() {
            self.cell(i, cell);
        }
        self.end_row();
    }

    /// Adds cell `i` (in [`TableShape::columns`] order) of the current row; cells must come
    /// in column order, then [`TableScan::end_row`].
    pub fn cell(&mut self, i: usize, cell: &Cell<'_>) {
        let Some(name) = self.shape.columns.get(i) else {
            return;
        };
        self.row_buf
            .extend_from_slice(&(name.len() as u32).to_le_bytes());
        self.row_buf.extend_from_slice(name.as_bytes());
        cell.encode(&mut self.row_buf);
        if self.is_key.get(i).copied().unwrap_or(false) {
            cell.encode(&mut self.key_buf);
        }
    }

    /// Ends the current row: hashes it (and its key) and starts the next.
    pub fn end_row(&mut self) {
        let row = hash16(&self.row_buf);
        if self.shape.key.is_empty() {
            self.rows.push((row, 0));
        } else {
            self.rows.push((hash16(&self.key_buf), row));
        }
        self.row_buf.clear();
        self.key_buf.clear();
    }

    /// Finishes the scan: sorts, folds duplicate rows of key-less tables into counts, and
    /// computes the digest.
    pub fn finish(mut self) -> TableSnapshot {
        self.rows.sort_unstable();
        let keyed = !self.shape.key.is_empty();
        if !keyed {
            // Multiset: (row hash, occurrences).
            let mut folded: Vec<(u128, u128)> = Vec::with_capacity(self.rows.len());
            for (row, _) in self.rows {
                match folded.last_mut() {
                    Some(last) if last.0 == row => last.1 += 1,
                    _ => folded.push((row, 1)),
                }
            }
            self.rows = folded;
        }
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        for c in &self.shape.columns {
            hasher.update(&(c.len() as u32).to_le_bytes());
            hasher.update(c.as_bytes());
        }
        hasher.update(&[u8::from(keyed)]);
        for (k, v) in &self.rows {
            hasher.update(&k.to_le_bytes());
            hasher.update(&v.to_le_bytes());
        }
        let digest = hasher.digest128().to_le_bytes();
        TableSnapshot {
            shape: self.shape,
            rows: self.rows,
            digest,
        }
    }
}

/// One table in a snapshot: hashes only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableSnapshot {
    shape: TableShape,
    /// Keyed: `(key hash, row hash)`; key-less: `(row hash, count)`. Sorted.
    rows: Vec<(u128, u128)>,
    digest: [u8; 16],
}

impl TableSnapshot {
    /// Rows in the table.
    pub fn row_count(&self) -> u64 {
        if self.shape.key.is_empty() {
            self.rows.iter().map(|(_, n)| *n as u64).sum()
        } else {
            self.rows.len() as u64
        }
    }
}

/// Every watched table, sequence and other schema object at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub tables: BTreeMap<String, TableSnapshot>,
    /// Each sequence's state hash (`crate::sequences`), by name.
    pub sequences: BTreeMap<String, ObjectState>,
    /// Each other schema object's definition hash (`crate::objects`), by kind and name.
    pub objects: BTreeMap<(ObjectKind, String), ObjectState>,
}

impl Snapshot {
    /// Rows in all tables.
    #[cfg(test)]
    pub fn row_count(&self) -> u64 {
        self.tables.values().map(TableSnapshot::row_count).sum()
    }
}

/// The difference between two snapshots: tables with changes only, by name, then
/// sequences that moved, appeared or disappeared, by name, then other objects created,
/// dropped or altered, by kind and name (not those of a table created or dropped here).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Diff {
    pub tables: Vec<TableDiff>,
}

impl Diff {
    /// Compares two snapshots.
    pub fn between(before: &Snapshot, after: &Snapshot) -> Diff {
        let mut names: Vec<&String> = before.tables.keys().chain(after.tables.keys()).collect();
        names.sort();
        names.dedup();
        let mut tables = Vec::new();
        for name in names {
            let d = match (before.tables.get(name), after.tables.get(name)) {
                (Some(b), Some(a)) if b.digest == a.digest => continue,
                (Some(b), Some(a)) => table_diff(name, b, a),
                (None, Some(a)) => TableDiff {
                    table: name.clone(),
                    added: a.row_count(),
                    created: true,
                    ..TableDiff::default()
                },
                (Some(b), None) => TableDiff {
                    table: name.clone(),
                    removed: b.row_count(),
                    dropped: true,
                    ..TableDiff::default()
                },
                (None, None) => continue,
            };
            if !d.is_empty() {
                tables.push(d);
            }
        }
        let made: BTreeSet<&str> = tables
            .iter()
            .filter(|d| d.created || d.dropped)
            .map(|d| d.table.as_str())
            .collect();
        let mut more = crate::sequences::diff(&before.sequences, &after.sequences, &made);
        more.extend(crate::objects::diff(&before.objects, &after.objects, &made));
        tables.extend(more);
        Diff { tables }
    }

    /// Whether nothing changed.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }
}

fn table_diff(name: &str, b: &TableSnapshot, a: &TableSnapshot) -> TableDiff {
    let mut d = TableDiff {
        table: name.to_owned(),
        altered: b.shape.columns != a.shape.columns || b.shape.key != a.shape.key,
        ..TableDiff::default()
    };
    let keyed = !a.shape.key.is_empty();
    let keyed_before = !b.shape.key.is_empty();
    if keyed != keyed_before {
        // Keyed one side only: the hashes mean different things; count whole tables.
        d.removed = b.row_count();
        d.added = a.row_count();
        return d;
    }
    if d.altered && !keyed {
        // New or dropped columns change every row's hash, not its data: count rows only.
        let (nb, na) = (b.row_count(), a.row_count());
        d.added = na.saturating_sub(nb);
        d.removed = nb.saturating_sub(na);
        return d;
    }
    let (mut i, mut j) = (0, 0);
    let (br, ar) = (&b.rows, &a.rows);
    while i < br.len() || j < ar.len() {
        match (br.get(i), ar.get(j)) {
            (Some(x), Some(y)) if x.0 == y.0 => {
                if keyed {
                    // After ALTER TABLE every row hashes differently: the DDL is the change
                    // (`altered`), not an overwrite of each row.
                    d.changed += u64::from(x.1 != y.1 && !d.altered);
                } else if y.1 > x.1 {
                    d.added += (y.1 - x.1) as u64;
                } else {
                    d.removed += (x.1 - y.1) as u64;
                }
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x.0 < y.0 => {
                d.removed += if keyed { 1 } else { x.1 as u64 };
                i += 1;
            }
            (Some(_), Some(y)) => {
                d.added += if keyed { 1 } else { y.1 as u64 };
                j += 1;
            }
            (Some(x), None) => {
                d.removed += if keyed { 1 } else { x.1 as u64 };
                i += 1;
            }
            (None, Some(y)) => {
                d.added += if keyed { 1 } else { y.1 as u64 };
                j += 1;
            }
            (None, None) => break,
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(cols: &[&str], key: &[usize]) -> TableShape {
        TableShape {
            name: "t".into(),
            sql_name: "\"t\"".into(),
            columns: cols.iter().map(|c| c.to_string()).collect(),
            key: key.to_vec(),
            binary: vec![false; cols.len()],
        }
    }

    fn snap(shape: TableShape, rows: &[Vec<Cell<'_>>]) -> Snapshot {
        let mut scan = TableScan::new(shape);
        for r in rows {
            scan.push(r);
        }
        let mut s = Snapshot::default();
        s.tables.insert("t".into(), scan.finish());
        s
    }

    #[test]
    fn keyed_rows_added_removed_changed() {
        use Cell::*;
        let before = snap(
            shape(&["id", "name"], &[0]),
            &[
                vec![Int(1), Text("a")],
                vec![Int(2), Text("b")],
                vec![Int(3), Null],
            ],
        );
        let after = snap(
            shape(&["id", "name"], &[0]),
            &[
                vec![Int(1), Text("a")],
                vec![Int(3), Text("c")],
                vec![Int(4), Text("d")],
            ],
        );
        let d = Diff::between(&before, &after);
        assert_eq!(
            (d.tables[0].added, d.tables[0].removed, d.tables[0].changed),
            (1, 1, 1)
        );
        assert!(Diff::between(&before, &before).is_empty());
    }

    #[test]
    fn keyless_rows_are_a_multiset() {
        use Cell::*;
        let row = vec![Text("x"), Real(1.5)];
        let before = snap(shape(&["a", "b"], &[]), &[row.clone(), row.clone()]);
        let after = snap(shape(&["a", "b"], &[]), std::slice::from_ref(&row));
        let d = Diff::between(&before, &after);
        assert_eq!((d.tables[0].added, d.tables[0].removed), (0, 1));
        assert_eq!(before.row_count(), 2);
        // A changed row in a key-less table is one removed and one added.
        let changed = snap(
            shape(&["a", "b"], &[]),
            &[row.clone(), vec![Text("x"), Real(2.5)]],
        );
        let d = Diff::between(&before, &changed);
        assert_eq!((d.tables[0].added, d.tables[0].removed), (1, 1));
    }

    #[test]
    fn cells_of_different_types_hash_apart() {
        use Cell::*;
        // NULL vs empty text vs empty blob vs 0 vs 0.0 vs -0.0: all distinct rows.
        let cells = [
            Null,
            Text(""),
            Blob(b""),
            Int(0),
            Real(0.0),
            Real(-0.0),
            Text("1"),
            Int(1),
        ];
        let rows: Vec<Vec<Cell<'_>>> = cells.iter().map(|c| vec![*c]).collect();
        let s = snap(shape(&["v"], &[]), &rows);
        assert_eq!(s.tables["t"].rows.len(), cells.len());
        // Text and blob concatenations cannot collide across cells.
        let a = snap(shape(&["x", "y"], &[]), &[vec![Text("ab"), Text("c")]]);
        let b = snap(shape(&["x", "y"], &[]), &[vec![Text("a"), Text("bc")]]);
        assert!(!Diff::between(&a, &b).is_empty());
    }

    #[test]
    fn created_dropped_and_altered_tables() {
        use Cell::*;
        let empty = Snapshot::default();
        let one = snap(shape(&["id"], &[0]), &[vec![Int(1)], vec![Int(2)]]);
        let d = Diff::between(&empty, &one);
        assert!(d.tables[0].created && d.tables[0].added == 2);
        let d = Diff::between(&one, &empty);
        assert!(d.tables[0].dropped && d.tables[0].removed == 2);
        let wider = snap(
            shape(&["extra", "id"], &[1]),
            &[vec![Null, Int(1)], vec![Null, Int(2)]],
        );
        let d = Diff::between(&one, &wider);
        assert!(d.tables[0].altered);
        assert_eq!(d.tables[0].changed, 0, "ADD COLUMN changes no row's data");
        let keyless = snap(shape(&["id"], &[]), &[vec![Int(1)]]);
        let keyless_wider = snap(shape(&["extra", "id"], &[]), &[vec![Null, Int(1)]]);
        let d = Diff::between(&keyless, &keyless_wider);
        assert!(d.tables[0].altered);
        assert_eq!((d.tables[0].added, d.tables[0].removed), (0, 0));
    }
}
