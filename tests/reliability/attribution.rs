//! Case 1, attribution at scale: 64 concurrent calls of six tools, autocommit and
//! transactions (committed and rolled back), tasks spawned with the scope helper and without
//! it, on SQLite and on PostgreSQL. Each call's statements, row changes and oracle counts
//! must be its own, exactly; every statement of an unscoped task is counted unattributed.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use hintaudit::core::{CallScope, DatabaseKind, Effect, Operation, RowOperation, stats};
use hintaudit::sqlx::{AuditedPool, Backend};
use sqlx::{ColumnIndex, Decode, Row, Type};

use crate::support::{self, figure};

const TOOLS: usize = 6;
const CONCURRENT: usize = 64;

/// What one call did, by the test's own count.
#[derive(Default)]
struct Issued {
    /// Data statements (not BEGIN/COMMIT/ROLLBACK) run inside the call's scope.
    statements: usize,
    /// Row ids this call inserted and committed, and how many updates it committed.
    committed_ids: BTreeSet<i64>,
    committed_inserts: u64,
    committed_updates: u64,
    /// Statements of the unscoped task it spawned.
    orphans: usize,
}

async fn id_of<DB: Backend>(row: &DB::Row) -> i64
where
    for<'r> i64: Decode<'r, DB> + Type<DB>,
    usize: ColumnIndex<DB::Row>,
{
    row.try_get::<i64, _>(0).expect("id")
}

/// One call's body: its pattern chosen by `call`, on its tool's table `r{tool}`.
async fn body<DB: Backend>(pool: &AuditedPool<DB>, call: usize) -> Issued
where
    for<'r> i64: Decode<'r, DB> + Type<DB>,
    usize: ColumnIndex<DB::Row>,
    for<'q> i64: sqlx::Encode<'q, DB>,
    <DB as sqlx::Database>::Arguments: sqlx::IntoArguments<DB>,
{
    let t = call % TOOLS;
    let mut done = Issued::default();
    // Bound parameters, as servers write them: 18 distinct texts, so the classification cache
    // answers after the first of each.
    let p = if DB::KIND == DatabaseKind::Sqlite {
        "?"
    } else {
        "$1"
    };
    let key = call as i64;
    let insert = || {
        sqlx::query::<DB>(sqlx::AssertSqlSafe(format!(
            "INSERT INTO r{t} (call, n) VALUES ({p}, 0) RETURNING id"
        )))
        .bind(key)
    };
    let select = || {
        sqlx::query::<DB>(sqlx::AssertSqlSafe(format!(
            "SELECT count(*) FROM r{t} WHERE call = {p}"
        )))
        .bind(key)
    };
    let update = |id: i64| {
        sqlx::query::<DB>(sqlx::AssertSqlSafe(format!(
            "UPDATE r{t} SET n = n + 1 WHERE id = {p}"
        )))
        .bind(id)
    };
    match call % 4 {
        0 => {
            let row = insert().fetch_one(pool).await.expect("insert");
            let id = id_of::<DB>(&row).await;
            for _ in 0..1 + call % 5 {
                select().execute(pool).await.expect("select");
            }
            update(id).execute(pool).await.expect("update");
            done.statements = 3 + call % 5;
            done.committed_ids.insert(id);
            done.committed_inserts = 1;
            done.committed_updates = 1;
        }
        1 | 2 => {
            let commit = call % 4 == 1;
            let mut tx = pool.begin().await.expect("begin");
            let row = insert().fetch_one(&mut tx).await.expect("insert");
            let id = id_of::<DB>(&row).await;
            select().execute(&mut tx).await.expect("select");
            update(id).execute(&mut tx).await.expect("update");
            done.statements = 3;
            if commit {
                tx.commit().await.expect("commit");
                done.committed_ids.insert(id);
                done.committed_inserts = 1;
                done.committed_updates = 1;
            } else {
                tx.rollback().await.expect("rollback");
            }
        }
        _ => {
            // A task spawned with the helper: its statements are the call's.
            let p = pool.clone();
            let ins = insert();
            let sel = select();
            let id = CallScope::spawn(async move {
                let row = ins.fetch_one(&p).await.expect("insert");
                sel.execute(&p).await.expect("select");
                id_of::<DB>(&row).await
            })
            .await
            .expect("scoped task");
            // A task spawned without it: its statement is unattributed, never the call's.
            let p = pool.clone();
            tokio::spawn(async move {
                sqlx::raw_sql("SELECT count(*) FROM orphans")
                    .execute(&p)
                    .await
                    .expect("orphan");
            })
            .await
            .expect("unscoped task");
            select().execute(pool).await.expect("select");
            done.statements = 3;
            done.committed_ids.insert(id);
            done.committed_inserts = 1;
            done.orphans = 1;
        }
    }
    done
}

/// How many of `effect`'s records are not `issued`'s: statements on another table, a count
/// that differs, row changes or oracle counts of another call.
fn misattributed(effect: &Effect, call: usize, issued: &Issued, hooks: bool) -> usize {
    let table = format!("r{}", call % TOOLS);
    let data: Vec<_> = effect
        .statements
        .iter()
        .filter(|s| s.operation != Operation::Transaction)
        .collect();
    let mut bad = data
        .iter()
        .filter(|s| {
            s.tables
                .iter()
                .chain(s.read_tables.iter())
                .any(|t| *t != table)
        })
        .count();
    bad += data.len().abs_diff(issued.statements);
    if hooks {
        let committed: Vec<_> = effect.row_changes.iter().filter(|r| r.committed).collect();
        bad += committed
            .iter()
            .filter(|r| {
                r.table != table
                    || !r
                        .row_id
                        .is_some_and(|id| issued.committed_ids.contains(&id))
            })
            .count();
        let count = |op| committed.iter().filter(|r| r.operation == op).count() as u64;
        bad += count(RowOperation::Insert).abs_diff(issued.committed_inserts) as usize;
        bad += count(RowOperation::Update).abs_diff(issued.committed_updates) as usize;
    } else {
        let (mut ins, mut upd) = (0, 0);
        for w in effect
            .transactions
            .iter()
            .filter(|t| t.committed)
            .flat_map(|t| &t.tables)
        {
            if w.table != table {
                bad += 1;
            }
            ins += w.inserted;
            upd += w.updated;
        }
        bad += ins.abs_diff(issued.committed_inserts) as usize;
        bad += upd.abs_diff(issued.committed_updates) as usize;
    }
    if bad > 0 {
        eprintln!(
            "call {call}: {bad} misattributed: issued {} statements, effect {effect:?}",
            issued.statements
        );
    }
    bad
}

/// Runs calls from 64 concurrent workers until `target` statements ran; returns the figures.
async fn at_scale<DB: Backend>(pool: AuditedPool<DB>, backend: &str, ddl_id: &str, target: usize)
where
    for<'r> i64: Decode<'r, DB> + Type<DB>,
    usize: ColumnIndex<DB::Row>,
    for<'q> i64: sqlx::Encode<'q, DB>,
    <DB as sqlx::Database>::Arguments: sqlx::IntoArguments<DB>,
    for<'c> &'c mut <DB as sqlx::Database>::Connection: sqlx::Executor<'c, Database = DB>,
{
    for t in 0..TOOLS {
        let ddl = format!(
            "CREATE TABLE r{t} (id {ddl_id} PRIMARY KEY, call BIGINT NOT NULL, n BIGINT NOT NULL)"
        );
        sqlx::raw_sql(sqlx::AssertSqlSafe(ddl))
            .execute(pool.inner())
            .await
            .expect("ddl");
    }
    sqlx::raw_sql("CREATE TABLE orphans (id INTEGER)")
        .execute(pool.inner())
        .await
        .expect("ddl");
    let _lock = support::STATS.lock().await;
    let before = stats().unattributed_statements(Operation::Select);
    let issued_total = Arc::new(AtomicUsize::new(0));
    let next_call = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..CONCURRENT {
        let (pool, issued_total, next_call) =
            (pool.clone(), issued_total.clone(), next_call.clone());
        workers.push(tokio::spawn(async move {
            let (mut calls, mut bad, mut orphans, mut statements) =
                (0usize, 0usize, 0usize, 0usize);
            while issued_total.load(Ordering::Relaxed) < target {
                let call = next_call.fetch_add(1, Ordering::Relaxed);
                let scope = CallScope::new(format!("tool_{}", call % TOOLS));
                let effects = scope.effects_handle();
                let issued = scope.run(body(&pool, call)).await;
                let hooks = DB::KIND == DatabaseKind::Sqlite;
                bad += misattributed(&effects.snapshot(), call, &issued, hooks);
                issued_total.fetch_add(issued.statements + issued.orphans, Ordering::Relaxed);
                statements += issued.statements;
                orphans += issued.orphans;
                calls += 1;
            }
            (calls, bad, orphans, statements)
        }));
    }
    let (mut calls, mut bad, mut orphans, mut statements) = (0, 0, 0, 0);
    for w in workers {
        let (c, b, o, s) = w.await.expect("worker");
        (calls, bad, orphans, statements) = (calls + c, bad + b, orphans + o, statements + s);
    }
    let unattributed = stats().unattributed_statements(Operation::Select) - before;
    let elapsed = started.elapsed();
    figure(
        &format!("attribution.{backend}"),
        &[
            ("calls", calls.to_string()),
            ("concurrent", CONCURRENT.to_string()),
            ("statements", (statements + orphans).to_string()),
            ("unscoped_statements", orphans.to_string()),
            ("counted_unattributed", unattributed.to_string()),
            ("misattributed", bad.to_string()),
            (
                "vanished",
                (orphans as u64).abs_diff(unattributed).to_string(),
            ),
            ("seconds", format!("{:.1}", elapsed.as_secs_f64())),
        ],
    );
    assert!(statements + orphans >= target);
    assert_eq!(bad, 0, "misattributed statements");
    assert_eq!(
        unattributed, orphans as u64,
        "every unscoped statement is counted, none vanish"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn attribution_at_scale_on_sqlite() {
    let (pool, _dir) = support::sqlite(8).await;
    at_scale(pool, "sqlite", "INTEGER", support::size(3_000, 100_000)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn attribution_at_scale_on_postgres() {
    let Some((pool, schema)) = support::postgres("attribution", 16).await else {
        return;
    };
    at_scale(
        pool.clone(),
        "postgres",
        "BIGSERIAL",
        support::size(3_000, 100_000),
    )
    .await;
    pool.close().await;
    schema.cleanup().await;
}
