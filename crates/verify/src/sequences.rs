//! Sequences: state the live audit counts as a write (a read-only tool's `nextval()` or
//! `setval()`) that no table row shows.
//!
//! Watched per backend: PostgreSQL's sequences (`last_value`, `is_called`), MariaDB's
//! `CREATE SEQUENCE` objects (`next_not_cached_value`, `cycle_count`), SQLite's
//! `AUTOINCREMENT` counters (`sqlite_sequence`, named `sqlite_sequence.<table>`). A snapshot
//! keeps one 16-byte hash of each sequence's state, never its value.
//!
//! hintaudit-core's only sequence effect is the PostgreSQL oracle's
//! (`TransactionObservation::sequences`: a lock taken for a change, likely evidence, worded
//! `sequence s advanced or set (oracle: …)`), which is not what a snapshot sees; so a moved
//! sequence stays in verify: a [`TableDiff`] of kind `sequence` with `moved` set, and the
//! finding of [`sequence_findings`], named as the core names the effect: `read_only_write`
//! for a tool declaring readOnlyHint true, `sequence s advanced or set (snapshot: its value
//! moved)`, confirmed. As in the core, a moved sequence is a write, neither destructive nor
//! a net change a repeat is judged by (a value a repeat burns is no further effect). A
//! created or dropped sequence is DDL, which the core judge reads (`crate::effect`).
//!
//! Not every move can be seen: a PostgreSQL sequence with `CACHE` above 1 hands out values
//! from a session's cache without touching the value verify reads, and so does a MariaDB
//! sequence with a cache (its default); a sequence verify may not read shows nothing. Such
//! sequences are *blind spots*: advice that readOnlyHint could be loosened is withheld
//! while any exists (`crate::verifier`).

use std::collections::{BTreeMap, BTreeSet};

use hintaudit_core::{Confidence, DeclaredHints, Finding, Hint, Rule};

use crate::objects::{ObjectKind, ObjectState, TableDiff};

/// One sequence as a backend read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawSequence {
    /// The name as reports show it (schema-qualified outside PostgreSQL's current schema).
    pub name: String,
    /// Its state as text (value, and whatever else moves with it), when it could be read.
    pub state: Option<String>,
    /// Why some of its moves cannot be seen, if so.
    pub blind: Option<String>,
    /// The table it belongs to (a PostgreSQL `serial` or identity column's, a SQLite
    /// table's `AUTOINCREMENT` counter), named as reports name tables: ignoring the table
    /// ignores its sequence too.
    pub owner: Option<String>,
}

impl RawSequence {
    /// What a snapshot keeps of it, when it could be read: the hash of its state, and its
    /// table.
    pub fn state(&self) -> Option<ObjectState> {
        Some(ObjectState {
            hash: xxhash_rust::xxh3::xxh3_128(self.state.as_ref()?.as_bytes()),
            owner: self.owner.clone(),
        })
    }
}

/// The sequences that moved, appeared or disappeared between two snapshots, by name;
/// leaving out one that appeared or disappeared with its table (in
/// `tables_made_or_dropped`).
pub(crate) fn diff(
    before: &BTreeMap<String, ObjectState>,
    after: &BTreeMap<String, ObjectState>,
    tables_made_or_dropped: &BTreeSet<&str>,
) -> Vec<TableDiff> {
    let mut names: Vec<&String> = before.keys().chain(after.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter_map(|name| {
            let (b, a) = (before.get(name), after.get(name));
            let with_its_table = a
                .or(b)
                .and_then(|s| s.owner.as_deref())
                .is_some_and(|t| tables_made_or_dropped.contains(t));
            let appeared_or_went = b.is_none() || a.is_none();
            if b.map(|s| s.hash) == a.map(|s| s.hash) || (with_its_table && appeared_or_went) {
                return None;
            }
            Some(TableDiff {
                table: name.clone(),
                kind: ObjectKind::Sequence,
                moved: !appeared_or_went,
                created: b.is_none(),
                dropped: a.is_none(),
                ..TableDiff::default()
            })
        })
        .collect()
}

/// The sequences a call moved (names, in diff order).
pub(crate) fn moved(changes: &[TableDiff]) -> Vec<&str> {
    changes
        .iter()
        .filter(|d| d.moved)
        .map(|d| d.table.as_str())
        .collect()
}

/// The evidence text of moved sequences, worded as the core words a sequence effect:
/// `sequence orders_id_seq advanced or set (snapshot: its value moved)`.
pub(crate) fn evidence(moved: &[&str]) -> Option<String> {
    match moved {
        [] => None,
        [one] => Some(format!(
            "sequence {one} advanced or set (snapshot: its value moved)"
        )),
        many => Some(format!(
            "sequences {} advanced or set (snapshot: their values moved)",
            many.join(", ")
        )),
    }
}

/// The finding a call's moved sequences give under `hints`: `read_only_write` for a tool
/// declaring readOnlyHint true, confirmed; none otherwise.
pub(crate) fn sequence_findings(
    tool: &str,
    hints: DeclaredHints,
    moved: &[&str],
) -> Option<Finding> {
    let text = evidence(moved)?;
    (hints.read_only == Some(true)).then(|| {
        Finding::new(
            tool,
            Rule::ReadOnlyWrite,
            Hint::ReadOnly,
            Confidence::Confirmed,
            text,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sequences(list: &[(&str, &str, Option<&str>)]) -> BTreeMap<String, ObjectState> {
        list.iter()
            .filter_map(|(name, state, owner)| {
                let raw = RawSequence {
                    name: (*name).to_owned(),
                    state: Some((*state).to_owned()),
                    blind: None,
                    owner: owner.map(str::to_owned),
                };
                Some((raw.name.clone(), raw.state()?))
            })
            .collect()
    }

    #[test]
    fn moves_appearances_and_findings() {
        let before = sequences(&[("a_seq", "1", None), ("b_seq", "5", None)]);
        let after = sequences(&[
            ("a_seq", "2", None),
            ("c_seq", "1", None),
            ("t_id_seq", "-", Some("t")),
        ]);
        // t_id_seq came with its table t: part of that table's DDL.
        let d = diff(&before, &after, &["t"].into());
        let got: Vec<(&str, bool, bool, bool)> = d
            .iter()
            .map(|d| (d.table.as_str(), d.moved, d.created, d.dropped))
            .collect();
        assert_eq!(
            got,
            [
                ("a_seq", true, false, false),
                ("b_seq", false, false, true),
                ("c_seq", false, true, false)
            ]
        );
        assert!(
            d.iter()
                .all(|d| d.kind == ObjectKind::Sequence && !d.is_empty())
        );
        assert!(diff(&before, &before, &BTreeSet::new()).is_empty());
        assert_eq!(moved(&d), ["a_seq"]);
        // hints -> the finding's rule: a write, never destructive nor a net change.
        let read_only = DeclaredHints {
            read_only: Some(true),
            ..Default::default()
        };
        let non_destructive_idempotent = DeclaredHints {
            read_only: Some(false),
            destructive: Some(false),
            idempotent: Some(true),
            ..Default::default()
        };
        let rows = [
            (read_only, Some(Rule::ReadOnlyWrite)),
            (non_destructive_idempotent, None),
            (DeclaredHints::default(), None),
        ];
        for (hints, want) in rows {
            let f = sequence_findings("t", hints, &["a_seq"]);
            assert_eq!(f.map(|f| f.rule), want, "{hints:?}");
        }
        assert_eq!(
            sequence_findings("t", read_only, &["a_seq"]).map(|f| f.evidence),
            Some("sequence a_seq advanced or set (snapshot: its value moved)".to_owned())
        );
    }
}
