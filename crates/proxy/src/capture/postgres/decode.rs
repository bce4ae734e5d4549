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
//! orders against the positions read around each call. Only the table and the kind of each
//! change are kept: never a value. A transactional message with the prefix `hintaudit`
//! (the writer trigger's, see install.rs) names the transaction's writer:
//!
//! ```text
//! message: transactional: 1 prefix: hintaudit, sz: 41 content:4242 127.0.0.1 51234 1733330000123456 hintaudit:3fa9c2d1e0b7:3
//! ```

use crate::capture::commit::{CommitBuilder, RowChange};
use crate::capture::ledger::{Commit, Lsn};
use crate::capture::writer::{MESSAGE_PREFIX, Writer};

/// Parses `X/Y` (PostgreSQL's text form of an LSN) into a number.
pub fn parse_lsn(text: &str) -> Option<Lsn> {
    let (hi, lo) = text.trim().split_once('/')?;
    let hi = u64::from_str_radix(hi, 16).ok()?;
    let lo = u64::from_str_radix(lo, 16).ok()?;
    (hi <= u32::MAX as u64 && lo <= u32::MAX as u64).then_some((hi << 32) | lo)
}

/// Folds decoded rows into commits.
#[derive(Debug, Default)]
pub struct Decoder {
    open: Option<CommitBuilder>,
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
        let (table, op) = change(data)?;
        let open = self.open.get_or_insert_with(CommitBuilder::default);
        match op {
            "TRUNCATE" => open.truncate(table),
            "INSERT" => open.rows(table, RowChange::Insert, 1),
            "UPDATE" => open.rows(table, RowChange::Update, 1),
            _ => open.rows(table, RowChange::Delete, 1),
        }
        None
    }
}

/// The writer a transactional `hintaudit` message names.
fn writer(data: &str) -> Option<Writer> {
    let rest = data.strip_prefix("message: transactional: 1 prefix: ")?;
    let rest = rest.strip_prefix(MESSAGE_PREFIX)?.strip_prefix(", sz: ")?;
    let (_, content) = rest.split_once(" content:")?;
    Writer::parse(content)
}

/// `table SCHEMA.NAME: OP: …` → (name, lower-cased and unquoted, without its schema; OP).
fn change(data: &str) -> Option<(String, &'static str)> {
    let rest = data.strip_prefix("table ")?;
    let (at, op) = ["INSERT", "UPDATE", "DELETE", "TRUNCATE"]
        .into_iter()
        .filter_map(|op| rest.find(&format!(": {op}:")).map(|at| (at, op)))
        .min_by_key(|(at, _)| *at)?;
    Some((unqualified(&rest[..at]), op))
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
mod tests {
    use super::*;

    #[test]
    fn lsns() {
        let rows = [
            ("0/21AA058", Some(0x021A_A058)),
            ("16/B374D848", Some((0x16 << 32) | 0xB374_D848)),
            ("zz", None),
            ("1/", None),
        ];
        for (text, want) in rows {
            assert_eq!(parse_lsn(text), want, "{text}");
        }
    }

    #[test]
    fn rows_fold_into_commits() {
        let mut d = Decoder::default();
        let rows = [
            (1, "BEGIN 729"),
            (
                1,
                "table public.\"Items\": INSERT: id[integer]:1 name[text]:'a: DELETE: x'",
            ),
            (
                2,
                "table public.\"Items\": INSERT: id[integer]:2 name[text]:'b'",
            ),
            (3, "table s.notes: UPDATE: id[integer]:1 text[text]:'c'"),
            (3, "table s.notes: DELETE: id[integer]:2"),
            (4, "table public.t: TRUNCATE: (no-flags)"),
            (5, "COMMIT 729"),
        ];
        let mut out = Vec::new();
        for (lsn, data) in rows {
            out.extend(d.row(lsn, data));
        }
        let tables = |c: &Commit| {
            c.tables
                .iter()
                .map(|w| (w.table.clone(), w.inserted, w.updated, w.deleted))
                .collect::<Vec<_>>()
        };
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].lsn, 5);
        assert_eq!(
            tables(&out[0]),
            [("items".into(), 2, 0, 0), ("notes".into(), 0, 1, 1)]
        );
        assert_eq!(out[0].truncated, ["t"]);
        assert_eq!(out[0].writer, None, "no message: no writer");
    }

    #[test]
    fn a_message_names_the_writer() {
        let mut d = Decoder::default();
        let rows = [
            "BEGIN 730",
            "table public.items: UPDATE: id[integer]:1 views[integer]:2",
            "message: transactional: 1 prefix: hintaudit, sz: 44 content:4242 127.0.0.1 51234 17 hintaudit:ab:3",
            "message: transactional: 1 prefix: other, sz: 3 content:1 - - 1 x",
            "COMMIT 730",
            "message: transactional: 0 prefix: hintaudit, sz: 9 content:9 - - 1 y",
        ];
        let out: Vec<Commit> = rows.iter().filter_map(|r| d.row(7, r)).collect();
        assert_eq!(out.len(), 1);
        let writer = out[0].writer.as_ref().expect("named");
        assert_eq!(
            (writer.pid, writer.application_name.as_str()),
            (4242, "hintaudit:ab:3")
        );
        assert_eq!(writer.client.map(|c| c.port()), Some(51234));
    }

    #[test]
    fn names() {
        for (q, want) in [
            ("public.items", "items"),
            ("public.\"Items\"", "items"),
            ("\"a.b\".\"c\"\"d\"", "c\"d"),
        ] {
            assert_eq!(unqualified(q), want, "{q}");
        }
    }
}
