//! sqlx's [`Acquire`] for `&AuditedPool`: what `sqlx::migrate!().run(&pool)` and helpers
//! written against `impl Acquire<'_, Database = DB>` take.
//!
//! sqlx's trait fixes what it hands out: a connection that derefs to the driver's connection,
//! and a sqlx `Transaction`. Statements run through them therefore bypass the audited
//! executors: they are not attributed one by one. Outside a call scope this is *set-up*
//! (migrations, fixtures), which is no tool's doing: it is counted with
//! `stats().setup_acquire()`, its statements are not counted as unattributed, and the backend
//! marks the connection as set-up while it is out ([`Backend::mark_acquired`]; SQLite: its row
//! changes are neither unattributed nor any call's)
//! ([design: evidence](../../../../docs/design.md#3-evidence)). Inside a call scope it is
//! counted with `stats().unaudited_acquire()` and noted on the call (`unaudited_acquires`);
//! SQLite binds the connection's hooks to the call until it drops, so its rows are the
//! call's. `begin` cannot do that: sqlx's `Transaction` owns the pooled connection and returns
//! it to the pool itself, where hintaudit could not unbind it, so its hooks are not bound.
//! Use the pool itself, `pool.acquire()` or `pool.begin()` (whose `&mut *conn` and `&mut *tx`
//! are audited executors) for statement attribution.

use std::fmt;
use std::ops::{Deref, DerefMut};

use futures_core::future::BoxFuture;
use sqlx::pool::MaybePoolConnection;
use sqlx::{Acquire, Error, Transaction};

use crate::backend::Backend;
use crate::held::acquire::note_acquire;
use crate::held::connection::AuditedConnection;
use crate::pool::AuditedPool;

/// The driver's connection, taken from an [`AuditedPool`] through sqlx's [`Acquire`]
/// (`Acquire::acquire(&pool)`, which `sqlx::migrate!().run(&pool)` calls). Its statements
/// are not audited one by one; taken outside any call scope it is marked as set-up until it
/// drops, inside one (SQLite) its row changes go to that call until it drops (see the crate
/// docs, *Acquire and set-up*). Dropping it returns the connection to the pool.
pub struct UnauditedConnection<DB: Backend> {
    // Keeps the connection's audit state, which unmarks set-up when it drops.
    conn: AuditedConnection<DB>,
}

impl<DB: Backend> Deref for UnauditedConnection<DB> {
    type Target = DB::Connection;
    fn deref(&self) -> &DB::Connection {
        &self.conn.raw
    }
}

impl<DB: Backend> DerefMut for UnauditedConnection<DB> {
    fn deref_mut(&mut self) -> &mut DB::Connection {
        &mut self.conn.raw
    }
}

impl<DB: Backend> fmt::Debug for UnauditedConnection<DB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnauditedConnection")
            .field("system", &DB::KIND.system_name())
            .finish()
    }
}

/// sqlx's `Acquire`: the driver's connection, or a sqlx `Transaction` on one, for
/// `sqlx::migrate!().run(&pool)` and helpers over `impl Acquire`. Outside a call scope this
/// is set-up, counted with `stats().setup_acquire()`; inside one it is counted with
/// `stats().unaudited_acquire()` and noted on the call. Its statements are not audited one by
/// one (see the crate docs, *Acquire and set-up*).
impl<'a, DB: Backend> Acquire<'a> for &'_ AuditedPool<DB> {
    type Database = DB;
    type Connection = UnauditedConnection<DB>;

    fn acquire(self) -> BoxFuture<'static, Result<UnauditedConnection<DB>, Error>> {
        let call = note_acquire();
        let shared = self.shared.clone();
        Box::pin(async move {
            let conn = shared.pool.acquire().await?;
            let mut conn = AuditedConnection::new(conn, shared);
            conn.hand_out(call).await;
            Ok(UnauditedConnection { conn })
        })
    }

    fn begin(self) -> BoxFuture<'static, Result<Transaction<'a, DB>, Error>> {
        note_acquire();
        let shared = self.shared.clone();
        Box::pin(async move {
            let mut conn = shared.pool.acquire().await?;
            crate::enforce::reset_for_call::<DB>(&mut conn, &shared.read_only_leaks).await;
            Transaction::begin(MaybePoolConnection::PoolConnection(conn), None).await
        })
    }
}
