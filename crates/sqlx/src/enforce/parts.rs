//! Taking a statement's context apart around its connection: the statement runs on a
//! reborrow of the connection, and the connection stays for the restore after it.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use crate::backend::{Backend, Ctx};

/// A context without its connection, to run the statement on a reborrow of it and keep the
/// connection for the restore.
pub(super) struct Parts<'e, DB: Backend> {
    state: &'e mut DB::ConnState,
    tx: Option<&'e mut DB::TxState>,
    pool: &'e DB::PoolState,
    leaks: &'e AtomicU64,
    att: crate::execute::Attribution,
    pooled: bool,
}

impl<'e, DB: Backend> Parts<'e, DB> {
    pub(super) fn rebuild<'r>(self, conn: &'r mut DB::Connection) -> Ctx<'r, DB>
    where
        'e: 'r,
    {
        Ctx {
            conn,
            state: self.state,
            tx: self.tx,
            pool: self.pool,
            leaks: self.leaks,
            att: self.att,
            pooled: self.pooled,
        }
    }
}

#[allow(clippy::type_complexity)]
pub(super) fn split<DB: Backend>(
    ctx: Ctx<'_, DB>,
) -> (
    &'_ mut DB::Connection,
    Option<crate::execute::Sink>,
    Arc<str>,
    Parts<'_, DB>,
) {
    let sink = ctx.att.sink.clone();
    let summary = ctx.att.class.effect.summary.clone();
    let Ctx {
        conn,
        state,
        tx,
        pool,
        leaks,
        att,
        pooled,
    } = ctx;
    (
        conn,
        sink,
        summary,
        Parts {
            state,
            tx,
            pool,
            leaks,
            att,
            pooled,
        },
    )
}
