//! The [`Backend`] trait: what differs between SQLite, PostgreSQL and MySQL.
//!
//! The audited pool, connection and transaction are generic over `DB: Backend`; the backend
//! decides how a statement runs under observation: SQLite binds the connection's hooks to the
//! call, PostgreSQL may wrap the statement in a transaction and ask the oracle. What every
//! backend does alike is written once here: the unaudited `prepare_with` and `describe`
//! ([`prepare_raw`], [`describe_raw`]). Running a held connection's statement in its span,
//! under the call's enforcement, is in [`crate::enforce`].
//!
//! A backend sees its pool only through [`Ctx`] and the arguments of its methods (the pool's
//! audit state, the oracle mode), never the pool itself: the pool, connection and transaction
//! modules build on this one, not the other way round.

use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;

use futures_core::future::BoxFuture;
use sqlx::{Database, Describe, Either, Error, Executor, SqlStr};

use crate::classify::SqlDialect;
use crate::execute::{Attribution, AuditedQuery};
use crate::pool::options::{AfterConnect, PgOracle};
use crate::stream::Yielder;

pub(crate) mod sealed {
    /// Only this crate implements [`crate::Backend`].
    pub trait Sealed {}
}

/// A database the audited pool supports: [`sqlx::Sqlite`], [`sqlx::Postgres`] and
/// [`sqlx::MySql`] (with the `sqlite`, `postgres` and `mysql` features). Sealed: the methods
/// are this crate's plumbing.
pub trait Backend: Database + sealed::Sealed + RawExecutor {
    /// `db.system.name`: `sqlite`, `postgresql`; `mysql` for MySQL and MariaDB, whose
    /// statement spans get `mysql` or `mariadb` once the server said which it is.
    const SYSTEM_NAME: &'static str;
    /// The sqlparser dialect statements are classified with.
    const DIALECT: SqlDialect;

    /// Per-pool audit state (SQLite: the registry of hooked connections).
    #[doc(hidden)]
    type PoolState: Default + Send + Sync + Debug + 'static;
    /// Per-held-connection audit state (SQLite: the hook slot, unbound on drop).
    #[doc(hidden)]
    type ConnState: Default + Send + Debug + 'static;
    /// Per-transaction audit state (PostgreSQL: the oracle's snapshot).
    #[doc(hidden)]
    type TxState: Default + Send + Debug + 'static;

    /// Prepares the options of a pool hintaudit opens: what every new connection needs
    /// (SQLite: its hooks), then `after_connect`, the caller's own callback. By default, only
    /// the callback.
    #[doc(hidden)]
    fn on_connect(
        options: sqlx::pool::PoolOptions<Self>,
        _state: &Arc<Self::PoolState>,
        after_connect: Option<AfterConnect<Self>>,
    ) -> sqlx::pool::PoolOptions<Self> {
        match after_connect {
            Some(callback) => options.after_connect(move |conn, meta| callback(conn, meta)),
            None => options,
        }
    }

    /// Runs one audited statement, handing its results and rows to `y` (see
    /// [`statement_stream`]). Not boxed, and not in the statement's span: the caller boxes
    /// and instruments once, around whatever else it does for the statement (the pool
    /// acquires a connection), instead of a stream inside a stream.
    #[doc(hidden)]
    fn run_into<'e>(
        ctx: Ctx<'e, Self>,
        query: AuditedQuery<Self>,
        y: &'e Yielder<Step<Self>>,
    ) -> impl Future<Output = Result<(), Error>> + Send + 'e;

    /// Runs one audited statement for at most one row. Not boxed, and not in the
    /// statement's span, as [`Backend::run_into`].
    #[doc(hidden)]
    fn run_optional<'e>(
        ctx: Ctx<'e, Self>,
        query: AuditedQuery<Self>,
    ) -> impl Future<Output = Result<Option<Self::Row>, Error>> + Send + 'e;

    /// Whether `fetch_optional` (and so `fetch_one`) straight on the pool runs as
    /// `fetch_many` does, through the statement's stream, which it reads to the end, keeping
    /// the first row (as sqlx's PostgreSQL `fetch_optional` does): so that a caller dropped
    /// mid-statement (a cancelled tool call) leaves the statement to finish in a task of its
    /// own, as `fetch_many`'s (see [`crate::stream`]). PostgreSQL: the oracle's `COMMIT`,
    /// which bare autocommit would have done. `false` by default.
    #[doc(hidden)]
    const OPTIONAL_AS_STREAM: bool = false;

    /// Called right before `BEGIN` of an outermost [`crate::AuditedTransaction`], with the
    /// pool's oracle mode: the transaction's audit state to start from (PostgreSQL: asks the
    /// server to flush the statistics of earlier transactions, one round trip, so that the
    /// oracle need not read every relation). By default, the empty state. An error only when
    /// that round trip found the connection lost: it is `begin`'s answer, as `BEGIN`'s would
    /// have been.
    #[doc(hidden)]
    fn before_begin<'e>(
        _conn: &'e mut Self::Connection,
        _oracle: PgOracle,
    ) -> BoxFuture<'e, Result<Self::TxState, Error>> {
        Box::pin(std::future::ready(Ok(Self::TxState::default())))
    }

    /// The statement that begins an outermost [`crate::AuditedTransaction`] the database keeps
    /// read-only, for a call whose enforcement says read-only (see [`crate::enforce`]):
    /// PostgreSQL `BEGIN READ ONLY`, MySQL `START TRANSACTION READ ONLY`. `None` (by
    /// default) when the backend makes the connection read-only per statement instead
    /// (SQLite `PRAGMA query_only`).
    #[doc(hidden)]
    const READ_ONLY_BEGIN: Option<&'static str> = None;

    /// Records into `tx` that its transaction was begun with [`Backend::READ_ONLY_BEGIN`].
    /// Nothing by default.
    #[doc(hidden)]
    fn set_begun_read_only(_tx: &mut Self::TxState) {}

    /// Whether `tx`'s transaction was begun with [`Backend::READ_ONLY_BEGIN`], so that the
    /// database itself refuses its writes. `false` by default.
    #[doc(hidden)]
    fn begun_read_only(_tx: &Self::TxState) -> bool {
        false
    }

    /// Called right after `BEGIN` of an [`crate::AuditedTransaction`], with the pool's
    /// oracle mode.
    #[doc(hidden)]
    fn after_begin<'e>(
        conn: &'e mut Self::Connection,
        tx: &'e mut Self::TxState,
        oracle: PgOracle,
    ) -> BoxFuture<'e, ()>;

    /// Called right before an [`crate::AuditedTransaction`] ends with `end`, with the
    /// transaction's and the pool's audit state. `Some(error)` when the audit found the
    /// connection lost: that is the end's answer, and `COMMIT`/`ROLLBACK` is not sent.
    #[doc(hidden)]
    fn before_end<'e>(
        conn: &'e mut Self::Connection,
        tx: &'e mut Self::TxState,
        state: &'e mut Self::ConnState,
        pool: &'e Self::PoolState,
        end: TxEnd,
    ) -> BoxFuture<'e, Option<Error>>;

    /// Called once `COMMIT` or `ROLLBACK` (`end`) answered: `answer` is what the driver
    /// returned.
    #[doc(hidden)]
    fn after_end(tx: &mut Self::TxState, end: TxEnd, answer: &Result<(), Error>);

    /// Called once a savepoint inside an [`crate::AuditedTransaction`] was rolled back
    /// (`ROLLBACK TO SAVEPOINT` answered OK), with the outermost transaction's state: a
    /// statement that failed inside it no longer aborts the transaction. Nothing by default.
    #[doc(hidden)]
    fn savepoint_rolled_back(_tx: &mut Self::TxState) {}

    /// Marks a connection handed out raw through sqlx's `Acquire` until `state` drops or
    /// the connection's next audited statement: for set-up work (`call` `None`: outside any
    /// call scope, say migrations), so that what the database reports of it is not taken for
    /// an unattributed write; or for the call `call` (SQLite: its row changes go to that
    /// call, with no statement of their own). Nothing by default.
    #[doc(hidden)]
    fn mark_acquired<'e>(
        _conn: &'e mut Self::Connection,
        _state: &'e mut Self::ConnState,
        _pool: &'e Self::PoolState,
        _call: Option<Arc<hintaudit_core::CallEffects>>,
    ) -> BoxFuture<'e, ()> {
        Box::pin(std::future::ready(()))
    }
}

/// How an [`crate::AuditedTransaction`] ends.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxEnd {
    /// `COMMIT`.
    Commit,
    /// `ROLLBACK`.
    Rollback,
}

/// A database whose raw connection is a sqlx [`Executor`], as every sqlx driver's is.
/// Implemented for all of them at once, so that what hintaudit passes through unaudited is
/// written once for every backend: [`prepare_raw`], [`describe_raw`].
#[doc(hidden)]
pub trait RawExecutor: Database {
    /// The raw connection, as the executor it is.
    fn raw<'c>(conn: &'c mut Self::Connection) -> impl Executor<'c, Database = Self>;
}

impl<DB: Database> RawExecutor for DB
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    fn raw<'c>(conn: &'c mut DB::Connection) -> impl Executor<'c, Database = DB> {
        conn
    }
}

/// `Executor::prepare_with` on the raw connection: not a statement, so not audited.
pub(crate) fn prepare_raw<'e, DB: Backend>(
    conn: &'e mut DB::Connection,
    sql: SqlStr,
    parameters: &'e [DB::TypeInfo],
) -> BoxFuture<'e, Result<DB::Statement, Error>> {
    DB::raw(conn).prepare_with(sql, parameters)
}

/// `Executor::describe` on the raw connection: not a statement, so not audited.
pub(crate) fn describe_raw<DB: Backend>(
    conn: &mut DB::Connection,
    sql: SqlStr,
) -> BoxFuture<'_, Result<Describe<DB>, Error>> {
    DB::raw(conn).describe(sql)
}

/// One item of a statement's answer: its result (rows affected) or a row.
pub type Step<DB> = Either<<DB as Database>::QueryResult, <DB as Database>::Row>;

/// Everything a backend needs to run one audited statement.
#[doc(hidden)]
pub struct Ctx<'e, DB: Backend> {
    pub(crate) conn: &'e mut DB::Connection,
    pub(crate) state: &'e mut DB::ConnState,
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) tx: Option<&'e mut DB::TxState>,
    /// The pool's audit state (SQLite: the registry of hooked connections).
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    pub(crate) pool: &'e DB::PoolState,
    /// The pool's count of connections that may have gone back read-only (enforce mode).
    pub(crate) leaks: &'e std::sync::atomic::AtomicU64,
    /// When the pool runs the PostgreSQL oracle.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) oracle: PgOracle,
    pub(crate) att: Attribution,
    /// A single statement on a pooled connection: release the binding when it ends.
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    pub(crate) pooled: bool,
}
