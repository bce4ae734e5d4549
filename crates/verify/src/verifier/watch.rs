//! The database check: does verify watch the database the server uses?
//!
//! Before the first call the watched database must have tables. Then the check looks for
//! evidence, before the first call and while calls are in flight, that the server uses this
//! database or another one:
//!
//! - the server's process tree (a `--stdio` server, on Linux) holding the SQLite file open,
//!   or another SQLite database (its open files in `/proc`);
//! - sessions of the server's process tree on PostgreSQL or MySQL/MariaDB, matched by the
//!   client port of their TCP connection (`pg_stat_activity`, the processlist) with the
//!   sockets of the tree, on this database or on another one;
//! - a call that changed a watched table; or a call that ran, of a tool declaring
//!   `readOnlyHint: false` explicitly, that changed nothing here while a SQLite database the
//!   server names on its command line, or was seen holding open, changed.
//!
//! Evidence for this database wins. Evidence only for another one ends the run with exit
//! code 2 instead of judging writes verify cannot see. Without evidence either way (a
//! server that opens its database only for the moment of a query, a `--url` server, a
//! connection over a Unix socket) the report says so and the run goes on: an unset or
//! cautious hint, a call that failed or wrote nothing, is no evidence.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use hintaudit_core::{DatabaseKind, DatabaseUrl};

use crate::client::{ServerSpec, ToolInfo, command_words};
use crate::db::Database;
use crate::error::VerifyError;
use crate::process_tree;

/// Databases the check does not count as "another database" for a session: where clients
/// connect to administer, not to work.
const MAINTENANCE_DATABASES: [&str; 3] = ["postgres", "template0", "template1"];

/// What the check has seen so far.
#[derive(Debug, Default)]
pub(crate) struct Watch {
    /// Evidence that the server uses this database.
    here: Option<String>,
    /// Evidence that the server uses another database.
    elsewhere: Option<String>,
    /// Someone uses this database, not traced to the server (no process tree to trace
    /// with, or a Unix socket).
    seen: Option<String>,
    /// The watched SQLite file.
    file: Option<PathBuf>,
    /// Other SQLite databases the server names on its command line or was seen holding.
    others: BTreeSet<PathBuf>,
    /// Whether sessions could not be read (a catalog we may not read).
    sessions_hidden: bool,
}

/// A SQLite database's state as its files show it: size and modification time of the main
/// file and the WAL, and the header's file change counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileState([Option<(u64, SystemTime)>; 2], Option<[u8; 4]>);

impl FileState {
    fn of(main: &Path) -> FileState {
        let meta = |p: &Path| {
            std::fs::metadata(p)
                .ok()
                .and_then(|m| Some((m.len(), m.modified().ok()?)))
        };
        let mut wal = main.as_os_str().to_owned();
        wal.push("-wal");
        let counter = std::fs::read(main)
            .ok()
            .and_then(|b| b.get(24..28).and_then(|c| c.try_into().ok()));
        FileState([meta(main), meta(Path::new(&wal))], counter)
    }
}

impl Watch {
    /// A check of `db` for `server`: learns the SQLite file, and the other SQLite databases
    /// the server's command line names (a path, `sqlite:` URL or `NAME=value` that is one).
    pub async fn new(server: &ServerSpec, db: &mut Database) -> Watch {
        let file = db.sqlite_file().await.ok().flatten();
        let mut others = BTreeSet::new();
        if let (Some(file), ServerSpec::Stdio(line)) = (&file, server) {
            for word in command_words(line) {
                if let Some(path) = sqlite_path(&word)
                    && path != *file
                {
                    others.insert(path);
                }
            }
        }
        Watch {
            file,
            others,
            ..Watch::default()
        }
    }

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

    /// Whether the server is known to use this database: nothing more to look for.
    pub fn settled(&self) -> bool {
        self.here.is_some()
    }

    /// Looks at the server's process tree (`pid`, a stdio server) and at the sessions on
    /// the database server, for the server's use of this database or another.
    pub async fn poll(&mut self, db: &mut Database, pid: Option<u32>) {
        if self.settled() {
            return;
        }
        let file = self.file.clone();
        let tree = tokio::task::spawn_blocking(move || {
            let view = pid.and_then(process_tree::tree_view);
            let holders = file.as_deref().and_then(process_tree::holders);
            (view, holders)
        })
        .await
        .unwrap_or_default();
        match self.file.clone() {
            Some(file) => self.sqlite_evidence(&file, tree),
            None => self.session_evidence(db, tree.0).await,
        }
    }

    fn sqlite_evidence(
        &mut self,
        file: &Path,
        tree: (Option<process_tree::TreeView>, Option<usize>),
    ) {
        let (view, holders) = tree;
        if let Some(view) = view {
            let held: BTreeSet<PathBuf> = view
                .files
                .iter()
                .map(|f| process_tree::sqlite_main(f))
                .collect();
            if held.contains(file) {
                self.here = Some(format!(
                    "the server's process tree held {} open",
                    file.display()
                ));
                return;
            }
            for other in held {
                if !self.others.contains(&other) && process_tree::is_sqlite_file(&other) {
                    self.elsewhere.get_or_insert_with(|| {
                        format!(
                            "the server's process tree held another SQLite database open ({}) \
                             and never this one",
                            other.display()
                        )
                    });
                    self.others.insert(other);
                }
            }
        }
        if holders.is_some_and(|n| n > 0) {
            self.seen.get_or_insert_with(|| {
                "another process held the file open (not traced to the server's process)".into()
            });
        }
    }

    async fn session_evidence(&mut self, db: &mut Database, view: Option<process_tree::TreeView>) {
        if self.sessions_hidden {
            return;
        }
        let sessions = match db.sessions().await {
            Ok(Some(s)) => s,
            // A catalog we may not read only costs this way of looking.
            _ => {
                self.sessions_hidden = true;
                return;
            }
        };
        let ports = view.map(|v| v.ports).unwrap_or_default();
        for s in sessions {
            let port = s.port.filter(|p| ports.contains(p));
            match (port, s.here, s.database) {
                (Some(port), true, _) => {
                    self.here = Some(format!(
                        "a session of the server's process tree was on the database (client \
                         port {port})"
                    ));
                    return;
                }
                (Some(port), false, Some(other))
                    if !MAINTENANCE_DATABASES.contains(&other.as_str()) =>
                {
                    self.elsewhere.get_or_insert_with(|| {
                        format!(
                            "a session of the server's process tree was on database {other} \
                             (client port {port}) and none on this one"
                        )
                    });
                }
                (None, true, _) => {
                    self.seen.get_or_insert_with(|| {
                        "another session was on the database (not traced to the server's \
                         process)"
                            .into()
                    });
                }
                _ => {}
            }
        }
    }

    /// The state of the other SQLite databases, before a call of `tool`: only for a tool
    /// that declares `readOnlyHint: false` explicitly, while the check is not settled.
    pub fn before_call(&self, tool: &ToolInfo) -> Vec<(PathBuf, FileState)> {
        if self.settled() || tool.hints.read_only != Some(false) {
            return Vec::new();
        }
        self.others
            .iter()
            .map(|p| (p.clone(), FileState::of(p)))
            .collect()
    }

    /// A call of `tool` that ran changed nothing watched: did it change another database?
    pub fn changed_nothing_here(&mut self, tool: &str, before: &[(PathBuf, FileState)]) {
        if let Some((path, _)) = before.iter().find(|(p, s)| FileState::of(p) != *s) {
            self.elsewhere = Some(format!(
                "a call of {tool} (readOnlyHint: false) changed {} and nothing here",
                path.display()
            ));
        }
    }

    /// A call changed a watched table: the server writes to this database.
    pub fn saw_change(&mut self, tool: &str, table: &str) {
        if self.here.is_none() {
            self.here = Some(format!("a call of {tool} changed table {table}"));
        }
    }

    /// The verdict at the end of the run: the text for the report, or the error that ends
    /// the run (exit 2) when there is evidence only for another database.
    pub fn verdict(&self, database: &str) -> Result<String, VerifyError> {
        if let Some(how) = &self.here {
            return Ok(format!("confirmed: {how}"));
        }
        if let Some(how) = &self.elsewhere {
            return Err(VerifyError::Database(format!(
                "{database} is not the database the server uses: {how}; give --database the \
                 server's own database"
            )));
        }
        if let Some(how) = &self.seen {
            return Ok(format!("likely: {how}"));
        }
        Ok(
            "unconfirmed: no evidence either way (the server was not seen holding the \
            database open or connected to it, and no call changed it); the findings cover \
            what happened in this database only"
                .into(),
        )
    }
}

/// The SQLite database a command-line word names, canonical: a path, a `sqlite:` URL (any
/// case), a `file:` URI or the value of `--option=value`; `None` unless it is a SQLite file.
fn sqlite_path(word: &str) -> Option<PathBuf> {
    let value = word.split_once('=').map_or(word, |(_, v)| v);
    [word, value].into_iter().find_map(|w| {
        let path = match DatabaseUrl::parse(w) {
            Ok(url) if url.kind() == DatabaseKind::Sqlite => std::fs::canonicalize(url.database()?),
            _ => {
                let w = w.strip_prefix("file:").unwrap_or(w);
                std::fs::canonicalize(w.split('?').next().unwrap_or(w))
            }
        }
        .ok()?;
        (path.is_file() && process_tree::is_sqlite_file(&path)).then_some(path)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_words_that_name_a_sqlite_database() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("server.db");
        std::fs::write(&db, b"SQLite format 3\0rest of the header").unwrap();
        let text = dir.path().join("notes.txt");
        std::fs::write(&text, b"not a database").unwrap();
        let db = std::fs::canonicalize(db).unwrap();
        let d = dir.path().display();
        for (word, found) in [
            (format!("{d}/server.db"), true),
            (format!("--db-path={d}/server.db"), true),
            (format!("sqlite://{d}/server.db?mode=rwc"), true),
            (format!("SQLite:{d}/server.db"), true),
            (format!("file:{d}/server.db?mode=ro"), true),
            (format!("DATABASE_URL=sqlite:{d}/server.db"), true),
            (format!("{d}/notes.txt"), false),
            (format!("{d}/missing.db"), false),
            ("--verbose".to_owned(), false),
        ] {
            assert_eq!(sqlite_path(&word), found.then(|| db.clone()), "{word}");
        }
    }

    #[test]
    fn the_verdict_rests_on_evidence() {
        let w = |here: bool, elsewhere: bool, seen: bool| Watch {
            here: here.then(|| "h".into()),
            elsewhere: elsewhere.then(|| "e".into()),
            seen: seen.then(|| "s".into()),
            ..Watch::default()
        };
        for (watch, verdict) in [
            (w(true, true, false), Ok("confirmed: h")),
            (
                w(false, true, true),
                Err("not the database the server uses: e"),
            ),
            (w(false, false, true), Ok("likely: s")),
            (
                w(false, false, false),
                Ok("unconfirmed: no evidence either way"),
            ),
        ] {
            match (watch.verdict("db"), verdict) {
                (Ok(text), Ok(want)) => assert!(text.starts_with(want), "{text}"),
                (Err(e), Err(want)) => assert!(e.to_string().contains(want), "{e}"),
                (got, want) => panic!("{got:?} for {want:?}"),
            }
        }
    }

    #[test]
    fn a_write_to_another_database_is_seen_through_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("server.db");
        std::fs::write(&other, b"SQLite format 3\0....????\0\0\0\x01").unwrap();
        let mut watch = Watch {
            others: [other.clone()].into(),
            ..Watch::default()
        };
        let tool = |read_only| {
            ToolInfo::from_json(&serde_json::json!({
                "name": "add_note",
                "inputSchema": {"type": "object"},
                "annotations": {"readOnlyHint": read_only},
            }))
            .unwrap()
        };
        assert!(
            watch.before_call(&tool(serde_json::Value::Null)).is_empty(),
            "unset is no claim"
        );
        let before = watch.before_call(&tool(false.into()));
        watch.changed_nothing_here("add_note", &before);
        assert_eq!(watch.elsewhere, None, "nothing changed");
        std::fs::write(&other, b"SQLite format 3\0....????\0\0\0\x02").unwrap();
        watch.changed_nothing_here("add_note", &before);
        assert!(watch.verdict("db").is_err(), "{watch:?}");
    }
}
