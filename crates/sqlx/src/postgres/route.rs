//! Which way a statement goes: wrapped in the oracle's transaction ([`wrap`]), a direct
//! write on a plain table whose command tag is the evidence ([`direct_write`]), or past
//! both.

use sqlx::Connection;
use sqlx::Error;
use sqlx::postgres::{PgConnection, Postgres};

use super::PgPoolState;
use super::catalog::{self, Direct};
use crate::backend::Ctx;
use crate::execute::Attribution;
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
