//! A statement's effect expanded through the triggers it fires and the routines it calls
//! (`catalog`): each write found in their bodies becomes a derived statement of the call,
//! evidence `likely`, whose summary says how it was found: `DELETE holds (via trigger
//! booking_clears_holds on bookings)`, `… (via procedure purge, keyword scan)`.
//!
//! Row-level triggers fire only for rows the statement touched, so a DML statement that
//! affected 0 rows fires nothing. `INSERT` fires the table's `INSERT` triggers; `INSERT …
//! ON DUPLICATE KEY UPDATE` also its `UPDATE` triggers; `REPLACE` its `INSERT` and `DELETE`
//! triggers. Derived writes fire triggers in turn, up to [`MAX_DEPTH`] levels, each trigger
//! and routine once per statement. A statement that reads a view is expanded through the
//! stored functions the view's definition calls (views in views too).

use std::collections::HashSet;

use hintaudit_core::{Operation, StatementEffect};

use super::catalog::{BodyWrite, Catalog, RoutineKind, called_procedure};
use crate::classify::Classification;

/// How deep triggers firing triggers (and routines calling routines) are followed.
pub(crate) const MAX_DEPTH: usize = 8;

/// The derived writes of one statement that ran: `rows` affected (for DML).
pub(crate) fn derived(
    catalog: &Catalog,
    class: &Classification,
    sql: &str,
    rows: u64,
) -> Vec<StatementEffect> {
    let mut x = Expand {
        catalog,
        seen: HashSet::new(),
        out: Vec::new(),
    };
    let e = &class.effect;
    match e.operation {
        Operation::Call => {
            if let Some(p) = called_procedure(sql) {
                x.routine(&p, RoutineKind::Procedure, 0);
            }
        }
        op if crate::classify::is_dml(op) && rows == 0 => {}
        op => {
            let events = fired(op, e.overwrites, class.operation_name == "REPLACE");
            for t in e.tables.iter() {
                x.fire(t, &events, 0);
            }
        }
    }
    // Stored functions called from any statement (`SELECT reserve(?)`), and from the
    // definitions of the views it reads.
    for f in e.opaque_calls.iter() {
        x.routine(unqualified(f), RoutineKind::Function, 0);
    }
    for t in e.read_tables.iter() {
        x.view(t, 0);
    }
    x.out
}

/// The trigger events a write of `op` fires.
fn fired(op: Operation, overwrites: bool, replace: bool) -> Vec<Operation> {
    match op {
        Operation::Insert => vec![Operation::Insert],
        Operation::Upsert if replace => vec![Operation::Insert, Operation::Delete],
        Operation::Upsert if overwrites => vec![Operation::Insert, Operation::Update],
        Operation::Upsert => vec![Operation::Insert],
        Operation::Update => vec![Operation::Update],
        Operation::Delete => vec![Operation::Delete],
        _ => vec![],
    }
}

fn unqualified(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

struct Expand<'c> {
    catalog: &'c Catalog,
    /// Triggers and routines already expanded (`t:` / `r:` + name).
    seen: HashSet<String>,
    out: Vec<StatementEffect>,
}

impl Expand<'_> {
    /// The triggers on `table` for `events`.
    fn fire(&mut self, table: &str, events: &[Operation], depth: usize) {
        if depth >= MAX_DEPTH {
            return;
        }
        let table = unqualified(table).trim_matches('`');
        let catalog = self.catalog;
        for t in catalog
            .triggers
            .iter()
            .filter(|t| t.table == table && events.contains(&t.event))
        {
            if !self.seen.insert(format!("t:{}", t.name)) {
                continue;
            }
            let how = format!("via trigger {} on {}", t.name, t.table);
            self.body(&t.writes, &how, depth);
        }
    }

    /// The body of procedure or function `name`.
    fn routine(&mut self, name: &str, kind: RoutineKind, depth: usize) {
        if depth >= MAX_DEPTH || !self.seen.insert(format!("r:{name}")) {
            return;
        }
        let catalog = self.catalog;
        let Some((found, writes)) = catalog.routines.get(name) else {
            return;
        };
        if *found != kind && kind == RoutineKind::Procedure {
            return;
        }
        let how = format!("via {} {name}", found.as_str());
        self.body(writes, &how, depth);
    }

    /// Reading `name`, when it is a view: the stored functions its definition calls, and
    /// the views it reads in turn. A definition that cannot be read is a possible write.
    fn view(&mut self, name: &str, depth: usize) {
        let name = unqualified(name).trim_matches('`');
        if depth >= MAX_DEPTH || !self.seen.insert(format!("v:{name}")) {
            return;
        }
        let catalog = self.catalog;
        let Some(v) = catalog.views.get(name) else {
            return;
        };
        if v.opaque {
            let mut effect = StatementEffect::new(Operation::Unknown, vec![]);
            effect.summary =
                format!("SELECT {name} (via view {name}, definition not readable)").into();
            self.out.push(effect);
        }
        for f in &v.functions {
            self.routine(unqualified(f), RoutineKind::Function, depth + 1);
        }
        for t in &v.reads {
            self.view(t, depth + 1);
        }
    }

    fn body(&mut self, writes: &[BodyWrite], how: &str, depth: usize) {
        for w in writes {
            if let Some(p) = &w.calls {
                self.routine(p, RoutineKind::Procedure, depth + 1);
                continue;
            }
            let mut effect = w.effect.clone();
            let scan = if w.parsed { "" } else { ", keyword scan" };
            effect.summary = format!("{} ({how}{scan})", effect.summary).into();
            let op = effect.operation;
            let replace = effect.overwrites && op == Operation::Upsert && !w.parsed;
            let events = fired(op, effect.overwrites, replace);
            let tables = effect.tables.clone();
            let functions = effect.opaque_calls.clone();
            self.out.push(effect);
            for t in tables.iter() {
                self.fire(t, &events, depth + 1);
            }
            for f in functions.iter() {
                self.routine(unqualified(f), RoutineKind::Function, depth + 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::{SqlDialect, classify};
    use crate::mysql::catalog::{Trigger, body_writes};

    fn catalog() -> Catalog {
        let trigger = |name: &str, table: &str, event, body: &str| Trigger {
            name: name.into(),
            table: table.into(),
            event,
            writes: body_writes(body),
        };
        let mut c = Catalog {
            system: "mariadb",
            triggers: vec![
                trigger(
                    "booking_clears_holds",
                    "bookings",
                    Operation::Insert,
                    "DELETE FROM holds WHERE room = NEW.room",
                ),
                trigger(
                    "holds_log",
                    "holds",
                    Operation::Delete,
                    "INSERT INTO log (what) VALUES ('hold gone')",
                ),
                trigger(
                    "bookings_touch",
                    "bookings",
                    Operation::Update,
                    "SET NEW.at = NOW()",
                ),
            ],
            ..Catalog::default()
        };
        c.routines.insert(
            "purge".into(),
            (
                RoutineKind::Procedure,
                body_writes("BEGIN IF 1 THEN DELETE FROM bookings; END IF; END"),
            ),
        );
        c
    }

    /// One row per statement: the derived summaries.
    #[test]
    fn expansion() {
        let c = catalog();
        let cases: Vec<(&str, u64, Vec<&str>)> = vec![
            (
                "INSERT INTO bookings (room) VALUES (?)",
                1,
                vec![
                    "DELETE holds (via trigger booking_clears_holds on bookings)",
                    "INSERT log (via trigger holds_log on holds)",
                ],
            ),
            ("INSERT IGNORE INTO bookings (room) VALUES (?)", 0, vec![]),
            ("UPDATE bookings SET room = 2", 3, vec![]),
            (
                "CALL purge()",
                0,
                vec!["DELETE bookings (via procedure purge)"],
            ),
            ("SELECT * FROM bookings", 0, vec![]),
        ];
        for (sql, rows, want) in cases {
            let class = classify(sql, SqlDialect::MySql);
            let got: Vec<String> = derived(&c, &class, sql, rows)
                .iter()
                .map(|s| s.summary.to_string())
                .collect();
            assert_eq!(got, want, "{sql}");
        }
    }
}
