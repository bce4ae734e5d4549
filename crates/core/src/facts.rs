//! Facts: an [`Effect`] read through the [`Policy`], before any hint is consulted.
//!
//! The judge turns facts into findings; keeping them apart lets the offline verifier reuse
//! the same evidence texts.

use std::borrow::Cow;
use std::collections::BTreeSet;

use crate::effect::{Effect, Operation, RowImage, RowOperation, StatementOutcome};
use crate::finding::Confidence;
use crate::policy::{Policy, normalized_table};

/// One piece of evidence: a line of text and how strong it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// One line, without argument values or SQL literals.
    pub text: String,
    /// How strong it is.
    pub confidence: Confidence,
}

impl Evidence {
    fn confirmed(text: String) -> Self {
        Evidence {
            text,
            confidence: Confidence::Confirmed,
        }
    }
    fn likely(text: String) -> Self {
        Evidence {
            text,
            confidence: Confidence::Likely,
        }
    }
}

/// What a call did to the watched environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// Committed changes to watched tables, DDL, mutating outbound requests, reported effects.
    pub writes: Vec<Evidence>,
    /// Writes that ran but changed nothing, were rolled back, or failed.
    pub attempts: Vec<Evidence>,
    /// Deletes, overwrites, TRUNCATE, DROP.
    pub destructive: Vec<Evidence>,
    /// Changes that a repeat with the same arguments would make again.
    pub net_changes: Vec<Evidence>,
    /// Watched tables written (normalized names).
    pub written_tables: BTreeSet<String>,
    /// Watched tables read or written (normalized names).
    pub touched_tables: BTreeSet<String>,
    /// Hosts reached.
    pub hosts: BTreeSet<String>,
    /// Whether any write statement ran at all (even one that changed nothing).
    pub any_write_statement: bool,
}

/// Counts row changes by (table, operation, committed), in first-seen order.
fn row_groups<'e>(
    effect: &'e Effect,
    policy: &Policy,
) -> Vec<(Cow<'e, str>, RowOperation, bool, Vec<usize>)> {
    let mut groups: Vec<(Cow<'e, str>, RowOperation, bool, Vec<usize>)> = Vec::new();
    for (i, rc) in effect.row_changes.iter().enumerate() {
        let table = normalized_table(&rc.table);
        if policy.is_ignored_table(&table) {
            continue;
        }
        match groups
            .iter_mut()
            .find(|g| g.0 == table && g.1 == rc.operation && g.2 == rc.committed)
        {
            Some(g) => g.3.push(i),
            None => groups.push((table, rc.operation, rc.committed, vec![i])),
        }
    }
    groups
}

/// Inserts `table` into `set`, allocating only when it is new.
fn insert(set: &mut BTreeSet<String>, table: &str) {
    if !set.contains(table) {
        set.insert(table.to_owned());
    }
}

fn extend(set: &mut BTreeSet<String>, tables: &[Cow<'_, str>]) {
    for t in tables {
        insert(set, t);
    }
}

fn rows(n: usize) -> String {
    if n == 1 {
        "1 row".into()
    } else {
        format!("{n} rows")
    }
}

impl Facts {
    /// Reads `effect` through `policy`.
    pub fn from_effect(effect: &Effect, policy: &Policy) -> Facts {
        let mut f = Facts::default();
        let watched = |t: &str| !policy.is_ignored_table(t);

        // Row changes (hooks): confirmed.
        let mut hooked_statements = vec![false; effect.statements.len()];
        for (table, op, committed, idx) in row_groups(effect, policy) {
            for &i in &idx {
                if let Some(h) = effect.row_changes[i]
                    .statement
                    .and_then(|s| hooked_statements.get_mut(s))
                {
                    *h = true;
                }
            }
            insert(&mut f.touched_tables, &table);
            if !committed {
                f.attempts.push(Evidence::confirmed(format!(
                    "{} {}: {} rolled back",
                    op.as_str(),
                    table,
                    rows(idx.len())
                )));
                continue;
            }
            match op {
                RowOperation::Insert => {
                    f.writes.push(Evidence::confirmed(format!(
                        "{} inserted into {table}",
                        rows(idx.len())
                    )));
                    f.net_changes.push(Evidence::confirmed(format!(
                        "{} inserted into {table}",
                        rows(idx.len())
                    )));
                    insert(&mut f.written_tables, &table);
                }
                RowOperation::Delete => {
                    let text = format!("{} deleted from {table}", rows(idx.len()));
                    f.writes.push(Evidence::confirmed(text.clone()));
                    f.destructive.push(Evidence::confirmed(text.clone()));
                    f.net_changes.push(Evidence::confirmed(text));
                    insert(&mut f.written_tables, &table);
                }
                RowOperation::Update => {
                    let mut changed = 0usize;
                    let mut unchanged = 0usize;
                    let mut non_convergent: Option<String> = None;
                    for &i in &idx {
                        let rc = &effect.row_changes[i];
                        let stmt = rc.statement.and_then(|s| effect.statements.get(s));
                        let direct = stmt
                            .is_some_and(|s| s.tables.iter().any(|t| normalized_table(t) == table));
                        match &rc.image {
                            RowImage::Unchanged => unchanged += 1,
                            RowImage::Changed(cols) if policy.all_columns_ignored(&table, cols) => {
                                unchanged += 1
                            }
                            RowImage::Changed(cols) => {
                                changed += 1;
                                if non_convergent.is_none() {
                                    non_convergent = Some(if cols.is_empty() {
                                        "row images differ".to_owned()
                                    } else {
                                        format!("changed {}", cols.join(", "))
                                    });
                                }
                            }
                            RowImage::Unknown => {
                                if let Some(s) = stmt.filter(|_| direct) {
                                    if policy.all_columns_ignored(&table, &s.set_columns) {
                                        unchanged += 1;
                                        continue;
                                    }
                                    if let Some((col, expr)) = s
                                        .non_convergent
                                        .iter()
                                        .find(|(c, _)| !policy.is_ignored_column(&table, c))
                                    {
                                        non_convergent
                                            .get_or_insert_with(|| format!("SET {col} = {expr}"));
                                    }
                                }
                                changed += 1;
                            }
                        }
                    }
                    if changed > 0 {
                        let text = format!("{} updated in {table}", rows(changed));
                        f.writes.push(Evidence::confirmed(text.clone()));
                        f.destructive.push(Evidence::confirmed(text.clone()));
                        insert(&mut f.written_tables, &table);
                        if let Some(why) = non_convergent {
                            // Row images prove the change; a SET from itself only suggests it.
                            let images = effect
                                .row_changes
                                .iter()
                                .any(|r| matches!(r.image, RowImage::Changed(_)));
                            let e = format!("{text} ({why})");
                            f.net_changes.push(if images {
                                Evidence::confirmed(e)
                            } else {
                                Evidence::likely(e)
                            });
                        }
                    }
                    if unchanged > 0 && changed == 0 {
                        f.attempts.push(Evidence::confirmed(format!(
                            "UPDATE {table}: {} matched, nothing changed",
                            rows(unchanged)
                        )));
                    }
                }
            }
        }

        // Transaction oracle: confirmed, catches writes hidden in functions and triggers.
        let mut oracle_tables: BTreeSet<Cow<'_, str>> = BTreeSet::new();
        for t in &effect.transactions {
            for w in &t.tables {
                let table = normalized_table(&w.table);
                if !watched(&table) {
                    continue;
                }
                insert(&mut f.touched_tables, &table);
                oracle_tables.insert(table.clone());
                if !t.committed {
                    f.attempts.push(Evidence::confirmed(format!(
                        "transaction on {table} rolled back (oracle: +{} ~{} -{})",
                        w.inserted, w.updated, w.deleted
                    )));
                    continue;
                }
                if w.inserted + w.updated + w.deleted == 0 {
                    continue;
                }
                // Updates confined to ignored columns, as the statements that target the
                // table say, are no overwrite.
                let set_cols_ignored = effect
                    .statements
                    .iter()
                    .filter(|s| s.tables.iter().any(|x| normalized_table(x) == table))
                    .all(|s| policy.all_columns_ignored(&table, &s.set_columns))
                    && effect
                        .statements
                        .iter()
                        .any(|s| s.tables.iter().any(|x| normalized_table(x) == table));
                let updated = if set_cols_ignored { 0 } else { w.updated };
                if w.inserted + updated + w.deleted == 0 {
                    continue;
                }
                let text = format!(
                    "oracle: {table} +{} ~{} -{} (committed)",
                    w.inserted, updated, w.deleted
                );
                f.writes.push(Evidence::confirmed(text.clone()));
                insert(&mut f.written_tables, &table);
                if updated + w.deleted > 0 {
                    f.destructive.push(Evidence::confirmed(text.clone()));
                }
                if w.inserted + w.deleted > 0 {
                    f.net_changes.push(Evidence::confirmed(text));
                } else if let Some((col, expr)) = effect
                    .statements
                    .iter()
                    .filter(|s| s.tables.iter().any(|x| normalized_table(x) == table))
                    .flat_map(|s| s.non_convergent.iter())
                    .find(|(c, _)| !policy.is_ignored_column(&table, c))
                {
                    f.net_changes
                        .push(Evidence::likely(format!("{text} (SET {col} = {expr})")));
                }
            }
            if !t.committed && t.wrote && t.tables.is_empty() {
                f.attempts.push(Evidence::confirmed(
                    "transaction wrote, then rolled back".into(),
                ));
            }
        }

        // Statements: statement analysis, and driver results where trustworthy.
        for (i, s) in effect.statements.iter().enumerate() {
            let targets: Vec<Cow<'_, str>> = s
                .tables
                .iter()
                .map(|t| normalized_table(t))
                .filter(|t| watched(t))
                .collect();
            for t in s
                .read_tables
                .iter()
                .map(|t| normalized_table(t))
                .filter(|t| watched(t))
            {
                insert(&mut f.touched_tables, &t);
            }
            for t in &targets {
                insert(&mut f.touched_tables, t);
            }
            let write_op = s.operation.is_write() || s.operation == Operation::Unknown;
            if !write_op || (targets.is_empty() && !s.tables.is_empty()) {
                continue; // not a write, or a write to ignored tables only
            }
            if s.operation != Operation::Unknown {
                f.any_write_statement = true;
            }
            let what = &*s.summary;
            if s.outcome == StatementOutcome::Failed {
                if s.operation != Operation::Unknown {
                    f.attempts
                        .push(Evidence::confirmed(format!("{what}: failed")));
                }
                continue;
            }
            let covered_by_oracle = targets.iter().any(|t| oracle_tables.contains(t));
            let hooked = hooked_statements.get(i).copied().unwrap_or(false);
            match s.operation {
                Operation::Truncate => {
                    let text = format!("{what}: table truncated");
                    f.writes.push(Evidence::likely(text.clone()));
                    f.destructive.push(Evidence::likely(text.clone()));
                    f.net_changes.push(Evidence::likely(text));
                    extend(&mut f.written_tables, &targets);
                }
                Operation::Ddl => {
                    let text = format!("{what}: schema change");
                    f.writes.push(Evidence::likely(text.clone()));
                    if s.drops {
                        f.destructive
                            .push(Evidence::likely(format!("{what}: DROP")));
                    }
                    extend(&mut f.written_tables, &targets);
                }
                Operation::Unknown if !s.observed => {
                    f.writes.push(Evidence::likely(format!(
                        "{what}: unparseable statement, a possible write"
                    )));
                }
                Operation::Unknown => {}
                _ if s.observed => {
                    // Hooks or the oracle saw this statement. No row change: it changed nothing,
                    // except where SQLite's hooks are blind (REPLACE conflict deletes).
                    if !hooked && !covered_by_oracle {
                        f.attempts
                            .push(Evidence::confirmed(format!("{what}: changed nothing")));
                    }
                    if s.operation == Operation::Upsert && s.overwrites && !covered_by_oracle {
                        f.destructive.push(Evidence::likely(format!(
                            "{what}: upsert may overwrite existing rows"
                        )));
                    }
                }
                op => match s.rows_affected {
                    Some(0) => f
                        .attempts
                        .push(Evidence::confirmed(format!("{what}: 0 rows affected"))),
                    Some(n) => {
                        let text = format!("{what}: {} affected", rows(n as usize));
                        f.writes.push(Evidence::confirmed(text.clone()));
                        extend(&mut f.written_tables, &targets);
                        let ignored = policy.all_columns_ignored(
                            targets.first().map(|t| &**t).unwrap_or(""),
                            &s.set_columns,
                        );
                        match op {
                            Operation::Delete => {
                                f.destructive.push(Evidence::confirmed(text.clone()));
                                f.net_changes.push(Evidence::confirmed(text));
                            }
                            Operation::Update if !ignored => {
                                f.destructive.push(Evidence::confirmed(text.clone()));
                                if let Some((c, e)) = s.non_convergent.first() {
                                    f.net_changes
                                        .push(Evidence::likely(format!("{text} (SET {c} = {e})")));
                                }
                            }
                            Operation::Upsert if s.overwrites && !ignored => {
                                f.destructive.push(Evidence::likely(format!(
                                    "{text}; an upsert that may have overwritten"
                                )));
                                if let Some((c, e)) = s.non_convergent.first() {
                                    f.net_changes
                                        .push(Evidence::likely(format!("{text} (SET {c} = {e})")));
                                }
                            }
                            Operation::Insert => f.net_changes.push(Evidence::confirmed(text)),
                            _ => {}
                        }
                    }
                    None => {
                        let text = format!("{what}: a write (rows not reported)");
                        f.writes.push(Evidence::likely(text.clone()));
                        extend(&mut f.written_tables, &targets);
                        match op {
                            Operation::Delete => f.destructive.push(Evidence::likely(text)),
                            Operation::Update if !s.set_columns.is_empty() => {
                                f.destructive.push(Evidence::likely(text))
                            }
                            Operation::Upsert if s.overwrites => {
                                f.destructive.push(Evidence::likely(text))
                            }
                            _ => {}
                        }
                    }
                },
            }
        }

        for o in &effect.outbound {
            f.hosts.insert(o.host.clone());
            if o.is_mutating() {
                f.writes.push(Evidence::confirmed(format!(
                    "outbound {} to {}",
                    o.method, o.host
                )));
            }
        }
        for e in &effect.explicit {
            use crate::effect::ExplicitChange::*;
            let text = match e.change {
                Add => format!("reported: added {}", e.target),
                Overwrite => format!("reported: overwrote {}", e.target),
                Delete => format!("reported: deleted {}", e.target),
            };
            f.writes.push(Evidence::confirmed(text.clone()));
            if matches!(e.change, Overwrite | Delete) {
                f.destructive.push(Evidence::confirmed(text.clone()));
            }
            f.net_changes.push(Evidence::likely(text));
        }
        f
    }
}

/// Joins evidence into one line: at most three texts, then `(+N more)`; the confidence is
/// confirmed when any piece is.
pub fn summarize(evidence: &[Evidence]) -> Option<Evidence> {
    if evidence.is_empty() {
        return None;
    }
    let confidence = evidence
        .iter()
        .map(|e| e.confidence)
        .max()
        .unwrap_or(Confidence::Likely);
    // Confirmed pieces first: they are the stronger story.
    let mut ordered: Vec<&Evidence> = evidence.iter().collect();
    ordered.sort_by_key(|e| std::cmp::Reverse(e.confidence));
    let mut text = ordered
        .iter()
        .take(3)
        .map(|e| e.text.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    if evidence.len() > 3 {
        text.push_str(&format!(" (+{} more)", evidence.len() - 3));
    }
    Some(Evidence { text, confidence })
}
