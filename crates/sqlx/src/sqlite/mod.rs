//! The SQLite backend: statements run as they are; the connection's hooks are bound to the
//! call for the statement's duration (and for as long as a call holds the connection).

mod hooks;
#[cfg(feature = "preupdate-hook")]
mod images;

use std::sync::Arc;

use futures_core::future::BoxFuture;
use futures_core::stream::BoxStream;
use futures_util::{FutureExt, TryStreamExt};
use hintaudit_core::{AuditStage, Operation, stats};
use sqlx::sqlite::{Sqlite, SqliteConnection, SqliteQueryResult, SqliteRow, SqliteTypeInfo};
use sqlx::{Describe, Either, Error, Executor, SqlStr};
use tracing::Instrument;

use crate::backend::{Backend, Ctx, sealed};
use crate::classify::SqlDialect;
use crate::execute::{Attribution, AuditedQuery};
use crate::pool::Shared;
use crate::stream::TryStream;

use hooks::Slot;

/// A held SQLite connection's hook slot, looked up on its first call-scoped statement.
/// Dropping it unbinds the connection, so a later statement of another holder never lands
/// in this call.
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct SqliteConnState {
    slot: Option<Arc<Slot>>,
    /// The lookup failed once (worker gone): do not retry on every statement.
    failed: bool,
}

impl Drop for SqliteConnState {
    fn drop(&mut self) {
        if let Some(slot) = &self.slot {
            slot.bind(None);
        }
    }
}

impl sealed::Sealed for Sqlite {}

/// Statements whose rows the update hook must see if it is not blind.
fn is_dml(op: Operation) -> bool {
    matches!(
        op,
        Operation::Insert | Operation::Upsert | Operation::Update | Operation::Delete
    )
}

/// Binds the connection's slot to the statement (scoped) or unbinds it (unscoped). Returns
/// the slot when row changes of this statement will reach the call.
///
/// A statement run straight on the pool (`pooled`) that cannot write (a SELECT without opaque
/// function calls, a session statement) is not bound: no hook fires for it, and finding a
/// pooled connection's slot costs a round trip to sqlx's worker thread (`lock_handle()`),
/// which would otherwise double the cost of a cheap read. Pooled statements unbind when they
/// finish, so no earlier binding can catch this one's rows either.
async fn bind(
    conn: &mut SqliteConnection,
    state: &mut SqliteConnState,
    registry: &hooks::Registry,
    att: &Attribution,
    query: &AuditedQuery<Sqlite>,
    pooled: bool,
) -> Option<Arc<Slot>> {
    if pooled && state.slot.is_none() && !att.class.may_write() {
        return None;
    }
    // sqlx's `lock_handle()` must be followed by a command to the worker before the next
    // `lock_handle()`: back to back, unprocessed unlock requests pile up and, once the
    // command channel is full, deadlock (seen after ~50 in a row). A statement whose
    // arguments failed to encode never reaches the worker, so it is not bound at all.
    if query.arguments_failed() {
        return None;
    }
    let Some(sink) = &att.sink else {
        if let Some(slot) = &state.slot {
            slot.bind(None);
        }
        return None;
    };
    if state.slot.is_none() && !state.failed {
        match conn.lock_handle().await {
            Ok(mut handle) => state.slot = Some(registry.slot(&mut handle)),
            Err(e) => {
                state.failed = true;
                stats().audit_error(AuditStage::Hook, &e);
            }
        }
    }
    let slot = state.slot.clone()?;
    #[cfg(feature = "preupdate-hook")]
    {
        let effect = &att.class.effect;
        if is_dml(effect.operation) {
            images::learn_columns(conn, &registry.columns, &effect.tables).await;
        } else if effect.operation == Operation::Ddl {
            for t in &effect.tables {
                registry.columns.forget(t.rsplit('.').next().unwrap_or(t));
            }
        }
    }
    slot.bind(Some(sink.clone()));
    Some(slot)
}

/// Finishes a statement when dropped: normally, or when the caller dropped the stream (not a
/// failure). Error paths set `ok` to false first.
struct Finish {
    att: Attribution,
    slot: Option<Arc<Slot>>,
    pooled: bool,
    ok: bool,
    rows: u64,
}

impl Drop for Finish {
    fn drop(&mut self) {
        let class = &self.att.class;
        let observed = match &self.slot {
            Some(slot) => {
                let seen = slot.seen();
                let truncate = class.delete_without_where && !cfg!(feature = "preupdate-hook");
                // The hooks are blind to some writes (truncate optimisation, WITHOUT ROWID):
                // sqlite3_changes() reporting rows the hook never saw says so.
                let blind =
                    seen == 0 && (truncate || (is_dml(class.effect.operation) && self.rows > 0));
                !blind
            }
            None => false,
        };
        if let (false, Some(slot), Some(sink)) = (self.ok, &self.slot, &self.att.sink) {
            slot.abort_statement(sink);
        }
        self.att.finish(self.ok, None, observed);
        if let (true, Some(slot)) = (self.pooled, &self.slot) {
            slot.bind(None);
        }
    }
}

impl Backend for Sqlite {
    const SYSTEM_NAME: &'static str = "sqlite";
    const DIALECT: SqlDialect = SqlDialect::Sqlite;
    type PoolState = hooks::Registry;
    type ConnState = SqliteConnState;
    type TxState = ();

    fn run_many<'e>(
        ctx: Ctx<'e, Self>,
        query: AuditedQuery<Self>,
    ) -> BoxStream<'e, Result<Either<SqliteQueryResult, SqliteRow>, Error>> {
        let span = ctx.att.span.clone();
        Box::pin(TryStream::new(move |y| {
            async move {
                let Ctx {
                    conn,
                    state,
                    shared,
                    att,
                    pooled,
                    ..
                } = ctx;
                let slot = bind(conn, state, &shared.backend, &att, &query, pooled).await;
                let mut fin = Finish {
                    att,
                    slot,
                    pooled,
                    ok: true,
                    rows: 0,
                };
                let mut s = conn.fetch_many(query);
                loop {
                    match s.try_next().await {
                        Ok(Some(v)) => {
                            if let Either::Left(r) = &v {
                                fin.rows += r.rows_affected();
                            }
                            y.send(v).await;
                        }
                        Ok(None) => break,
                        Err(e) => {
                            drop(s);
                            fin.ok = false;
                            drop(fin);
                            return Err(e);
                        }
                    }
                }
                drop(s);
                Ok(())
            }
            .instrument(span)
        }))
    }

    fn run_optional<'e>(
        ctx: Ctx<'e, Self>,
        query: AuditedQuery<Self>,
    ) -> BoxFuture<'e, Result<Option<SqliteRow>, Error>> {
        let span = ctx.att.span.clone();
        async move {
            let Ctx {
                conn,
                state,
                shared,
                att,
                pooled,
                ..
            } = ctx;
            let slot = bind(conn, state, &shared.backend, &att, &query, pooled).await;
            let dml = is_dml(att.class.effect.operation);
            let mut fin = Finish {
                att,
                slot,
                pooled,
                ok: true,
                rows: 0,
            };
            if !dml {
                let r = conn.fetch_optional(query).await;
                fin.ok = r.is_ok();
                return r;
            }
            // Writes run to completion to learn sqlite3_changes(), which tells whether the
            // hooks were blind; the first row is the answer, as fetch_optional gives it.
            let mut first = None;
            let mut s = conn.fetch_many(query);
            loop {
                let v = match s.try_next().await {
                    Ok(Some(v)) => v,
                    Ok(None) => break,
                    Err(e) => {
                        drop(s);
                        fin.ok = false;
                        return Err(e);
                    }
                };
                match v {
                    Either::Left(r) => fin.rows += r.rows_affected(),
                    Either::Right(row) if first.is_none() => first = Some(row),
                    Either::Right(_) => {}
                }
            }
            drop(s);
            Ok(first)
        }
        .instrument(span)
        .boxed()
    }

    fn prepare_raw<'e>(
        conn: &'e mut SqliteConnection,
        sql: SqlStr,
        parameters: &'e [SqliteTypeInfo],
    ) -> BoxFuture<'e, Result<<Sqlite as sqlx::Database>::Statement, Error>> {
        conn.prepare_with(sql, parameters)
    }

    fn describe_raw<'e>(
        conn: &'e mut SqliteConnection,
        sql: SqlStr,
    ) -> BoxFuture<'e, Result<Describe<Sqlite>, Error>> {
        conn.describe(sql)
    }

    fn after_begin<'e>(
        _conn: &'e mut SqliteConnection,
        _tx: &'e mut (),
        _shared: &'e Shared<Self>,
    ) -> BoxFuture<'e, ()> {
        std::future::ready(()).boxed()
    }

    fn before_end<'e>(
        _conn: &'e mut SqliteConnection,
        _tx: &'e mut (),
        _committed: bool,
    ) -> BoxFuture<'e, ()> {
        std::future::ready(()).boxed()
    }

    fn after_end(_tx: &mut (), _committed: bool, _ok: bool) {}
}
