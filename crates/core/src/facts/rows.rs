//! Row changes, as database hooks report them: confirmed evidence, per watched table,
//! operation and outcome.
//!
//! Changes to rows the call inserted itself are no overwrite and no loss: only what existed
//! before the call counts as destroyed.

use std::borrow::Cow;
use std::collections::HashMap;

use smallvec::SmallVec;

use crate::effect::{Effect, RowChange, RowImage, RowOperation};
use crate::facts::collect::Collector;
use crate::facts::evidence::rows;
use crate::finding::Confidence;
use crate::policy::{Policy, normalized_table};

/// Adds the evidence of `effect`'s row changes to `c`, and returns the statements that
/// caused any (the statements step reads a hooked statement's silence differently).
pub(super) fn record_row_changes<'e>(
    effect: &'e Effect,
    policy: &Policy,
    c: &mut Collector<'e>,
) -> Marks {
    let mut hooked = Marks::default();
    let own = OwnRows::of(effect);
    for group in row_groups(effect, policy, &mut hooked) {
        c.touched(group.table.clone());
        if !group.committed {
            let (op, table) = (group.op.as_str(), &group.table);
            c.attempt(Confidence::Confirmed, || {
                format!("{op} {table}: {} rolled back", rows(group.rows))
            });
            continue;
        }
        match group.op {
            RowOperation::Insert => inserted(&group, c),
            RowOperation::Delete => deleted(&group, effect, &own, c),
            RowOperation::Update => updated(&group, effect, policy, &own, c),
        }
    }
    hooked
}

/// Committed inserts: a write, and a change a repeat makes again.
fn inserted<'e>(group: &Group<'e>, c: &mut Collector<'e>) {
    let table = &group.table;
    let text = || format!("{} inserted into {table}", rows(group.rows));
    c.write(Confidence::Confirmed, text);
    c.net_change(Confidence::Confirmed, text);
    c.written(table.clone());
}

/// Committed deletes of rows that existed before the call: destructive.
fn deleted<'e>(group: &Group<'e>, effect: &Effect, own: &OwnRows<'_>, c: &mut Collector<'e>) {
    let table = &group.table;
    // Deleting rows the call inserted itself removes nothing that was there.
    let n = group.rows
        - group
            .members(effect)
            .filter(|(i, rc)| own.has(*i, rc))
            .count();
    if n == 0 {
        return;
    }
    let text = || format!("{} deleted from {table}", rows(n));
    c.write(Confidence::Confirmed, text);
    c.destructive(Confidence::Confirmed, text);
    c.net_change(Confidence::Confirmed, text);
    c.written(table.clone());
}

/// Committed updates: an overwrite unless row images (or, without them, the statement's SET
/// columns) show only ignored columns changed; a net change when something shows the SET
/// does not converge on repeat.
fn updated<'e>(
    group: &Group<'e>,
    effect: &Effect,
    policy: &Policy,
    own: &OwnRows<'_>,
    c: &mut Collector<'e>,
) {
    let table = &group.table;
    let mut changed = 0usize;
    let mut unchanged = 0usize;
    let mut non_convergent: Option<String> = None;
    for (i, rc) in group.members(effect) {
        // Filling in a row the call inserted itself overwrites nothing; the insert is the
        // write.
        if own.has(i, rc) {
            continue;
        }
        let stmt = rc.statement.and_then(|s| effect.statements.get(s));
        let direct = stmt.is_some_and(|s| s.tables.iter().any(|t| normalized_table(t) == *table));
        match read_image(policy, table, &rc.image) {
            Imaged::Unchanged => unchanged += 1,
            Imaged::Changed(cols) => {
                changed += 1;
                non_convergent.get_or_insert_with(|| images_differ(cols));
            }
            Imaged::Unknown => {
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
                        non_convergent.get_or_insert_with(|| format!("SET {col} = {expr}"));
                    }
                }
                changed += 1;
            }
        }
    }
    if changed > 0 {
        let text = || format!("{} updated in {table}", rows(changed));
        c.write(Confidence::Confirmed, text);
        c.destructive(Confidence::Confirmed, text);
        c.written(table.clone());
        if let Some(why) = non_convergent {
            // Row images prove the change; a SET from itself only suggests it.
            let images = effect
                .row_changes
                .iter()
                .any(|r| matches!(r.image, RowImage::Changed(_)));
            let confidence = if images {
                Confidence::Confirmed
            } else {
                Confidence::Likely
            };
            c.net_change(confidence, || format!("{} ({why})", text()));
        }
    }
    if unchanged > 0 && changed == 0 {
        c.attempt(Confidence::Confirmed, || {
            format!(
                "UPDATE {table}: {} matched, nothing changed",
                rows(unchanged)
            )
        });
    }
}

/// What a row image says of an update once the ignored columns are left out: the one rule
/// for the hooks' images (SQLite's preupdate hook) and the database log's (`hintaudit proxy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Imaged<'i> {
    /// No image: the update counts as an overwrite, as statements tell.
    Unknown,
    /// Old and new rows are equal, or differ in ignored columns only: no overwrite, and
    /// nothing a repeat changes again.
    Unchanged,
    /// These columns differ (empty: names not known), not all ignored: an overwrite, and a
    /// change a repeat makes again.
    Changed(&'i [String]),
}

/// Reads `image`, an update of `table`, through `policy`'s ignored columns.
pub(super) fn read_image<'i>(policy: &Policy, table: &str, image: &'i RowImage) -> Imaged<'i> {
    match image {
        RowImage::Unknown => Imaged::Unknown,
        RowImage::Unchanged => Imaged::Unchanged,
        RowImage::Changed(cols) if policy.all_columns_ignored(table, cols) => Imaged::Unchanged,
        RowImage::Changed(cols) => Imaged::Changed(cols),
    }
}

/// Why images that differ are a change: `changed views, qty`, or `row images differ` when the
/// columns are not named.
pub(super) fn images_differ(cols: &[String]) -> String {
    if cols.is_empty() {
        "row images differ".to_owned()
    } else {
        format!("changed {}", cols.join(", "))
    }
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

/// Groups row changes by (table, operation, committed), in first-seen order, and marks the
/// statements that caused any (`hooked`).
fn row_groups<'e>(
    effect: &'e Effect,
    policy: &Policy,
    hooked: &mut Marks,
) -> SmallVec<[Group<'e>; 4]> {
    let mut groups: SmallVec<[Group<'e>; 4]> = SmallVec::new();
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

/// Rows the call inserted and committed, by (table as the hook named it, row id), each with
/// the index of its insert in [`Effect::row_changes`]. Nothing when no update or delete
/// carries a row id (a bulk insert alone builds nothing); a linear search over the row
/// changes for a call of a few ([`OWN_ROWS_SCAN`]); a map past that.
enum OwnRows<'e> {
    None,
    Scan(&'e [RowChange]),
    Map(HashMap<(&'e str, i64), usize>),
}

/// Most row changes [`OwnRows`] searches linearly, without building a map.
const OWN_ROWS_SCAN: usize = 32;

impl<'e> OwnRows<'e> {
    fn of(effect: &'e Effect) -> Self {
        let changes = &effect.row_changes;
        let asked = changes
            .iter()
            .any(|rc| rc.operation != RowOperation::Insert && rc.row_id.is_some());
        if !asked {
            return OwnRows::None;
        }
        if changes.len() <= OWN_ROWS_SCAN {
            return OwnRows::Scan(changes);
        }
        let mut m = HashMap::new();
        for (i, rc) in changes.iter().enumerate() {
            if let Some(id) = own_insert(rc) {
                m.entry((rc.table.as_str(), id)).or_insert(i);
            }
        }
        OwnRows::Map(m)
    }

    /// Whether row change `i` updates or deletes a row the call inserted before it: no
    /// overwrite and no loss of anything that existed before the call.
    fn has(&self, i: usize, rc: &RowChange) -> bool {
        let Some(id) = rc.row_id else {
            return false;
        };
        match self {
            OwnRows::None => false,
            OwnRows::Scan(changes) => changes[..i.min(changes.len())]
                .iter()
                .any(|c| own_insert(c) == Some(id) && c.table == rc.table),
            OwnRows::Map(m) => m
                .get(&(rc.table.as_str(), id))
                .is_some_and(|&first| first < i),
        }
    }
}

/// The row id of a committed insert.
fn own_insert(rc: &RowChange) -> Option<i64> {
    match (rc.operation, rc.committed) {
        (RowOperation::Insert, true) => rc.row_id,
        _ => None,
    }
}

/// A set of statement indices: a bit mask, with a vector only past 64 statements.
#[derive(Default)]
pub(super) struct Marks {
    low: u64,
    high: Vec<bool>,
}

impl Marks {
    /// Marks statement `i`.
    pub(super) fn set(&mut self, i: usize) {
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

    /// Whether statement `i` is marked.
    pub(super) fn get(&self, i: usize) -> bool {
        match i.checked_sub(64) {
            None => self.low & (1 << i) != 0,
            Some(j) => self.high.get(j).copied().unwrap_or(false),
        }
    }
}

#[cfg(test)]
mod tests;
