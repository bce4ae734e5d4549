//! Which way a statement goes: wrapped in the oracle's transaction ([`wrappable`] and
//! [`wants_oracle`]), a direct write on a plain table whose command tag is the evidence
//! ([`direct_write`]), or past both; [`start`] decides it for each statement, and
//! [`before`] opens the oracle's transaction where it wraps.

use std::sync::Arc;

use sqlx::Connection;
use sqlx::Error;
use sqlx::postgres::{PgConnection, Postgres};

use super::catalog::{self, Direct};
use super::{PgConnState, PgPoolState, PgRoute, Rest, Way, finish, tx, wrap};
use crate::backend::{Answer, Ctx, Read};
use crate::classify::is_dml;
use crate::drive::{Counting, stopped};
use crate::execute::{Attribution, StatementEnd};
use crate::guard::Guard;
use crate::pool::options::PgOracle;

/// Whether the configured oracle `mode` asks for the database's evidence around a statement
/// of this attribution. With [`PgOracle::Writes`], every statement not proved read-only: by
/// its text ([`crate::Classification::proved_read_only`]), and by the catalog for each
/// relation it reads (a view, or a table under row security, can call a function the text
/// does not name; see [`catalog::Catalog::read_only`]). The error when a catalog lookup
/// found the connection lost (see `lost`).
pub(super) async fn wants_oracle(
    conn: &mut PgConnection,
    pool: &PgPoolState,
    mode: PgOracle,
    att: &Attribution,
) -> Result<bool, Error> {
    let c = &att.class;
    match mode {
        PgOracle::Off => Ok(false),
        PgOracle::Always => Ok(true),
        PgOracle::Writes if !c.proved_read_only() => Ok(true),
        PgOracle::Writes => {
            for t in c.effect.read_tables.iter() {
                if !catalog::simple_name(t) || !pool.catalog.read_only(conn, t).await? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
    }
}

/// Whether an autocommit statement can run wrapped in the oracle's transaction: not in a
/// transaction, not transaction control, not a text that cannot run in a transaction block.
pub(super) fn wrappable(ctx: &Ctx<'_, Postgres>) -> bool {
    let c = &ctx.att.class;
    ctx.tx.is_none()
        && !ctx.state.raw_transaction
        && !ctx.conn.is_in_transaction()
        && c.tx_control.is_none()
        && !c.no_transaction_block
}

/// Why a statement that is not proved read-only ran unwrapped in autocommit: the words of
/// its evidence (see [`hintaudit_core::StatementEffect::unobserved`]).
pub(super) fn why_unwrapped(ctx: &Ctx<'_, Postgres>) -> &'static str {
    let c = &ctx.att.class;
    if ctx.state.raw_transaction || ctx.conn.is_in_transaction() {
        "in a transaction begun outside the audit (a raw BEGIN), which the oracle cannot wrap"
    } else if c.no_transaction_block {
        "the text ends its own transaction or cannot run in one, so the oracle cannot wrap it"
    } else {
        "the oracle is off"
    }
}

/// The statement's direct write, if it is one on a plain table (see [`catalog`]), where the
/// oracle would otherwise run: `eligible` when it would be wrapped in autocommit, or inside
/// an audited transaction before the oracle's first snapshot. The error when the catalog
/// lookup found the connection lost (see `lost`).
pub(super) async fn direct_write(
    conn: &mut PgConnection,
    pool: &PgPoolState,
    att: &Attribution,
    eligible: bool,
) -> Result<Option<Direct>, Error> {
    if !eligible {
        return Ok(None);
    }
    let Some(name) = catalog::direct_target(&att.class).filter(|n| catalog::simple_name(n)) else {
        return Ok(None);
    };
    let table = pool.catalog.table(conn, name).await?.filter(|t| t.plain);
    Ok(table.map(|table| Direct {
        table,
        operation: att.class.effect.operation,
    }))
}

/// A statement's connection and audit state, once it has started.
pub(super) struct Started<'e> {
    /// Whether the oracle wraps it (see [`wrap`]).
    pub(super) wrapped: bool,
    /// The connection was lost under the audit's own round trips before the statement
    /// (see `lost`): its error is the statement's, which is not sent.
    pub(super) lost: Option<Error>,
    /// Straight from a pool whose test of it flushed its statistics (see `acquire`).
    pub(super) flushed: bool,
    /// Taken from the pool for this statement alone: [`PgConnState`]'s flag that the
    /// oracle's raw transaction may be left open (see [`wrap::open`]).
    pub(super) left_open: Option<&'e mut bool>,
    pub(super) conn: &'e mut PgConnection,
    pub(super) att: Attribution,
    pub(super) rest: Rest<'e>,
}

/// The start of both ways of running a statement: whether it needs the oracle, whether it
/// is a direct write, whether to wrap it, and inside an audited transaction, what the
/// oracle does before it. A statement not proved read-only that cannot be wrapped in
/// autocommit is marked unobserved, with why (see
/// [`hintaudit_core::StatementEffect::unobserved`]).
pub(super) async fn start(ctx: Ctx<'_, Postgres>) -> Started<'_> {
    let wrappable = wrappable(&ctx);
    let unwrapped = (!wrappable && ctx.tx.is_none()).then(|| why_unwrapped(&ctx));
    let flushed = ctx.pooled && ctx.pool.flush_on_acquire.done(ctx.conn);
    let Ctx {
        conn,
        state,
        mut tx,
        pool,
        att,
        pooled,
        ..
    } = ctx;
    let PgConnState {
        raw_transaction,
        left_open,
    } = state;
    let mode = tx.as_deref().map_or(pool.oracle, |tx| tx.oracle);
    let (wants, mut lost) = match wants_oracle(conn, pool, mode, &att).await {
        Ok(wants) => (wants, None),
        Err(e) => (true, Some(e)),
    };
    let wrapped = wrappable && wants;
    let eligible = lost.is_none()
        && match tx.as_deref() {
            None => wrapped,
            Some(tx) => tx.before.is_none() && !tx.failed && !tx.aborted && wants,
        };
    let direct = match direct_write(conn, pool, &att, eligible).await {
        Ok(direct) => direct,
        Err(e) => {
            lost = lost.or(Some(e));
            None
        }
    };
    if let Some(tx) = tx.as_deref_mut() {
        lost = lost.or(tx.lost.take());
        let snapshot = tx::before(conn, tx, &att, direct.is_some() || !wants, lost.is_some()).await;
        lost = lost.or(snapshot.err());
    }
    let unwrapped = unwrapped.or((wrappable && !wants).then_some("the oracle is off"));
    if let (Some(why), Some(not_proved), Some(sink)) =
        (unwrapped, att.class.not_proved.as_deref(), &att.sink)
    {
        let text: Arc<str> = format!("{not_proved}; {why}").into();
        sink.update(|s| s.unobserved = Some(text.clone()));
    }
    Started {
        wrapped: wrapped && direct.is_none(),
        lost,
        flushed,
        left_open: pooled.then_some(left_open),
        conn,
        att,
        rest: Rest {
            direct,
            raw_transaction,
            tx,
            pool,
        },
    }
}

/// [`crate::Backend::before`]: [`start`], then where the oracle wraps the statement, its
/// transaction opened ([`wrap::open`]); when it could not open, the statement runs past it.
/// How the answer is read: a wrapped statement's rows held until `COMMIT` answered, unless
/// the caller's stream can be finished after a drop ([`crate::stream::Yielder::detachable`]:
/// a statement straight on the pool), which gets them as they arrive;
/// `fetch_optional` for one row of a statement that is not DML.
pub(super) async fn before<'e>(
    ctx: Ctx<'e, Postgres>,
    answer: &Answer<'e, Postgres>,
) -> Result<(PgRoute<'e>, Read), Error> {
    let Started {
        wrapped,
        lost,
        flushed,
        left_open,
        conn,
        att,
        mut rest,
    } = start(ctx).await;
    if let Some(e) = lost {
        finish(&mut rest, &att, StatementEnd::FAILED);
        return Err(e);
    }
    let one = matches!(answer, Answer::First(_));
    let first = match (one, is_dml(att.class.effect.operation)) {
        (true, false) => Read::FirstRow { counts_row: false },
        (true, true) => Read::Hold { rows: 1 },
        (false, _) => Read::Drain,
    };
    let y = match answer {
        Answer::Stream(y) if y.detachable() => Some(*y),
        _ => None,
    };
    // Dropped part-way: wrapped and streamed, the statement failed (no tokio runtime to
    // finish it on, the oracle's transaction is rolled back: see `wrap`); wrapped and held,
    // nothing is recorded; past the oracle, the caller stopped reading (`stopped`).
    let on_drop: fn(&mut Counting<u64>) = if y.is_some() { rolled_back } else { nothing };
    let mut live = Guard::new(Counting { att, rows: 0 }, on_drop);
    let conn = if wrapped {
        match wrap::open(conn, flushed, left_open).await {
            Ok(opened) => {
                let read = match (y, first) {
                    (Some(y), _) => {
                        y.finish_on_drop(true);
                        Read::Drain
                    }
                    (None, Read::Drain) => Read::Hold { rows: usize::MAX },
                    (None, first) => first,
                };
                let way = Way::Wrapped(opened, y);
                return Ok((PgRoute { way, live, rest }, read));
            }
            Err((e, None)) => {
                live.defuse();
                finish(&mut rest, &live.att, StatementEnd::FAILED);
                return Err(e);
            }
            Err((_, Some(conn))) => conn,
        }
    } else {
        conn
    };
    live.rearm(stopped::<Postgres, u64>);
    let way = Way::Past(conn);
    Ok((PgRoute { way, live, rest }, first))
}

/// A wrapped statement streamed to the caller, dropped before it ended: failed.
fn rolled_back(c: &mut Counting<u64>) {
    c.att.finish(StatementEnd::FAILED);
}

/// A wrapped statement held until `COMMIT`, dropped before it ended: nothing recorded.
fn nothing(_: &mut Counting<u64>) {}
