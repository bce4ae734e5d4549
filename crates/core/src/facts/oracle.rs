//! The database oracle: what each transaction wrote, per table, as PostgreSQL counts it
//! (`pg_stat_xact_user_tables`). Confirmed evidence that also catches writes hidden in
//! functions and triggers.

use std::borrow::Cow;
use std::collections::BTreeSet;

use crate::effect::{Effect, TableWrites, TransactionObservation};
use crate::facts::collect::Collector;
use crate::facts::evidence::rows;
use crate::facts::rows::{Imaged, images_differ, read_image};
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
                committed(w, t, table, effect, policy, c);
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
/// deleted or overwritten; a net change when rows were inserted or deleted, when row images
/// show an update changed a column that is not ignored, or (likely) when a statement on the
/// table sets a column from itself. Updates whose images show nothing changed (ignored
/// columns aside) are no overwrite: the rule row changes follow ([`read_image`]).
fn committed<'e>(
    w: &TableWrites,
    t: &TransactionObservation,
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
    let images = ImageTally::of(t, &table, policy);
    // Updates without an image, confined to ignored columns as the statements that target
    // the table say, are no overwrite.
    let set_cols_ignored = targeting().all(|s| policy.all_columns_ignored(&table, &s.set_columns))
        && targeting().next().is_some();
    let unknown = w.updated.saturating_sub(images.unchanged + images.changed);
    let updated = images.changed + if set_cols_ignored { 0 } else { unknown };
    let source_name = t.source.as_str();
    if w.inserted + updated + w.deleted == 0 {
        if images.unchanged > 0 {
            c.attempt(t.source.confidence(), || {
                format!(
                    "{source_name}: UPDATE {table}: {} matched, nothing changed (row images)",
                    rows(images.unchanged as usize)
                )
            });
        }
        return;
    }
    let confidence = t.source.confidence();
    let text = || {
        format!(
            "{source_name}: {table} +{} ~{} -{} (committed)",
            w.inserted, updated, w.deleted
        )
    };
    c.write(confidence, text);
    if updated + w.deleted > 0 {
        c.destructive(confidence, text);
    }
    if w.inserted + w.deleted > 0 {
        c.net_change(confidence, text);
    } else if let Some(why) = &images.why {
        c.net_change(confidence, || format!("{} ({why})", text()));
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

/// What a transaction's row images say of one table's updates.
#[derive(Debug, Default)]
struct ImageTally {
    /// Rows whose images show nothing changed (ignored columns aside).
    unchanged: u64,
    /// Rows whose images differ in a column that is not ignored.
    changed: u64,
    /// Why the first of those is a change (`changed views`).
    why: Option<String>,
}

impl ImageTally {
    fn of(t: &TransactionObservation, table: &str, policy: &Policy) -> Self {
        let mut tally = ImageTally::default();
        for u in t
            .images
            .iter()
            .filter(|u| normalized_table(&u.table) == table)
        {
            match read_image(policy, table, &u.image) {
                Imaged::Unknown => {}
                Imaged::Unchanged => tally.unchanged += u.rows,
                Imaged::Changed(cols) => {
                    tally.changed += u.rows;
                    tally.why.get_or_insert_with(|| images_differ(cols));
                }
            }
        }
        tally
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effect::{ImagedUpdates, ObservationSource, RowImage, StatementEffect};
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

    /// A committed transaction from the database log, `(inserted, updated, deleted)` on
    /// table t, with row images `(table, image, rows)`.
    fn imaged(
        (i, u, d): (u64, u64, u64),
        images: Vec<(&str, RowImage, u64)>,
    ) -> TransactionObservation {
        TransactionObservation {
            source: ObservationSource::Log,
            images: images
                .into_iter()
                .map(|(table, image, rows)| ImagedUpdates {
                    table: table.into(),
                    image,
                    rows,
                })
                .collect(),
            ..tx(true, true, vec![counts("t", (i, u, d))])
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
                "log images of a re-set: no overwrite, an attempt",
                vec![],
                vec![imaged(
                    (0, 2, 0),
                    vec![
                        ("t", RowImage::Unchanged, 1),
                        ("t", RowImage::Changed(vec!["updated_at".into()]), 1),
                    ],
                )],
                vec![
                    "attempts: database log: UPDATE t: 2 rows matched, nothing changed (row images) (likely)",
                    "touched: t",
                ],
                vec!["t"],
            ),
            (
                "log images of a counter: an overwrite and a net change",
                vec![],
                vec![imaged(
                    (0, 1, 0),
                    vec![("t", RowImage::Changed(vec!["views".into()]), 1)],
                )],
                vec![
                    "writes: database log: t +0 ~1 -0 (committed) (likely)",
                    "destructive: database log: t +0 ~1 -0 (committed) (likely)",
                    "net_changes: database log: t +0 ~1 -0 (committed) (changed views) (likely)",
                    "written: t",
                    "touched: t",
                ],
                vec!["t"],
            ),
            (
                "log images unnamed, beside updates without one: both overwrite",
                vec![],
                vec![imaged(
                    (0, 3, 0),
                    vec![
                        ("t", RowImage::Changed(vec![]), 1),
                        ("t", RowImage::Unchanged, 1),
                        ("other", RowImage::Changed(vec![]), 5),
                    ],
                )],
                vec![
                    "writes: database log: t +0 ~2 -0 (committed) (likely)",
                    "destructive: database log: t +0 ~2 -0 (committed) (likely)",
                    "net_changes: database log: t +0 ~2 -0 (committed) (row images differ) (likely)",
                    "written: t",
                    "touched: t",
                ],
                vec!["t"],
            ),
            (
                "log images of a re-set beside an update without one: an overwrite only",
                vec![],
                vec![imaged((0, 2, 0), vec![("t", RowImage::Unchanged, 1)])],
                vec![
                    "writes: database log: t +0 ~1 -0 (committed) (likely)",
                    "destructive: database log: t +0 ~1 -0 (committed) (likely)",
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
                    source: ObservationSource::RowsAffected,
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
