//! The database check: does verify watch the database the server uses?
//!
//! Before the first call the watched database must have tables. Then the check passes as
//! soon as either is seen: another session on the database (PostgreSQL `pg_stat_activity`,
//! MySQL/MariaDB processlist, another process holding the SQLite file open on Linux),
//! looked for before the first call and while calls are in flight; or a call that changed
//! a watched table. When neither was seen by the end of the run and a tool that declares
//! writes had a successful call, the database is not the server's: the run stops with exit
//! code 2 instead of judging writes it cannot see.

use crate::db::Database;
use crate::error::VerifyError;
use crate::report::ToolReport;

/// What the check has seen so far.
#[derive(Debug, Default)]
pub(crate) struct Watch {
    confirmed: Option<String>,
    /// Whether the backend can show other sessions at all.
    sessions_visible: Option<bool>,
}

impl Watch {
    /// Fails when the database has no watched table: an empty SQLite file the server just
    /// created, a schema the server does not use, a database of another name.
    pub fn require_tables(tables: usize, database: &str) -> Result<(), VerifyError> {
        if tables == 0 {
            return Err(VerifyError::Database(format!(
                "{database} has no table to watch; is it the database the server uses? (a \
                 SQLite path the server created empty, another database name, or --schema \
                 naming no table's schema)"
            )));
        }
        Ok(())
    }

    /// Whether the check has passed.
    pub fn confirmed(&self) -> bool {
        self.confirmed.is_some()
    }

    /// Looks for another session on the database (cheap; skipped once confirmed).
    pub async fn poll(&mut self, db: &mut Database) {
        if self.confirmed.is_some() || self.sessions_visible == Some(false) {
            return;
        }
        match db.other_sessions().await {
            Ok(Some(n)) if n > 0 => {
                self.sessions_visible = Some(true);
                self.confirmed = Some("a session of the server on the database was seen".into());
            }
            Ok(Some(_)) => self.sessions_visible = Some(true),
            Ok(None) => self.sessions_visible = Some(false),
            // A catalog we may not read only costs this way of confirming.
            Err(_) => self.sessions_visible = Some(false),
        }
    }

    /// A call changed a watched table: the server writes to this database.
    pub fn saw_change(&mut self, tool: &str, table: &str) {
        if self.confirmed.is_none() {
            self.confirmed = Some(format!("a call of {tool} changed table {table}"));
        }
    }

    /// The verdict at the end of the run: the text for the report, or the error that ends
    /// the run (exit 2).
    pub fn verdict(&self, tools: &[ToolReport], database: &str) -> Result<String, VerifyError> {
        if let Some(how) = &self.confirmed {
            return Ok(format!("confirmed: {how}"));
        }
        let writers: Vec<&str> = tools
            .iter()
            .filter(|t| !t.hints.effective().read_only)
            .filter(|t| {
                t.cases
                    .iter()
                    .flat_map(|c| c.calls.iter())
                    .any(|c| c.error.is_none())
            })
            .map(|t| t.name.as_str())
            .collect();
        if writers.is_empty() {
            return Ok(
                "unconfirmed: no session of the server on the database was seen and no call \
                 wrote to it (no tool that declares writes had a successful call)"
                    .into(),
            );
        }
        Err(VerifyError::Database(format!(
            "{database} is not the database the server uses: no session of the server was \
             seen on it and nothing changed, though tools that declare writes succeeded ({}); \
             give --database the server's own database",
            writers.join(", ")
        )))
    }
}
