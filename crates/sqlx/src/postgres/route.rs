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

/// Whether the configured oracle `mode` asks for the oracle around a statement of this
/// attribution (with [`PgOracle::Writes`], one that may write).
pub(super) fn wants_oracle(mode: PgOracle, att: &Attribution) -> bool {
    let c = &att.class;
    match mode {
        PgOracle::Off => false,
        PgOracle::Writes => c.may_write(),
        PgOracle::Always => true,
    }
}

/// Whether an autocommit statement runs wrapped in the oracle's transaction.
pub(super) fn wrap(ctx: &Ctx<'_, Postgres>) -> bool {
    let c = &ctx.att.class;
    ctx.tx.is_none()
        && !ctx.state.raw_transaction
        && !ctx.conn.is_in_transaction()
        && c.tx_control.is_none()
        && !c.no_transaction_block
        && wants_oracle(ctx.oracle, &ctx.att)
}

/// Whether `name` is a plain identifier, optionally schema-qualified: the only names the
/// catalog is asked about (`to_regclass` raises on a malformed name, which would abort the
/// caller's transaction).
fn simple_name(name: &str) -> bool {
    let part = |p: &str| {
        p.chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
            && p.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$')
    };
    let mut n = 0;
    name.split('.').all(|p| {
        n += 1;
        part(p)
    }) && n <= 2
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
    let Some(name) = catalog::direct_target(&att.class).filter(|n| simple_name(n)) else {
        return Ok(None);
    };
    let table = pool.catalog.table(conn, name).await?.filter(|t| t.plain);
    Ok(table.map(|table| Direct {
        table,
        operation: att.class.effect.operation,
    }))
}
