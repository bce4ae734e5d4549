//! An audited sqlx pool: every statement, and every row change the database reports, lands in
//! the [`hintaudit_core::CallScope`] of the MCP tool call that ran it
//! ([design: evidence](../../../docs/design.md#3-evidence)).
//!
//! ```
//! use hintaudit_core::{CallScope, Operation, RowOperation};
//! use hintaudit_sqlx::AuditedPool;
//! use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
//! use std::str::FromStr;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), sqlx::Error> {
//! // One in-memory database: one connection.
//! let pool = AuditedPool::<sqlx::Sqlite>::options().connect_with(
//!     SqlitePoolOptions::new().max_connections(1),
//!     SqliteConnectOptions::from_str("sqlite::memory:")?,
//! )
//! .await?;
//! sqlx::query("CREATE TABLE posts (id INTEGER PRIMARY KEY, views INTEGER)")
//!     .execute(pool.inner()) // unaudited
//!     .await?;
//!
//! // The rmcp layer opens this scope around each tools/call; here we open it by hand.
//! let scope = CallScope::new("view_post");
//! let effects = scope.effects_handle();
//! scope
//!     .run(async {
//!         sqlx::query("INSERT INTO posts (views) VALUES (0)").execute(&pool).await?;
//!         sqlx::query("UPDATE posts SET views = views + 1 WHERE id = ?")
//!             .bind(1)
//!             .execute(&pool)
//!             .await?;
//!         Ok::<_, sqlx::Error>(())
//!     })
//!     .await?;
//!
//! let effect = effects.snapshot();
//! assert_eq!(effect.statements[1].operation, Operation::Update);
//! assert_eq!(effect.statements[1].non_convergent[0].0, "views"); // `views = views + 1`
//! assert_eq!(effect.row_changes.len(), 2); // from SQLite's hooks, both committed
//! assert_eq!(effect.row_changes[1].operation, RowOperation::Update);
//! assert!(effect.row_changes.iter().all(|r| r.committed));
//! # Ok(())
//! # }
//! ```
//!
//! # What is recorded
//!
//! `&AuditedPool<DB>`, `&mut AuditedConnection<DB>`, `&mut AuditedTransaction<DB>` and
//! `&mut *conn` and `&mut *tx` (the audited connection they deref to) are sqlx [`sqlx::Executor`]s, so
//! `query`, `query_as`, `query_scalar`, `query!`, `query_as!` and their `execute`,
//! `fetch_one`, `fetch_optional`, `fetch_all` and `fetch` work unchanged, and the driver gets
//! the same text, arguments and caching flag it would get without auditing.
//!
//! # A drop-in for `sqlx::Pool`
//!
//! Code written as the sqlx docs write it compiles with only the pool type changed, and what
//! runs through the executors above is audited:
//! - `execute(&mut *tx)` and `fetch_all(&mut *conn)`: `*tx` and `*conn` are the
//!   audited connection (a type the crate does not export), not the driver's connection, so that they cannot bypass the audit (a
//!   helper taking `&mut SqliteConnection` does not compile: take `impl Executor<'_, Database =
//!   DB>` instead, as the sqlx docs also do);
//! - `pool.begin()`, `pool.begin_with("BEGIN IMMEDIATE")`, `conn.begin()`, and `tx.begin()`
//!   for a savepoint, all [`AuditedTransaction`]s;
//! - `AuditedPool::connect`, `connect_with(connect_options)` (as [`sqlx::Pool::connect_with`];
//!   pool options with [`AuditedPoolOptions::connect_with`] or a pool you build,
//!   `AuditedPool::from(pool)`), `close`, `is_closed`, `size`, `num_idle`.
//!
//! # Acquire and set-up
//!
//! `&AuditedPool`, `&mut AuditedConnection`, `&mut AuditedTransaction` and `&mut *conn`
//! implement sqlx's [`sqlx::Acquire`], so `sqlx::migrate!().run(&pool)` and helpers over
//! `impl Acquire<'_, Database = DB>` compile. sqlx's trait hands out the driver's connection
//! (its `Connection` must deref to `DB::Connection`) and a sqlx `Transaction`: statements run
//! through them are **not** attributed one by one. Outside any call scope that is set-up
//! (migrations, fixtures), counted with `stats().setup_acquire()`, and its statements are not
//! counted as unattributed ([design: evidence](../../../docs/design.md#3-evidence)). Inside a
//! call it is never silent: each connection handed out is counted with
//! `stats().unaudited_acquire()` and noted on the call ([`hintaudit_core::Effect`]'s
//! `unaudited_acquires`, in its summary). On SQLite its hooks are bound to the call until it
//! drops (`&mut conn`, `&mut tx`: until their next audited statement), so the rows changed
//! through it are the call's, confirmed, with no statement; except through `Acquire::begin`
//! on `&AuditedPool`, whose sqlx `Transaction` returns its pooled connection to the pool
//! without hintaudit, so its hooks are not bound (its rows are unattributed, or the call's
//! of a concurrent pooled write holding the pool's writer): pass `&mut conn` instead. On
//! PostgreSQL the call's evidence is incomplete. Inside a tool, use the executors above for
//! statement attribution.
//!
//! When a statement starts, the executor classifies its text ([`classify`], cached per pool in
//! an LRU of [`DEFAULT_CLASSIFY_CACHE`] entries) and reads [`hintaudit_core::CallScope::current`]:
//! - inside a scope, the statement's [`hintaudit_core::StatementEffect`] is recorded into the
//!   call's effects, and updated when the driver answers (outcome; rows affected on
//!   PostgreSQL writes only, never on SQLite where it is stale; `observed` when hooks or the
//!   oracle covered it);
//! - outside any scope it is counted with `stats().unattributed_statement(operation)`.
//!
//! Each statement runs in a `tracing` span named `db.statement`, a child of the current span
//! (the `tools/call` span inside a tool), with the fields of [`hintaudit_core::semconv`]
//! (`db.query.text` with every literal replaced by `?`). Auditing never changes a query's
//! result: classification, hook and oracle failures are counted with
//! `stats().audit_error(stage, ..)` and the statement's own result is returned. Statements
//! through [`AuditedPool::inner`] or a detached connection are not audited.
//!
//! # Enforce mode
//!
//! In a call whose scope enforces its hints ([`hintaudit_core::Enforcement`], set by the
//! layer in enforce mode), the pool makes them guarantees. Under `destructiveHint: false` a
//! `DELETE`, `UPDATE`, overwriting upsert, `TRUNCATE` or `DROP` is refused before it reaches
//! the database. Under `readOnlyHint: true` the database refuses writes, hidden ones
//! included: a transaction the call begins is begun read-only (`BEGIN READ ONLY`, `START
//! TRANSACTION READ ONLY`), and around each other statement the connection is made
//! read-only and then read-write again (SQLite `PRAGMA query_only`, PostgreSQL
//! `default_transaction_read_only`, MySQL/MariaDB `SET SESSION TRANSACTION`). Your own
//! `begin_with` statement is kept as it is: in such a transaction PostgreSQL statements run
//! after `SET TRANSACTION READ ONLY`; MySQL cannot change a running transaction's mode, so
//! there statement analysis refuses what may write. A refusal reaches the tool as a
//! `sqlx::Error::Database` holding a [`Refused`], whose message names the hint. A session
//! read-only already (a read-only role, a connect option) is left so, never made
//! read-write. A call cancelled mid-statement may leave its connection read-only: from then
//! on the pool resets connections before each audited statement and `begin()`, and before
//! sqlx's `Acquire` hands one out.
//!
//! # SQLite
//!
//! Row changes come from SQLite's update, commit and rollback hooks, buffered per connection
//! until the transaction ends: committed rows are changes, rolled-back rows are attempts.
//! Open the pool with [`AuditedPool::connect`] or [`AuditedPool::connect_with`], which hook
//! every connection as it connects: sqlx's own `after_connect` is then replaced, so give your
//! callback to [`AuditedPoolOptions::after_connect`]. A pool you wrap with
//! [`AuditedPool::from_pool`] works too, at about 15 µs more per call-scoped pooled write.
//! A call-scoped statement costs about 1 µs over a raw one. `DELETE` without `WHERE`,
//! `WITHOUT ROWID` tables and rows `REPLACE` deletes are not seen by the hooks; those
//! statements fall back to statement analysis. The `preupdate-hook` feature (needs libclang) adds which columns an
//! update really changed, whether a trigger made a change, and sees `DELETE` without `WHERE`.
//!
//! # PostgreSQL
//!
//! With [`PgOracle::Writes`] (the default), the oracle runs only where a write can hide. A
//! plain `INSERT`, `UPDATE` or `DELETE` on a table with no triggers, rules or cascading
//! foreign keys (from the catalog, cached per pool and cleared on DDL) runs as it is: its
//! command tag is the evidence, no extra round trip. Any other autocommit statement that
//! may write runs wrapped in a transaction whose table counts the oracle reads before
//! `COMMIT`: 3 extra round trips on a connection straight from a pool hintaudit opened
//! (whose test of the connection, in place of sqlx's ping, flushed the session's
//! statistics), 4 elsewhere, whose cost does not grow with the schema (see
//! `docs/performance.md`); plain `SELECT`s run unwrapped at no cost. A wrapped statement
//! run on the pool streams its rows as they arrive, and one whose stream (or `fetch_one`,
//! `fetch_optional`) is dropped early is finished (`COMMIT` included) in a spawned task, as
//! the server would have finished it in autocommit; on a held connection its rows are
//! buffered until `COMMIT` answers: to stream a large `SELECT` that calls a function not
//! known to be pure there, run it on the pool, in an [`AuditedTransaction`], or use
//! [`PgOracle::Off`]. An [`AuditedTransaction`] begun on a held connection costs one round trip
//! before `BEGIN` (the server flushes earlier transactions' statistics, PostgreSQL 15 and
//! later); one begun on the pool ([`AuditedPool::begin`]) none, where the pool's test of the
//! connection did it (a pool opened with [`AuditedPool::connect`] or
//! [`AuditedPool::connect_with`] tests each idle connection it hands out with that flush, in
//! place of sqlx's ping: sqlx's own `before_acquire` is then replaced, so give your callback
//! to [`AuditedPoolOptions::before_acquire`]); and the
//! oracle reads the relations the transaction locked right before `COMMIT` or `ROLLBACK`
//! (one more round trip for a transaction with a write that is not plain, nothing more for
//! a read-only one or one with plain writes only), whatever the schema's size; end it with
//! [`AuditedTransaction::commit`] or [`AuditedTransaction::rollback`], since a dropped
//! transaction cannot be asked.
//! [`PgOracle::Always`] runs the oracle for reads too.

//!
//! # MySQL and MariaDB
//!
//! Rows affected come from the OK packet of each statement (confirmed for the statement's
//! own table); an upsert that affected more rows than its `VALUES` list holds overwrote the
//! difference (confirmed). Writes made by triggers and stored procedures are found by
//! reading them from `information_schema` once per pool (again after DDL) and expanding each
//! statement through the triggers it fires and the procedures it calls: likely evidence,
//! whose text says `via trigger X on t` or `via procedure p`. A write in a transaction that
//! rolls back is an attempt. `db.system.name` is `mysql` or `mariadb`, as `VERSION()` says.
#![cfg_attr(test, allow(clippy::too_many_lines))]

/// The [`Backend`] trait and what every backend does alike.
mod backend;
/// Statement classification: what a SQL text does.
mod classify;
/// The statement itself: the one drive loop of every backend, `before` → the statement
/// (its rows counted) → `after`.
mod drive;
/// Enforce mode: statements refused, connections made read-only for a call.
mod enforce;
/// The statement as the driver gets it, and its attribution to a tool call.
mod execute;
/// [`guard::Guard`]: what must still happen when a future is dropped part-way.
mod guard;
/// What a tool call holds: [`AuditedConnection`], [`AuditedTransaction`], and
/// `AuditedConn`, what `*conn` and `*tx` are, an audited executor (not exported: one
/// connection type to name).
mod held;
/// The MySQL and MariaDB backend: rows affected, upserts, triggers and routines.
#[cfg(feature = "mysql")]
mod mysql;
/// [`AuditedPool`], its options, shared state and executor.
mod pool;
/// The PostgreSQL backend and its transaction oracle.
#[cfg(feature = "postgres")]
mod postgres;
/// Rows a statement affected, counted as its answer is read.
mod rows;
/// The SQLite backend and its hooks.
#[cfg(feature = "sqlite")]
mod sqlite;
/// A fallible stream written as an `async` block that yields.
mod stream;

pub use backend::Backend;
pub use classify::{Classification, DEFAULT_CLASSIFY_CACHE, SqlDialect, TxControl, classify};
pub use enforce::Refused;
pub use held::connection::AuditedConnection;
pub use held::transaction::AuditedTransaction;
pub use pool::AuditedPool;
pub use pool::acquire::UnauditedConnection;
pub use pool::options::{AfterConnect, AuditedPoolOptions, BeforeAcquire, PgOracle};
