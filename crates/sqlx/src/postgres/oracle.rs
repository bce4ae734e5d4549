//! The PostgreSQL transaction oracle ([design: evidence], [design: pitfalls]): inside one open
//! transaction, whether it was assigned a transaction id (`pg_current_xact_id_if_assigned()`)
//! and which user tables' insert/update/delete counts moved (`pg_stat_xact_user_tables`, as a
//! before/after delta: the view also holds counts of earlier transactions of the same backend
//! not yet flushed). A snapshot is one prepared query of both.
//!
//! Pitfalls handled here: the transaction id is also assigned by `SELECT ... FOR UPDATE` and
//! by temp-table creation, so `wrote` is reported only when some user table's counts moved;
//! temp tables (`pg_temp_*` schemas) are ignored; `nextval()` is invisible to the oracle
//! (statement analysis lists it in `opaque_calls`).
//!
//! [design: evidence]: ../../../../docs/design.md#3-evidence
//! [design: pitfalls]: ../../../../docs/design.md#7-known-pitfalls-checked-against-rmcp-311-sqlx-09-postgresql-15

use std::collections::HashMap;

use hintaudit_core::{TableWrites, TransactionObservation};
use sqlx::postgres::{PgConnection, PgRow};
use sqlx::{Executor, Row};

/// One query: the transaction id (if any) and every user table with non-zero counts in the
/// current transaction. At least one row, thanks to the outer join.
const SNAPSHOT: &str = "SELECT pg_current_xact_id_if_assigned()::text AS xid, \
     s.relid::int8 AS relid, s.relname::text AS relname, \
     s.n_tup_ins::int8 AS ins, s.n_tup_upd::int8 AS upd, s.n_tup_del::int8 AS del \
     FROM (SELECT 1) AS one LEFT JOIN pg_stat_xact_user_tables AS s \
     ON s.n_tup_ins + s.n_tup_upd + s.n_tup_del > 0 AND s.schemaname NOT LIKE 'pg\\_temp\\_%'";

/// Per-table counts at one moment of a transaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Snapshot {
    /// A transaction id was assigned.
    pub(crate) xid: bool,
    /// relid → (relname, inserted, updated, deleted).
    counts: HashMap<i64, (String, i64, i64, i64)>,
}

fn parse(rows: &[PgRow]) -> Result<Snapshot, sqlx::Error> {
    let mut snap = Snapshot::default();
    for row in rows {
        let xid: Option<String> = row.try_get("xid")?;
        snap.xid |= xid.is_some();
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

/// Reads a snapshot with a prepared statement (one round trip once prepared). Use it where a
/// failure may abort the transaction: a transaction the oracle opened and has not written in.
pub(crate) async fn snapshot(conn: &mut PgConnection) -> Result<Snapshot, sqlx::Error> {
    let rows = conn.fetch_all(sqlx::query(SNAPSHOT)).await?;
    parse(&rows)
}

/// Reads a snapshot inside a savepoint, so that the caller's transaction survives the
/// oracle's failure: `SAVEPOINT`, the prepared snapshot, and `RELEASE` unless `release` is
/// false (right before `COMMIT` / `ROLLBACK`, which end the savepoint anyway). Three or two
/// round trips, each cheap; one more (`ROLLBACK TO SAVEPOINT`) when the snapshot fails.
pub(crate) async fn snapshot_protected(
    conn: &mut PgConnection,
    release: bool,
) -> Result<Snapshot, sqlx::Error> {
    conn.execute("SAVEPOINT hintaudit_oracle").await?;
    match snapshot(conn).await {
        Ok(s) => {
            if release {
                conn.execute("RELEASE SAVEPOINT hintaudit_oracle").await?;
            }
            Ok(s)
        }
        Err(e) => {
            // The transaction is aborted: return to the savepoint, which revives it.
            let _ = conn.execute("ROLLBACK TO SAVEPOINT hintaudit_oracle").await;
            let _ = conn.execute("RELEASE SAVEPOINT hintaudit_oracle").await;
            Err(e)
        }
    }
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
    TransactionObservation {
        wrote: after.xid && !tables.is_empty(),
        tables,
        committed,
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
