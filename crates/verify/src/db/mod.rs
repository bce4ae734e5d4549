//! The test database: one connection per run, table and sequence discovery from the
//! catalog, streamed scans into [`Snapshot`]s, setup SQL and value samples for generated
//! arguments.
//!
//! Backends: SQLite, PostgreSQL, MySQL/MariaDB, through sqlx, one implementation per
//! [`DatabaseKind`](hintaudit_core::DatabaseKind) (backend.rs). A cheap change marker
//! (SQLite's `PRAGMA data_version`, PostgreSQL's WAL insert position) lets a snapshot be
//! reused when nothing was written since the last one (PostgreSQL's also covers sequences,
//! whose `nextval` writes WAL only every 32 values); MySQL has none and always rescans.

mod backend;
mod mysql;
mod postgres;
mod sqlite;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hintaudit_core::{DatabaseKind, DatabaseUrl, Policy};

use backend::{Backend, Connection};

use crate::error::VerifyError;
use crate::objects::RawObject;
use crate::sequences::RawSequence;
use crate::snapshot::{Snapshot, TableShape, TableSnapshot};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// verify's implementation of `kind` (backend.rs): the one place verify tells the kinds of
/// database apart.
pub(crate) fn backend(kind: DatabaseKind) -> &'static dyn Backend {
    match kind {
        DatabaseKind::Sqlite => &sqlite::Sqlite,
        DatabaseKind::Postgres => &postgres::Postgres,
        DatabaseKind::MySql => &mysql::MySql,
    }
}

/// One connection to the test database, of any kind.
pub(crate) struct Database(Box<dyn Connection>);

/// Quotes an identifier with `q` (`"` or `` ` ``), doubling it inside.
pub(crate) fn quote_ident(name: &str, q: char) -> String {
    let mut s = String::with_capacity(name.len() + 2);
    s.push(q);
    for c in name.chars() {
        if c == q {
            s.push(q);
        }
        s.push(c);
    }
    s.push(q);
    s
}

/// `SELECT <cast of MAX(column)> FROM table`, the column quoted with `q` and `cast` holding
/// `{}` where the maximum goes.
fn max_value_sql(table: &TableShape, column: &str, q: char, cast: &str) -> String {
    let max = format!("MAX({})", quote_ident(column, q));
    format!(
        "SELECT {} FROM {}",
        cast.replace("{}", &max),
        table.sql_name
    )
}

impl Database {
    /// Connects to a sqlx URL: `sqlite:` (the file must exist), `postgres:`/`postgresql:`,
    /// `mysql:`/`mariadb:`, any case ([`DatabaseUrl`]).
    pub async fn connect(url: &str) -> Result<Database, VerifyError> {
        let parsed = DatabaseUrl::parse(url).map_err(|e| {
            VerifyError::Database(format!("cannot connect to {}: {e}", redact(url)))
        })?;
        let fut = backend(parsed.kind()).connect(&parsed);
        match tokio::time::timeout(CONNECT_TIMEOUT, fut).await {
            Ok(Ok(c)) => Ok(Database(c)),
            Ok(Err(e)) => Err(VerifyError::db(
                &format!("cannot connect to {}", redact(url)),
                e,
            )),
            Err(_) => Err(VerifyError::Database(format!(
                "cannot connect to {}: no answer within {} s",
                redact(url),
                CONNECT_TIMEOUT.as_secs()
            ))),
        }
    }

    /// The sessions on the database server other than ours, now (PostgreSQL's
    /// `pg_stat_activity`, MySQL's processlist); `None` on SQLite, which has no sessions.
    pub async fn sessions(&mut self) -> Result<Option<Vec<DbSession>>, sqlx::Error> {
        self.0.sessions().await
    }

    /// The SQLite database file, as an absolute path without symbolic links (as `/proc`
    /// shows open files); `None` on other backends and for an in-memory database.
    pub async fn sqlite_file(&mut self) -> Result<Option<PathBuf>, sqlx::Error> {
        self.0.sqlite_file().await
    }

    /// Watched tables (not ignored by `policy`), with their watched columns, by name.
    /// PostgreSQL: every non-system schema, or only `schemas` when it is not empty (tables
    /// outside the current schema are named `schema.table`); other backends ignore it.
    pub async fn tables(
        &mut self,
        policy: &Policy,
        schemas: &[String],
    ) -> Result<Vec<TableShape>, sqlx::Error> {
        let raw = self.0.tables(schemas).await?;
        let mut out: Vec<TableShape> = raw
            .into_iter()
            .filter(|t| !policy.is_ignored_table(&t.name))
            .map(|t| t.shape(policy))
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Watched sequences (not ignored by `policy`, which names them as tables, and not
    /// belonging to an ignored table), by name:
    /// PostgreSQL's (in `schemas` when not empty), MariaDB's, SQLite's `AUTOINCREMENT`
    /// counters. Read outside a read transaction: sequences are not transactional.
    pub async fn sequences(
        &mut self,
        policy: &Policy,
        schemas: &[String],
    ) -> Result<Vec<RawSequence>, sqlx::Error> {
        let mut raw = self.0.sequences(schemas).await?;
        raw.retain(|s| {
            !policy.is_ignored_table(&s.name)
                && s.owner.as_ref().is_none_or(|t| !policy.is_ignored_table(t))
        });
        raw.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(raw)
    }

    /// Schema objects other than tables and sequences (indexes, views, functions and
    /// procedures, triggers, PostgreSQL types), in the same schemas as [`Database::tables`],
    /// those of ignored tables left out.
    pub async fn objects(
        &mut self,
        policy: &Policy,
        schemas: &[String],
    ) -> Result<Vec<RawObject>, sqlx::Error> {
        let mut raw = self.0.objects(schemas).await?;
        raw.retain(|o| o.owner.as_ref().is_none_or(|t| !policy.is_ignored_table(t)));
        Ok(raw)
    }

    /// Streams one table into its snapshot.
    pub async fn scan(&mut self, shape: TableShape) -> Result<TableSnapshot, sqlx::Error> {
        self.0.scan(shape).await
    }

    /// A value that changes whenever anything may have been written, or `None` when the
    /// backend has none.
    pub async fn change_marker(&mut self) -> Result<Option<String>, sqlx::Error> {
        self.0.change_marker().await
    }

    /// Opens a read-only transaction so that all tables of one snapshot are read at one
    /// moment (SQLite: a read transaction; PostgreSQL: REPEATABLE READ; MySQL: a consistent
    /// snapshot). [`Database::end_read`] closes it.
    pub async fn begin_read(&mut self) -> Result<(), sqlx::Error> {
        let sql = self.0.begin_read();
        self.execute_script(sql).await
    }

    /// Closes the transaction of [`Database::begin_read`].
    pub async fn end_read(&mut self) -> Result<(), sqlx::Error> {
        self.execute_script("COMMIT").await
    }

    /// Runs a script of one or more statements (a case's setup SQL).
    pub async fn execute_script(&mut self, sql: &str) -> Result<(), sqlx::Error> {
        self.0.execute_script(sql).await
    }

    /// The largest value of a column, as text (`None` for an empty table).
    pub async fn max_value(
        &mut self,
        table: &TableShape,
        column: &str,
    ) -> Result<Option<String>, sqlx::Error> {
        self.0.max_value(table, column).await
    }

    /// Up to `limit` distinct non-NULL values of a column, as text, smallest first.
    pub async fn sample(
        &mut self,
        table: &TableShape,
        column: &str,
        limit: u32,
    ) -> Result<Vec<String>, sqlx::Error> {
        self.0.sample(table, column, limit).await
    }
}

/// Another client's session on the database server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DbSession {
    /// The database it is connected to (MySQL: its default database, if any).
    pub database: Option<String>,
    /// Whether that is the database verify watches.
    pub here: bool,
    /// The client's TCP port; `None` over a Unix socket.
    pub port: Option<u16>,
}

/// A table as a backend's catalog lists it, before the policy removes ignored columns.
pub(crate) struct RawTable {
    pub name: String,
    pub sql_name: String,
    /// Columns in catalog order.
    pub columns: Vec<String>,
    /// Primary key columns in key order.
    pub key: Vec<String>,
    /// Columns to read as bytes (MySQL binary types).
    pub binary: Vec<String>,
}

impl RawTable {
    fn shape(self, policy: &Policy) -> TableShape {
        let mut columns: Vec<String> = self
            .columns
            .into_iter()
            .filter(|c| !policy.is_ignored_column(&self.name, c) || self.key.contains(c))
            .collect();
        columns.sort();
        let key = self
            .key
            .iter()
            .filter_map(|k| columns.iter().position(|c| c == k))
            .collect();
        let binary = columns.iter().map(|c| self.binary.contains(c)).collect();
        TableShape {
            name: self.name,
            sql_name: self.sql_name,
            columns,
            key,
            binary,
        }
    }
}

/// Replaces the password of every `scheme://user:password@host` in a text (a URL, or a
/// command line holding URLs) with `***`, for reports and messages.
pub(crate) fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        // The authority ends at whitespace, a quote, or a path.
        let end = tail
            .find(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '/'))
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@').map(|at| (at, &authority[..at])) {
            Some((at, cred)) if cred.contains(':') => {
                let user = cred.split(':').next().unwrap_or("");
                out.push_str(user);
                out.push_str(":***");
                out.push_str(&authority[at..]);
            }
            _ => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// Counters of the snapshot work, for progress lines and the benchmark.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SnapshotStats {
    /// Snapshots asked for.
    pub snapshots: u64,
    /// Snapshots that rescanned the tables (the others were reused: nothing had changed).
    pub scans: u64,
    /// Rows hashed in all scans.
    pub rows_scanned: u64,
    /// Time spent scanning, in milliseconds.
    pub scan_millis: u64,
}

/// Takes snapshots of the watched tables, reusing the last one when the change marker says
/// nothing was written.
pub(crate) struct Snapshotter {
    db: Database,
    policy: Policy,
    schemas: Vec<String>,
    last: Option<(Option<String>, Arc<Snapshot>)>,
    stats: SnapshotStats,
    /// What the snapshots so far could not fully see (sequences whose moves may not show),
    /// one reason each.
    blind: std::collections::BTreeSet<String>,
}

impl Snapshotter {
    pub fn new(db: Database, policy: Policy) -> Self {
        Snapshotter {
            db,
            policy,
            schemas: Vec::new(),
            last: None,
            stats: SnapshotStats::default(),
            blind: Default::default(),
        }
    }

    /// Watches only these PostgreSQL schemas (default: every non-system schema).
    pub fn with_schemas(mut self, schemas: Vec<String>) -> Self {
        self.schemas = schemas;
        self
    }

    /// The schemas [`Snapshotter::with_schemas`] set.
    pub fn schemas(&self) -> &[String] {
        &self.schemas
    }

    pub fn db(&mut self) -> &mut Database {
        &mut self.db
    }

    /// Watches through a new connection (the database was re-created): the next snapshot
    /// rescans.
    pub fn reconnect(&mut self, db: Database) {
        self.db = db;
        self.last = None;
    }

    pub fn stats(&self) -> SnapshotStats {
        self.stats
    }

    /// What the snapshots taken so far could not fully see, one reason each (a sequence
    /// whose moves may not show): effects of that kind may have gone unseen.
    pub fn blind_spots(&self) -> impl Iterator<Item = &str> {
        self.blind.iter().map(String::as_str)
    }

    /// Forgets the last snapshot: the next one rescans (after our own writes, which a
    /// connection's change marker does not count on SQLite).
    pub fn invalidate(&mut self) {
        self.last = None;
    }

    /// A snapshot of every watched table now.
    pub async fn take(&mut self) -> Result<Arc<Snapshot>, VerifyError> {
        self.stats.snapshots += 1;
        // A marker that cannot be read (permissions, a standby) only costs a rescan.
        let marker = self.db.change_marker().await.ok().flatten();
        if let (Some(m), Some((Some(last_m), snap))) = (&marker, &self.last)
            && m == last_m
        {
            return Ok(snap.clone());
        }
        let started = Instant::now();
        self.db
            .begin_read()
            .await
            .map_err(|e| VerifyError::db("starting a read transaction", e))?;
        let shapes = self
            .db
            .tables(&self.policy, &self.schemas)
            .await
            .map_err(|e| VerifyError::db("listing tables", e))?;
        let mut snap = Snapshot::default();
        for shape in shapes {
            let name = shape.name.clone();
            let table = self
                .db
                .scan(shape)
                .await
                .map_err(|e| VerifyError::db(&format!("reading table {name}"), e))?;
            self.stats.rows_scanned += table.row_count();
            snap.tables.insert(name, table);
        }
        let objects = self
            .db
            .objects(&self.policy, &self.schemas)
            .await
            .map_err(|e| {
                VerifyError::db("listing indexes, views, functions, triggers, types", e)
            })?;
        snap.objects = objects.into_iter().map(Into::into).collect();
        self.db
            .end_read()
            .await
            .map_err(|e| VerifyError::db("ending a read transaction", e))?;
        let sequences = self
            .db
            .sequences(&self.policy, &self.schemas)
            .await
            .map_err(|e| VerifyError::db("reading sequences", e))?;
        for s in sequences {
            if let Some(state) = s.state() {
                snap.sequences.insert(s.name, state);
            }
            self.blind.extend(s.blind);
        }
        self.stats.scans += 1;
        self.stats.scan_millis += started.elapsed().as_millis() as u64;
        let snap = Arc::new(snap);
        self.last = Some((marker, snap.clone()));
        Ok(snap)
    }
}

#[cfg(test)]
mod server_tests;
#[cfg(test)]
mod tests;
