//! The PostgreSQL transaction oracle ([design: evidence], [design: pitfalls]): inside one open
//! transaction, whether it was assigned a transaction id (`pg_current_xact_id_if_assigned()`)
//! and which user tables' insert/update/delete counts moved (`pg_stat_xact_user_tables`, as a
//! before/after delta: the view also holds counts of earlier transactions of the same backend
//! not yet flushed). A snapshot is one prepared query of both.
//!
//! Pitfalls handled here: the transaction id is also assigned by `SELECT ... FOR UPDATE` and
//! by temp-table creation, so `wrote` is reported only when some user table's counts moved;
//! temp tables (`pg_temp_*` schemas) are ignored. Sequences have no tuple counts: a
//! sequence the transaction locked for a change (`nextval`, `setval`) is read from
//! `pg_locks` (see `locked_sequences`), and reported unless its owner table was written in
//! the same transaction (a serial default). `currval` takes the same lock, so this is
//! `likely`, and a text calling only `currval` is proved read-only and never wrapped.
//!
//! [design: evidence]: ../../../../docs/design.md#3-evidence
//! [design: pitfalls]: ../../../../docs/design.md#7-known-pitfalls-checked-against-rmcp-311-sqlx-09-postgresql-15

use std::collections::{BTreeMap, HashMap};

use futures_util::TryStreamExt;
use hintaudit_core::{TableWrites, TransactionObservation};
use sqlx::postgres::{PgConnection, PgRow};
use sqlx::{Either, Executor, Row};

/// The columns of a snapshot, over `w`, the candidate relations with their counts. At least
/// one row, thanks to the outer join. The counts come from the `pg_stat_get_xact_tuples_*`
/// functions directly, not from `pg_stat_xact_user_tables`, which also joins `pg_index`.
/// Every catalog relation, function, operator and type is named in `pg_catalog` (see the
/// module docs of `postgres`, on catalog names).
macro_rules! snapshot_over {
    ($candidates:expr) => {
        concat!(
            "SELECT pg_catalog.pg_current_xact_id_if_assigned()::pg_catalog.text AS xid, \
             w.relid, w.relname, w.ins, w.upd, w.del, ",
            locked_sequences!(),
            " AS seqs FROM (SELECT 1) AS one LEFT JOIN (\
             SELECT c.oid::pg_catalog.int8 AS relid, c.relname::pg_catalog.text AS relname, \
             pg_catalog.pg_stat_get_xact_tuples_inserted(c.oid) AS ins, \
             pg_catalog.pg_stat_get_xact_tuples_updated(c.oid) AS upd, \
             pg_catalog.pg_stat_get_xact_tuples_deleted(c.oid) AS del FROM ",
            $candidates,
            " JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
             WHERE c.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['r', 't', 'm', 'p']) \
             AND n.nspname OPERATOR(pg_catalog.<>) ALL (ARRAY['pg_catalog', 'information_schema']) \
             AND n.nspname OPERATOR(pg_catalog.!~) '^pg_toast' \
             AND n.nspname OPERATOR(pg_catalog.!~) '^pg_temp_') AS w \
             ON w.ins OPERATOR(pg_catalog.+) w.upd OPERATOR(pg_catalog.+) w.del \
             OPERATOR(pg_catalog.>) 0"
        )
    };
}

/// The sequences this backend holds locked for a change (`ROW EXCLUSIVE` or stronger:
/// `nextval`, `setval`, `currval`, `ALTER SEQUENCE`; a plain read of the sequence relation
/// takes `ACCESS SHARE`), outside temporary schemas, each as `name US owner` (the table whose
/// column owns it, serial or identity, or nothing), joined by RS: one text, NULL for none.
/// Locks are held to the transaction's end, so this reads the transaction's sequences.
macro_rules! locked_sequences {
    () => {
        "(SELECT pg_catalog.string_agg(s.relname OPERATOR(pg_catalog.||) pg_catalog.chr(31) \
         OPERATOR(pg_catalog.||) coalesce(o.relname, ''), pg_catalog.chr(30)) \
         FROM pg_catalog.pg_locks AS l JOIN pg_catalog.pg_class AS s \
         ON s.oid OPERATOR(pg_catalog.=) l.relation AND s.relkind OPERATOR(pg_catalog.=) 'S' \
         JOIN pg_catalog.pg_namespace AS sn ON sn.oid OPERATOR(pg_catalog.=) s.relnamespace \
         AND sn.nspname OPERATOR(pg_catalog.!~) '^pg_temp_' \
         LEFT JOIN pg_catalog.pg_depend AS d \
         ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass \
         AND d.objid OPERATOR(pg_catalog.=) s.oid \
         AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass \
         AND d.deptype OPERATOR(pg_catalog.=) ANY (ARRAY['a', 'i']) \
         LEFT JOIN pg_catalog.pg_class AS o ON o.oid OPERATOR(pg_catalog.=) d.refobjid \
         WHERE l.locktype OPERATOR(pg_catalog.=) 'relation' \
         AND l.pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid() AND l.granted \
         AND l.mode OPERATOR(pg_catalog.=) ANY (ARRAY['RowExclusiveLock', \
         'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock']))"
    };
}

/// Every user relation: the cost grows with the schema (`pg_class` is walked). Used where
/// counts of earlier transactions may be pending (inside an audited transaction, or when
/// the server cannot flush them: PostgreSQL before 15).
macro_rules! snapshot_all {
    () => {
        snapshot_over!("pg_catalog.pg_class AS c")
    };
}
const SNAPSHOT_ALL: &str = snapshot_all!();

/// The relations this transaction holds a lock on: every relation a statement wrote is
/// locked (at least `ROW EXCLUSIVE`) until the transaction ends. `pg_locks` reads the lock
/// manager's tables, whose size follows the server's activity, not the schema; `pg_class`
/// is read by oid (the `OFFSET 0` keeps the planner from scanning it).
macro_rules! snapshot_locked {
    () => {
        snapshot_over!(
            "(SELECT DISTINCT l.relation FROM pg_catalog.pg_locks AS l \
     WHERE l.locktype OPERATOR(pg_catalog.=) 'relation' \
     AND l.pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid() \
     AND l.database OPERATOR(pg_catalog.=) (SELECT d.oid FROM pg_catalog.pg_database AS d \
     WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())\
     ) AS l CROSS JOIN LATERAL (SELECT c.oid, c.relname, c.relkind, c.relnamespace \
     FROM pg_catalog.pg_class AS c WHERE c.oid OPERATOR(pg_catalog.=) l.relation OFFSET 0) AS c"
        )
    };
}
const SNAPSHOT_LOCKED: &str = snapshot_locked!();

/// Which relations a snapshot reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Every user relation ([`SNAPSHOT_ALL`]).
    All,
    /// The relations the transaction locked ([`SNAPSHOT_LOCKED`]): right only when no
    /// counts of earlier transactions are pending ([`flush`] ran right before `BEGIN`).
    Locked,
}

impl Scope {
    fn sql(self) -> &'static str {
        match self {
            Scope::All => SNAPSHOT_ALL,
            Scope::Locked => SNAPSHOT_LOCKED,
        }
    }
}

/// Asks the server to flush this backend's pending statistics when it next goes idle
/// (`pg_stat_force_next_flush()`, PostgreSQL 15): at the end of this round trip, outside
/// a transaction. Afterwards `pg_stat_get_xact_tuples_*` count the next transaction's
/// tuples only, so one snapshot at its end is the whole delta. One round trip.
pub(crate) async fn flush(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    conn.execute(sqlx::raw_sql(
        "SELECT pg_catalog.pg_stat_force_next_flush()",
    ))
    .await
    .map(|_| ())
}

/// `SAVEPOINT`, the snapshot of `$scope`, and `RELEASE`: one simple query.
macro_rules! protected {
    ($scope:ident, true) => {
        concat!(
            "SAVEPOINT hintaudit_oracle; ",
            $scope!(),
            "; RELEASE SAVEPOINT hintaudit_oracle"
        )
    };
    ($scope:ident, false) => {
        concat!("SAVEPOINT hintaudit_oracle; ", $scope!())
    };
}

/// Per-table counts at one moment of a transaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Snapshot {
    /// A transaction id was assigned.
    pub(crate) xid: bool,
    /// relid → (relname, inserted, updated, deleted).
    counts: HashMap<i64, (String, i64, i64, i64)>,
    /// Sequences locked for a change: name → the table owning it, if any.
    sequences: BTreeMap<String, Option<String>>,
}

fn parse(rows: &[PgRow]) -> Result<Snapshot, sqlx::Error> {
    let mut snap = Snapshot::default();
    for row in rows {
        let xid: Option<String> = row.try_get("xid")?;
        snap.xid |= xid.is_some();
        let seqs: Option<String> = row.try_get("seqs")?;
        for entry in seqs.iter().flat_map(|s| s.split('\u{1e}')) {
            let (name, owner) = entry.split_once('\u{1f}').unwrap_or((entry, ""));
            let owner = (!owner.is_empty()).then(|| owner.to_lowercase());
            snap.sequences.insert(name.to_lowercase(), owner);
        }
        let relid: Option<i64> = row.try_get("relid")?;
        if let Some(relid) = relid {
            let name: Option<String> = row.try_get("relname")?;
            let ins: Option<i64> = row.try_get("ins")?;
            let upd: Option<i64> = row.try_get("upd")?;
            let del: Option<i64> = row.try_get("del")?;
            snap.counts.insert(
                relid,
                (
                    name.unwrap_or_default().to_lowercase(),
                    ins.unwrap_or(0),
                    upd.unwrap_or(0),
                    del.unwrap_or(0),
                ),
            );
        }
    }
    Ok(snap)
}

/// Reads a snapshot of `scope` (one round trip). Use it where a failure may abort the
/// transaction: a transaction the oracle opened and has not written in.
pub(crate) async fn snapshot(
    conn: &mut PgConnection,
    scope: Scope,
) -> Result<Snapshot, sqlx::Error> {
    let rows = conn.fetch_all(sqlx::raw_sql(scope.sql())).await?;
    parse(&rows)
}

/// Reads a snapshot of `scope` inside a savepoint, so that the caller's transaction
/// survives the oracle's failure: `SAVEPOINT`, the snapshot and, when `release`, `RELEASE`
/// (not right before `COMMIT` / `ROLLBACK`, which end the savepoint anyway), sent as one
/// simple query: one round trip; one more (`ROLLBACK TO SAVEPOINT`) when the snapshot fails.
pub(crate) async fn snapshot_protected(
    conn: &mut PgConnection,
    scope: Scope,
    release: bool,
) -> Result<Snapshot, sqlx::Error> {
    let sql = match (scope, release) {
        (Scope::All, true) => protected!(snapshot_all, true),
        (Scope::All, false) => protected!(snapshot_all, false),
        (Scope::Locked, true) => protected!(snapshot_locked, true),
        (Scope::Locked, false) => protected!(snapshot_locked, false),
    };
    match conn.fetch_all(sqlx::raw_sql(sql)).await {
        Ok(rows) => parse(&rows),
        Err(e) => {
            // The transaction is aborted: return to the savepoint, which revives it.
            let _ = conn
                .execute(sqlx::raw_sql(
                    "ROLLBACK TO SAVEPOINT hintaudit_oracle; RELEASE SAVEPOINT hintaudit_oracle",
                ))
                .await;
            Err(e)
        }
    }
}

/// `SAVEPOINT`, the snapshot of `$scope`, and `COMMIT`: one simple query.
macro_rules! committing {
    ($scope:ident) => {
        concat!("SAVEPOINT hintaudit_oracle; ", $scope!(), "; COMMIT")
    };
}

/// How the oracle's last message in a transaction it opened with a raw `BEGIN` ended
/// ([`snapshot_commit`]).
#[derive(Debug)]
pub(crate) enum Ended {
    /// `COMMIT` answered, with its answer (a deferred constraint fails there); the
    /// snapshot before it, or its error. The transaction is over either way.
    Committed(Result<Snapshot, sqlx::Error>, Result<(), sqlx::Error>),
    /// `SAVEPOINT` or the snapshot failed, so `COMMIT` was not run: the transaction is still
    /// open and aborted (see [`revive_and_commit`]). The error.
    Aborted(sqlx::Error),
}

/// The snapshot of `scope` inside a savepoint, then `COMMIT`, sent as one simple query: one
/// round trip. The server runs a simple query's statements in order and skips the rest after
/// one fails: which one failed is told by how many completed before the error.
pub(crate) async fn snapshot_commit(conn: &mut PgConnection, scope: Scope) -> Ended {
    let sql = match scope {
        Scope::All => committing!(snapshot_all),
        Scope::Locked => committing!(snapshot_locked),
    };
    let mut rows = Vec::new();
    let mut completed = 0;
    let mut answer = conn.fetch_many(sqlx::raw_sql(sql));
    let failed = loop {
        match answer.try_next().await {
            Ok(Some(Either::Left(_))) => completed += 1,
            Ok(Some(Either::Right(row))) => rows.push(row),
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    match failed {
        None => Ended::Committed(parse(&rows), Ok(())),
        // `SAVEPOINT` and the snapshot completed: `COMMIT` failed.
        Some(e) if completed >= 2 => Ended::Committed(parse(&rows), Err(e)),
        Some(e) => Ended::Aborted(e),
    }
}

/// After [`Ended::Aborted`]: back to the savepoint, which revives the transaction, and
/// `COMMIT`, one simple query. `COMMIT`'s answer, or the error that left the transaction
/// open (no savepoint to return to).
pub(crate) async fn revive_and_commit(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    conn.execute(sqlx::raw_sql(
        "ROLLBACK TO SAVEPOINT hintaudit_oracle; COMMIT",
    ))
    .await
    .map(|_| ())
}

/// What changed between two snapshots of one transaction.
pub(crate) fn observe(
    before: &Snapshot,
    after: &Snapshot,
    committed: bool,
) -> TransactionObservation {
    let mut tables: Vec<TableWrites> = Vec::new();
    for (relid, (name, ins, upd, del)) in &after.counts {
        let (bi, bu, bd) = before
            .counts
            .get(relid)
            .map(|(_, i, u, d)| (*i, *u, *d))
            .unwrap_or((0, 0, 0));
        let d = |a: i64, b: i64| u64::try_from(a - b).unwrap_or(0);
        let w = TableWrites {
            table: name.clone(),
            inserted: d(*ins, bi),
            updated: d(*upd, bu),
            deleted: d(*del, bd),
        };
        if w.inserted + w.updated + w.deleted > 0 {
            tables.push(w);
        }
    }
    tables.sort_by(|a, b| a.table.cmp(&b.table));
    // A sequence its owner's insert advanced (a serial default) is that insert's; the
    // others are writes of their own.
    let sequences = after
        .sequences
        .iter()
        .filter(|(name, _)| !before.sequences.contains_key(*name))
        .filter(|(_, owner)| {
            !owner
                .as_ref()
                .is_some_and(|o| tables.iter().any(|t| t.table == *o))
        })
        .map(|(name, _)| name.clone())
        .collect();
    TransactionObservation {
        wrote: after.xid && !tables.is_empty(),
        tables,
        sequences,
        committed,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_ignores_earlier_counts_and_unchanged_tables() {
        let mut before = Snapshot::default();
        before.counts.insert(1, ("a".into(), 5, 0, 0));
        before.counts.insert(2, ("b".into(), 1, 1, 1));
        let mut after = before.clone();
        after.xid = true;
        after.counts.insert(1, ("a".into(), 6, 0, 2));
        after.counts.insert(3, ("c".into(), 0, 3, 0));
        let o = observe(&before, &after, true);
        assert!(o.wrote && o.committed);
        assert_eq!(
            o.tables,
            [
                TableWrites {
                    table: "a".into(),
                    inserted: 1,
                    updated: 0,
                    deleted: 2
                },
                TableWrites {
                    table: "c".into(),
                    inserted: 0,
                    updated: 3,
                    deleted: 0
                },
            ]
        );
        // A transaction id without moved counts (FOR UPDATE, temp tables) is no write.
        let locked = Snapshot {
            xid: true,
            ..before.clone()
        };
        assert!(!observe(&before, &locked, true).wrote);
    }
}
