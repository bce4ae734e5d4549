//! One statement's own kind: the operation, keyword and tables each kind of statement
//! records, one method per kind that needs more than a line.

use hintaudit_core::Operation;
use sqlparser::ast::{
    CreateIndex, CreateTable, Delete, FromTable, Insert, Merge, ObjectName, ObjectType,
    OnConflictAction, OnInsert, SqliteOnConflict, Statement, TableFactor, TableObject, Truncate,
    Update,
};

use super::Walk;
use crate::classify::names::{
    first_relation, first_word, is_session_setting, is_show, keyword_of, last_of, last_part,
    object_name,
};
use crate::classify::pragma;
use crate::classify::proof::explain_runs;
use crate::classify::transaction::{TxControl, cannot_run_in_transaction};

impl Walk {
    /// Records what `statement` itself does (the visitor walks what it nests).
    pub(crate) fn statement(&mut self, statement: &Statement) {
        match statement {
            Statement::Query(q) => self.query(q),
            Statement::Insert(i) => self.insert(i),
            Statement::Update(u) => self.update(u),
            Statement::Delete(d) => self.delete(d),
            Statement::Merge(m) => self.merge(m),
            Statement::Truncate(t) => self.truncate(t),
            Statement::Drop {
                object_type, names, ..
            } => self.drop(statement, *object_type, names),
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
            Statement::CreateTable(c) => self.create_table(c),
            Statement::CreateView(v) => {
                self.write(Operation::Ddl, "CREATE VIEW", vec![object_name(&v.name)]);
            }
            Statement::CreateIndex(i) => self.create_index(i),
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
            Statement::Call(f) => self.call(&f.name),
            Statement::StartTransaction { .. } => self.transaction(TxControl::Begin, "BEGIN"),
            Statement::Commit { .. } => self.transaction(TxControl::Commit, "COMMIT"),
            Statement::Rollback { savepoint, .. } => {
                let control = match savepoint {
                    Some(_) => TxControl::RollbackTo,
                    None => TxControl::Rollback,
                };
                self.transaction(control, "ROLLBACK");
            }
            Statement::Savepoint { .. } => self.transaction(TxControl::Savepoint, "SAVEPOINT"),
            Statement::ReleaseSavepoint { .. } => self.transaction(TxControl::Release, "RELEASE"),
            Statement::Pragma { name, value, .. } => self.pragma(name, value.is_some()),
            s if is_session_setting(s)
                || matches!(s, Statement::Prepare { .. } | Statement::Analyze(_)) =>
            {
                self.session_statement(&statement.to_string());
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
            Statement::Execute { name, .. } => self.execute(name.as_ref()),
            Statement::Lock(_) | Statement::LockTables { .. } | Statement::UnlockTables => {
                self.set(Operation::SelectForUpdate, "LOCK");
            }
            Statement::Copy { to: true, .. } => self.set(Operation::Select, "COPY"),
            Statement::Copy { .. } => self.write(Operation::Insert, "COPY", copy_table(statement)),
            other => self.other(&other.to_string()),
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

    fn update(&mut self, u: &Update) {
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

    fn delete(&mut self, d: &Delete) {
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

    fn truncate(&mut self, t: &Truncate) {
        let tables = t.table_names.iter().map(|t| object_name(&t.name)).collect();
        self.write(Operation::Truncate, "TRUNCATE", tables);
    }

    fn merge(&mut self, m: &Merge) {
        let tables = match &m.table {
            TableFactor::Table { name, .. } => vec![object_name(name)],
            _ => vec![],
        };
        self.overwrites = true;
        self.write(Operation::Upsert, "MERGE", tables);
    }

    fn drop(&mut self, statement: &Statement, object_type: ObjectType, names: &[ObjectName]) {
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

    fn create_table(&mut self, c: &CreateTable) {
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

    fn create_index(&mut self, i: &CreateIndex) {
        if i.concurrently {
            self.no_transaction_block = true;
        }
        self.write(
            Operation::Ddl,
            "CREATE INDEX",
            vec![object_name(&i.table_name)],
        );
    }

    fn call(&mut self, name: &ObjectName) {
        self.calls.push(object_name(name));
        if self.operation.is_none_or(|o| !o.is_write()) {
            self.set(Operation::Call, "CALL");
        }
    }

    fn transaction(&mut self, control: TxControl, keyword: &str) {
        self.tx_control = Some(control);
        self.set(Operation::Transaction, keyword);
    }

    fn pragma(&mut self, name: &ObjectName, has_value: bool) {
        if pragma::is_session(&last_part(name), has_value) {
            self.set(Operation::Session, "PRAGMA");
        } else {
            self.write(Operation::Ddl, "PRAGMA", vec![]);
        }
    }

    /// `SET`, `RESET`, `PREPARE`, `ANALYZE` and their kin, by the text's first word.
    fn session_statement(&mut self, text: &str) {
        // `DISCARD ALL`: a session statement, so never wrapped anyway.
        self.no_transaction_block |= cannot_run_in_transaction(text);
        self.set(Operation::Session, &first_word(text));
    }

    /// EXECUTE of a prepared statement: its text is unknown here.
    fn execute(&mut self, name: Option<&ObjectName>) {
        if let Some(n) = name {
            self.calls.push(object_name(n));
        }
        self.set(Operation::Unknown, "EXECUTE");
    }

    /// Any other statement: DDL, named by its leading keywords.
    fn other(&mut self, text: &str) {
        let kw = keyword_of(text);
        if cannot_run_in_transaction(text) {
            self.no_transaction_block = true;
        }
        self.write(Operation::Ddl, &kw, vec![]);
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
