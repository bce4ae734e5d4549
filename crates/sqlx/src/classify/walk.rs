//! Walks one parsed statement: operation, tables written and read, SET columns,
//! non-convergent assignments and function calls.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use hintaudit_core::Operation;
use sqlparser::ast::{
    Assignment, AssignmentTarget, Expr, FromTable, Insert, ObjectType, OnConflictAction, OnInsert,
    Query, SetExpr, SqliteOnConflict, Statement, TableFactor, TableObject, Visit, Visitor,
};

use super::converge::is_non_convergent;
use super::names::{
    first_relation, first_word, is_session_setting, is_show, keyword_of, last_of, last_part,
    object_name,
};
use super::pragma;
use super::proof::{Nesting, explain_runs};
use super::transaction::{TxControl, cannot_run_in_transaction};

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

    fn insert(&mut self, insert: &Insert) {
        let table = match &insert.table {
            TableObject::TableName(n) => object_name(n),
            other => other.to_string().to_lowercase(),
        };
        let mut aliases = vec![table.clone(), last_of(&table)];
        if let Some(a) = &insert.table_alias {
            aliases.push(a.alias.value.to_lowercase());
        }
        let (op, keyword, overwrites) = match (&insert.on, insert.or) {
            (_, Some(SqliteOnConflict::Replace)) => (Operation::Upsert, "INSERT", true),
            _ if insert.replace_into => (Operation::Upsert, "REPLACE", true),
            (Some(OnInsert::DuplicateKeyUpdate(a)), _) => {
                self.assignments(a, &aliases);
                (Operation::Upsert, "INSERT", true)
            }
            (Some(OnInsert::OnConflict(c)), _) => match &c.action {
                OnConflictAction::DoNothing => (Operation::Upsert, "INSERT", false),
                OnConflictAction::DoUpdate(u) => {
                    self.assignments(&u.assignments, &aliases);
                    (Operation::Upsert, "INSERT", true)
                }
            },
            (_, Some(SqliteOnConflict::Ignore)) => (Operation::Upsert, "INSERT", false),
            _ if insert.ignore => (Operation::Upsert, "INSERT", false),
            _ => (Operation::Insert, "INSERT", false),
        };
        self.overwrites |= overwrites;
        self.write(op, keyword, vec![table]);
    }

    pub(crate) fn statement(&mut self, statement: &Statement) {
        match statement {
            Statement::Query(q) => self.query(q),
            Statement::Insert(i) => self.insert(i),
            Statement::Update(u) => {
                let table = first_relation(std::slice::from_ref(&u.table));
                let mut aliases = vec![];
                if let Some(t) = &table {
                    aliases.push(t.clone());
                    aliases.push(last_of(t));
                }
                if let TableFactor::Table { alias: Some(a), .. } = &u.table.relation {
                    aliases.push(a.name.value.to_lowercase());
                }
                self.assignments(&u.assignments, &aliases);
                self.write(Operation::Update, "UPDATE", table.into_iter().collect());
            }
            Statement::Delete(d) => {
                let tables: Vec<String> = if d.tables.is_empty() {
                    match &d.from {
                        FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => {
                            first_relation(t).into_iter().collect()
                        }
                    }
                } else {
                    d.tables.iter().map(object_name).collect()
                };
                if d.selection.is_none() && d.using.is_none() && d.limit.is_none() {
                    self.delete_without_where = true;
                }
                self.write(Operation::Delete, "DELETE", tables);
            }
            Statement::Merge(m) => {
                let tables = match &m.table {
                    TableFactor::Table { name, .. } => vec![object_name(name)],
                    _ => vec![],
                };
                self.overwrites = true;
                self.write(Operation::Upsert, "MERGE", tables);
            }
            Statement::Truncate(t) => {
                let tables = t.table_names.iter().map(|t| object_name(&t.name)).collect();
                self.write(Operation::Truncate, "TRUNCATE", tables);
            }
            Statement::Drop {
                object_type, names, ..
            } => {
                self.drops = true;
                let keyword = format!("DROP {object_type}");
                let tables = match object_type {
                    ObjectType::Table | ObjectType::View | ObjectType::MaterializedView => {
                        names.iter().map(object_name).collect()
                    }
                    _ => vec![],
                };
                if cannot_run_in_transaction(&statement.to_string()) {
                    self.no_transaction_block = true;
                }
                self.write(Operation::Ddl, &keyword, tables);
            }
            Statement::DropFunction(_)
            | Statement::DropDomain(_)
            | Statement::DropProcedure { .. }
            | Statement::DropPolicy(_)
            | Statement::DropRule(_)
            | Statement::DropTrigger(_)
            | Statement::DropExtension(_) => {
                self.drops = true;
                self.write(Operation::Ddl, "DROP", vec![]);
            }
            Statement::CreateTable(c) => {
                if c.temporary {
                    // A session-only object: it lives and dies with the session.
                    self.session_object("CREATE TEMPORARY TABLE", object_name(&c.name));
                } else {
                    self.write(Operation::Ddl, "CREATE TABLE", vec![object_name(&c.name)]);
                }
                if let Some(q) = &c.query {
                    self.query(q);
                }
            }
            Statement::CreateView(v) => {
                self.write(Operation::Ddl, "CREATE VIEW", vec![object_name(&v.name)]);
            }
            Statement::CreateIndex(i) => {
                if i.concurrently {
                    self.no_transaction_block = true;
                }
                self.write(
                    Operation::Ddl,
                    "CREATE INDEX",
                    vec![object_name(&i.table_name)],
                );
            }
            Statement::AlterTable(a) => {
                self.write(Operation::Ddl, "ALTER TABLE", vec![object_name(&a.name)]);
            }
            Statement::RenameTable(r) => {
                let tables = r.iter().map(|r| object_name(&r.old_name)).collect();
                self.write(Operation::Ddl, "RENAME TABLE", tables);
            }
            Statement::CreateDatabase { .. } => {
                self.no_transaction_block = true;
                self.write(Operation::Ddl, "CREATE DATABASE", vec![]);
            }
            Statement::Vacuum(_) => {
                self.no_transaction_block = true;
                self.set(Operation::Session, "VACUUM");
            }
            Statement::Call(f) => {
                self.calls.push(object_name(&f.name));
                if self.operation.is_none_or(|o| !o.is_write()) {
                    self.set(Operation::Call, "CALL");
                }
            }
            Statement::StartTransaction { .. } => {
                self.tx_control = Some(TxControl::Begin);
                self.set(Operation::Transaction, "BEGIN");
            }
            Statement::Commit { .. } => {
                self.tx_control = Some(TxControl::Commit);
                self.set(Operation::Transaction, "COMMIT");
            }
            Statement::Rollback { savepoint, .. } => {
                self.tx_control = Some(if savepoint.is_some() {
                    TxControl::RollbackTo
                } else {
                    TxControl::Rollback
                });
                self.set(Operation::Transaction, "ROLLBACK");
            }
            Statement::Savepoint { .. } => {
                self.tx_control = Some(TxControl::Savepoint);
                self.set(Operation::Transaction, "SAVEPOINT");
            }
            Statement::ReleaseSavepoint { .. } => {
                self.tx_control = Some(TxControl::Release);
                self.set(Operation::Transaction, "RELEASE");
            }
            Statement::Pragma { name, value, .. } => {
                if pragma::is_session(&last_part(name), value.is_some()) {
                    self.set(Operation::Session, "PRAGMA");
                } else {
                    self.write(Operation::Ddl, "PRAGMA", vec![]);
                }
            }
            s if is_session_setting(s)
                || matches!(s, Statement::Prepare { .. } | Statement::Analyze(_)) =>
            {
                let text = statement.to_string();
                // `DISCARD ALL`: a session statement, so never wrapped anyway.
                self.no_transaction_block |= cannot_run_in_transaction(&text);
                self.set(Operation::Session, &first_word(&text));
            }
            s if is_show(s) => self.set(Operation::Session, "SHOW"),
            Statement::Explain {
                analyze, options, ..
            } => {
                // EXPLAIN ANALYZE, in any spelling, runs the statement: the nested walk
                // reports it.
                if !explain_runs(*analyze, options.as_deref()) {
                    self.set(Operation::Select, "EXPLAIN");
                }
            }
            Statement::Execute { name, .. } => {
                // EXECUTE of a prepared statement: its text is unknown here.
                if let Some(n) = name {
                    self.calls.push(object_name(n));
                }
                self.set(Operation::Unknown, "EXECUTE");
            }
            Statement::Lock(_) | Statement::LockTables { .. } | Statement::UnlockTables => {
                self.set(Operation::SelectForUpdate, "LOCK");
            }
            Statement::Copy { to, .. } => {
                if *to {
                    self.set(Operation::Select, "COPY");
                } else {
                    self.write(Operation::Insert, "COPY", copy_table(statement));
                }
            }
            other => {
                let text = other.to_string();
                let kw = keyword_of(&text);
                if cannot_run_in_transaction(&text) {
                    self.no_transaction_block = true;
                }
                self.write(Operation::Ddl, &kw, vec![]);
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

fn copy_table(statement: &Statement) -> Vec<String> {
    match statement {
        Statement::Copy {
            source: sqlparser::ast::CopySource::Table { table_name, .. },
            ..
        } => vec![object_name(table_name)],
        _ => vec![],
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
