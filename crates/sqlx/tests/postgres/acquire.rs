//! A connection straight from a pool hintaudit opened was flushed by the pool's test of it
//! (`SELECT pg_stat_force_next_flush()` in place of sqlx's ping), so the oracle sends no
//! flush of its own there: counts an earlier use of the same connection left pending, and
//! what your `after_connect` wrote, are still not blamed on the next audited statement or
//! transaction, and your `before_acquire` still runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::FutureExt;
use hintaudit_sqlx::AuditedPoolOptions;

use super::*;

/// One connection, so that every use below is on the same server session.
pub(super) async fn one_connection(
    db: &Db,
    options: AuditedPoolOptions<Postgres>,
) -> AuditedPool<Postgres> {
    options
        .connect_with(
            PgPoolOptions::new().max_connections(1),
            db.fresh.options.clone(),
        )
        .await
        .expect("connect")
}

/// Five inserts into `audit_log` left pending on the pool's one connection, unaudited.
async fn leave_five_pending(pool: &AuditedPool<Postgres>) {
    let mut conn = pool.inner().acquire().await.expect("acquire");
    conn.execute("INSERT INTO audit_log (what) SELECT 'old' FROM generate_series(1, 5)")
        .await
        .expect("earlier insert");
    let pending: i64 =
        sqlx::query_scalar("SELECT pg_stat_get_xact_tuples_inserted('audit_log'::regclass)")
            .fetch_one(&mut *conn)
            .await
            .expect("pending");
    assert_eq!(pending, 5, "the earlier inserts must still be pending");
}

/// The call's `audit_log` and `appointments` counts.
pub(super) fn log_and_appointments(e: &Effect) -> (u64, u64) {
    let inserted = |t: &str| table(e, t).map_or(0, |w| w.inserted + w.updated + w.deleted);
    (inserted("audit_log"), inserted("appointments"))
}

/// One call that books `patient`, on the pool or, `in_tx`, in a transaction begun on it:
/// its effect.
pub(super) async fn book(pool: &AuditedPool<Postgres>, patient: &str, in_tx: bool) -> Effect {
    const INSERT: &str = "INSERT INTO appointments (patient) VALUES ($1)";
    let scope = CallScope::new("book");
    let effects = scope.effects_handle();
    scope
        .run(async {
            if in_tx {
                let mut tx = pool.begin().await.expect("begin");
                let q = sqlx::query(INSERT).bind(patient);
                q.execute(&mut tx).await.expect("triggered insert");
                tx.commit().await.expect("commit");
            } else {
                let q = sqlx::query(INSERT).bind(patient);
                q.execute(pool).await.expect("triggered insert");
            }
        })
        .await;
    effects.snapshot()
}

/// Five pending inserts, then a call: the call's counts are its own.
async fn pending_not_blamed(in_tx: bool) {
    let Some(db) = db(PgOracle::Writes, SETUP).await else {
        return;
    };
    let pool = one_connection(&db, AuditedPool::options()).await;
    leave_five_pending(&pool).await;
    let e = book(&pool, "x", in_tx).await;
    assert_eq!(log_and_appointments(&e), (1, 1), "{e:?}");
    assert!(e.statements.iter().all(|s| s.observed), "{e:?}");
    pool.close().await;
    db.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_counts_of_a_pooled_connection_are_not_blamed_on_the_next_transaction() {
    pending_not_blamed(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_counts_of_a_pooled_connection_are_not_blamed_on_the_next_statement() {
    pending_not_blamed(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_after_connect_wrote_is_not_blamed_and_before_acquire_runs() {
    let Some(db) = db(PgOracle::Writes, SETUP).await else {
        return;
    };
    let acquired = Arc::new(AtomicUsize::new(0));
    let seen = acquired.clone();
    let options = AuditedPool::options()
        .after_connect(|conn: &mut sqlx::PgConnection, _| {
            async move {
                conn.execute(
                    "INSERT INTO audit_log (what) SELECT 'boot' FROM generate_series(1, 5)",
                )
                .await
                .map(|_| ())
            }
            .boxed()
        })
        .before_acquire(move |_, _| {
            seen.fetch_add(1, Ordering::Relaxed);
            async { Ok(true) }.boxed()
        });
    // Lazy: the first statement takes the connection as it opens, without the pool's test.
    let pool = options.connect_lazy_with(
        PgPoolOptions::new().max_connections(1),
        db.fresh.options.clone(),
    );
    for patient in ["x", "y"] {
        let e = book(&pool, patient, false).await;
        assert_eq!(log_and_appointments(&e), (1, 1), "{patient}: {e:?}");
    }
    // The second statement took the connection idle, tested.
    assert_eq!(acquired.load(Ordering::Relaxed), 1, "before_acquire");
    pool.close().await;
    db.drop_schema().await;
}

/// A database of its own where `role` may not call `pg_stat_force_next_flush()` (revoked
/// from `PUBLIC` there), with [`SETUP`] owned by `role`: its connect options as `role`.
async fn no_flush_database(admin: &sqlx::PgPool, name: &str) -> PgConnectOptions {
    for sql in [
        format!("CREATE ROLE {name} LOGIN"),
        format!("CREATE DATABASE {name} OWNER {name}"),
    ] {
        admin
            .execute(sqlx::AssertSqlSafe(sql))
            .await
            .expect("create");
    }
    let url = databases::pg_url();
    let base = url.parse::<PgConnectOptions>().expect("url").database(name);
    let root = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(base.clone());
    let root = root.await.expect("connect as the server's user");
    root.execute("REVOKE EXECUTE ON FUNCTION pg_stat_force_next_flush() FROM PUBLIC")
        .await
        .expect("revoke");
    root.close().await;
    let options = base.username(name);
    let owner = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(options.clone());
    let owner = owner.await.expect("connect as the role");
    owner.execute(SETUP).await.expect("setup");
    owner.close().await;
    options
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_whose_test_cannot_flush_still_blames_no_pending_counts() {
    let Some(db) = db(PgOracle::Writes, SETUP).await else {
        return;
    };
    let name = format!("ha_noflush_{}", std::process::id());
    let options = no_flush_database(&db.admin, &name).await;
    let pool = AuditedPool::options()
        .connect_with(PgPoolOptions::new().max_connections(1), options)
        .await
        .expect("connect");
    // The pool's test fails (no privilege) and hands the connection out all the same; the
    // oracle then reads every relation, before and after.
    leave_five_pending(&pool).await;
    let e = book(&pool, "x", false).await;
    assert_eq!(log_and_appointments(&e), (1, 1), "{e:?}");
    assert!(e.statements.iter().all(|s| s.observed), "{e:?}");
    let e = book(&pool, "y", true).await;
    assert_eq!(log_and_appointments(&e), (1, 1), "{e:?}");
    pool.close().await;
    for sql in [
        format!("DROP DATABASE {name} WITH (FORCE)"),
        format!("DROP ROLE {name}"),
    ] {
        db.admin
            .execute(sqlx::AssertSqlSafe(sql))
            .await
            .expect("drop");
    }
    db.drop_schema().await;
}
