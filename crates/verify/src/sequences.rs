//! Sequences: state the live audit counts as a write (a read-only tool's `nextval()` or
//! `setval()`) that no table row shows.
//!
//! Watched per backend: PostgreSQL's sequences (`pg_sequences.last_value`), MariaDB's
//! `CREATE SEQUENCE` objects (`next_not_cached_value`, `cycle_count`), SQLite's
//! `AUTOINCREMENT` counters (`sqlite_sequence`, named `sqlite_sequence.<table>`). A snapshot
//! keeps one 16-byte hash of each sequence's state, never its value.
//!
//! hintaudit-core has no effect type for a sequence, so a moved sequence stays in verify:
//! a [`TableDiff`] with `sequence` and `moved` set, and the findings of
//! [`sequence_findings`] (the core rule ids: `read_only_write` for a tool declaring
//! readOnlyHint true, `idempotency_broken` when a clean repeat moved it again). A moved
//! sequence is a write, not a destructive one. A created or dropped sequence is DDL, which
//! the core judge reads (`crate::effect`).
//!
//! Not every move can be seen: a PostgreSQL sequence with `CACHE` above 1 hands out values
//! from a session's cache without touching the value verify reads, and so does a MariaDB
//! sequence with a cache (its default); a sequence verify may not read shows nothing. Such
//! sequences are *blind spots*: advice that the hint readOnlyHint or idempotentHint could be
//! loosened is withheld while any exists (`crate::verifier`).

use std::collections::BTreeMap;

use hintaudit_core::{Confidence, DeclaredHints, Finding, Hint, Rule};

use crate::snapshot::TableDiff;

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

/// The hash a snapshot keeps of a sequence's state.
pub(crate) fn state_hash(state: &str) -> u128 {
    xxhash_rust::xxh3::xxh3_128(state.as_bytes())
}

/// The sequences that moved, appeared or disappeared between two snapshots, by name.
pub(crate) fn diff(
    before: &BTreeMap<String, u128>,
    after: &BTreeMap<String, u128>,
) -> Vec<TableDiff> {
    let mut names: Vec<&String> = before.keys().chain(after.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter_map(|name| {
            let (b, a) = (before.get(name), after.get(name));
            (b != a).then(|| TableDiff {
                table: name.clone(),
                sequence: true,
                moved: b.is_some() && a.is_some(),
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

/// The evidence text of moved sequences: `sequence orders_id_seq moved (nextval or
/// setval)`.
pub(crate) fn evidence(moved: &[&str]) -> Option<String> {
    match moved {
        [] => None,
        [one] => Some(format!("sequence {one} moved (nextval or setval)")),
        many => Some(format!(
            "sequences {} moved (nextval or setval)",
            many.join(", ")
        )),
    }
}

/// The findings a call's moved sequences give under `hints`: `read_only_write` for a tool
/// declaring readOnlyHint true; `idempotency_broken` for one declaring idempotentHint true
/// (readOnlyHint not true) when the call was a clean repeat (`repeat`).
pub(crate) fn sequence_findings(
    tool: &str,
    hints: DeclaredHints,
    moved: &[&str],
    repeat: bool,
) -> Vec<Finding> {
    let Some(text) = evidence(moved) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if hints.read_only == Some(true) {
        out.push(Finding::new(
            tool,
            Rule::ReadOnlyWrite,
            Hint::ReadOnly,
            Confidence::Confirmed,
            text,
        ));
    } else if repeat && hints.idempotent == Some(true) {
        out.push(Finding::new(
            tool,
            Rule::IdempotencyBroken,
            Hint::Idempotent,
            Confidence::Confirmed,
            format!("repeat with the same arguments: {text}"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_appearances_and_findings() {
        let before: BTreeMap<String, u128> = [
            ("a_seq".into(), state_hash("1")),
            ("b_seq".into(), state_hash("5")),
        ]
        .into();
        let after: BTreeMap<String, u128> = [
            ("a_seq".into(), state_hash("2")),
            ("c_seq".into(), state_hash("1")),
        ]
        .into();
        let d = diff(&before, &after);
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
        assert!(d.iter().all(|d| d.sequence && !d.is_empty()));
        assert!(diff(&before, &before).is_empty());
        assert_eq!(moved(&d), ["a_seq"]);
        // (hints, repeat) -> rules
        let read_only = DeclaredHints {
            read_only: Some(true),
            ..Default::default()
        };
        let idempotent = DeclaredHints {
            read_only: Some(false),
            idempotent: Some(true),
            ..Default::default()
        };
        let rows = [
            (read_only, false, vec![Rule::ReadOnlyWrite]),
            (idempotent, false, vec![]),
            (idempotent, true, vec![Rule::IdempotencyBroken]),
            (DeclaredHints::default(), true, vec![]),
        ];
        for (hints, repeat, want) in rows {
            let f = sequence_findings("t", hints, &["a_seq"], repeat);
            assert_eq!(
                f.iter().map(|f| f.rule).collect::<Vec<_>>(),
                want,
                "{hints:?}"
            );
        }
        assert_eq!(
            sequence_findings("t", read_only, &["a_seq"], false)[0].evidence,
            "sequence a_seq moved (nextval or setval)"
        );
    }
}
