//! Statements: what statement analysis says each statement does, and the rows the driver
//! reports where that is trustworthy. Confirmed where the driver counted rows, likely where
//! only the statement's text speaks; silent about statements whose rows the hooks or the
//! oracle already told.

use std::borrow::Cow;
use std::collections::BTreeSet;

use smallvec::SmallVec;

use crate::effect::{Effect, Operation, StatementEffect, StatementOutcome};
use crate::facts::collect::Collector;
use crate::facts::evidence::rows;
use crate::facts::rows::Marks;
use crate::finding::Confidence;
use crate::policy::{Policy, normalized_table};

use Confidence::{Confirmed, Likely};

/// Adds the evidence of `effect`'s statements to `c`. `hooked` marks the statements that
/// caused row changes; `oracle_tables` are the tables the transaction oracle saw.
pub(super) fn record_statements<'e>(
    effect: &'e Effect,
    policy: &Policy,
    hooked: &Marks,
    oracle_tables: &BTreeSet<Cow<'e, str>>,
    c: &mut Collector<'e>,
) {
    // Session-only objects the call created (temporary tables): writes to them are no
    // effect on the environment.
    let session: SmallVec<[Cow<'e, str>; 2]> = effect
        .statements
        .iter()
        .flat_map(|s| s.session_tables.iter().map(|t| normalized_table(t)))
        .collect();
    for (i, s) in effect.statements.iter().enumerate() {
        // A statement enforce mode refused is an `enforced` finding, not a write attempt;
        // its tables still count as touched.
        if effect.refusals.iter().any(|r| r.statement == Some(i)) {
            c.touched_all(
                targets(s, policy).chain(s.read_tables.iter().map(|t| normalized_table(t))),
            );
            continue;
        }
        record_statement(s, hooked.get(i), policy, &session, oracle_tables, c);
    }
}

/// The watched tables `s` writes, normalized.
fn targets<'e>(s: &'e StatementEffect, policy: &Policy) -> impl Iterator<Item = Cow<'e, str>> {
    s.tables
        .iter()
        .map(|t| normalized_table(t))
        .filter(|t| !policy.is_ignored_table(t))
}

fn record_statement<'e>(
    s: &'e StatementEffect,
    hooked: bool,
    policy: &Policy,
    session: &[Cow<'e, str>],
    oracle_tables: &BTreeSet<Cow<'e, str>>,
    c: &mut Collector<'e>,
) {
    c.touched_all(
        s.read_tables
            .iter()
            .map(|t| normalized_table(t))
            .filter(|t| !policy.is_ignored_table(t)),
    );
    // The watched tables it writes, normalized once; the session's own objects are not
    // watched.
    let written: SmallVec<[Cow<'e, str>; 2]> = targets(s, policy)
        .filter(|t| !session.contains(t))
        .collect();
    c.touched_all(written.iter().cloned());
    let write_op = s.operation.is_write() || s.operation == Operation::Unknown;
    if let (false, Some(why), StatementOutcome::Ok) = (write_op, &s.unobserved, s.outcome) {
        let what = &*s.summary;
        c.write(Likely, || {
            format!("{what}: may write, not observed ({why})")
        });
        return;
    }
    if !write_op || (written.is_empty() && !s.tables.is_empty()) {
        return; // not a write, or a write to ignored or session-only tables only
    }
    if s.operation != Operation::Unknown {
        c.write_statement();
    }
    let what = &*s.summary;
    match s.outcome {
        StatementOutcome::Failed if s.operation != Operation::Unknown => {
            c.attempt(Confirmed, || format!("{what}: failed"));
            return;
        }
        StatementOutcome::RolledBack if s.operation != Operation::Unknown => {
            c.attempt(Confirmed, || format!("{what}: rolled back"));
            return;
        }
        StatementOutcome::Failed | StatementOutcome::RolledBack => return,
        StatementOutcome::Ok => {}
    }
    let covered_by_oracle =
        !oracle_tables.is_empty() && written.iter().any(|t| oracle_tables.contains(t));
    match s.operation {
        Operation::Truncate => truncated(s, &written, c),
        Operation::Ddl => {
            c.write(Likely, || format!("{what}: schema change"));
            if s.drops {
                c.destructive(Likely, || format!("{what}: DROP"));
            }
            c.written_all(written.iter().cloned());
        }
        Operation::Unknown if !s.observed => {
            c.write(Likely, || {
                format!("{what}: unparseable statement, a possible write")
            });
        }
        Operation::Unknown => {}
        _ if s.observed => observed(s, hooked, covered_by_oracle, c),
        _ => match s.rows_affected {
            Some(0) => c.attempt(Confirmed, || format!("{what}: 0 rows affected")),
            Some(n) => rows_reported(s, n, &written, policy, c),
            None => rows_not_reported(s, &written, c),
        },
    }
}

/// A TRUNCATE that ran: a likely write, destructive and a net change; an attempt when the
/// database log showed the table empty since its last truncation (observed, 0 rows):
/// nothing was removed, and a repeat changes nothing.
fn truncated<'e>(s: &'e StatementEffect, written: &[Cow<'e, str>], c: &mut Collector<'e>) {
    let what = &*s.summary;
    if s.observed && s.rows_affected == Some(0) {
        c.attempt(Likely, || format!("{what}: the table was already empty"));
        return;
    }
    let text = || format!("{what}: table truncated");
    c.write(Likely, text);
    c.destructive(Likely, text);
    c.net_change(Likely, text);
    c.written_all(written.iter().cloned());
}

/// A write the hooks or the oracle watched. Without a row change it changed nothing, except
/// where SQLite's hooks are blind (REPLACE conflict deletes).
fn observed(s: &StatementEffect, hooked: bool, covered_by_oracle: bool, c: &mut Collector<'_>) {
    let what = &*s.summary;
    if !hooked && !covered_by_oracle {
        c.attempt(Confirmed, || format!("{what}: changed nothing"));
    }
    if s.operation == Operation::Upsert && s.overwrites && !covered_by_oracle {
        c.destructive(Likely, || {
            format!("{what}: upsert may overwrite existing rows")
        });
    }
}

/// An unwatched write whose rows the driver counted (`n` > 0): a confirmed write.
/// `written`: the watched tables it writes, normalized.
fn rows_reported<'e>(
    s: &'e StatementEffect,
    n: u64,
    written: &[Cow<'e, str>],
    policy: &Policy,
    c: &mut Collector<'e>,
) {
    let what = &*s.summary;
    let text = || format!("{what}: {} affected", rows(n as usize));
    c.write(Confirmed, text);
    c.written_all(written.iter().cloned());
    let first = written.first().map_or("", |t| &**t);
    let ignored = policy.all_columns_ignored(first, &s.set_columns);
    let set_from_itself = |c: &mut Collector<'e>| {
        if let Some((col, expr)) = s.non_convergent.first() {
            c.net_change(Likely, || format!("{} (SET {col} = {expr})", text()));
        }
    };
    match s.operation {
        Operation::Delete => {
            c.destructive(Confirmed, text);
            c.net_change(Confirmed, text);
        }
        Operation::Update if !ignored => {
            c.destructive(Confirmed, text);
            set_from_itself(c);
        }
        Operation::Upsert if s.overwrites && !ignored => {
            c.destructive(Likely, || {
                format!("{}; an upsert that may have overwritten", text())
            });
            set_from_itself(c);
        }
        Operation::Insert => c.net_change(Confirmed, text),
        _ => {}
    }
}

/// An unwatched write whose rows nobody counted: a likely write. `written`: the watched
/// tables it writes, normalized.
fn rows_not_reported<'e>(s: &'e StatementEffect, written: &[Cow<'e, str>], c: &mut Collector<'e>) {
    let what = &*s.summary;
    let text = || format!("{what}: a write (rows not reported)");
    c.write(Likely, text);
    c.written_all(written.iter().cloned());
    match s.operation {
        Operation::Delete => c.destructive(Likely, text),
        Operation::Update if !s.set_columns.is_empty() => c.destructive(Likely, text),
        Operation::Upsert if s.overwrites => c.destructive(Likely, text),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
