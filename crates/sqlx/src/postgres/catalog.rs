//! What the catalog says of a written table, cached per pool: whether a plain `INSERT`,
//! `UPDATE` or `DELETE` on it can write anything besides its own rows. When it cannot, the
//! command tag (rows affected) is the whole evidence and the oracle is not needed (see
//! [`direct_target`] and the PostgreSQL section of `docs/performance.md`).
//!
//! A table is *plain* when it is an ordinary table (`relkind = 'r'`, not partitioned, no
//! inheritance children), outside the system schemas, with no rules, no user triggers
//! (statement or row, constraint triggers included; the internal triggers of foreign keys
//! are checked below), no foreign key pointing at it with a writing action
//! (`ON DELETE`/`ON UPDATE` `CASCADE`, `SET NULL`, `SET DEFAULT`), and no column default,
//! generated column, constraint, index or row-security policy that depends on a user
//! function (`pg_depend` to a `pg_proc` entry with an oid at or above 16384, the first
//! user oid): such a function could write elsewhere.
//!
//! Invalidation: the cache is cleared whenever the pool runs a DDL or unparseable
//! statement (and again when a transaction that ran one ends), and an entry lives at most
//! [`TTL`]: a trigger, rule or cascading key added by another process is seen within that
//! time. A catalog-version check would cost a round trip per statement, which is what the
//! cache saves; PostgreSQL has no cheap catalog-version counter to ask.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hintaudit_core::{Operation, TableWrites, TransactionObservation};
use sqlx::postgres::PgConnection;
use sqlx::{Executor, Row};

use crate::classify::Classification;

/// How long a table's catalog facts are trusted before they are asked again.
pub(crate) const TTL: Duration = Duration::from_secs(10);

/// At most this many tables are cached per pool; the cache is cleared when it is full.
pub(crate) const CAPACITY: usize = 4096;

/// One query (one round trip, prepared): the table's oid, name, whether it is temporary,
/// and whether it is plain (see the module docs). No row when the name does not resolve.
/// Catalog names in `pg_catalog`, the name `$1` in the session's `search_path` (see the
/// module docs of `postgres`, on catalog names).
const LOOKUP: &str = "SELECT c.oid::pg_catalog.int8 AS relid, \
  c.relname::pg_catalog.text AS relname, c.relpersistence OPERATOR(pg_catalog.=) 't' AS temp, \
  (c.relkind OPERATOR(pg_catalog.=) 'r' AND NOT c.relhasrules AND NOT c.relhassubclass \
   AND n.nspname OPERATOR(pg_catalog.<>) ALL (ARRAY['pg_catalog', 'information_schema']) \
   AND n.nspname OPERATOR(pg_catalog.!~) '^pg_toast' \
   AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t \
     WHERE t.tgrelid OPERATOR(pg_catalog.=) c.oid AND NOT t.tgisinternal) \
   AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k \
     WHERE k.contype OPERATOR(pg_catalog.=) 'f' AND k.confrelid OPERATOR(pg_catalog.=) c.oid \
     AND (k.confdeltype OPERATOR(pg_catalog.<>) ALL (ARRAY['a', 'r']) \
       OR k.confupdtype OPERATOR(pg_catalog.<>) ALL (ARRAY['a', 'r']))) \
   AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d \
     WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass \
     AND d.refobjid OPERATOR(pg_catalog.>=) 16384 AND ( \
       (d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_attrdef'::pg_catalog.regclass \
        AND d.objid OPERATOR(pg_catalog.=) ANY (SELECT a.oid FROM pg_catalog.pg_attrdef a \
          WHERE a.adrelid OPERATOR(pg_catalog.=) c.oid)) \
    OR (d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_constraint'::pg_catalog.regclass \
        AND d.objid OPERATOR(pg_catalog.=) ANY (SELECT k.oid FROM pg_catalog.pg_constraint k \
          WHERE k.conrelid OPERATOR(pg_catalog.=) c.oid)) \
    OR (d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass \
        AND d.objid OPERATOR(pg_catalog.=) ANY (SELECT i.indexrelid FROM pg_catalog.pg_index i \
          WHERE i.indrelid OPERATOR(pg_catalog.=) c.oid)) \
    OR (d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_policy'::pg_catalog.regclass \
        AND d.objid OPERATOR(pg_catalog.=) ANY (SELECT p.oid FROM pg_catalog.pg_policy p \
          WHERE p.polrelid OPERATOR(pg_catalog.=) c.oid))))) AS plain \
  FROM pg_catalog.pg_class c \
  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
  WHERE c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1)";

/// Whether `name` is a plain identifier, optionally schema-qualified: the only names the
/// catalog is asked about (`to_regclass` raises on a malformed name, which would abort the
/// caller's transaction).
pub(crate) fn simple_name(name: &str) -> bool {
    let part = |p: &str| {
        p.chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
            && p.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$')
    };
    let mut n = 0;
    name.split('.').all(|p| {
        n += 1;
        part(p)
    }) && n <= 2
}

/// A written table's catalog facts.
#[derive(Debug, Clone)]
pub(crate) struct Table {
    /// `pg_class.relname`, as the oracle names tables.
    pub(crate) relname: Arc<str>,
    /// A temporary table: the oracle ignores those.
    pub(crate) temp: bool,
    /// A plain table: a plain DML statement on it writes only its own rows.
    pub(crate) plain: bool,
}

/// A direct write: its plain table and its operation.
#[derive(Debug, Clone)]
pub(crate) struct Direct {
    pub(crate) table: Table,
    pub(crate) operation: Operation,
}

/// The per-pool cache of [`Table`]s, by the name as the statement spells it (lower-cased).
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    tables: Mutex<HashMap<Box<str>, (Table, Instant)>>,
    /// Relations read by proved read-only texts: whether reading them can write nothing
    /// (see `reads`).
    pub(super) reads: Mutex<HashMap<Box<str>, (bool, Instant)>>,
}

impl Catalog {
    /// Forgets everything: DDL ran.
    pub(crate) fn clear(&self) {
        self.tables.lock().clear();
        self.reads.lock().clear();
    }

    fn cached(&self, name: &str) -> Option<Table> {
        let tables = self.tables.lock();
        let (t, at) = tables.get(name)?;
        (at.elapsed() < TTL).then(|| t.clone())
    }

    fn store(&self, name: &str, t: Table) {
        let mut tables = self.tables.lock();
        if tables.len() >= CAPACITY {
            tables.clear();
        }
        tables.insert(name.into(), (t, Instant::now()));
    }

    /// The facts of `name`, from the cache or from one catalog query. `Ok(None)` when the
    /// name does not resolve or the query fails (the caller then runs the oracle); the error
    /// when the connection is lost (see `lost`), for the statement to fail with.
    pub(crate) async fn table(
        &self,
        conn: &mut PgConnection,
        name: &str,
    ) -> Result<Option<Table>, sqlx::Error> {
        if let Some(t) = self.cached(name) {
            return Ok(Some(t));
        }
        let row = match conn.fetch_optional(sqlx::query(LOOKUP).bind(name)).await {
            Ok(Some(row)) => row,
            Ok(None) => return Ok(None),
            Err(e) if super::lost::connection_lost(&e) => return Err(e),
            Err(_) => return Ok(None),
        };
        let read = || {
            Some(Table {
                relname: row.try_get::<String, _>("relname").ok()?.into(),
                temp: row.try_get("temp").ok()?,
                plain: row
                    .try_get::<Option<bool>, _>("plain")
                    .ok()?
                    .unwrap_or(false),
            })
        };
        let Some(t) = read() else { return Ok(None) };
        self.store(name, t.clone());
        Ok(Some(t))
    }
}

/// Whether running `class` may change the catalog facts: DDL, or a text the classifier
/// could not read.
pub(crate) fn changes_catalog(class: &Classification) -> bool {
    matches!(class.effect.operation, Operation::Ddl | Operation::Unknown)
}

/// The one table a statement writes directly, when the statement is a candidate for the
/// command tag as evidence: a single `INSERT`, `UPDATE`, `DELETE` or `INSERT ... ON
/// CONFLICT DO NOTHING` at the text's top level, so that the command tag is its own
/// ([`Classification::own_row_count`]: not `EXPLAIN ANALYZE DELETE`, whose tag is
/// `EXPLAIN`'s, nor a data-modifying `WITH`, whose other writes the tag does not count),
/// writing exactly one table, calling no opaque function. An upsert that may update is not
/// one: its command tag does not tell inserted from updated rows.
pub(crate) fn direct_target(class: &Classification) -> Option<&str> {
    let e = &class.effect;
    let op_ok = match e.operation {
        Operation::Insert | Operation::Update | Operation::Delete => true,
        Operation::Upsert => !e.overwrites,
        _ => false,
    };
    (op_ok && class.own_row_count && e.tables.len() == 1 && e.opaque_calls.is_empty())
        .then(|| e.tables[0].as_str())
}

/// What the oracle would have observed of a direct write of `rows` rows to the plain table
/// `t` by a statement of `operation`: the same counts, for the same table name; nothing for a
/// temporary table, which the oracle ignores.
pub(crate) fn observation(
    t: &Table,
    operation: Operation,
    rows: u64,
    committed: bool,
) -> TransactionObservation {
    let mut w = TableWrites {
        table: t.relname.to_string(),
        inserted: 0,
        updated: 0,
        deleted: 0,
    };
    match operation {
        Operation::Update => w.updated = rows,
        Operation::Delete => w.deleted = rows,
        _ => w.inserted = rows,
    }
    let tables = if rows > 0 && !t.temp { vec![w] } else { vec![] };
    TransactionObservation {
        wrote: !tables.is_empty(),
        tables,
        committed,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::{SqlDialect, classify};

    #[test]
    fn direct_targets() {
        let rows: &[(&str, Option<&str>)] = &[
            ("INSERT INTO t (a) VALUES ($1)", Some("t")),
            ("UPDATE t SET a = a + 1 WHERE id = $1", Some("t")),
            ("DELETE FROM public.t WHERE id = 1", Some("public.t")),
            ("INSERT INTO t VALUES (1) ON CONFLICT DO NOTHING", Some("t")),
            (
                "INSERT INTO t VALUES (1) ON CONFLICT (a) DO UPDATE SET b = 1",
                None,
            ),
            ("INSERT INTO t SELECT audit_me(a) FROM u", None),
            ("INSERT INTO t VALUES (1); DELETE FROM t", None),
            (
                "WITH d AS (DELETE FROM a RETURNING *) INSERT INTO b SELECT * FROM d",
                None,
            ),
            ("SELECT mark_viewed($1)", None),
            (
                "WITH d AS (DELETE FROM a RETURNING *) INSERT INTO a SELECT * FROM d",
                None,
            ),
            (
                "WITH u AS (UPDATE a SET x = 1 RETURNING *) SELECT * FROM u",
                None,
            ),
            ("  insert into t (a) values (1);", Some("t")),
            ("CREATE TABLE x (a int)", None),
            // The command tag is EXPLAIN's, not the DELETE's.
            ("EXPLAIN ANALYZE DELETE FROM t WHERE id = 1", None),
            ("EXPLAIN (ANALYZE) DELETE FROM t WHERE id = 1", None),
            ("PREPARE p AS DELETE FROM t", None),
        ];
        for (sql, want) in rows {
            let c = classify(sql, SqlDialect::Postgres);
            assert_eq!(direct_target(&c), *want, "{sql}");
        }
    }

    #[test]
    fn observation_counts_by_operation() {
        let t = Table {
            relname: "t".into(),
            temp: false,
            plain: true,
        };
        let o = observation(&t, Operation::Update, 2, true);
        assert!(o.wrote && o.committed);
        assert_eq!((o.tables[0].inserted, o.tables[0].updated), (0, 2));
        assert!(!observation(&t, Operation::Delete, 0, true).wrote);
        let temp = Table { temp: true, ..t };
        assert!(
            observation(&temp, Operation::Insert, 3, true)
                .tables
                .is_empty()
        );
    }
}
