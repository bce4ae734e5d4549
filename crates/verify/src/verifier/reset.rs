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

use std::str::FromStr;

use hintaudit_core::DatabaseKind;
use sqlx::{AssertSqlSafe, Connection, Row};

use super::Verifier;
use super::session::Session;
use crate::client::ServerSpec;
use crate::db::{Database, Snapshotter, quote_ident};
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

/// `(scheme://authority, database name, ?query)` of a PostgreSQL or MySQL URL.
fn split_url(url: &str) -> Option<(&str, &str, &str)> {
    let after = url.find("://")? + 3;
    let slash = after + url[after..].find('/')?;
    let rest = &url[slash + 1..];
    let (name, query) = match rest.find('?') {
        Some(q) => (&rest[..q], &rest[q..]),
        None => (rest, ""),
    };
    (!name.is_empty()).then_some((&url[..slash], name, query))
}

fn sqlite_path(url: &str) -> &str {
    let p = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .unwrap_or(url);
    p.split('?').next().unwrap_or(p)
}

impl DatabaseCopy {
    /// Makes the copy and the server command that uses it.
    pub async fn make(server: &ServerSpec, database: &str) -> Result<DatabaseCopy, VerifyError> {
        let ServerSpec::Stdio(command) = server else {
            return Err(VerifyError::Usage(
                "--reset needs --stdio: verify must start the server on the copy".into(),
            ));
        };
        let kind = DatabaseKind::from_url(database)
            .map_err(|e| VerifyError::Usage(format!("--reset: {e}")))?;
        if !names_database(command, database, kind) {
            return DatabaseCopy::in_place(server, database, kind).await;
        }
        let (url, replace): (String, Vec<(String, String)>) = match kind {
            DatabaseKind::Sqlite => {
                let path = sqlite_path(database);
                let copy = match path.rsplit_once('.') {
                    Some((stem, ext)) if !ext.contains('/') => {
                        format!("{stem}.hintaudit-copy.{ext}")
                    }
                    _ => format!("{path}.hintaudit-copy"),
                };
                copy_sqlite(database, &copy).await?;
                let url = database.replacen(path, &copy, 1);
                (
                    url.clone(),
                    vec![(database.to_owned(), url), (path.to_owned(), copy)],
                )
            }
            DatabaseKind::Postgres | DatabaseKind::MySql => {
                let (base, name, query) = split_url(database).ok_or_else(|| {
                    VerifyError::Usage("--reset: --database must name a database".into())
                })?;
                let copy_name = format!("{name}_hintaudit_copy");
                copy_named(kind, database, name, &copy_name).await?;
                let url = format!("{base}/{copy_name}{query}");
                (url.clone(), vec![(database.to_owned(), url)])
            }
        };
        // The longest original first: the URL before the bare path inside it.
        let (original, copy) = replace
            .iter()
            .find(|(from, _)| command.contains(from.as_str()))
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
            server: ServerSpec::Stdio(command.replace(original.as_str(), copy)),
            url,
            pristine: None,
        })
    }

    /// Reset in place: keeps a pristine copy of `database`, on which the server runs as it
    /// is told; refused unless the backend can restore it and its name says it is a test
    /// database.
    async fn in_place(
        server: &ServerSpec,
        database: &str,
        kind: DatabaseKind,
    ) -> Result<DatabaseCopy, VerifyError> {
        let refuse = |why: String| {
            VerifyError::Usage(format!(
                "--reset: the --stdio command does not name the database as --database does \
                 (its URL, or for SQLite its file path), so verify would reset {} in place, \
                 and {why}",
                crate::db::redact(database)
            ))
        };
        let (base, name, query) = match kind {
            DatabaseKind::Postgres | DatabaseKind::MySql => {
                split_url(database).ok_or_else(|| refuse("--database names no database".into()))?
            }
            DatabaseKind::Sqlite => {
                return Err(refuse(
                    "a SQLite file is only ever copied, never reset in place".into(),
                ));
            }
        };
        if !is_test_name(name) {
            return Err(refuse(format!(
                "the name {name:?} does not say it is a test database (no word test, tests or \
                 testing in it); name the database in the --stdio command, or use a test \
                 database"
            )));
        }
        let pristine = format!("{name}_hintaudit_pristine");
        copy_named(kind, database, name, &pristine).await?;
        Ok(DatabaseCopy {
            kind,
            url: database.to_owned(),
            server: server.clone(),
            pristine: Some(format!("{base}/{pristine}{query}")),
        })
    }

    /// Reset in place: makes the original pristine again (the server must be stopped).
    pub(crate) async fn restore(&self) -> Result<(), VerifyError> {
        let Some(pristine_url) = &self.pristine else {
            return Ok(());
        };
        let name = split_url(&self.url).map_or("", |(_, n, _)| n);
        let pristine = split_url(pristine_url).map_or("", |(_, n, _)| n);
        copy_named(self.kind, pristine_url, pristine, name).await
    }

    /// Reset in place, at the end of the run: restores the original and drops the pristine
    /// copy.
    pub(crate) async fn finish(&self) -> Result<(), VerifyError> {
        let Some(pristine_url) = &self.pristine else {
            return Ok(());
        };
        self.restore().await?;
        let (base, pristine, query) = split_url(pristine_url).unwrap_or_default();
        let (admin, quote) = match self.kind {
            DatabaseKind::Postgres => (format!("{base}/postgres{query}"), '"'),
            DatabaseKind::MySql | DatabaseKind::Sqlite => (self.url.clone(), '`'),
        };
        let sql = format!("DROP DATABASE IF EXISTS {}", quote_ident(pristine, quote));
        Database::connect(&admin)
            .await?
            .execute_script(&sql)
            .await
            .map_err(db_err("dropping the pristine copy"))
    }
}

/// Whether the server command names `database` (its URL, or a SQLite URL's file path).
fn names_database(command: &str, database: &str, kind: DatabaseKind) -> bool {
    command.contains(database)
        || (kind == DatabaseKind::Sqlite && command.contains(sqlite_path(database)))
}

/// Copies the database `name` (reached through `url`, which names it) to `copy`, replacing
/// `copy`: PostgreSQL `TEMPLATE`, MySQL/MariaDB a dump and restore (SQLite files are
/// copied by [`copy_sqlite`], never by name: refused).
async fn copy_named(
    kind: DatabaseKind,
    url: &str,
    name: &str,
    copy: &str,
) -> Result<(), VerifyError> {
    match kind {
        DatabaseKind::Postgres => {
            let (base, _, query) = split_url(url).unwrap_or_default();
            copy_postgres(&format!("{base}/postgres{query}"), name, copy).await
        }
        DatabaseKind::MySql => copy_mysql(url, name, copy).await,
        DatabaseKind::Sqlite => Err(VerifyError::Usage(
            "--reset: a SQLite file is copied whole, never by database name".into(),
        )),
    }
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

fn db_err(what: &str) -> impl Fn(sqlx::Error) -> VerifyError + '_ {
    move |e| VerifyError::db(&format!("--reset: {what}"), e)
}

async fn copy_sqlite(database: &str, copy: &str) -> Result<(), VerifyError> {
    let _ = std::fs::remove_file(copy);
    let opts = sqlx::sqlite::SqliteConnectOptions::from_str(database)
        .map_err(db_err("opening the database"))?
        .create_if_missing(false)
        .read_only(true);
    let mut c = sqlx::SqliteConnection::connect_with(&opts)
        .await
        .map_err(db_err("opening the database"))?;
    sqlx::query("VACUUM INTO ?")
        .bind(copy)
        .execute(&mut c)
        .await
        .map_err(db_err("copying the database"))?;
    c.close().await.map_err(db_err("closing"))
}

async fn copy_postgres(maintenance: &str, name: &str, copy: &str) -> Result<(), VerifyError> {
    let mut c = sqlx::PgConnection::connect(maintenance)
        .await
        .map_err(db_err("connecting to the postgres database"))?;
    let (orig, copy) = (quote_ident(name, '"'), quote_ident(copy, '"'));
    for sql in [
        format!("DROP DATABASE IF EXISTS {copy} WITH (FORCE)"),
        format!("CREATE DATABASE {copy} TEMPLATE {orig}"),
    ] {
        sqlx::raw_sql(AssertSqlSafe(sql))
            .execute(&mut c)
            .await
            .map_err(db_err(
                "CREATE DATABASE ... TEMPLATE (is a session still connected to the original?)",
            ))?;
    }
    c.close().await.map_err(db_err("closing"))
}

async fn copy_mysql(url: &str, name: &str, copy: &str) -> Result<(), VerifyError> {
    let url = url.replacen("mariadb:", "mysql:", 1);
    let mut c = sqlx::MySqlConnection::connect(&url)
        .await
        .map_err(db_err("connecting"))?;
    let (orig, copy) = (quote_ident(name, '`'), quote_ident(copy, '`'));
    let mut script = vec![
        format!("DROP DATABASE IF EXISTS {copy}"),
        format!("CREATE DATABASE {copy}"),
        "SET foreign_key_checks = 0".to_owned(),
    ];
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT CAST(table_name AS CHAR) FROM information_schema.tables \
         WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE' ORDER BY 1",
    )
    .fetch_all(&mut c)
    .await
    .map_err(db_err("listing tables"))?;
    let mut later = Vec::new();
    for t in &tables {
        let q = quote_ident(t, '`');
        let row = sqlx::query(AssertSqlSafe(format!("SHOW CREATE TABLE {orig}.{q}")))
            .fetch_one(&mut c)
            .await
            .map_err(db_err("SHOW CREATE TABLE"))?;
        let ddl: String = row.try_get(1).map_err(db_err("SHOW CREATE TABLE"))?;
        script.push(format!("USE {copy}"));
        script.push(ddl);
        script.push(format!("INSERT INTO {copy}.{q} SELECT * FROM {orig}.{q}"));
    }
    let triggers: Vec<String> = sqlx::query_scalar(
        "SELECT CAST(trigger_name AS CHAR) FROM information_schema.triggers \
         WHERE trigger_schema = DATABASE() ORDER BY 1",
    )
    .fetch_all(&mut c)
    .await
    .map_err(db_err("listing triggers"))?;
    for t in &triggers {
        let row = sqlx::query(AssertSqlSafe(format!(
            "SHOW CREATE TRIGGER {orig}.{}",
            quote_ident(t, '`')
        )))
        .fetch_one(&mut c)
        .await
        .map_err(db_err("SHOW CREATE TRIGGER"))?;
        let ddl: String = row.try_get(2).map_err(db_err("SHOW CREATE TRIGGER"))?;
        later.push(ddl);
    }
    script.push(format!("USE {copy}"));
    script.extend(later);
    script.push("SET foreign_key_checks = 1".to_owned());
    script.push(format!("USE {orig}"));
    for sql in script {
        sqlx::raw_sql(AssertSqlSafe(sql))
            .execute(&mut c)
            .await
            .map_err(db_err("restoring the copy"))?;
    }
    c.close().await.map_err(db_err("closing"))
}

#[cfg(test)]
#[path = "reset_in_place_tests.rs"]
mod in_place_tests;

#[cfg(test)]
mod tests {
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
    fn urls_split_into_base_name_and_query() {
        assert_eq!(
            split_url("postgres://u:p@h:5432/shop?sslmode=disable"),
            Some(("postgres://u:p@h:5432", "shop", "?sslmode=disable"))
        );
        assert_eq!(split_url("mysql://root@127.0.0.1:3306"), None);
        assert_eq!(sqlite_path("sqlite://a/b.db?mode=rwc"), "a/b.db");
        assert_eq!(sqlite_path("sqlite:verify.db"), "verify.db");
    }
}
