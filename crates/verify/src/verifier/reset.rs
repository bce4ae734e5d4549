//! `--reset`: the run uses a pristine copy of the database, never the database itself.
//!
//! The copy is made before the server starts, from the database `--database` names:
//!
//! - SQLite: `VACUUM INTO` a file beside it, `<name>.hintaudit-copy.db` (a consistent copy,
//!   write-ahead log included);
//! - PostgreSQL: `CREATE DATABASE <name>_hintaudit_copy TEMPLATE <name>` (nobody may be
//!   connected to the original while it is copied);
//! - MySQL/MariaDB: a dump and restore of the named schema into `<name>_hintaudit_copy`:
//!   every table's `SHOW CREATE TABLE`, its rows, and its triggers.
//!
//! When a tool's calls (or its cases' setup SQL) changed the copy, the server is stopped
//! and the copy made again from the original before the next tool, so every tool starts
//! from the same rows ([`crate::Report::database_resets`] counts these resets).
//!
//! An earlier copy of the same name is replaced. When the server's `--stdio` command names
//! the database as `--database` does (the URL, or for SQLite the file path), verify puts
//! the copy in its place and the original is only read.
//!
//! A server told where its database is some other way (by parts, `DB_HOST`/`DB_NAME`/…,
//! or from its own configuration) runs on the database `--database` names itself, reset in
//! place: before the server starts, verify keeps a pristine copy of it
//! (`<name>_hintaudit_pristine`, made as above), restores the database from it between tools
//! (PostgreSQL: `DROP DATABASE … WITH (FORCE)` and `CREATE DATABASE … TEMPLATE` the copy;
//! MySQL/MariaDB: a dump and restore), and once more at the end, then drops the copy. Only a
//! database whose name says it is a test one ([`is_test_name`]) is reset in place; others,
//! and SQLite files, are refused.

use hintaudit_core::{DatabaseKind, DatabaseUrl};

use super::Verifier;
use super::session::Session;
use crate::client::ServerSpec;
use crate::db::{Database, Snapshotter, backend, redact};
use crate::error::VerifyError;
use crate::report::ToolReport;

/// The pristine copy a run used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseCopy {
    /// The kind of database copied, from `--database`'s scheme.
    pub kind: DatabaseKind,
    /// The sqlx URL of the database the server runs on: the copy, or (reset in place) the
    /// original.
    pub url: String,
    /// The server command with the copy in place of the original (reset in place: the
    /// command as it was).
    pub server: ServerSpec,
    /// Reset in place: the sqlx URL of the pristine copy the original is restored from.
    pub pristine: Option<String>,
}

/// Whether a database name says it is a test database: one of its words (split at `_`,
/// `-`, `.`) is `test`, `tests` or `testing` (`test`, `shop_test`, `test_shop`).
pub fn is_test_name(name: &str) -> bool {
    name.split(['_', '-', '.'])
        .any(|w| ["test", "tests", "testing"].contains(&w.to_ascii_lowercase().as_str()))
}

/// The name of the copy of database `name`: `<name>_hintaudit_copy` on a server; for a file
/// `<stem>.hintaudit-copy.<ext>` beside it.
fn copy_name(kind: DatabaseKind, name: &str) -> String {
    if !kind.is_file() {
        return format!("{name}_hintaudit_copy");
    }
    match name.rsplit_once('.') {
        Some((stem, ext)) if !ext.contains('/') => format!("{stem}.hintaudit-copy.{ext}"),
        _ => format!("{name}.hintaudit-copy"),
    }
}

/// `--database`'s URL, or one verify made from it, parsed (a usage error names the scheme
/// only).
fn parse(url: &str) -> Result<DatabaseUrl, VerifyError> {
    DatabaseUrl::parse(url).map_err(|e| VerifyError::Usage(format!("--reset: {e}")))
}

impl DatabaseCopy {
    /// Makes the copy and the server command that uses it.
    pub async fn make(server: &ServerSpec, database: &str) -> Result<DatabaseCopy, VerifyError> {
        let ServerSpec::Stdio(command) = server else {
            return Err(VerifyError::Usage(
                "--reset needs --stdio: verify must start the server on the copy".into(),
            ));
        };
        let url = parse(database)?;
        if !names_database(command, &url) {
            return DatabaseCopy::in_place(server, &url).await;
        }
        let kind = url.kind();
        let unnamed = || VerifyError::Usage("--reset: --database must name a database".into());
        let name = url.database().ok_or_else(unnamed)?;
        let copy = url
            .with_database(&copy_name(kind, name))
            .ok_or_else(unnamed)?;
        let copy_db = copy.database().unwrap_or_default();
        backend(kind).copy_database(&url, copy_db).await?;
        // The URL before the bare path inside it.
        let mut replace = vec![(url.as_given(), copy.as_given())];
        if kind.is_file() {
            replace.push((name, copy_db));
        }
        let (original, replacement) = replace
            .into_iter()
            .find(|(from, _)| command.contains(from))
            .ok_or_else(|| {
                VerifyError::Usage(
                    "--reset: the --stdio command does not name the database as --database \
                     does (its URL, or for SQLite its file path), so verify cannot start the \
                     server on the copy"
                        .into(),
                )
            })?;
        Ok(DatabaseCopy {
            kind,
            server: ServerSpec::Stdio(command.replace(original, replacement)),
            url: copy.as_given().to_owned(),
            pristine: None,
        })
    }

    /// Reset in place: keeps a pristine copy of `url`'s database, on which the server runs
    /// as it is told; refused for a file (copied only) and unless the database's name says
    /// it is a test database.
    async fn in_place(server: &ServerSpec, url: &DatabaseUrl) -> Result<DatabaseCopy, VerifyError> {
        let refuse = |why: String| {
            VerifyError::Usage(format!(
                "--reset: the --stdio command does not name the database as --database does \
                 (its URL, or for SQLite its file path), so verify would reset {} in place, \
                 and {why}",
                redact(url.as_given())
            ))
        };
        let kind = url.kind();
        if kind.is_file() {
            return Err(refuse(format!(
                "a {kind} file is only ever copied, never reset in place"
            )));
        }
        let name = url
            .database()
            .ok_or_else(|| refuse("--database names no database".into()))?;
        if !is_test_name(name) {
            return Err(refuse(format!(
                "the name {name:?} does not say it is a test database (no word test, tests or \
                 testing in it); name the database in the --stdio command, or use a test \
                 database"
            )));
        }
        let pristine = format!("{name}_hintaudit_pristine");
        let pristine_url = url
            .with_database(&pristine)
            .ok_or_else(|| refuse("--database names no database".into()))?;
        backend(kind).copy_database(url, &pristine).await?;
        Ok(DatabaseCopy {
            kind,
            url: url.as_given().to_owned(),
            server: server.clone(),
            pristine: Some(pristine_url.as_given().to_owned()),
        })
    }

    /// Reset in place: makes the original pristine again (the server must be stopped).
    pub(crate) async fn restore(&self) -> Result<(), VerifyError> {
        let Some(pristine) = &self.pristine else {
            return Ok(());
        };
        let original = parse(&self.url)?;
        let name = original.database().unwrap_or_default();
        backend(self.kind)
            .copy_database(&parse(pristine)?, name)
            .await
    }

    /// Reset in place, at the end of the run: restores the original and drops the pristine
    /// copy.
    pub(crate) async fn finish(&self) -> Result<(), VerifyError> {
        let Some(pristine) = &self.pristine else {
            return Ok(());
        };
        self.restore().await?;
        let pristine = parse(pristine)?;
        let name = pristine.database().unwrap_or_default();
        backend(self.kind)
            .drop_database(&parse(&self.url)?, name)
            .await
    }
}

/// Whether the server command names the database `url` names: its URL as given, or a file's
/// path.
fn names_database(command: &str, url: &DatabaseUrl) -> bool {
    command.contains(url.as_given())
        || (url.kind().is_file() && url.database().is_some_and(|p| command.contains(p)))
}

impl Verifier {
    /// Whether a tool's run changed the database: a call changed a watched table, or a case
    /// ran setup SQL.
    pub(super) fn changed_database(&self, report: &ToolReport) -> bool {
        report
            .cases
            .iter()
            .flat_map(|c| c.calls.iter())
            .any(|c| !c.changes.is_empty())
            || self
                .cases
                .for_tool(&report.name)
                .any(|c| !c.setup.is_empty())
    }

    /// Between tools: stops the server, copies the original (pristine) database over the
    /// working copy again, reconnects the snapshots and starts the server on it.
    pub(super) async fn reset_copy(
        &self,
        session: &mut Session,
        snaps: &mut Snapshotter,
        copy: &DatabaseCopy,
    ) -> Result<(), VerifyError> {
        session.stop().await;
        // Our own connection to the old copy is in the way only on PostgreSQL, where
        // DROP DATABASE ... WITH (FORCE) ends it.
        if copy.pristine.is_some() {
            copy.restore().await?;
        } else {
            // A copy exists only for a run given a database.
            let original = self.database.as_deref().unwrap_or_default();
            let again = DatabaseCopy::make(&self.server, original).await?;
            debug_assert_eq!(again.url, copy.url);
        }
        snaps.reconnect(Database::connect(&copy.url).await?);
        session.resume().await
    }
}

#[cfg(test)]
#[path = "reset_in_place_tests.rs"]
mod in_place_tests;

#[cfg(test)]
mod tests {
    use sqlx::{AssertSqlSafe, Connection};

    use super::*;

    /// MariaDB: the copy holds the tables, rows and triggers; the original is not touched;
    /// the server command names the copy.
    #[tokio::test]
    async fn mariadb_copy_is_a_dump_and_restore_of_the_schema() {
        let server = std::env::var("HINTAUDIT_MYSQL_URL")
            .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".into());
        let Ok(mut admin) = sqlx::MySqlConnection::connect(&server).await else {
            assert!(
                !hintaudit_test_support::required("HINTAUDIT_REQUIRE_MYSQL"),
                "MariaDB required at {server}"
            );
            eprintln!("skipped: MariaDB unreachable at {server}");
            return;
        };
        let name = format!("hv17_reset_{}", std::process::id());
        let script = format!(
            "DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; USE {name};
             CREATE TABLE items (id INT PRIMARY KEY, qty INT NOT NULL);
             CREATE TABLE log (n INT);
             INSERT INTO items VALUES (1, 3), (2, 0);
             CREATE TRIGGER items_log AFTER UPDATE ON items FOR EACH ROW INSERT INTO log VALUES (NEW.id);"
        );
        sqlx::raw_sql(AssertSqlSafe(script))
            .execute(&mut admin)
            .await
            .unwrap();
        let url = format!("{server}/{name}");
        let spec = ServerSpec::Stdio(format!("server --db {url}"));
        let copy = DatabaseCopy::make(&spec, &url).await.expect("copy");
        assert_eq!(copy.url, format!("{server}/{name}_hintaudit_copy"));
        assert_eq!(
            copy.server,
            ServerSpec::Stdio(format!("server --db {}", copy.url))
        );
        let check = format!("UPDATE {name}_hintaudit_copy.items SET qty = 9 WHERE id = 1");
        sqlx::raw_sql(AssertSqlSafe(check))
            .execute(&mut admin)
            .await
            .unwrap();
        let (copied, logged, original): (i64, i64, i64) = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT CAST((SELECT count(*) FROM {name}_hintaudit_copy.items) AS SIGNED), \
                    CAST((SELECT count(*) FROM {name}_hintaudit_copy.log) AS SIGNED), \
                    CAST((SELECT sum(qty) FROM {name}.items) AS SIGNED)"
        )))
        .fetch_one(&mut admin)
        .await
        .unwrap();
        assert_eq!(
            (copied, logged, original),
            (2, 1, 3),
            "rows, trigger, original"
        );
        let drop = format!("DROP DATABASE {name}; DROP DATABASE {name}_hintaudit_copy");
        sqlx::raw_sql(AssertSqlSafe(drop))
            .execute(&mut admin)
            .await
            .unwrap();
    }

    #[test]
    fn only_names_that_say_test_are_reset_in_place() {
        for (name, test) in [
            ("test", true),
            ("shop_test", true),
            ("test_shop", true),
            ("shop-tests-2", true),
            ("Shop_Testing", true),
            ("shop", false),
            ("latest", false),
            ("contest_db", false),
            ("production", false),
        ] {
            assert_eq!(is_test_name(name), test, "{name}");
        }
    }

    #[test]
    fn copies_are_named_beside_the_original() {
        use DatabaseKind::*;
        for (kind, name, copy) in [
            (Postgres, "shop", "shop_hintaudit_copy"),
            (MySql, "shop.v2", "shop.v2_hintaudit_copy"),
            (Sqlite, "data/shop.db", "data/shop.hintaudit-copy.db"),
            (Sqlite, "data.d/shop", "data.d/shop.hintaudit-copy"),
        ] {
            assert_eq!(copy_name(kind, name), copy, "{kind} {name}");
        }
    }

    #[test]
    fn a_command_names_a_database_by_its_url_or_a_files_path() {
        for (command, url, named) in [
            ("srv --db sqlite:a/b.db", "sqlite:a/b.db", true),
            ("srv --db a/b.db", "SQLite://a/b.db?mode=rwc", true),
            (
                "srv MariaDB://root@h/shop_test",
                "MariaDB://root@h/shop_test",
                true,
            ),
            (
                "srv mysql://root@h/shop_test",
                "MariaDB://root@h/shop_test",
                false,
            ),
            ("env DB_NAME=shop_test srv", "postgres://h/shop_test", false),
        ] {
            let url = DatabaseUrl::parse(url).unwrap();
            assert_eq!(names_database(command, &url), named, "{command}");
        }
    }
}
