//! Binding a statement's row changes to its call ([`bind`]) before it runs, and learning the
//! column names its row images need ([`learn_images`]).

use std::sync::Arc;

use hintaudit_core::{AuditStage, stats};
use sqlx::sqlite::{Sqlite, SqliteConnection};

use super::SqliteConnState;
use super::hooks::{self, Binding, Slot, WriterGuard};
#[cfg(feature = "preupdate-hook")]
use super::images;
#[cfg(feature = "preupdate-hook")]
use crate::classify::is_dml;
use crate::classify::{Classification, TxControl};
use crate::execute::{Attribution, AuditedQuery};

/// How a statement's row changes reach its call.
pub(super) enum Bound {
    /// Not bound: the statement cannot write, is unscoped, or its slot is unknown.
    Nothing,
    /// Through the connection's slot: a held connection, or a pooled statement on a pool
    /// hintaudit did not open.
    Slot(Arc<Slot>),
    /// Through the pool's writer: a pooled statement that may write, on a pool hintaudit
    /// opened (its connections were hooked when they connected).
    Writer(WriterGuard),
}

/// Binds the statement's row changes to its call (scoped) or to nobody (unscoped).
///
/// A statement run straight on the pool (`pooled`) proved read-only
/// ([`crate::Classification::proved_read_only`]) is not bound: no hook fires for it. One that may write
/// claims the pool's writer when the pool's connections are hooked at connect time and no
/// other statement holds the writer; otherwise it finds its connection's slot, which costs a
/// round trip to sqlx's worker thread (`lock_handle()`), and binds it (to nobody, unscoped, so
/// that its rows do not reach the writer's call). A held connection finds its slot once.
///
/// `defer`: the column names for row images are learned after the statement rather than
/// before it (see [`learn_images`]).
pub(super) async fn bind(
    conn: &mut SqliteConnection,
    state: &mut SqliteConnState,
    registry: &hooks::Registry,
    att: &Attribution,
    query: &AuditedQuery<Sqlite>,
    pooled: bool,
    defer: bool,
) -> Bound {
    let may_write = !att.class.proved_read_only();
    if pooled && !may_write {
        return Bound::Nothing;
    }
    // `lock_handle()` must be followed by a command to the worker (see the module docs): a
    // statement whose arguments failed to encode never reaches the worker, so it is not
    // bound at all.
    if query.arguments_failed() {
        return Bound::Nothing;
    }
    if pooled
        && registry.at_connect()
        && let Some(guard) = registry.writer.try_claim(att.sink.clone())
    {
        if att.sink.is_some() {
            learn_images(conn, registry, &att.class).await;
        }
        return Bound::Writer(guard);
    }
    // An unscoped statement that may write, on a held connection or on a pooled one while
    // another statement holds the writer, binds its connection to nobody, so that neither an
    // earlier call nor the writer's call gets its rows; finding the slot is only worth it
    // when the statement may write.
    let lookup = att.sink.is_some() || (may_write && registry.at_connect());
    if lookup && state.slot.is_none() && !state.failed {
        match conn.lock_handle().await {
            Ok(mut handle) => state.slot = Some(registry.slot(&mut handle)),
            Err(e) => {
                state.failed = true;
                stats().audit_error(AuditStage::Hook, &e);
            }
        }
    }
    let Some(sink) = &att.sink else {
        if let Some(slot) = &state.slot {
            slot.bind(Binding::Held(None));
        }
        return Bound::Nothing;
    };
    let Some(slot) = state.slot.clone() else {
        return Bound::Nothing;
    };
    // `PRAGMA table_info` inside a transaction that has not written yet would open a read
    // transaction, and the write that follows would then fail at once with SQLITE_BUSY when
    // another connection writes (SQLite calls no busy handler to upgrade a read
    // transaction). There (`defer`), the names are learned after the write, before the
    // commit that needs them.
    if !defer {
        learn_images(conn, registry, &att.class).await;
    }
    slot.bind(Binding::Held(Some(sink.clone())));
    Bound::Slot(slot)
}

/// With the `preupdate-hook` feature: learns the column names of the tables a write touches
/// (`PRAGMA table_info`, once per table), and forgets them after DDL.
///
/// The hooks name changed columns when the transaction ends, so the names must be known by
/// then: before an autocommit write, and at any point before the commit inside a
/// transaction, where `bind` defers it until after the write so that it never opens a read
/// transaction ahead of the transaction's first write.
#[cfg_attr(not(feature = "preupdate-hook"), allow(unused_variables))]
pub(super) async fn learn_images(
    conn: &mut SqliteConnection,
    registry: &hooks::Registry,
    class: &Classification,
) {
    #[cfg(feature = "preupdate-hook")]
    {
        let effect = &class.effect;
        if is_dml(effect.operation) {
            images::learn_columns(conn, &registry.columns, &effect.tables).await;
        } else if effect.operation == hintaudit_core::Operation::Ddl {
            for t in effect.tables.iter() {
                registry.columns.forget(t.rsplit('.').next().unwrap_or(t));
            }
        }
    }
}

/// Whether a statement may leave its connection inside a transaction that sqlx does not count
/// (transaction control run as SQL). Unparsed text, and several statements with transaction
/// control, count as opening one: learning column names late costs at most some names,
/// learning them early inside a transaction can cost an SQLITE_BUSY.
pub(super) fn may_open_tx(class: &Classification) -> bool {
    match class.tx_control {
        Some(TxControl::Begin | TxControl::Savepoint) => true,
        Some(_) => false,
        None => !class.parsed || class.no_transaction_block,
    }
}
