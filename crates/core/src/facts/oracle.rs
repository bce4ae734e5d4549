//! The database oracle: what each transaction wrote, per table, as PostgreSQL counts it
//! (`pg_stat_xact_user_tables`). Confirmed evidence that also catches writes hidden in
//! functions and triggers.

use std::borrow::Cow;
use std::collections::BTreeSet;

use crate::effect::{Effect, ObservationSource, TableWrites};
use crate::facts::collect::Collector;
use crate::finding::Confidence;
use crate::policy::{Policy, normalized_table};

/// Adds the evidence of `effect`'s transaction observations to `c`, and returns the watched
/// tables the oracle saw (the statements step leaves their statements to it).
pub(super) fn record_transactions<'e>(
    effect: &'e Effect,
    policy: &Policy,
    c: &mut Collector<'e>,
) -> BTreeSet<Cow<'e, str>> {
    let mut oracle_tables = BTreeSet::new();
    for t in &effect.transactions {
        for w in &t.tables {
            let table = normalized_table(&w.table);
            if policy.is_ignored_table(&table) {
                continue;
            }
            c.touched(table.clone());
            oracle_tables.insert(table.clone());
            if t.committed {
                committed(w, t.source, table, effect, policy, c);
            } else {
                c.attempt(Confidence::Confirmed, || {
                    format!(
                        "transaction on {table} rolled back ({}: +{} ~{} -{})",
                        t.source.as_str(),
                        w.inserted,
                        w.updated,
                        w.deleted
                    )
                });
            }
        }
        // A sequence moved is a write whether or not the transaction committed (sequences are
        // not transactional). The lock says a sequence function ran on it, not which one:
        // likely.
        for q in &t.sequences {
            let seq = normalized_table(q);
            if policy.is_ignored_table(&seq) {
                continue;
            }
            c.write(Confidence::Likely, || {
                format!("sequence {seq} advanced or set (oracle: the transaction locked it for a change)")
            });
        }
        if !t.committed && t.wrote && t.tables.is_empty() {
            c.attempt(Confidence::Confirmed, || {
                "transaction wrote, then rolled back".into()
            });
        }
    }
    oracle_tables
}

/// One table's counts in a committed transaction: a write; destructive when rows were
/// updated or deleted; a net change when rows were inserted or deleted, or (likely) when a
/// statement on the table sets a column from itself.
fn committed<'e>(
    w: &TableWrites,
    source: ObservationSource,
    table: Cow<'e, str>,
    effect: &Effect,
    policy: &Policy,
    c: &mut Collector<'e>,
) {
    if w.inserted + w.updated + w.deleted == 0 {
        return;
    }
    let targeting = || {
        effect
            .statements
            .iter()
            .filter(|s| s.tables.iter().any(|x| normalized_table(x) == table))
    };
    // Updates confined to ignored columns, as the statements that target the table say, are
    // no overwrite.
    let set_cols_ignored = targeting().all(|s| policy.all_columns_ignored(&table, &s.set_columns))
        && targeting().next().is_some();
    let updated = if set_cols_ignored { 0 } else { w.updated };
    if w.inserted + updated + w.deleted == 0 {
        return;
    }
    let confidence = source.confidence();
    let source = source.as_str();
    let text = || {
        format!(
            "{source}: {table} +{} ~{} -{} (committed)",
            w.inserted, updated, w.deleted
        )
    };
    c.write(confidence, text);
    if updated + w.deleted > 0 {
        c.destructive(confidence, text);
    }
    if w.inserted + w.deleted > 0 {
        c.net_change(confidence, text);
    } else if let Some((col, expr)) = targeting()
        .flat_map(|s| s.non_convergent.iter())
        .find(|(c, _)| !policy.is_ignored_column(&table, c))
    {
        c.net_change(Confidence::Likely, || {
            format!("{} (SET {col} = {expr})", text())
        });
    }
    c.written(table);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effect::{StatementEffect, TransactionObservation};
    use crate::facts::collect::{lines, update_of_t as update};
    use crate::facts::evidence::Wanted;

    /// `(table, inserted, updated, deleted)`.
    fn counts(table: &str, (inserted, updated, deleted): (u64, u64, u64)) -> TableWrites {
        TableWrites {
            table: table.into(),
            inserted,
            updated,
            deleted,
        }
    }

    fn tx(committed: bool, wrote: bool, tables: Vec<TableWrites>) -> TransactionObservation {
        TransactionObservation {
            wrote,
            tables,
            committed,
            ..Default::default()
        }
    }

    /// A case: its name, the statements, the transactions, the facts as [`lines`], the tables
    /// the oracle covers.
    type Case = (
        &'static str,
        Vec<StatementEffect>,
        Vec<TransactionObservation>,
        Vec<&'static str>,
        Vec<&'static str>,
    );

    /// One row per set of transaction observations (and statements): the facts they give,
    /// and the tables the oracle covers.
    #[test]
    fn transaction_observations() {
        let cases: Vec<Case> = vec![
            (
                "inserts: a write and a net change",
                vec![],
                vec![tx(true, true, vec![counts("t", (2, 0, 0))])],
                vec![
                    "writes: oracle: t +2 ~0 -0 (committed) (confirmed)",
                    "net_changes: oracle: t +2 ~0 -0 (committed) (confirmed)",
                    "written: t",
                    "touched: t",
                ],
                vec!["t"],
            ),
            (
                "deletes: destructive too",
                vec![],
                vec![tx(true, true, vec![counts("t", (0, 0, 1))])],
                vec![
                    "writes: oracle: t +0 ~0 -1 (committed) (confirmed)",
                    "destructive: oracle: t +0 ~0 -1 (committed) (confirmed)",
                    "net_changes: oracle: t +0 ~0 -1 (committed) (confirmed)",
                    "written: t",
                    "touched: t",
                ],
                vec!["t"],
            ),
            (
                "the database log (hintaudit proxy): the same facts, likely",
                vec![],
                vec![TransactionObservation {
                    source: ObservationSource::Log,
                    ..tx(true, true, vec![counts("t", (1, 0, 1))])
                }],
                vec![
                    "writes: database log: t +1 ~0 -1 (committed) (likely)",
                    "destructive: database log: t +1 ~0 -1 (committed) (likely)",
                    "net_changes: database log: t +1 ~0 -1 (committed) (likely)",
                    "written: t",
                    "touched: t",
                ],
                vec!["t"],
            ),
            (
                "updates: destructive, no net change",
                vec![update(&["name"], &[])],
                vec![tx(true, true, vec![counts("t", (0, 3, 0))])],
                vec![
                    "writes: oracle: t +0 ~3 -0 (committed) (confirmed)",
                    "destructive: oracle: t +0 ~3 -0 (committed) (confirmed)",
                    "written: t",
                    "touched: t",
                ],
                vec!["t"],
            ),
            (
                "updates with a SET from itself: a likely net change",
                vec![update(&["views"], &[("views", "views + 1")])],
                vec![tx(true, true, vec![counts("t", (0, 1, 0))])],
                vec![
                    "writes: oracle: t +0 ~1 -0 (committed) (confirmed)",
                    "destructive: oracle: t +0 ~1 -0 (committed) (confirmed)",
                    "net_changes: oracle: t +0 ~1 -0 (committed) (SET views = views + 1) (likely)",
                    "written: t",
                    "touched: t",
                ],
                vec!["t"],
            ),
            (
                "updates of ignored columns only: nothing",
                vec![update(&["updated_at"], &[("updated_at", "now()")])],
                vec![tx(true, true, vec![counts("t", (0, 1, 0))])],
                vec!["touched: t"],
                vec!["t"],
            ),
            (
                "updates of ignored columns beside an insert: the insert only",
                vec![update(&["updated_at"], &[])],
                vec![tx(true, true, vec![counts("t", (1, 1, 0))])],
                vec![
                    "writes: oracle: t +1 ~0 -0 (committed) (confirmed)",
                    "net_changes: oracle: t +1 ~0 -0 (committed) (confirmed)",
                    "written: t",
                    "touched: t",
                ],
                vec!["t"],
            ),
            (
                "updates no statement targets (a trigger's): an overwrite",
                vec![],
                vec![tx(true, true, vec![counts("t", (0, 1, 0))])],
                vec![
                    "writes: oracle: t +0 ~1 -0 (committed) (confirmed)",
                    "destructive: oracle: t +0 ~1 -0 (committed) (confirmed)",
                    "written: t",
                    "touched: t",
                ],
                vec!["t"],
            ),
            (
                "zero counts: touched only",
                vec![],
                vec![tx(true, false, vec![counts("t", (0, 0, 0))])],
                vec!["touched: t"],
                vec!["t"],
            ),
            (
                "rolled back: an attempt per table",
                vec![],
                vec![tx(false, true, vec![counts("t", (1, 2, 3))])],
                vec![
                    "attempts: transaction on t rolled back (oracle: +1 ~2 -3) (confirmed)",
                    "touched: t",
                ],
                vec!["t"],
            ),
            (
                "a sequence moved: a likely write, committed or not",
                vec![],
                vec![
                    TransactionObservation {
                        sequences: vec!["s".into()],
                        ..tx(true, false, vec![])
                    },
                    TransactionObservation {
                        sequences: vec!["access_log".into()],
                        ..tx(false, false, vec![])
                    },
                ],
                vec![
                    "writes: sequence s advanced or set (oracle: the transaction locked it for a change) (likely)",
                ],
                vec![],
            ),
            (
                "rows affected, not an oracle: the evidence says so",
                vec![],
                vec![TransactionObservation {
                    source: crate::effect::ObservationSource::RowsAffected,
                    ..tx(true, true, vec![counts("t", (0, 1, 0))])
                }],
                vec![
                    "writes: rows affected: t +0 ~1 -0 (committed) (confirmed)",
                    "destructive: rows affected: t +0 ~1 -0 (committed) (confirmed)",
                    "written: t",
                    "touched: t",
                ],
                vec!["t"],
            ),
            (
                "rolled back, wrote, no table counts: one attempt",
                vec![],
                vec![tx(false, true, vec![]), tx(false, false, vec![])],
                vec!["attempts: transaction wrote, then rolled back (confirmed)"],
                vec![],
            ),
            (
                "ignored tables give nothing; names are normalized",
                vec![],
                vec![tx(
                    true,
                    true,
                    vec![
                        counts("access_log", (1, 0, 0)),
                        counts("Public.T", (1, 0, 0)),
                    ],
                )],
                vec![
                    "writes: oracle: t +1 ~0 -0 (committed) (confirmed)",
                    "net_changes: oracle: t +1 ~0 -0 (committed) (confirmed)",
                    "written: t",
                    "touched: t",
                ],
                vec!["t"],
            ),
        ];
        let policy = Policy::default()
            .with_ignored_table("access_log")
            .with_ignored_column("updated_at");
        for (name, statements, transactions, want, covered) in cases {
            let effect = Effect {
                statements,
                transactions,
                ..Default::default()
            };
            let mut c = Collector::facts(Wanted::ALL);
            let tables = record_transactions(&effect, &policy, &mut c);
            assert_eq!(lines(&c.finish()), want, "{name}");
            assert_eq!(
                tables.iter().map(|t| &**t).collect::<Vec<_>>(),
                covered,
                "{name}"
            );
        }
    }
}
