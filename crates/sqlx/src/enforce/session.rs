//! The session side of `readOnlyHint: true`: the statement that begins a call's transaction
//! read-only, the backend's statements that make a session read-only and read-write again
//! ([`ReadOnlySql`]), and the resets after a leak (see the parent module, *Restoring*).

use std::sync::atomic::{AtomicU64, Ordering};

use hintaudit_core::{AuditStage, CallScope, Enforcement, stats};
use sqlx::{Error, Executor, SqlStr};

use crate::backend::Backend;

/// The statement that begins an outermost audited transaction: `statement` when the caller
/// gave one (kept as it is); otherwise, in a call whose enforcement says read-only, the
/// backend's [`Backend::READ_ONLY_BEGIN`] (`BEGIN READ ONLY`, `START TRANSACTION READ ONLY`), and then
/// `true`: the transaction is begun read-only ([`Backend::set_begun_read_only`]). `None` is
/// sqlx's own `BEGIN`.
pub(crate) fn begin_statement<DB: Backend>(statement: Option<SqlStr>) -> (Option<SqlStr>, bool) {
    match (statement, DB::READ_ONLY_BEGIN) {
        (None, Some(read_only))
            if CallScope::current().is_some_and(|s| s.enforcement().read_only) =>
        {
            (Some(SqlStr::from_static(read_only)), true)
        }
        (statement, _) => (statement, false),
    }
}

/// The backend's read-only statements, outside a transaction and in one.
pub(super) struct ReadOnlySql {
    /// Yields a row only when the session is read-write. Where the backend has it, run
    /// first, and `on` only after it yielded a row: a session the deployment made read-only
    /// (a read-only role, a connect option, an init command) is left as it is, and never
    /// made read-write afterwards, even by a reset after a statement dropped on the way.
    pub(super) probe: Option<&'static str>,
    /// Makes the session read-only. Without `probe`, yields a row only when the session was
    /// read-write before, and marks the session so that `reset` finds what it changed.
    pub(super) on: &'static str,
    /// Makes the session read-write again after `on` yielded a row.
    pub(super) off: &'static str,
    /// After a leak, before a statement or `begin()` that does not enforce read-only: on
    /// PostgreSQL undoes `on` only where `on` changed the session (it leaves a mark in it);
    /// elsewhere as `off` (a leak is counted only where `probe` found the session
    /// read-write).
    pub(super) reset: &'static str,
    /// Inside a transaction not begun read-only, where the backend can make it so.
    pub(super) in_tx: Option<&'static str>,
}

/// [`ReadOnlySql`] for the backend.
pub(super) fn statements<DB: Backend>() -> ReadOnlySql {
    match DB::SYSTEM_NAME {
        "sqlite" => ReadOnlySql {
            probe: Some("SELECT 1 FROM pragma_query_only WHERE query_only = 0"),
            on: "PRAGMA query_only = ON",
            off: "PRAGMA query_only = OFF",
            reset: "PRAGMA query_only = OFF",
            in_tx: None,
        },
        "postgresql" => ReadOnlySql {
            probe: None,
            // `CASE` orders the evaluation; `OFFSET 0` keeps the old value's subquery apart.
            on: "SELECT 1 FROM (SELECT current_setting('default_transaction_read_only') AS old \
                 OFFSET 0) AS s WHERE CASE WHEN s.old = 'off' THEN \
                 set_config('default_transaction_read_only', 'on', false) = 'on' \
                 AND set_config('hintaudit.read_only_set', 'on', false) = 'on' ELSE false END",
            off: "SELECT set_config('default_transaction_read_only', 'off', false), \
                  set_config('hintaudit.read_only_set', '', false)",
            reset: "SELECT CASE WHEN current_setting('hintaudit.read_only_set', true) = 'on' \
                    THEN set_config('default_transaction_read_only', 'off', false) \
                    || set_config('hintaudit.read_only_set', '', false) END",
            in_tx: Some("SET TRANSACTION READ ONLY"),
        },
        _ => ReadOnlySql {
            // MariaDB names it `tx_read_only`, MySQL 8 `transaction_read_only`.
            probe: Some(
                "SHOW SESSION VARIABLES WHERE Variable_name IN ('tx_read_only', \
                 'transaction_read_only') AND Value = 'OFF'",
            ),
            on: "SET SESSION TRANSACTION READ ONLY",
            off: "SET SESSION TRANSACTION READ WRITE",
            reset: "SET SESSION TRANSACTION READ WRITE",
            in_tx: None,
        },
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
    if let Err(e) = raw::<DB>(conn, statements::<DB>().reset).await {
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
