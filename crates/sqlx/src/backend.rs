//! The [`Backend`] trait: what a database is to the audited pool, and so what differs
//! between SQLite, PostgreSQL and MySQL. A backend is one `impl Backend for X` (in its own
//! module, sealed to this crate); every item without a default is what the compiler asks of
//! a new one:
//!
//! - its kind, [`Backend::KIND`] (hintaudit-core's [`DatabaseKind`], which holds its
//!   `db.system.name`), [`Backend::DIALECT`] (statement analysis) and
//!   [`Backend::SPAN_SYSTEM_NAME`];
//! - its audit state: per pool ([`Backend::PoolState`], built from the pool's options by
//!   [`Backend::pool_state`]: PostgreSQL's oracle mode lives there), per held connection
//!   ([`Backend::ConnState`]) and per outermost transaction ([`Backend::TxState`]);
//! - a statement, run by the one drive loop of every backend ([`crate::drive::run`]) in
//!   three steps: [`Backend::before`] binds hooks and picks the route (the PostgreSQL
//!   oracle's transaction, a direct write, or past), returning the statement's state
//!   ([`Backend::Route`]) and how its answer is read ([`Read`]); the drive loop reads the
//!   answer on [`Backend::statement`]'s connection, counting rows into
//!   [`Backend::Rows`] ([`RowCount`]) and handing them on as the caller asked
//!   ([`Answer`]); [`Backend::after`] takes the route back with how the reading ended and
//!   records the statement's end. A statement dropped part-way is finished by what the
//!   route holds in a [`crate::guard::Guard`];
//! - enforce mode: its read-only SQL ([`Backend::READ_ONLY`], [`ReadOnlySql`]) and how it
//!   says it refused a write ([`Backend::is_read_only_refusal`]);
//! - transactions and `Acquire`: hooks with no-op defaults ([`Backend::before_begin`] to
//!   [`Backend::dropped_unended`], [`Backend::mark_acquired`]).
//!
//! The audited pool, connection and transaction are generic over `DB: Backend`. What every
//! backend does alike is written once here: the unaudited `prepare_with` and `describe`
//! ([`prepare_raw`], [`describe_raw`]). Running a held connection's statement in its span,
//! under the call's enforcement, is in [`crate::enforce`].
//!
//! The least a new backend writes for its statements: a `Route` holding [`Ctx`]'s
//! connection and its attribution in a [`crate::guard::Guard`] that finishes it when
//! dropped (`crate::drive::unfinished`, which also counts the rows), `Rows = u64` (with
//! `RowsAffected` for its driver's result, in `rows.rs`), `before` answering
//! [`Read::Drain`], `statement` handing out the two, and `after` defusing the guard and
//! finishing the attribution with the rows counted and the outcome (MySQL's is the model).
//!
//! A backend sees its pool only through [`Ctx`] and the arguments of its methods (the pool's
//! audit state), never the pool itself: the pool, connection and transaction modules build
//! on this one, not the other way round.

use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;

use futures_core::future::BoxFuture;
use hintaudit_core::DatabaseKind;
use sqlx::error::DatabaseError;
use sqlx::pool::PoolConnection;
use sqlx::{Database, Describe, Either, Error, Executor, SqlStr};

use crate::classify::SqlDialect;
use crate::execute::{Attribution, AuditedQuery};
use crate::pool::options::{AfterConnect, AuditedPoolOptions};
use crate::rows::RowCount;
use crate::stream::Yielder;

pub(crate) mod sealed {
    /// Only this crate implements [`crate::Backend`].
    pub trait Sealed {}
}

/// A database the audited pool supports: [`sqlx::Sqlite`], [`sqlx::Postgres`] and
/// [`sqlx::MySql`] (with the `sqlite`, `postgres` and `mysql` features). Sealed: the methods
/// are this crate's plumbing.
pub trait Backend: Database + sealed::Sealed + RawExecutor {
    /// The kind of database: its `db.system.name` is [`DatabaseKind::system_name`]
    /// (`sqlite`, `postgresql`; `mysql` for MySQL and MariaDB, whose statement spans get
    /// `mysql` or `mariadb` once the server said which it is,
    /// [`DatabaseKind::system_name_of`]).
    const KIND: DatabaseKind;
    /// The sqlparser dialect statements are classified with.
    const DIALECT: SqlDialect;
    /// The `db.system.name` a statement span opens with: [`Backend::KIND`]'s by default;
    /// `None` where the backend records it itself once its server said what it is (MySQL or
    /// MariaDB).
    const SPAN_SYSTEM_NAME: Option<&'static str> = Some(Self::KIND.system_name());

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

    /// A statement's state from [`Backend::before`] to [`Backend::after`]: its connection
    /// (PostgreSQL: or the oracle's transaction on it), the route picked for it, the
    /// [`Backend::Rows`] counted, and what must still happen if the caller drops it
    /// part-way (in a [`crate::guard::Guard`]).
    #[doc(hidden)]
    type Route<'e>: Send
    where
        Self: 'e;

    /// Rows the statement affected, counted from its answer as the drive loop reads it
    /// (the driver's count, `u64`; MySQL: per result).
    #[doc(hidden)]
    type Rows: RowCount<Self> + Send;

    /// Before the statement: binds hooks, picks its route (PostgreSQL: the oracle's
    /// transaction, a direct write, or past) and says how its answer is read ([`Read`]).
    /// `Err` is the statement's answer, which is then not sent (PostgreSQL: the audit's
    /// own round trips found the connection lost): `before` recorded it.
    #[doc(hidden)]
    fn before<'e, 'q>(
        ctx: Ctx<'e, Self>,
        query: &'q AuditedQuery<Self>,
        answer: &'q Answer<'e, Self>,
    ) -> impl Future<Output = Result<(Self::Route<'e>, Read), Error>> + Send + 'q
    where
        'e: 'q;

    /// The connection the statement runs on, and where its rows are counted.
    #[doc(hidden)]
    fn statement<'r>(
        route: &'r mut Self::Route<'_>,
    ) -> (&'r mut Self::Connection, &'r mut Self::Rows);

    /// After the statement: `result` is how reading it ended (its rows are counted in the
    /// route). Records the statement's end and returns its answer (PostgreSQL: `COMMIT`'s
    /// error, in the oracle's transaction).
    #[doc(hidden)]
    fn after<'e>(
        route: Self::Route<'e>,
        result: Result<(), Error>,
    ) -> impl Future<Output = Result<(), Error>> + Send + 'e
    where
        Self: 'e;

    /// Whether `fetch_optional` (and so `fetch_one`) straight on the pool runs as
    /// `fetch_many` does, through the statement's stream, which it reads to the end, keeping
    /// the first row (as sqlx's PostgreSQL `fetch_optional` does): so that a caller dropped
    /// mid-statement (a cancelled tool call) leaves the statement to finish in a task of its
    /// own, as `fetch_many`'s (see [`crate::stream`]). PostgreSQL: the oracle's `COMMIT`,
    /// which bare autocommit would have done. `false` by default.
    #[doc(hidden)]
    const OPTIONAL_AS_STREAM: bool = false;

    /// How enforce mode keeps a session or transaction read-only on this database
    /// (`readOnlyHint: true`, see [`crate::enforce`]).
    #[doc(hidden)]
    const READ_ONLY: ReadOnlySql;

    /// Whether `e` is the database refusing a write because the session or transaction is
    /// read-only (SQLite `SQLITE_READONLY`, SQLSTATE `25006`): enforce mode turns it into
    /// [`crate::Refused`].
    #[doc(hidden)]
    fn is_read_only_refusal(e: &dyn DatabaseError) -> bool;

    /// The pool's audit state, from the pool's options (PostgreSQL: the oracle's mode and
    /// the catalog cache). By default, the empty state.
    #[doc(hidden)]
    fn pool_state(_options: &AuditedPoolOptions<Self>) -> Self::PoolState {
        Self::PoolState::default()
    }

    /// Called right before `BEGIN` of an outermost [`crate::AuditedTransaction`], `pooled`
    /// when its connection came straight from the pool for it ([`crate::AuditedPool::begin`]):
    /// the transaction's audit state to start from (PostgreSQL: unless the pool's own test of
    /// a pooled connection flushed them, asks the server to flush the statistics of earlier
    /// transactions, one round trip, so that the oracle need not read every relation). By
    /// default, the empty state. An error only when that round trip found the connection
    /// lost: it is `begin`'s answer, as `BEGIN`'s would have been.
    #[doc(hidden)]
    fn before_begin<'e>(
        _conn: &'e mut Self::Connection,
        _pool: &'e Self::PoolState,
        _pooled: bool,
    ) -> BoxFuture<'e, Result<Self::TxState, Error>> {
        Box::pin(std::future::ready(Ok(Self::TxState::default())))
    }

    /// Called right after `BEGIN` of an outermost [`crate::AuditedTransaction`]. Nothing by
    /// default.
    #[doc(hidden)]
    fn after_begin<'e>(
        _conn: &'e mut Self::Connection,
        _tx: &'e mut Self::TxState,
    ) -> BoxFuture<'e, ()> {
        Box::pin(std::future::ready(()))
    }

    /// Called right before an outermost [`crate::AuditedTransaction`] ends with `end`, with
    /// the transaction's and the pool's audit state. `Some(error)` when the audit found the
    /// connection lost: that is the end's answer, and `COMMIT`/`ROLLBACK` is not sent.
    /// Nothing by default.
    #[doc(hidden)]
    fn before_end<'e>(
        _conn: &'e mut Self::Connection,
        _tx: &'e mut Self::TxState,
        _state: &'e mut Self::ConnState,
        _pool: &'e Self::PoolState,
        _end: TxEnd,
    ) -> BoxFuture<'e, Option<Error>> {
        Box::pin(std::future::ready(None))
    }

    /// Called once `COMMIT` or `ROLLBACK` (`end`) of an outermost
    /// [`crate::AuditedTransaction`] answered: `answer` is what the driver returned.
    /// Nothing by default.
    #[doc(hidden)]
    fn after_end(_tx: &mut Self::TxState, _end: TxEnd, _answer: &Result<(), Error>) {}

    /// Called when an outermost [`crate::AuditedTransaction`] is dropped without `commit()`
    /// or `rollback()`: sqlx rolls it back, unseen. Nothing by default.
    #[doc(hidden)]
    fn dropped_unended(_tx: &mut Self::TxState) {}

    /// Called once a savepoint inside an [`crate::AuditedTransaction`] was rolled back
    /// (`ROLLBACK TO SAVEPOINT` answered OK), with the outermost transaction's state: a
    /// statement that failed inside it no longer aborts the transaction. Nothing by default.
    #[doc(hidden)]
    fn savepoint_rolled_back(_tx: &mut Self::TxState) {}

    /// Called when a connection taken from the pool for one statement alone (a statement
    /// straight on the pool) goes back to it, the statement ended or dropped part-way (a
    /// cancelled call), with the connection's audit state. PostgreSQL: closes it instead
    /// ([`PoolConnection::close_on_drop`]) when the oracle's transaction may still be open
    /// on it. Nothing by default.
    #[doc(hidden)]
    fn release(_state: &mut Self::ConnState, _conn: &mut PoolConnection<Self>) {}

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

/// How a backend keeps a session read-only for enforce mode's `readOnlyHint: true`: the
/// statements, run unaudited on the statement's connection (see [`crate::enforce`]).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct ReadOnlySql {
    /// The statement that begins an outermost [`crate::AuditedTransaction`] the database
    /// keeps read-only, for a call whose enforcement says read-only: PostgreSQL `BEGIN READ
    /// ONLY`, MySQL `START TRANSACTION READ ONLY`. `None` when the backend makes the
    /// connection read-only per statement instead (SQLite `PRAGMA query_only`).
    pub begin: Option<&'static str>,
    /// Yields a row only when the session is read-write. Where the backend has it, run
    /// first, and `on` only after it yielded a row: a session the deployment made read-only
    /// (a read-only role, a connect option, an init command) is left as it is, and never
    /// made read-write afterwards, even by a reset after a statement dropped on the way.
    pub probe: Option<&'static str>,
    /// Makes the session read-only. Without `probe`, yields a row only when the session was
    /// read-write before, and marks the session so that `reset` finds what it changed.
    pub on: &'static str,
    /// Makes the session read-write again after `on` yielded a row.
    pub off: &'static str,
    /// After a leak, before a statement or `begin()` that does not enforce read-only: on
    /// PostgreSQL undoes `on` only where `on` changed the session (it leaves a mark in it);
    /// elsewhere as `off` (a leak is counted only where `probe` found the session
    /// read-write).
    pub reset: &'static str,
    /// Inside a transaction not begun read-only.
    pub in_tx: InTransaction,
}

/// How a statement inside a transaction not begun read-only is kept from writing.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub enum InTransaction {
    /// The session setting (`on`, `off`) holds in a transaction too (SQLite `query_only`).
    Session,
    /// This statement makes the running transaction read-only until it ends (PostgreSQL
    /// `SET TRANSACTION READ ONLY`).
    Statement(&'static str),
    /// The running transaction cannot be made read-only (MySQL): statement analysis
    /// refuses what may write, what [`crate::Classification::proved_read_only`] does not
    /// prove.
    RefuseUnproved,
}

/// SQLSTATE `25006` (PostgreSQL `read_only_sql_transaction`, MySQL
/// `ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION`): [`Backend::is_read_only_refusal`] of the
/// databases that use it.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn sqlstate_read_only(e: &dyn DatabaseError) -> bool {
    e.code().as_deref() == Some("25006") || e.message().contains("READ ONLY transaction")
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

pub use crate::rows::Step;

/// How the drive loop ([`crate::drive::run`]) reads a statement's answer, as
/// [`Backend::before`] picked.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub enum Read {
    /// To its end, each item counted and handed to the caller's [`Answer`] as it arrives.
    Drain,
    /// To its end, each item counted; every result and the first `rows` rows held until
    /// [`Backend::after`] answered OK, then handed on (the PostgreSQL oracle's `COMMIT`).
    Hold { rows: usize },
    /// sqlx's `fetch_optional` (the caller asked for one row): the statement stops at its
    /// first row, as it does unaudited; the driver's count is not read. `counts_row`: that
    /// row counts as one row affected (a write's `RETURNING`).
    FirstRow { counts_row: bool },
}

/// Where the items of a statement's answer go as the drive loop reads them.
#[doc(hidden)]
pub enum Answer<'y, DB: Database> {
    /// To the caller's stream, each as it arrives (`fetch_many`).
    Stream(&'y Yielder<Step<DB>>),
    /// The first row kept, the others read and dropped (`fetch_optional`).
    First(Option<DB::Row>),
    /// Held until the statement's end (the PostgreSQL oracle's `COMMIT`): every result, and
    /// the first `rows` rows (`usize::MAX`: all of them).
    Buffer { items: Vec<Step<DB>>, rows: usize },
}

impl<DB: Database> Answer<'_, DB> {
    /// The first row kept ([`Answer::First`]).
    pub(crate) fn into_first(self) -> Option<DB::Row> {
        match self {
            Answer::First(first) => first,
            _ => None,
        }
    }

    /// Hands on `items` held until the statement's end (the PostgreSQL oracle's `COMMIT`).
    pub(crate) async fn deliver(&mut self, items: Vec<Step<DB>>) {
        for item in items {
            self.offer(item).await;
        }
    }

    /// Hands on one item of the statement's answer: sent on to the caller's stream, kept if
    /// it is the first row ([`keep_first`]), or held (every result, the first `rows` rows).
    pub(crate) async fn offer(&mut self, item: Step<DB>) {
        match self {
            Answer::Stream(y) => y.send(item).await,
            Answer::First(first) => keep_first(first, item),
            Answer::Buffer { items, rows } => match item {
                Either::Right(_) if *rows == 0 => {}
                Either::Right(_) => {
                    *rows -= 1;
                    items.push(item);
                }
                Either::Left(_) => items.push(item),
            },
        }
    }

    /// What was held ([`Answer::Buffer`]).
    pub(crate) fn into_items(self) -> Vec<Step<DB>> {
        match self {
            Answer::Buffer { items, .. } => items,
            _ => Vec::new(),
        }
    }
}

/// `fetch_optional`'s answer: keeps `item` in `first` when it is a row and none is kept yet;
/// results, and rows after the first, are dropped. The one place the first row is chosen,
/// for the drive loop, a held answer's delivery and the pool's `fetch_optional` over a
/// stream.
pub(crate) fn keep_first<Q, R>(first: &mut Option<R>, item: Either<Q, R>) {
    if let (None, Either::Right(row)) = (&*first, item) {
        *first = Some(row);
    }
}

/// Everything a backend needs to run one audited statement.
#[doc(hidden)]
pub struct Ctx<'e, DB: Backend> {
    pub(crate) conn: &'e mut DB::Connection,
    pub(crate) state: &'e mut DB::ConnState,
    pub(crate) tx: Option<&'e mut DB::TxState>,
    /// The transaction was begun with the backend's read-only `BEGIN` ([`ReadOnlySql::begin`]):
    /// the database itself refuses its writes.
    pub(crate) begun_read_only: bool,
    /// The pool's audit state (SQLite: the registry of hooked connections; PostgreSQL: the
    /// oracle's mode and the catalog cache).
    pub(crate) pool: &'e DB::PoolState,
    /// The pool's count of connections that may have gone back read-only (enforce mode).
    pub(crate) leaks: &'e std::sync::atomic::AtomicU64,
    pub(crate) att: Attribution,
    /// A single statement on a pooled connection: release the binding when it ends.
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    pub(crate) pooled: bool,
}
