//! An audited sqlx pool: every statement, and every row change the database reports, lands in
//! the [`hintaudit_core::CallScope`] of the MCP tool call that ran it (design §3).
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
//! let pool = AuditedPool::<sqlx::Sqlite>::connect_with(
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
//! `&AuditedPool<DB>`, `&mut AuditedConnection<DB>` and `&mut AuditedTransaction<DB>` are sqlx
//! [`sqlx::Executor`]s, so `query`, `query_as`, `query_scalar` and their `execute`,
//! `fetch_one`, `fetch_optional`, `fetch_all` and `fetch` work unchanged, and the driver gets
//! the same text, arguments and caching flag it would get without auditing.
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
//! (the `tools/call` span inside a tool), with the fields of
//! [`hintaudit_core::semconv`]: `otel.name` = `db.query.summary` (`UPDATE posts`),
//! `otel.kind` = `client`, `db.system.name`, `db.operation.name`, `db.collection.name`,
//! `db.query.text` with every literal replaced by `?`, and `db.response.affected_rows` where
//! trustworthy. With no subscriber installed a span costs nothing measurable.
//!
//! Auditing never changes a query's result: classification, hook and oracle failures are
//! counted with `stats().audit_error(stage, ..)` and the statement's own result is returned.
//!
//! # SQLite: hooks
//!
//! Each connection gets an update, a commit and a rollback hook. They run on sqlx's worker
//! thread, where task-locals are invisible, so each connection has a slot that the executor
//! binds to (the call's effects, the statement's index) before a call-scoped statement runs;
//! every row change is tagged with the binding of its moment and buffered until the commit
//! hook (recorded `committed: true`; autocommit statements fire it too, before they return)
//! or the rollback hook (`committed: false`: attempts, not changes). A failed statement's
//! buffered rows are recorded as rolled back. A single pool statement unbinds when it ends;
//! an [`AuditedConnection`] or [`AuditedTransaction`] stays bound while the call holds it and
//! unbinds when dropped, so an unscoped statement never lands in a stale call (its rows are
//! counted with `stats().unattributed_rows`). Rows written by triggers are reported.
//!
//! **Where the hooks come from.** On a pool hintaudit opens ([`AuditedPool::connect`],
//! [`AuditedPool::connect_with`]), every connection gets its hooks when it connects, through
//! sqlx's `after_connect` (so a callback you set with sqlx's `PoolOptions::after_connect` is
//! replaced: give it to [`AuditedPoolOptions::after_connect`], which runs it afterwards).
//! A pooled statement that may write then claims the pool's *writer*, which every idle
//! connection's hooks fall back to: no round trip to the connection's worker thread. The
//! claim never waits: while one statement holds the writer (a write under way, or a stream
//! still being read), another pooled write binds its own connection, as a wrapped pool does
//! below, so a caller that writes through the pool while it reads a stream goes on as it
//! would unaudited. An [`AuditedConnection`] or [`AuditedTransaction`]
//! finds its own connection's slot once, with `lock_handle()` (a registry keyed by the
//! `sqlite3` handle address), on its first statement that is call-scoped or may write, and
//! binds it; an unscoped one binds it to nobody, so its rows never land in a pooled write's
//! call. On a pool hintaudit wraps ([`AuditedPool::from_pool`]), whose connections it cannot
//! hook as they connect, each call-scoped pooled write finds its connection's slot (installing
//! the hooks the first time) with one `lock_handle()` round trip, about 15 µs; your
//! `after_connect` stays as it is there. Hooks you set yourself on a connection are replaced.
//! Statements through [`AuditedPool::inner`] and detached connections are not audited, but
//! their rows still reach the hooks: a raw write while an audited pooled write holds the
//! writer can be attributed to that write's call.
//!
//! Cost, per call-scoped statement (measured with `crates/sqlx/benches/statements.rs` and the
//! workspace's `benches/overhead.rs`, release build, file database, a busy 2-core machine): a
//! plain `SELECT` about +1 µs over a raw statement of about 60 µs; a pooled write on a pool
//! hintaudit opened about the same (the writer and the hooks); on a wrapped pool, or while
//! the writer is claimed, add the `lock_handle()` round trip. A `db.statement` span with no subscriber costs under 0.1 µs.
//! sqlx's `lock_handle()` has a trap we avoid: called back to back with no command to the
//! worker in between, its unlock requests pile up and deadlock once the command channel is
//! full (about 50 in a row); every lookup here is followed by a statement, and a statement
//! whose arguments failed to encode is not bound at all.
//!
//! Blind spots, where a statement is recorded but not marked `observed` (the judge then falls
//! back to statement analysis): `DELETE` without `WHERE` (SQLite's truncate optimisation skips
//! the update hook), `WITHOUT ROWID` tables (detected when `sqlite3_changes()` reports rows the
//! hook never saw), and rows that `REPLACE` deletes on conflict (the judge treats an
//! overwriting upsert by statement analysis).
//!
//! With the `preupdate-hook` feature (needs libclang for libsqlite3-sys's bindgen) the
//! preupdate hook also runs: it disables the truncate optimisation, so `DELETE` without `WHERE`
//! is observed; updates carry [`hintaudit_core::RowImage`]`::Unchanged` or `Changed(columns)`,
//! with column names from `PRAGMA table_info`, run by the executor (never inside a hook)
//! once per table: before an autocommit write, and after the write inside a transaction,
//! so that it never opens a read transaction ahead of the transaction's first write (the
//! write would then fail at once with `SQLITE_BUSY` instead of waiting out the busy
//! timeout); and `nested` tells trigger writes (query depth > 0).
//!
//! # PostgreSQL: the transaction oracle
//!
//! With [`PgOracle::Writes`] (the default), an autocommit statement that may write (a write
//! operation, unparseable text, `CALL`, or any statement calling a function that is not a
//! known pure built-in, such as `SELECT mark_viewed($1)`) runs wrapped on one connection as
//! `BEGIN`; snapshot; the statement; `SAVEPOINT`; snapshot; `COMMIT` (`ROLLBACK` when it
//! fails). A snapshot is one prepared query of `pg_current_xact_id_if_assigned()` and
//! `pg_stat_xact_user_tables`; the delta of the two is recorded as a
//! [`hintaudit_core::TransactionObservation`]. That is **5 extra round trips** per such
//! statement (+230 µs measured on localhost, where the raw statement takes 85 µs); plain `SELECT`s, `SELECT ... FOR UPDATE`,
//! transaction control and session statements run unwrapped at no cost. Statements that
//! cannot run in a transaction block (`VACUUM`, `CLUSTER`, `REINDEX`, `CREATE INDEX
//! CONCURRENTLY`, `CREATE`/`DROP DATABASE` or `TABLESPACE`, subscriptions, `DISCARD ALL`,
//! texts holding their own `BEGIN`/`COMMIT`) and statements issued while the connection is
//! inside a transaction you opened with a raw `BEGIN` run unwrapped and unobserved. A `COMMIT`
//! failure (deferred constraints) is returned as the statement's error, as autocommit would
//! have. Streams of wrapped statements are buffered until `COMMIT` answers, so that no row
//! reaches you from a statement whose commit then fails: a large result read through
//! `fetch()` from a wrapped `SELECT` (one calling a function not known to be pure) is held in
//! memory and its first row waits for the last. Unwrapped statements stream; to stream such a
//! `SELECT`, run it in an [`AuditedTransaction`] or use [`PgOracle::Off`].
//!
//! In an [`AuditedTransaction`] the statements run as they are; the first snapshot is taken
//! (inside a released savepoint, 3 round trips) before the first statement that may write,
//! and the second (savepoint and snapshot, 2 round trips) right before `COMMIT` or `ROLLBACK`:
//! about +225 µs per writing transaction (localhost), nothing for a read-only one. [`PgOracle::Always`]
//! runs the oracle for reads too; [`PgOracle::Off`] never. The savepoints make sure an oracle
//! failure can never abort your transaction.
//!
//! Oracle pitfalls (design §7): the transaction id is also assigned by `SELECT ... FOR UPDATE`
//! and by temp-table creation, so `wrote` is reported only when some user table's counts
//! moved; temp tables are ignored; `nextval()` is invisible (statement analysis lists it in
//! `opaque_calls`). A transaction dropped without `commit()`/`rollback()` cannot be asked; its
//! write statements are marked failed (rolled back).

mod backend;
mod classify;
mod connection;
mod execute;
mod pool;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;
mod stream;
mod transaction;

pub use backend::Backend;
pub use classify::{Classification, DEFAULT_CLASSIFY_CACHE, SqlDialect, TxControl, classify};
pub use connection::AuditedConnection;
pub use pool::AuditedPool;
pub use pool::options::{AfterConnect, AuditedPoolOptions, PgOracle};
pub use transaction::AuditedTransaction;
