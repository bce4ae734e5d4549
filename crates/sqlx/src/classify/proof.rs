//! The read-only proof: whether a text is *proved* not to write, so that a backend may skip
//! the database's own evidence for it ([design: evidence](../../../../docs/design.md#3-evidence)).
//!
//! The proof is an allowlist, never a guess. A text is proved read-only when every statement
//! in it is one of:
//!
//! - a query (`SELECT`, `VALUES`, `TABLE`, `WITH … SELECT`, `FOR UPDATE` included) with no
//!   statement nested in it (a writable CTE) and no `INTO` (`SELECT … INTO new_table`);
//! - `EXPLAIN` without `ANALYZE`, in any spelling (`EXPLAIN ANALYZE`, `EXPLAIN (ANALYZE)`,
//!   `EXPLAIN (ANALYZE true, FORMAT JSON)` run the statement and are not proved);
//! - `SHOW` and `DESCRIBE`; `SET`, `RESET`, `USE`, `DISCARD`, `LISTEN`, `UNLISTEN`,
//!   `DEALLOCATE` and `PREPARE` (session state, nothing run); `LOCK`; transaction control;
//!   `COPY … TO STDOUT`; SQLite `PRAGMA`s that read or set a session setting;
//!
//! and every function it calls, anywhere (a view's definition aside: see below), is a
//! built-in known not to write (`functions::is_known_read_only`), unqualified or qualified
//! with `pg_catalog`, and it uses no custom operator and no cast to a type sqlparser does not
//! know (a domain's `CHECK` can call a function). A user function counts as writing whatever
//! volatility it declares: a `STABLE` PL/pgSQL function may call a `VOLATILE` one.
//!
//! What the text alone cannot prove is what its relations are: a view (or a table with a
//! row-security policy) can call a function the text does not name. A backend that skips
//! evidence for a proved text must therefore also prove each of
//! [`Classification::effect`]'s `read_tables` plain, from its catalog (PostgreSQL does;
//! see `postgres::catalog`).
//!
//! [`Classification::effect`]: super::Classification::effect

use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, CopyTarget, DataType, Expr, ObjectName, Query, SetExpr, Statement, TableFactor,
    UtilityOption, Visit, Visitor,
};

use super::functions;
use super::names::{is_session_setting, is_show, keyword_of, last_part, name_parts};
use super::pragma;

/// Why a text is not proved read-only (`None`: it is proved).
pub(crate) fn not_proved(statements: &[Statement]) -> Option<String> {
    for s in statements {
        let mut p = Proof {
            nesting: Nesting::default(),
            why: None,
        };
        let _ = s.visit(&mut p);
        if let Some(why) = p.why {
            return Some(why);
        }
    }
    None
}

/// Visits one statement; stops at the first thing not proved.
struct Proof {
    /// Statements planned and not run (below `EXPLAIN` without `ANALYZE`, or `PREPARE`)
    /// cannot write; their function calls are still checked: the planner folds constant
    /// calls of functions declared immutable.
    nesting: Nesting,
    why: Option<String>,
}

/// How deep a visitor is in nested statements, and whether below a statement that only
/// plans what it nests: `EXPLAIN` without `ANALYZE`, `PREPARE`.
#[derive(Debug, Default)]
pub(crate) struct Nesting {
    depth: usize,
    planned_below: Option<usize>,
}

impl Nesting {
    /// Enters statement `s`: its depth, and whether it is only planned, not run.
    pub(crate) fn enter(&mut self, s: &Statement) -> (usize, bool) {
        let depth = self.depth;
        let planned = self.planned();
        let plans_only = match s {
            Statement::Explain {
                analyze, options, ..
            } => !explain_runs(*analyze, options.as_deref()),
            Statement::Prepare { .. } => true,
            _ => false,
        };
        if !planned && plans_only {
            self.planned_below = Some(depth);
        }
        self.depth += 1;
        (depth, planned)
    }

    /// Leaves the statement last entered.
    pub(crate) fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
        if self.planned_below == Some(self.depth) {
            self.planned_below = None;
        }
    }

    /// Whether what is visited now is only planned, not run.
    pub(crate) fn planned(&self) -> bool {
        self.planned_below.is_some()
    }
}

impl Proof {
    fn fail(&mut self, why: String) -> ControlFlow<()> {
        self.why = Some(why);
        ControlFlow::Break(())
    }

    /// A top-level statement (or one that is planned and not run): whether its kind is on
    /// the allowlist, and whether what it nests is run.
    fn top(&mut self, s: &Statement) -> ControlFlow<()> {
        match s {
            Statement::Query(q) => self.query(q),
            Statement::Explain {
                analyze, options, ..
            } => {
                if explain_runs(*analyze, options.as_deref()) {
                    return self.fail("EXPLAIN ANALYZE runs the statement".into());
                }
                ControlFlow::Continue(())
            }
            Statement::Prepare { .. } => ControlFlow::Continue(()),
            s if is_show(s) || is_session_setting(s) => ControlFlow::Continue(()),
            Statement::StartTransaction { .. }
            | Statement::Commit { .. }
            | Statement::Rollback { .. }
            | Statement::Savepoint { .. }
            | Statement::ReleaseSavepoint { .. }
            | Statement::Lock(_)
            | Statement::LockTables { .. }
            | Statement::UnlockTables => ControlFlow::Continue(()),
            Statement::Copy {
                to: true,
                target: CopyTarget::Stdout,
                ..
            } => ControlFlow::Continue(()),
            Statement::Pragma { name, value, .. }
                if pragma::is_session(&last_part(name), value.is_some()) =>
            {
                ControlFlow::Continue(())
            }
            other => {
                let text = other.to_string();
                let kw = keyword_of(&text);
                self.fail(format!("{kw} is not a read-only statement"))
            }
        }
    }

    fn query(&mut self, q: &Query) -> ControlFlow<()> {
        if let SetExpr::Select(s) = q.body.as_ref()
            && s.into.is_some()
        {
            return self.fail("SELECT … INTO creates a table".into());
        }
        ControlFlow::Continue(())
    }

    fn function(&mut self, name: &ObjectName) -> ControlFlow<()> {
        let parts = name_parts(name);
        let known = match parts.as_slice() {
            [f] => functions::is_known_read_only(f),
            [schema, f] if schema == "pg_catalog" => functions::is_known_read_only(f),
            _ => false,
        };
        if known {
            ControlFlow::Continue(())
        } else {
            self.fail(format!(
                "calls {}, not known to be read-only",
                parts.join(".")
            ))
        }
    }
}

/// Whether an `EXPLAIN` runs its statement: `ANALYZE` as a keyword (`EXPLAIN ANALYZE`), or
/// as an option not turned off (`EXPLAIN (ANALYZE)`, `EXPLAIN (FORMAT JSON, ANALYZE true)`),
/// in either of PostgreSQL's spellings (`ANALYSE`).
pub(crate) fn explain_runs(analyze: bool, options: Option<&[UtilityOption]>) -> bool {
    analyze
        || options.unwrap_or_default().iter().any(|o| {
            let name = &o.name.value;
            (name.eq_ignore_ascii_case("analyze") || name.eq_ignore_ascii_case("analyse"))
                && !off(&o.arg)
        })
}

/// Whether an option's argument turns it off: `ANALYZE false`, `ANALYZE off`, `ANALYZE 0`.
fn off(arg: &Option<Expr>) -> bool {
    arg.as_ref().is_some_and(|a| {
        let t = a.to_string().to_lowercase();
        matches!(t.trim_matches('\''), "false" | "off" | "0")
    })
}

impl Visitor for Proof {
    type Break = ();

    fn pre_visit_statement(&mut self, s: &Statement) -> ControlFlow<()> {
        let (depth, planned) = self.nesting.enter(s);
        if planned {
            // Planned and not run: its calls are still checked (by `pre_visit_expr`).
            ControlFlow::Continue(())
        } else if depth == 0 {
            self.top(s)
        } else if let Statement::Query(q) = s {
            self.query(q)
        } else {
            let text = s.to_string();
            let kw = keyword_of(&text);
            self.fail(format!("{kw} nested in the statement"))
        }
    }

    fn post_visit_statement(&mut self, _: &Statement) -> ControlFlow<()> {
        self.nesting.leave();
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        if self.nesting.planned() {
            return ControlFlow::Continue(());
        }
        // Data-modifying bodies: `WITH … DELETE`, `(INSERT …)` as a set operand.
        if matches!(
            q.body.as_ref(),
            SetExpr::Insert(_) | SetExpr::Update(_) | SetExpr::Delete(_) | SetExpr::Merge(_)
        ) {
            return self.fail("a data-modifying statement in a query".into());
        }
        self.query(q)
    }

    fn pre_visit_table_factor(&mut self, f: &TableFactor) -> ControlFlow<()> {
        match f {
            TableFactor::Table {
                name,
                args: Some(_),
                ..
            } => self.function(name),
            TableFactor::Function { name, .. } => self.function(name),
            TableFactor::Table { .. }
            | TableFactor::Derived { .. }
            | TableFactor::NestedJoin { .. }
            | TableFactor::UNNEST { .. } => ControlFlow::Continue(()),
            other => self.fail(format!("reads {other}, not a plain relation")),
        }
    }

    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        match e {
            Expr::Function(f) => self.function(&f.name),
            Expr::BinaryOp {
                op: BinaryOperator::Custom(o),
                ..
            } => self.fail(format!("uses the operator {o}")),
            Expr::BinaryOp {
                op: op @ BinaryOperator::PGCustomBinaryOperator(_),
                ..
            } => self.fail(format!("uses the operator {op}")),
            Expr::Cast {
                data_type: t @ DataType::Custom(..),
                ..
            } => self.fail(format!(
                "casts to {t}, a type that may check with a function"
            )),
            _ => ControlFlow::Continue(()),
        }
    }
}

#[cfg(test)]
mod tests;
