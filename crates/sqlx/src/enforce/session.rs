//! The session side of `readOnlyHint: true`: the statement that begins a call's transaction
//! read-only, the backend's statements that make a session read-only and read-write again
//! ([`crate::backend::ReadOnlySql`], an item of the backend), and the resets after a leak (see the parent module, *Restoring*).

use std::sync::atomic::{AtomicU64, Ordering};

use hintaudit_core::{AuditStage, CallScope, Enforcement, stats};
use sqlx::{Error, Executor, SqlStr};

use crate::backend::Backend;

/// The statement that begins an outermost audited transaction: `statement` when the caller
/// gave one (kept as it is); otherwise, in a call whose enforcement says read-only, the
/// backend's [`ReadOnlySql::begin`] (`BEGIN READ ONLY`, `START TRANSACTION READ ONLY`), and then
/// `true`: the transaction is begun read-only (`TxAudit::begun_read_only`). `None` is
/// sqlx's own `BEGIN`.
pub(crate) fn begin_statement<DB: Backend>(statement: Option<SqlStr>) -> (Option<SqlStr>, bool) {
    match (statement, DB::READ_ONLY.begin) {
        (None, Some(read_only))
            if CallScope::current().is_some_and(|s| s.enforcement().read_only) =>
        {
            (Some(SqlStr::from_static(read_only)), true)
        }
        (statement, _) => (statement, false),
    }
}

/// Runs `sql` on the raw connection, unaudited: whether it yielded a row.
pub(super) async fn raw_yields<DB: Backend>(
    conn: &mut DB::Connection,
    sql: &'static str,
) -> Result<bool, Error> {
    use futures_util::TryStreamExt;
    let mut items = DB::raw(conn).fetch_many(sqlx::raw_sql(sql));
    let mut row = false;
    while let Some(item) = items.try_next().await? {
        row |= item.is_right();
    }
    Ok(row)
}

/// Runs `sql` on the raw connection, unaudited.
pub(super) async fn raw<DB: Backend>(
    conn: &mut DB::Connection,
    sql: &'static str,
) -> Result<(), Error> {
    DB::raw(conn).execute(sqlx::raw_sql(sql)).await.map(drop)
}

/// Resets a connection that may have been left read-only (see the parent module): counted as an
/// audit error when the reset fails; the statement goes on either way.
pub(crate) async fn reset_if_leaked<DB: Backend>(
    conn: &mut DB::Connection,
    leaks: &AtomicU64,
    enforcement: Enforcement,
) {
    if leaks.load(Ordering::Relaxed) == 0 || enforcement.read_only {
        return;
    }
    if let Err(e) = raw::<DB>(conn, DB::READ_ONLY.reset).await {
        stats().audit_error(AuditStage::Hook, &format!("read-only reset failed: {e}"));
    }
}

/// Resets a connection that may have been left read-only before it begins a transaction or
/// leaves the audit's hands, unless the current call enforces read-only: before an
/// outermost audited transaction is begun on it (a session left read-only would begin it
/// read-only, and the reset before each of its statements could no longer change that), and
/// before sqlx's `Acquire` hands it out (its statements are not audited, so not reset).
pub(crate) async fn reset_for_call<DB: Backend>(conn: &mut DB::Connection, leaks: &AtomicU64) {
    let enforcement = CallScope::current().map_or(Enforcement::NONE, |s| s.enforcement());
    reset_if_leaked::<DB>(conn, leaks, enforcement).await;
}
