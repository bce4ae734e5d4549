//! Facts: an [`Effect`] read through the [`Policy`], before any hint is consulted.
//!
//! The judge turns facts into findings; keeping them apart lets the offline verifier reuse
//! the same evidence texts.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};

mod evidence;

pub(crate) use evidence::Wanted;
pub use evidence::{Evidence, summarize};

use crate::effect::{Effect, Operation, RowChange, RowImage, RowOperation, StatementOutcome};
use crate::finding::Confidence;
use crate::policy::{Policy, normalized_table};
use evidence::{push, rows};

/// What a call did to the watched environment. Table names and hosts borrow from the
/// [`Effect`] where they can (`Cow`: look them up with `&str`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts<'e> {
    /// Committed changes to watched tables, DDL, mutating outbound requests, reported effects.
    pub writes: Vec<Evidence>,
    /// Writes that ran but changed nothing, were rolled back, or failed.
    pub attempts: Vec<Evidence>,
    /// Deletes, overwrites, TRUNCATE, DROP.
    pub destructive: Vec<Evidence>,
    /// Changes that a repeat with the same arguments would make again.
    pub net_changes: Vec<Evidence>,
    /// Watched tables written (normalized names).
    pub written_tables: BTreeSet<Cow<'e, str>>,
    /// Watched tables read or written (normalized names).
    pub touched_tables: BTreeSet<Cow<'e, str>>,
    /// Hosts reached.
    pub hosts: BTreeSet<Cow<'e, str>>,
    /// Whether any write statement ran at all (even one that changed nothing).
    pub any_write_statement: bool,
}

/// Row changes of one watched table, operation and outcome.
struct Group<'e> {
    table: Cow<'e, str>,
    op: RowOperation,
    committed: bool,
    /// How many.
    rows: usize,
    /// The index of the first in [`Effect::row_changes`].
    first: usize,
}

impl Group<'_> {
    fn has(&self, rc: &RowChange) -> bool {
        rc.operation == self.op
            && rc.committed == self.committed
            && normalized_table(&rc.table) == self.table
    }

    /// The group's row changes, with their indices in [`Effect::row_changes`].
    fn members<'a>(&'a self, effect: &'a Effect) -> impl Iterator<Item = (usize, &'a RowChange)> {
        effect
            .row_changes
            .iter()
            .enumerate()
            .skip(self.first)
            .filter(|(_, rc)| self.has(rc))
    }
}

/// Rows the call inserted and committed, by (table as the hook named it, row id), each with
/// the index of its insert in [`Effect::row_changes`]. Empty, and never filled, when no
/// update or delete carries a row id: a bulk insert alone builds no map.
struct OwnRows<'e>(HashMap<(&'e str, i64), usize>);

impl<'e> OwnRows<'e> {
    fn of(effect: &'e Effect) -> Self {
        let mut m = HashMap::new();
        let asked = effect
            .row_changes
            .iter()
            .any(|rc| rc.operation != RowOperation::Insert && rc.row_id.is_some());
        if !asked {
            return OwnRows(m);
        }
        for (i, rc) in effect.row_changes.iter().enumerate() {
            if let (RowOperation::Insert, true, Some(id)) = (rc.operation, rc.committed, rc.row_id)
            {
                m.entry((rc.table.as_str(), id)).or_insert(i);
            }
        }
        OwnRows(m)
    }

    /// Whether row change `i` updates or deletes a row the call inserted before it: no
    /// overwrite and no loss of anything that existed before the call.
    fn has(&self, i: usize, rc: &RowChange) -> bool {
        rc.row_id.is_some_and(|id| {
            self.0
                .get(&(rc.table.as_str(), id))
                .is_some_and(|&first| first < i)
        })
    }
}

/// Groups row changes by (table, operation, committed), in first-seen order, and marks the
/// statements that caused any (`hooked`).
fn row_groups<'e>(effect: &'e Effect, policy: &Policy, hooked: &mut Marks) -> Vec<Group<'e>> {
    let mut groups: Vec<Group<'e>> = Vec::new();
    for (i, rc) in effect.row_changes.iter().enumerate() {
        let table = normalized_table(&rc.table);
        if policy.is_ignored_table(&table) {
            continue;
        }
        // An index past the statements (a hand-built effect) marks nothing.
        if let Some(s) = rc.statement.filter(|&s| s < effect.statements.len()) {
            hooked.set(s);
        }
        let group = groups
            .iter_mut()
            .find(|g| g.op == rc.operation && g.committed == rc.committed && g.table == table);
        match group {
            Some(g) => g.rows += 1,
            None => groups.push(Group {
                table,
                op: rc.operation,
                committed: rc.committed,
                rows: 1,
                first: i,
            }),
        }
    }
    groups
}

/// A set of statement indices: a bit mask, with a vector only past 64 statements.
#[derive(Default)]
struct Marks {
    low: u64,
    high: Vec<bool>,
}

impl Marks {
    fn set(&mut self, i: usize) {
        match i.checked_sub(64) {
            None => self.low |= 1 << i,
            Some(j) => {
                if self.high.len() <= j {
                    self.high.resize(j + 1, false);
                }
                self.high[j] = true;
            }
        }
    }

    fn get(&self, i: usize) -> bool {
        match i.checked_sub(64) {
            None => self.low & (1 << i) != 0,
            Some(j) => self.high.get(j).copied().unwrap_or(false),
        }
    }
}

impl<'e> Facts<'e> {
    /// Reads `effect` through `policy`.
    pub fn from_effect(effect: &'e Effect, policy: &Policy) -> Facts<'e> {
        Facts::build(effect, policy, Wanted::ALL)
    }

    /// [`Facts::from_effect`], writing only the `want`ed evidence texts.
    pub(crate) fn build(effect: &'e Effect, policy: &Policy, want: Wanted) -> Facts<'e> {
        let mut f = Facts::default();
        // `ev!(writes, Confirmed, || text)`: evidence of that kind, its text written if wanted.
        macro_rules! ev {
            ($kind:ident, $confidence:ident, $text:expr $(,)?) => {
                push(&mut f.$kind, want.$kind, Confidence::$confidence, $text)
            };
        }
        let watched = |t: &str| !policy.is_ignored_table(t);

        // Row changes (hooks): confirmed.
        let mut hooked_statements = Marks::default();
        let own = OwnRows::of(effect);
        for group in row_groups(effect, policy, &mut hooked_statements) {
            let (table, op, committed, n) = (&group.table, group.op, group.committed, group.rows);
            f.touched_tables.insert(table.clone());
            if !committed {
                ev!(attempts, Confirmed, || format!(
                    "{} {}: {} rolled back",
                    op.as_str(),
                    table,
                    rows(n)
                ));
                continue;
            }
            match op {
                RowOperation::Insert => {
                    ev!(writes, Confirmed, || {
                        format!("{} inserted into {table}", rows(n))
                    });
                    ev!(net_changes, Confirmed, || format!(
                        "{} inserted into {table}",
                        rows(n)
                    ));
                    f.written_tables.insert(table.clone());
                }
                RowOperation::Delete => {
                    // Deleting rows the call inserted itself removes nothing that was there.
                    let n = n - group
                        .members(effect)
                        .filter(|(i, rc)| own.has(*i, rc))
                        .count();
                    if n == 0 {
                        continue;
                    }
                    let text = || format!("{} deleted from {table}", rows(n));
                    ev!(writes, Confirmed, text);
                    ev!(destructive, Confirmed, text);
                    ev!(net_changes, Confirmed, text);
                    f.written_tables.insert(table.clone());
                }
                RowOperation::Update => {
                    let mut changed = 0usize;
                    let mut unchanged = 0usize;
                    let mut non_convergent: Option<String> = None;
                    for (i, rc) in group.members(effect) {
                        // Filling in a row the call inserted itself overwrites nothing; the
                        // insert is the write.
                        if own.has(i, rc) {
                            continue;
                        }
                        let stmt = rc.statement.and_then(|s| effect.statements.get(s));
                        let direct = stmt.is_some_and(|s| {
                            s.tables.iter().any(|t| normalized_table(t) == *table)
                        });
                        match &rc.image {
                            RowImage::Unchanged => unchanged += 1,
                            RowImage::Changed(cols) if policy.all_columns_ignored(table, cols) => {
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
                                    if policy.all_columns_ignored(table, &s.set_columns) {
                                        unchanged += 1;
                                        continue;
                                    }
                                    if let Some((col, expr)) = s
                                        .non_convergent
                                        .iter()
                                        .find(|(c, _)| !policy.is_ignored_column(table, c))
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
                        let text = || format!("{} updated in {table}", rows(changed));
                        ev!(writes, Confirmed, text);
                        ev!(destructive, Confirmed, text);
                        f.written_tables.insert(table.clone());
                        if let Some(why) = non_convergent {
                            // Row images prove the change; a SET from itself only suggests it.
                            let images = effect
                                .row_changes
                                .iter()
                                .any(|r| matches!(r.image, RowImage::Changed(_)));
                            let e = || format!("{} ({why})", text());
                            let confidence = if images {
                                Confidence::Confirmed
                            } else {
                                Confidence::Likely
                            };
                            push(&mut f.net_changes, want.net_changes, confidence, e);
                        }
                    }
                    if unchanged > 0 && changed == 0 {
                        ev!(attempts, Confirmed, || {
                            format!(
                                "UPDATE {table}: {} matched, nothing changed",
                                rows(unchanged)
                            )
                        });
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
                f.touched_tables.insert(table.clone());
                oracle_tables.insert(table.clone());
                if !t.committed {
                    ev!(attempts, Confirmed, || {
                        format!(
                            "transaction on {table} rolled back (oracle: +{} ~{} -{})",
                            w.inserted, w.updated, w.deleted
                        )
                    });
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
                let text = || {
                    format!(
                        "oracle: {table} +{} ~{} -{} (committed)",
                        w.inserted, updated, w.deleted
                    )
                };
                ev!(writes, Confirmed, text);
                f.written_tables.insert(table.clone());
                if updated + w.deleted > 0 {
                    ev!(destructive, Confirmed, text);
                }
                if w.inserted + w.deleted > 0 {
                    ev!(net_changes, Confirmed, text);
                } else if let Some((col, expr)) = effect
                    .statements
                    .iter()
                    .filter(|s| s.tables.iter().any(|x| normalized_table(x) == table))
                    .flat_map(|s| s.non_convergent.iter())
                    .find(|(c, _)| !policy.is_ignored_column(&table, c))
                {
                    ev!(net_changes, Likely, || format!(
                        "{} (SET {col} = {expr})",
                        text()
                    ));
                }
            }
            if !t.committed && t.wrote && t.tables.is_empty() {
                ev!(attempts, Confirmed, || {
                    "transaction wrote, then rolled back".into()
                });
            }
        }

        // Statements: statement analysis, and driver results where trustworthy.
        for (i, s) in effect.statements.iter().enumerate() {
            let targets = || {
                s.tables
                    .iter()
                    .map(|t| normalized_table(t))
                    .filter(|t| watched(t))
            };
            f.touched_tables.extend(
                s.read_tables
                    .iter()
                    .map(|t| normalized_table(t))
                    .filter(|t| watched(t)),
            );
            f.touched_tables.extend(targets());
            let write_op = s.operation.is_write() || s.operation == Operation::Unknown;
            if !write_op || (targets().next().is_none() && !s.tables.is_empty()) {
                continue; // not a write, or a write to ignored tables only
            }
            if s.operation != Operation::Unknown {
                f.any_write_statement = true;
            }
            let what = &*s.summary;
            if s.outcome == StatementOutcome::Failed {
                if s.operation != Operation::Unknown {
                    ev!(attempts, Confirmed, || format!("{what}: failed"));
                }
                continue;
            }
            let covered_by_oracle = targets().any(|t| oracle_tables.contains(&t));
            let hooked = hooked_statements.get(i);
            match s.operation {
                Operation::Truncate => {
                    let text = || format!("{what}: table truncated");
                    ev!(writes, Likely, text);
                    ev!(destructive, Likely, text);
                    ev!(net_changes, Likely, text);
                    f.written_tables.extend(targets());
                }
                Operation::Ddl => {
                    let text = || format!("{what}: schema change");
                    ev!(writes, Likely, text);
                    if s.drops {
                        ev!(destructive, Likely, || format!("{what}: DROP"));
                    }
                    f.written_tables.extend(targets());
                }
                Operation::Unknown if !s.observed => {
                    ev!(writes, Likely, || {
                        format!("{what}: unparseable statement, a possible write")
                    });
                }
                Operation::Unknown => {}
                _ if s.observed => {
                    // Hooks or the oracle saw this statement. No row change: it changed nothing,
                    // except where SQLite's hooks are blind (REPLACE conflict deletes).
                    if !hooked && !covered_by_oracle {
                        ev!(attempts, Confirmed, || format!("{what}: changed nothing"));
                    }
                    if s.operation == Operation::Upsert && s.overwrites && !covered_by_oracle {
                        ev!(destructive, Likely, || format!(
                            "{what}: upsert may overwrite existing rows"
                        ));
                    }
                }
                op => match s.rows_affected {
                    Some(0) => ev!(attempts, Confirmed, || format!("{what}: 0 rows affected"),),
                    Some(n) => {
                        let text = || format!("{what}: {} affected", rows(n as usize));
                        ev!(writes, Confirmed, text);
                        f.written_tables.extend(targets());
                        let ignored = policy.all_columns_ignored(
                            &targets().next().unwrap_or_default(),
                            &s.set_columns,
                        );
                        match op {
                            Operation::Delete => {
                                ev!(destructive, Confirmed, text);
                                ev!(net_changes, Confirmed, text);
                            }
                            Operation::Update if !ignored => {
                                ev!(destructive, Confirmed, text);
                                if let Some((c, e)) = s.non_convergent.first() {
                                    ev!(net_changes, Likely, || format!(
                                        "{} (SET {c} = {e})",
                                        text()
                                    ));
                                }
                            }
                            Operation::Upsert if s.overwrites && !ignored => {
                                ev!(destructive, Likely, || format!(
                                    "{}; an upsert that may have overwritten",
                                    text()
                                ));
                                if let Some((c, e)) = s.non_convergent.first() {
                                    ev!(net_changes, Likely, || format!(
                                        "{} (SET {c} = {e})",
                                        text()
                                    ));
                                }
                            }
                            Operation::Insert => ev!(net_changes, Confirmed, text,),
                            _ => {}
                        }
                    }
                    None => {
                        let text = || format!("{what}: a write (rows not reported)");
                        ev!(writes, Likely, text);
                        f.written_tables.extend(targets());
                        match op {
                            Operation::Delete => ev!(destructive, Likely, text,),
                            Operation::Update if !s.set_columns.is_empty() => {
                                ev!(destructive, Likely, text,)
                            }
                            Operation::Upsert if s.overwrites => ev!(destructive, Likely, text,),
                            _ => {}
                        }
                    }
                },
            }
        }

        for o in &effect.outbound {
            f.hosts.insert(Cow::Borrowed(&o.host));
            if o.is_mutating() {
                ev!(writes, Confirmed, || {
                    format!("outbound {} to {}", o.method, o.host)
                });
            }
        }
        for e in &effect.explicit {
            use crate::effect::ExplicitChange::*;
            let verb = match e.change {
                Add => "added",
                Overwrite => "overwrote",
                Delete => "deleted",
            };
            let text = || format!("reported: {verb} {}", e.target);
            ev!(writes, Confirmed, text);
            if matches!(e.change, Overwrite | Delete) {
                ev!(destructive, Confirmed, text);
            }
            ev!(net_changes, Likely, text);
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effect::StatementEffect;

    /// Statements past the 64 of the bit mask are marked as hooked too.
    #[test]
    fn hooked_statements_past_sixty_four() {
        for hooked in [3, 63, 64, 66] {
            let mut s = StatementEffect::new(Operation::Update, vec!["t".into()]);
            s.observed = true;
            let effect = Effect {
                statements: vec![s; 70],
                row_changes: vec![RowChange {
                    table: "t".into(),
                    operation: RowOperation::Update,
                    statement: Some(hooked),
                    committed: true,
                    image: RowImage::Unknown,
                    nested: None,
                    row_id: None,
                }],
                ..Default::default()
            };
            let mut effect = effect;
            // A row change naming a statement that does not exist marks nothing.
            let mut stray = effect.row_changes[0].clone();
            stray.statement = Some(usize::MAX);
            effect.row_changes.push(stray);
            let f = Facts::from_effect(&effect, &Policy::default());
            // Every other statement changed nothing; the hooked one updated its row.
            assert_eq!(f.attempts.len(), 69, "hooked {hooked}");
            assert_eq!(f.writes.len(), 1, "hooked {hooked}");
            assert_eq!(f.writes[0].text, "2 rows updated in t", "hooked {hooked}");
        }
    }
}
