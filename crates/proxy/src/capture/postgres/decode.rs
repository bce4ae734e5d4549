//! PostgreSQL's `test_decoding` output, one row at a time, into [`Commit`]s.
//!
//! The rows `pg_logical_slot_get_changes` returns with that plugin look like:
//!
//! ```text
//! BEGIN 729
//! table public."Items": INSERT: id[integer]:1 name[text]:'a'
//! table public.items: UPDATE: id[integer]:1 name[text]:'c'
//! table public.items: DELETE: id[integer]:2
//! table public.items: TRUNCATE: (no-flags)
//! COMMIT 729
//! ```
//!
//! The `lsn` of the `COMMIT` row is the end of the commit record, which is what the ledger
//! orders against the positions read around each call. Of each row, the table and the kind
//! of change are kept, and its columns as hashes (images.rs): an update's new tuple is
//! compared with its old tuple when logged whole (`REPLICA IDENTITY FULL`), else with the
//! last image of the same key read, the key's columns asked of the catalog (keys.rs). Never
//! a value. A transactional message with the prefix `hintaudit`
//! (the writer trigger's, see install.rs) names the transaction's writer:
//!
//! ```text
//! message: transactional: 1 prefix: hintaudit, sz: 41 content:4242 127.0.0.1 51234 1733330000123456 hintaudit:3fa9c2d1e0b7:3
//! ```

use hintaudit_core::RowImage;
use lru::LruCache;

use crate::capture::commit::{CommitBuilder, RowChange};
use crate::capture::images::{Column, EmptyTables, RowImages, ValueHasher, tables_bound};
use crate::capture::ledger::{Commit, Lsn};
use crate::capture::writer::{MESSAGE_PREFIX, Writer};

/// Parses `X/Y` (PostgreSQL's text form of an LSN) into a number.
pub fn parse_lsn(text: &str) -> Option<Lsn> {
    let (hi, lo) = text.trim().split_once('/')?;
    let hi = u64::from_str_radix(hi, 16).ok()?;
    let lo = u64::from_str_radix(lo, 16).ok()?;
    (hi <= u32::MAX as u64 && lo <= u32::MAX as u64).then_some((hi << 32) | lo)
}

/// An LSN as PostgreSQL writes it (`16/B374D848`), for [`parse_lsn`].
pub fn format_lsn(lsn: Lsn) -> String {
    format!("{:X}/{:X}", lsn >> 32, lsn & 0xFFFF_FFFF)
}

/// Folds decoded rows into commits, comparing row images as it goes.
#[derive(Debug)]
pub struct Decoder {
    open: Option<CommitBuilder>,
    /// Each table's key columns (its replica identity's, else its primary key's), by the
    /// qualified name the log writes; `None`: it has none. At most
    /// [`MAX_TABLES`](crate::capture::images::MAX_TABLES), least recently used first out (a
    /// table forgotten is asked of the catalog again).
    keys: LruCache<String, Option<Vec<String>>>,
    images: RowImages,
    empty: EmptyTables,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder {
            open: None,
            keys: LruCache::new(tables_bound()),
            images: RowImages::default(),
            empty: EmptyTables::default(),
        }
    }
}

impl Decoder {
    /// One row (`lsn`, `data`); a [`Commit`] when the row ends a transaction. Rows it does
    /// not know (another prefix's message, a future plugin's output) are skipped.
    pub fn row(&mut self, lsn: Lsn, data: &str) -> Option<Commit> {
        if data.starts_with("BEGIN") {
            self.open = Some(CommitBuilder::default());
            return None;
        }
        if data.starts_with("COMMIT") {
            return Some(self.open.take().unwrap_or_default().finish(lsn));
        }
        if let Some(writer) = writer(data) {
            self.open
                .get_or_insert_with(CommitBuilder::default)
                .writer(writer);
            return None;
        }
        let (qualified, op, tuple) = change(data)?;
        let table = unqualified(qualified);
        match op {
            "TRUNCATE" => {
                let empty = self.empty.truncated(qualified);
                self.builder().truncate(table, empty);
            }
            "INSERT" => {
                self.empty.inserted(qualified);
                let new = self.columns(tuple);
                let key = self.key(qualified, &new);
                self.images.inserted(qualified, key.as_deref(), &new);
                self.builder().rows(table, RowChange::Insert, 1);
            }
            "UPDATE" => {
                let image = self.updated(qualified, tuple);
                let open = self.builder();
                open.image(&table, image);
                open.rows(table, RowChange::Update, 1);
            }
            _ => {
                let old = self.columns(tuple);
                let key = self.key(qualified, &old);
                self.images.deleted(qualified, key.as_deref());
                self.builder().rows(table, RowChange::Delete, 1);
            }
        }
        None
    }

    fn builder(&mut self) -> &mut CommitBuilder {
        self.open.get_or_insert_with(CommitBuilder::default)
    }

    /// An UPDATE's tuples (`old-key: … new-tuple: …`, or the new tuple alone) compared: the
    /// old tuple when it is whole (`REPLICA IDENTITY FULL`), else the row's last image read.
    fn updated(&mut self, qualified: &str, tuple: &str) -> RowImage {
        let (old, new) = match tuple.strip_prefix("old-key: ") {
            Some(rest) => {
                let (old, rest) = columns_until_new_tuple(rest);
                (
                    Some(old),
                    rest.trim_start()
                        .strip_prefix("new-tuple: ")
                        .unwrap_or(rest),
                )
            }
            None => (None, tuple),
        };
        let hasher = self.images.hasher();
        let old = old.map(|o| hashed(hasher, o));
        let new = self.columns(new);
        let whole = old
            .as_ref()
            .filter(|o| new.iter().all(|c| o.iter().any(|x| x.name == c.name)));
        let new_key = self.key(qualified, &new);
        let old_key = match &old {
            Some(o) => self.key(qualified, o),
            None => new_key.clone(),
        };
        self.images.updated(
            qualified,
            old_key.as_deref(),
            new_key.as_deref(),
            whole.map(Vec::as_slice),
            &new,
        )
    }

    fn columns(&self, tuple: &str) -> Vec<Column> {
        hashed(self.images.hasher(), columns_until_new_tuple(tuple).0)
    }

    /// The hashes of `row`'s key columns, in the key's order; `None` when the table's key is
    /// not known or the row lacks one of them.
    fn key(&mut self, qualified: &str, row: &[Column]) -> Option<Vec<u64>> {
        let names = self.keys.get(qualified)?.as_ref()?;
        names
            .iter()
            .map(|n| row.iter().find(|c| c.name == *n).and_then(|c| c.value))
            .collect()
    }

    /// The tables `data` (rows about to be read) names whose key columns are not known yet,
    /// as the log qualifies them: ask the database ([`Decoder::learn_key`]) before reading.
    pub fn unknown_tables<'a>(&self, data: impl Iterator<Item = &'a str>) -> Vec<String> {
        let mut unknown: Vec<String> = data
            .filter_map(|d| change(d).map(|(q, _, _)| q))
            .filter(|q| !self.keys.contains(*q))
            .map(str::to_owned)
            .collect();
        unknown.sort();
        unknown.dedup();
        unknown
    }

    /// `qualified`'s key columns (lower-cased; `None`: it has no key).
    pub fn learn_key(&mut self, qualified: String, key: Option<Vec<String>>) {
        self.keys.put(qualified, key);
    }
}

/// The writer a transactional `hintaudit` message names.
fn writer(data: &str) -> Option<Writer> {
    let rest = data.strip_prefix("message: transactional: 1 prefix: ")?;
    let rest = rest.strip_prefix(MESSAGE_PREFIX)?.strip_prefix(", sz: ")?;
    let (_, content) = rest.split_once(" content:")?;
    Writer::parse(content)
}

/// `table SCHEMA.NAME: OP: TUPLE` → (the qualified name as written, OP, TUPLE).
fn change(data: &str) -> Option<(&str, &'static str, &str)> {
    let rest = data.strip_prefix("table ")?;
    let (at, op) = ["INSERT", "UPDATE", "DELETE", "TRUNCATE"]
        .into_iter()
        .filter_map(|op| rest.find(&format!(": {op}:")).map(|at| (at, op)))
        .min_by_key(|(at, _)| *at)?;
    let tuple = &rest[at + op.len() + 3..];
    Some((&rest[..at], op, tuple.trim_start()))
}

/// A tuple's columns, `name[type]:value` each, as (name lower-cased and unquoted, type,
/// value as written), up to `new-tuple:` or the end; and the rest.
fn columns_until_new_tuple(mut s: &str) -> (Vec<(String, &str, &str)>, &str) {
    let mut out = Vec::new();
    loop {
        s = s.trim_start();
        if s.is_empty() || s.starts_with("new-tuple:") || s.starts_with('(') {
            return (out, s);
        }
        let Some((name, rest)) = column_name(s) else {
            return (out, s);
        };
        let Some((ty, rest)) = rest.strip_prefix('[').and_then(|r| r.split_once("]:")) else {
            return (out, s);
        };
        let (value, rest) = value(rest);
        out.push((name, ty, value));
        s = rest;
    }
}

/// A column's name at the start of `s` (quoted or not) up to its `[`.
fn column_name(s: &str) -> Option<(String, &str)> {
    if let Some(quoted) = s.strip_prefix('"') {
        let (text, rest) = quoted_text(quoted, '"')?;
        return Some((text.replace("\"\"", "\""), rest));
    }
    let at = s.find('[')?;
    Some((s[..at].to_lowercase(), &s[at..]))
}

/// A value at the start of `s`: `'quoted'` (with `''` inside) or up to the next space.
fn value(s: &str) -> (&str, &str) {
    if let Some(quoted) = s.strip_prefix('\'') {
        return quoted_text(quoted, '\'').unwrap_or((quoted, ""));
    }
    let at = s.find(' ').unwrap_or(s.len());
    (&s[..at], &s[at..])
}

/// The text up to the closing `quote` (a doubled quote is part of it), and what follows.
fn quoted_text(s: &str, quote: char) -> Option<(&str, &str)> {
    let bytes = s.as_bytes();
    let q = quote as u8;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == q {
            if bytes.get(i + 1) == Some(&q) {
                i += 2;
                continue;
            }
            return Some((&s[..i], &s[i + 1..]));
        }
        i += 1;
    }
    None
}

/// Parsed columns as [`Column`]s: the value's hash (of its type and text), never the value;
/// `unchanged-toast-datum` (a value the log left out) as none.
fn hashed(h: ValueHasher, cols: Vec<(String, &str, &str)>) -> Vec<Column> {
    cols.into_iter()
        .map(|(name, ty, value)| Column {
            name,
            value: (value != "unchanged-toast-datum")
                .then(|| h.hash(format!("{ty}\0{value}").as_bytes())),
        })
        .collect()
}

/// The last identifier of a qualified name, unquoted (`public."Items"` → `items`).
fn unqualified(name: &str) -> String {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = name.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            '.' if !quoted => parts.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    parts.push(cur);
    parts.pop().unwrap_or_default().to_lowercase()
}

#[cfg(test)]
mod tests;
