//! Enforce mode in the audited pool: every audited statement of a call whose scope enforces
//! a hint ([`hintaudit_core::Enforcement`]) runs through [`run`].
//!
//! - `destructiveHint: false`: a statement classified as `DELETE`, `UPDATE`, an overwriting
//!   upsert, `TRUNCATE` or `DROP` is refused before it reaches the database.
//! - `readOnlyHint: true`: the database refuses writes. An outermost
//!   [`crate::AuditedTransaction`] begun in the call (`begin()` on the pool or on a held
//!   connection) is begun read-only ([`begin_statement`]): PostgreSQL `BEGIN READ ONLY`,
//!   MySQL/MariaDB `START TRANSACTION READ ONLY`; the mode ends with the transaction, however
//!   it ends. Otherwise, before each statement the connection is made read-only, and after
//!   it made read-write again; a session that was read-only already (a read-only role, a
//!   connect option, an init command: the deployment's choice) is left as it is and never
//!   made read-write (see [`crate::backend::ReadOnlySql`]; on MySQL/MariaDB this costs a round
//!   trip to ask):
//!   - SQLite: `PRAGMA query_only = ON` / `OFF` (a session setting, in or out of a
//!     transaction);
//!   - PostgreSQL: outside a transaction `default_transaction_read_only` on / off, with
//!     `set_config` (the statement's own transaction, and the oracle's, are read-only);
//!     inside one not begun read-only, `SET TRANSACTION READ ONLY`, which ends with the
//!     transaction;
//!   - MySQL/MariaDB: outside a transaction `SET SESSION TRANSACTION READ ONLY` / `READ
//!     WRITE`. MySQL cannot change a running transaction's access mode, so inside one not
//!     begun read-only (begun with your own `begin_with` statement, which is kept as it is,
//!     or outside the call) statement analysis refuses what may write
//!     (what [`crate::Classification::proved_read_only`] does not prove).
//!
//!   The database's refusal (SQLite `SQLITE_READONLY`, SQLSTATE `25006`: PostgreSQL
//!   `read_only_sql_transaction`, MySQL/MariaDB error 1792) reaches the tool as a database
//!   error whose message names the hint ([`Refused`]), and is recorded as a [`Refusal`].
//!
//! **Restoring.** The setting is restored right after the statement, whether it succeeded or
//! failed. When the statement's future is dropped first (the tool was cancelled or panicked
//! while a statement or a stream was under way), the connection may go back to the pool
//! read-only: the pool counts it ([`Shared::read_only_leaks`]) and, from then on, resets
//! connections before every audited statement, every audited `begin()` and every
//! connection sqlx's `Acquire` hands out, in a call that does not itself enforce read-only
//! (one more round trip each, for the life of the pool). On PostgreSQL the reset undoes
//! only what enforcement did: making a session read-only also sets the custom setting
//! `hintaudit.read_only_set`, which the restore and the reset clear (to `''`: once set in
//! a session, PostgreSQL keeps the name). On SQLite and MySQL/MariaDB the reset makes the
//! session read-write; a leak is counted only where enforcement found the session
//! read-write, so a pool whose sessions are all read-only by configuration never leaks.
//! A connection sqlx's `Acquire` hands out is reset first (its statements are not audited);
//! statements through [`crate::AuditedPool::inner`] are not reset.
//!
//! [`Shared::read_only_leaks`]: crate::pool::inner::Shared

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_core::future::BoxFuture;
use futures_core::stream::BoxStream;
use hintaudit_core::{
    AuditStage, Enforcement, Hint, Operation, Refusal, RefusedBy, StatementEffect, stats,
};
use sqlx::Error;

use crate::backend::Answer;
use crate::backend::{Backend, Ctx, InTransaction, Step};
use crate::execute::{AuditedQuery, StatementEnd, boxed_in_span, in_span};
use crate::guard::Guard;
use crate::stream::TryStream;
pub use refused::Refused;
pub(crate) use session::{begin_statement, reset_for_call, reset_if_leaked};
use session::{raw, raw_yields};

/// [`Refused`], the error a refusal reaches the tool as.
mod refused;
/// The session side of `readOnlyHint: true`: read-only statements and resets.
mod session;

/// A held connection's statement as the stream `Executor::fetch_many` returns, in the
/// statement's span.
pub(crate) fn statement_stream<'e, DB: Backend>(
    ctx: Ctx<'e, DB>,
    query: AuditedQuery<DB>,
) -> BoxStream<'e, Result<Step<DB>, Error>> {
    let span = ctx.att.span.clone();
    Box::pin(TryStream::new(move |y| {
        in_span(
            async move { run(ctx, query, &mut Answer::Stream(&y)).await },
            span,
        )
    }))
}

/// A held connection's statement as the future `Executor::fetch_optional` returns, in the
/// statement's span.
pub(crate) fn statement_optional<'e, DB: Backend>(
    ctx: Ctx<'e, DB>,
    query: AuditedQuery<DB>,
) -> BoxFuture<'e, Result<Option<DB::Row>, Error>> {
    let span = ctx.att.span.clone();
    let run = async move {
        let mut answer = Answer::First(None);
        run(ctx, query, &mut answer).await?;
        Ok(answer.into_first())
    };
    boxed_in_span(run, span)
}

/// Whether statement analysis classifies `s` as destructive: what `destructiveHint: false`
/// rules out.
fn is_destructive(s: &StatementEffect) -> bool {
    match s.operation {
        Operation::Delete | Operation::Update | Operation::Truncate => true,
        Operation::Upsert => s.overwrites,
        Operation::Ddl => s.drops,
        _ => false,
    }
}

/// Counts a connection that may go back to the pool read-only when dropped, unless
/// defused: made from right before a statement that may leave the session read-only.
type LeakCount<'a> = Guard<&'a AtomicU64, fn(&mut &'a AtomicU64)>;

fn leak_count(leaks: &AtomicU64) -> LeakCount<'_> {
    Guard::new(leaks, |leaks| {
        leaks.fetch_add(1, Ordering::Relaxed);
    })
}

/// What [`before`] decided: refuse the statement now, or run it (restoring afterwards when
/// `restore`).
enum Plan {
    Refuse(Error),
    Run { restore: bool },
}

/// hintaudit's refusal of the statement before it reaches the database: recorded, the
/// statement finished as failed, and the tool's error naming `hint` (`why` follows the
/// statement's summary).
fn refuse<DB: Backend>(ctx: &Ctx<'_, DB>, hint: Hint, why: &str) -> Plan {
    let what = ctx.att.class.effect.summary.to_string();
    record(ctx, hint, RefusedBy::Hintaudit, what.clone());
    ctx.att.finish(StatementEnd::FAILED);
    Plan::Refuse(Error::Database(Box::new(Refused {
        message: Enforcement::message(hint, &format!("hintaudit refused {what}{why}")),
        hint,
        inner: None,
    })))
}

/// Refuses the statement (destructive), or makes the connection read-only; `leak` counts
/// from right before a statement that may leave the session read-only.
async fn before<'e, DB: Backend>(ctx: &mut Ctx<'e, DB>, leak: &mut Option<LeakCount<'e>>) -> Plan {
    let e = ctx.att.enforcement;
    if e.non_destructive && is_destructive(&ctx.att.class.effect) {
        return refuse(ctx, Hint::Destructive, " before it reached the database");
    }
    if !e.read_only {
        return Plan::Run { restore: false };
    }
    let sql = DB::READ_ONLY;
    let in_tx = match (ctx.tx.as_deref(), sql.in_tx) {
        (None, _) => None,
        // Begun `BEGIN READ ONLY` / `START TRANSACTION READ ONLY`: the database refuses
        // the writes.
        (Some(_), _) if ctx.begun_read_only => return Plan::Run { restore: false },
        (Some(_), InTransaction::Statement(in_tx)) => Some(in_tx),
        // MySQL cannot make a running transaction read-only: statement analysis refuses
        // what may write (a write, `CALL`, an opaque function), the rest runs.
        (Some(_), InTransaction::RefuseUnproved) => {
            if ctx.att.class.proved_read_only() {
                return Plan::Run { restore: false };
            }
            return refuse(
                ctx,
                Hint::ReadOnly,
                ", which may write, before it reached the database (a MySQL transaction not \
                 begun READ ONLY cannot be made read-only once it runs)",
            );
        }
        // SQLite: `query_only` is a session setting, in a transaction too.
        (Some(_), InTransaction::Session) => None,
    };
    // Restored afterwards only where it was read-write.
    let applied = match (in_tx, sql.probe) {
        (Some(in_tx), _) => raw::<DB>(ctx.conn, in_tx).await.map(|()| false),
        (None, Some(probe)) => match raw_yields::<DB>(ctx.conn, probe).await {
            Ok(true) => {
                *leak = Some(leak_count(ctx.leaks));
                raw::<DB>(ctx.conn, sql.on).await.map(|()| true)
            }
            other => other,
        },
        (None, None) => {
            *leak = Some(leak_count(ctx.leaks));
            raw_yields::<DB>(ctx.conn, sql.on).await
        }
    };
    match applied {
        Ok(restore) => Plan::Run { restore },
        Err(e) => {
            ctx.att.finish(StatementEnd::FAILED);
            Plan::Refuse(e)
        }
    }
}

/// Records a refusal of the statement into its call.
fn record<DB: Backend>(ctx: &Ctx<'_, DB>, hint: Hint, by: RefusedBy, what: String) {
    if let Some(sink) = &ctx.att.sink {
        sink.effects.record_refusal(Refusal {
            hint,
            by,
            statement: sink.index,
            what,
        });
    }
}

/// After the statement: restores read-write when `restore`, and turns the database's
/// read-only refusal into a [`Refused`] error naming readOnlyHint.
async fn after<DB: Backend, T>(
    conn: &mut DB::Connection,
    ctx_record: impl FnOnce(String),
    summary: &str,
    restore: bool,
    result: Result<T, Error>,
) -> (Result<T, Error>, bool) {
    let restored = !restore
        || match raw::<DB>(conn, DB::READ_ONLY.off).await {
            Ok(()) => true,
            Err(e) => {
                stats().audit_error(AuditStage::Hook, &format!("read-only restore failed: {e}"));
                false
            }
        };
    let result = match result {
        Err(Error::Database(inner)) if DB::is_read_only_refusal(&*inner) => {
            ctx_record(summary.to_owned());
            let message = Enforcement::message(
                Hint::ReadOnly,
                &format!("the database refused a write: {}", inner.message()),
            );
            Err(Error::Database(Box::new(Refused {
                message,
                hint: Hint::ReadOnly,
                inner: Some(inner),
            })))
        }
        other => other,
    };
    (result, restored)
}

/// Whether a statement can go straight to the backend: its call enforces nothing, and no
/// connection of the pool was left read-only (see the module docs).
fn plain<DB: Backend>(ctx: &Ctx<'_, DB>) -> bool {
    !ctx.att.enforcement.is_active() && ctx.leaks.load(Ordering::Relaxed) == 0
}

/// [`crate::drive::run`] under the call's enforcement. A plain statement ([`plain`]) goes
/// straight to the backend; the others through a boxed future of their own, so that the
/// enforcement's steps do not enlarge every statement's future (which its executor moves
/// and boxes: 3.6 KB on SQLite with them inline).
pub(crate) async fn run<'e, 'a: 'e, DB: Backend>(
    ctx: Ctx<'e, DB>,
    query: AuditedQuery<DB>,
    answer: &'e mut Answer<'a, DB>,
) -> Result<(), Error> {
    if plain(&ctx) {
        crate::drive::run(ctx, query, answer).await
    } else {
        Box::pin(enforced(ctx, query, answer)).await
    }
}

/// [`run`] of a statement that is not plain: see [`enter`].
async fn enforced<'e, 'a: 'e, DB: Backend>(
    ctx: Ctx<'e, DB>,
    query: AuditedQuery<DB>,
    answer: &'e mut Answer<'a, DB>,
) -> Result<(), Error> {
    match enter(ctx).await? {
        Entered::Plain(ctx) => crate::drive::run(ctx, query, answer).await,
        Entered::Enforced(around, ctx) => {
            // The statement runs on a reborrow of the connection, kept for the restore.
            let conn = ctx.conn;
            let result = crate::drive::run(
                Ctx {
                    conn: &mut *conn,
                    ..ctx
                },
                query,
                answer,
            )
            .await;
            around.leave::<DB, _>(conn, result).await
        }
    }
}

/// How a statement that is not plain goes on once [`enter`] has prepared its connection.
enum Entered<'e, DB: Backend> {
    /// Nothing to enforce (the connection was only reset): run it as it is.
    Plain(Ctx<'e, DB>),
    /// Run it on a reborrow of the connection, then [`Around::leave`] with the connection.
    Enforced(Around<'e>, Ctx<'e, DB>),
}

/// The enforcement around one statement, between [`enter`] and [`Around::leave`].
struct Around<'e> {
    /// Counts a leak if the statement is dropped while the connection may be read-only.
    leak: Option<LeakCount<'e>>,
    /// Whether the connection must be made read-write again after the statement.
    restore: bool,
    sink: Option<crate::execute::Sink>,
    summary: Arc<str>,
}

/// Resets a leaked connection, then applies the call's enforcement before the statement:
/// refuses it ([`Refused`], as the statement's error), or makes the connection read-only.
async fn enter<'e, DB: Backend>(mut ctx: Ctx<'e, DB>) -> Result<Entered<'e, DB>, Error> {
    let leaks = ctx.leaks;
    let e = ctx.att.enforcement;
    reset_if_leaked::<DB>(ctx.conn, leaks, e).await;
    if !e.is_active() {
        return Ok(Entered::Plain(ctx));
    }
    // Made by `before` right before the connection is made read-only: a drop from there on
    // may leave it so, and so may a failed attempt.
    let mut leak = None;
    let restore = match before(&mut ctx, &mut leak).await {
        Plan::Refuse(e) => return Err(e),
        Plan::Run { restore } => restore,
    };
    // Made read-only here, to be restored (`before` made `leak` for it), or left as it was.
    if let (false, Some(leak)) = (restore, leak.as_mut()) {
        leak.defuse();
    }
    let around = Around {
        leak,
        restore,
        sink: ctx.att.sink.clone(),
        summary: ctx.att.class.effect.summary.clone(),
    };
    Ok(Entered::Enforced(around, ctx))
}

impl Around<'_> {
    /// After the statement ([`after`]): restores read-write, turns the database's refusal
    /// into [`Refused`], and disarms the leak count once the connection is read-write.
    async fn leave<DB: Backend, T>(
        mut self,
        conn: &mut DB::Connection,
        result: Result<T, Error>,
    ) -> Result<T, Error> {
        let sink = &self.sink;
        let record = |what| record_sink(sink, what);
        let (result, restored) =
            after::<DB, _>(conn, record, &self.summary, self.restore, result).await;
        if let (true, Some(leak)) = (restored, self.leak.as_mut()) {
            leak.defuse();
        }
        result
    }
}

/// A refusal by the database, recorded into the statement's call.
fn record_sink(sink: &Option<crate::execute::Sink>, what: String) {
    if let Some(sink) = sink {
        sink.effects.record_refusal(Refusal {
            hint: Hint::ReadOnly,
            by: RefusedBy::Database,
            statement: sink.index,
            what,
        });
    }
}
