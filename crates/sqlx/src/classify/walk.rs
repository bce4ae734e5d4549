//! Walks one parsed statement: operation, tables written and read, SET columns,
//! non-convergent assignments and function calls.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use hintaudit_core::Operation;
use sqlparser::ast::{
    Assignment, AssignmentTarget, Expr, Query, SetExpr, Statement, TableFactor, Visit, Visitor,
};

use super::converge::is_non_convergent;
use super::names::{last_part, object_name};
use super::proof::Nesting;
use super::transaction::TxControl;

/// One statement's own kind, one method per kind.
mod statement;

/// What one statement does, before merging with the other statements of the same text.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    pub operation: Option<Operation>,
    /// The SQL keyword(s) for `db.operation.name`: `SELECT`, `INSERT`, `CREATE TABLE`.
    pub keyword: String,
    pub tables: Vec<String>,
    pub read_tables: BTreeSet<String>,
    pub cte_names: BTreeSet<String>,
    pub set_columns: Vec<String>,
    pub overwrites: bool,
    pub non_convergent: Vec<(String, String)>,
    pub calls: Vec<String>,
    pub drops: bool,
    pub tx_control: Option<TxControl>,
    pub no_transaction_block: bool,
    pub delete_without_where: bool,
    /// Session-only objects the text creates (temporary tables).
    pub session_tables: Vec<String>,
}

/// Rank of a write operation when several appear in one text: the strongest is reported.
fn rank(op: Operation, overwrites: bool, drops: bool) -> u8 {
    match op {
        Operation::Ddl if drops => 9,
        Operation::Truncate => 8,
        Operation::Delete => 7,
        Operation::Upsert if overwrites => 6,
        Operation::Update => 5,
        Operation::Upsert => 4,
        Operation::Insert => 3,
        Operation::Ddl => 2,
        Operation::Call => 1,
        _ => 0,
    }
}

impl Walk {
    fn write(&mut self, op: Operation, keyword: &str, tables: Vec<String>) {
        let stronger = match self.operation {
            None => true,
            Some(cur) => {
                rank(op, self.overwrites, self.drops) > rank(cur, self.overwrites, self.drops)
                    || !cur.is_write()
            }
        };
        if stronger {
            self.operation = Some(op);
            self.keyword = keyword.to_owned();
        }
        for t in tables {
            if !self.tables.contains(&t) {
                self.tables.push(t);
            }
        }
    }

    fn set(&mut self, op: Operation, keyword: &str) {
        self.operation = Some(op);
        self.keyword = keyword.to_owned();
    }

    /// Records `SET` assignments. `excluded` names the pseudo-table of an upsert whose columns
    /// hold the proposed row (`EXCLUDED.x` converges).
    fn assignments(&mut self, assignments: &[Assignment], table_aliases: &[String]) {
        for a in assignments {
            let columns: Vec<String> = match &a.target {
                AssignmentTarget::ColumnName(n) => vec![last_part(n)],
                AssignmentTarget::Tuple(ns) => ns.iter().map(last_part).collect(),
            };
            for col in columns {
                if !self.set_columns.contains(&col) {
                    self.set_columns.push(col.clone());
                }
                if is_non_convergent(&col, &a.value, table_aliases) {
                    self.non_convergent.push((col, a.value.to_string()));
                }
            }
        }
    }

    /// A statement that creates a session-only object (a temporary table): a session
    /// statement, unless the text also writes; the object is listed in `tables`, where the
    /// judge finds the session's own objects (writes to them are no effect).
    fn session_object(&mut self, keyword: &str, name: String) {
        if self.operation.is_none_or(|o| !o.is_write()) {
            self.set(Operation::Session, keyword);
        }
        self.session_tables.push(name);
    }

    fn query(&mut self, q: &Query) {
        if let SetExpr::Select(s) = q.body.as_ref()
            && let Some(into) = &s.into
        {
            let target = into
                .targets
                .first()
                .map(|t| t.to_string().to_lowercase())
                .unwrap_or_default();
            if target.starts_with('@') || target.is_empty() {
                // MySQL `SELECT … INTO @var`: a session variable.
                if self.operation.is_none() {
                    self.set(Operation::Session, "SELECT");
                }
            } else if into.temporary {
                self.session_object("SELECT INTO", target);
            } else {
                // PostgreSQL `SELECT … INTO new_table`: `CREATE TABLE … AS`.
                self.write(Operation::Ddl, "SELECT INTO", vec![target]);
            }
            return;
        }
        let locks = !q.locks.is_empty();
        match q.body.as_ref() {
            // The nested walk reports these: `WITH d AS (...) DELETE ... RETURNING`.
            SetExpr::Insert(_) | SetExpr::Update(_) | SetExpr::Delete(_) | SetExpr::Merge(_) => {}
            _ => {
                if self.operation.is_none() {
                    if locks {
                        self.set(Operation::SelectForUpdate, "SELECT");
                    } else {
                        self.set(Operation::Select, "SELECT");
                    }
                }
            }
        }
    }

    /// Walks everything nested: CTEs with writes, subqueries, table factors, function calls.
    pub(crate) fn nested(&mut self, statement: &Statement) {
        let mut v = Nested {
            walk: self,
            nesting: Nesting::default(),
        };
        let _ = statement.visit(&mut v);
    }
}

/// Visits every nested node: tables read, CTE names, function calls, nested writes.
struct Nested<'a> {
    walk: &'a mut Walk,
    /// Statements below `EXPLAIN` without `ANALYZE`, or `PREPARE`, do not run.
    nesting: Nesting,
}

impl Visitor for Nested<'_> {
    type Break = ();

    fn pre_visit_statement(&mut self, statement: &Statement) -> ControlFlow<()> {
        // Statements nested in CTEs or set expressions: `WITH d AS (DELETE ...) SELECT`.
        let (depth, planned) = self.nesting.enter(statement);
        if depth > 0 && !planned {
            self.walk.statement(statement);
        }
        ControlFlow::Continue(())
    }

    fn post_visit_statement(&mut self, _: &Statement) -> ControlFlow<()> {
        self.nesting.leave();
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        if let Some(with) = &query.with {
            for cte in &with.cte_tables {
                self.walk
                    .cte_names
                    .insert(cte.alias.name.value.to_lowercase());
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        match factor {
            TableFactor::Table {
                name, args: None, ..
            } => {
                self.walk.read_tables.insert(object_name(name));
            }
            TableFactor::Table {
                name,
                args: Some(_),
                ..
            } => {
                self.walk.calls.push(object_name(name));
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        if let Expr::Function(f) = expr {
            self.walk.calls.push(object_name(&f.name));
        }
        ControlFlow::Continue(())
    }
}
