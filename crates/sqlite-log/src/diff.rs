//! One table's rows before and after a commit, paired by rowid (or, for a WITHOUT ROWID
//! table, by primary key): a row only before is deleted, only after inserted, in both with
//! another payload updated. A row that moved to another page (a split, a merge) is in both
//! with the same payload: no change.

use hashbrown::HashMap;

use crate::error::DecodeError;
use crate::page::{Cell, Page, Payload};
use crate::record::{self, Affinity, Value};
use crate::view::{Side, View};

/// How a table's rows are told apart.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Keying<'t> {
    /// By rowid.
    Rowid,
    /// By the first values of the record (a WITHOUT ROWID table's primary key), hashed with
    /// these affinities.
    Prefix(&'t [Affinity]),
}

/// A row's identity in its table.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum RowKey {
    Rowid(i64),
    /// The key values' hashes.
    Key(Vec<u64>),
}

/// A row as one side shows it: its key, rowid and whole payload (the record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawRow {
    pub key: RowKey,
    pub rowid: Option<i64>,
    pub payload: Vec<u8>,
}

/// The rows a commit changed in one table.
#[derive(Debug, Default)]
pub(crate) struct RawChanges {
    pub inserted: Vec<RawRow>,
    pub updated: Vec<(RawRow, RawRow)>,
    pub deleted: Vec<RawRow>,
    /// Rows on the pages compared that are as they were.
    pub unchanged: usize,
}

/// A row found on a page: where, and its cell.
struct Found {
    page: u32,
    rowid: Option<i64>,
    size: u64,
    local: Vec<u8>,
    overflow: Option<u32>,
}

impl Found {
    fn payload(&self) -> Payload<'_> {
        Payload {
            size: self.size,
            local: &self.local,
            overflow: self.overflow,
        }
    }
}

/// The rows on `pages` of `side`, by key.
fn rows(
    view: &mut View<'_, '_>,
    side: Side,
    pages: &[u32],
    keying: Keying<'_>,
    seed: u64,
) -> Result<HashMap<RowKey, Found>, DecodeError> {
    let mut out = HashMap::new();
    for &page in pages {
        let img = view.page(side, page)?;
        let p = Page::parse(page, &img, view.usable())?;
        if !p.kind.holds_rows() {
            continue;
        }
        for i in 0..p.len() {
            let cell: Cell<'_> = p.cell(i)?;
            let Some(payload) = cell.payload else {
                continue;
            };
            let found = Found {
                page,
                rowid: cell.rowid,
                size: payload.size,
                local: payload.local.to_vec(),
                overflow: payload.overflow,
            };
            let key = match (keying, cell.rowid) {
                (Keying::Rowid, Some(r)) => RowKey::Rowid(r),
                (Keying::Rowid, None) => {
                    return Err(DecodeError::corrupt(page, "an index cell in a table"));
                }
                (Keying::Prefix(affinities), _) => {
                    let whole = view.payload(side, page, &payload)?;
                    RowKey::Key(
                        key_of(&whole, affinities, seed)
                            .ok_or(DecodeError::corrupt(page, "a key that is no record"))?,
                    )
                }
            };
            if out.insert(key, found).is_some() {
                return Err(DecodeError::corrupt(page, "one key twice in a b-tree"));
            }
        }
    }
    Ok(out)
}

/// The hashes of the first `affinities.len()` values of `record` (all of them when there are
/// no affinities: a table whose key is not known is keyed by its whole row).
fn key_of(record: &[u8], affinities: &[Affinity], seed: u64) -> Option<Vec<u64>> {
    let values = record::values(record)?;
    if affinities.is_empty() {
        return Some(vec![xxhash_rust::xxh3::xxh3_64_with_seed(record, seed)]);
    }
    let key: Vec<u64> = values
        .iter()
        .zip(affinities)
        .map(|(v, a): (&Value<'_>, &Affinity)| record::hash(seed, *a, v))
        .collect();
    (key.len() == affinities.len()).then_some(key)
}

/// The rows `old_pages` held before the commit against those `new_pages` hold after it.
pub(crate) fn diff(
    view: &mut View<'_, '_>,
    old_pages: &[u32],
    new_pages: &[u32],
    keying: Keying<'_>,
    seed: u64,
) -> Result<RawChanges, DecodeError> {
    let mut old = rows(view, Side::Old, old_pages, keying, seed)?;
    let new = rows(view, Side::New, new_pages, keying, seed)?;
    let mut out = RawChanges::default();
    let mut new_keys: Vec<&RowKey> = new.keys().collect();
    new_keys.sort_unstable_by(|a, b| key_order(a, b));
    for key in new_keys {
        let n = &new[key];
        match old.remove(key) {
            None => out.inserted.push(raw(view, Side::New, key, n)?),
            Some(o) if same(view, &o, n)? => out.unchanged += 1,
            Some(o) => out.updated.push((
                raw(view, Side::Old, key, &o)?,
                raw(view, Side::New, key, n)?,
            )),
        }
    }
    let mut gone: Vec<(RowKey, Found)> = old.into_iter().collect();
    gone.sort_unstable_by(|a, b| key_order(&a.0, &b.0));
    for (key, o) in gone {
        out.deleted.push(raw(view, Side::Old, &key, &o)?);
    }
    Ok(out)
}

fn key_order(a: &RowKey, b: &RowKey) -> std::cmp::Ordering {
    match (a, b) {
        (RowKey::Rowid(a), RowKey::Rowid(b)) => a.cmp(b),
        (RowKey::Key(a), RowKey::Key(b)) => a.cmp(b),
        (RowKey::Rowid(_), RowKey::Key(_)) => std::cmp::Ordering::Less,
        (RowKey::Key(_), RowKey::Rowid(_)) => std::cmp::Ordering::Greater,
    }
}

fn raw(
    view: &mut View<'_, '_>,
    side: Side,
    key: &RowKey,
    f: &Found,
) -> Result<RawRow, DecodeError> {
    Ok(RawRow {
        key: key.clone(),
        rowid: f.rowid,
        payload: view.payload(side, f.page, &f.payload())?,
    })
}

/// Whether a row's payload is the same on both sides: the same cell bytes, and when it
/// spills, the same bytes along both overflow chains (a rewritten chain may reuse its pages).
fn same(view: &mut View<'_, '_>, old: &Found, new: &Found) -> Result<bool, DecodeError> {
    if old.size != new.size || old.local != new.local || old.overflow != new.overflow {
        return Ok(false);
    }
    if old.overflow.is_none() {
        return Ok(true);
    }
    Ok(view.payload(Side::Old, old.page, &old.payload())?
        == view.payload(Side::New, new.page, &new.payload())?)
}
