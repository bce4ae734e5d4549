//! The port fixture: is `AuditedPool` a drop-in for `sqlx::Pool`?
//!
//! `app.rs` is a small notes app written as the sqlx docs write code: `&mut *tx`, `&mut
//! *conn`, `pool.begin_with(..)`, a savepoint (`tx.begin()`), helpers over `impl Executor`
//! and `impl Acquire`, `sqlx::migrate!(..).run(&pool)`, `query!` and `query_as!` (offline,
//! from `crates/sqlx/.sqlx/`), `Pool::connect_with`, pool options and `From<sqlx::Pool>`,
//! `size`, `num_idle`, `close`. [`port!`] compiles it twice per backend, in a `bare` module
//! where `type Pool = sqlx::Pool<Db>` and an `audited` one where `type Pool =
//! hintaudit_sqlx::AuditedPool<Db>`: that alias is the only difference. Both builds run the
//! same scenario (`scenario.rs`) and must answer the same ([`check_behaviour`]); the audited
//! build must also have attributed the app's statements and writes to the tool calls that ran
//! them, those run through `&mut *tx` and `&mut *conn` included ([`check_audited`]), and the
//! bare build nothing ([`check_bare`]).
//!
//! SQLite runs on a file in a temporary directory; PostgreSQL (`HINTAUDIT_PG_URL`) in a fresh
//! schema; MySQL/MariaDB (`HINTAUDIT_MYSQL_URL`, the server root) in a fresh database. A
//! server test skips with the reason printed when its server is unreachable, unless
//! `HINTAUDIT_REQUIRE_PG=1` (`HINTAUDIT_REQUIRE_MYSQL=1`) or `HINTAUDIT_REQUIRE_ALL=1`.
//! Another backend is one more [`port!`] line: its `Db`, connect options, `BEGIN` statement,
//! migrations, queries file (`query!`, and the app's statement texts in its placeholder
//! syntax) and a function in `databases.rs` that opens a fresh database.
//!
//! The `query!` data in `crates/sqlx/.sqlx/` was written by the macros themselves, run once
//! online per backend against a database with the migrations applied (no sqlx-cli needed):
//! `SQLX_OFFLINE=false SQLX_OFFLINE_DIR=$PWD/crates/sqlx/.sqlx DATABASE_URL=<url> cargo check
//! -p hintaudit-sqlx --test port`, with `<url>` a SQLite file, a PostgreSQL database, then a
//! MariaDB database (each run fails on the other backends' queries after saving its own).
//! Each backend's query texts must differ from the others' (`?1`, `$1`, `?`): the data is
//! keyed by the text.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml
#![cfg(all(feature = "sqlite", feature = "postgres", feature = "mysql"))]

use hintaudit_core::{Effect, Operation, StatementOutcome, stats};

#[path = "../support/databases.rs"]
mod databases;

/// What the scenario saw the app answer.
#[derive(Debug, Default, PartialEq)]
pub struct Observed {
    /// Notes after the migrations (their seed row).
    after_migrate: i64,
    /// The two notes created (`create`, `create_with`).
    ids: (i64, i64),
    /// Rows `bump_views` (`query!`) matched.
    bumped: u64,
    /// Titles `read_all` read on a held connection.
    titles: Vec<String>,
    /// The first note, read with `query_as!` through a pool opened with pool options.
    first: Option<(i64, String, i64)>,
    /// Whether a note that does not exist reads as `None`.
    missing: bool,
    /// Events of the first note, and of `read_all`.
    events: Vec<String>,
    read_events: Vec<String>,
    /// Notes counted through `impl Acquire` on a connection and in a transaction, and the
    /// events of the first note read through `&mut *tx`.
    counts: (i64, i64, usize),
    /// The pool's size and idle connections before it closed.
    status: (u32, usize),
    /// Whether both pools closed.
    closed: bool,
}

/// Each tool call of the scenario, with what its call scope saw.
pub type Calls = Vec<(&'static str, Effect)>;

/// Declares a backend: its database type, connect options, `BEGIN` statement for
/// `begin_with`, migrations directory and `query!` file, and the app compiled twice on it.
macro_rules! port {
    (
        $backend:ident,
        db = $db:ty,
        options = $options:ty,
        begin_with = $begin:literal,
        migrations = $migrations:literal,
        queries = $queries:literal $(,)?
    ) => {
        mod $backend {
            pub type Db = $db;
            pub type ConnectOptions = $options;
            pub const BEGIN_WITH: &str = $begin;
            pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!($migrations);

            /// The app on sqlx's own pool.
            pub mod bare {
                pub type Pool = sqlx::Pool<super::Db>;
                pub use super::{BEGIN_WITH, ConnectOptions, Db, MIGRATOR};
                pub mod app {
                    include!("app.rs");
                }
                pub mod queries {
                    include!($queries);
                }
                pub mod scenario {
                    include!("scenario.rs");
                }
            }

            /// The same app on hintaudit's pool: only the alias differs.
            pub mod audited {
                pub type Pool = hintaudit_sqlx::AuditedPool<super::Db>;
                pub use super::{BEGIN_WITH, ConnectOptions, Db, MIGRATOR};
                pub mod app {
                    include!("app.rs");
                }
                pub mod queries {
                    include!($queries);
                }
                pub mod scenario {
                    include!("scenario.rs");
                }
            }

            #[tokio::test]
            async fn bare_build_behaves() {
                let Some(db) = crate::databases::$backend().await else {
                    return;
                };
                let (seen, calls) = bare::scenario::run(db.options.clone()).await;
                crate::check_behaviour(&seen);
                crate::check_bare(&calls);
                db.drop().await;
            }

            #[tokio::test]
            async fn audited_build_behaves_and_is_audited() {
                let Some(db) = crate::databases::$backend().await else {
                    return;
                };
                let before = crate::unattributed();
                let rows = hintaudit_core::stats().unattributed_row_changes();
                let setup = hintaudit_core::stats().setup_acquires();
                let (seen, calls) = audited::scenario::run(db.options.clone()).await;
                crate::check_behaviour(&seen);
                crate::check_audited(&calls);
                // The migrations (with their seed row) are set-up, not unattributed
                // statements or row changes; every other statement ran in a tool call.
                assert!(hintaudit_core::stats().setup_acquires() > setup);
                assert_eq!(crate::unattributed(), before, "unattributed statements");
                assert_eq!(
                    hintaudit_core::stats().unattributed_row_changes(),
                    rows,
                    "unattributed row changes"
                );
                db.drop().await;
            }
        }
    };
}

port!(
    sqlite,
    db = sqlx::Sqlite,
    options = sqlx::sqlite::SqliteConnectOptions,
    begin_with = "BEGIN IMMEDIATE",
    migrations = "tests/port/migrations/sqlite",
    queries = "queries/sqlite.rs",
);

port!(
    postgres,
    db = sqlx::Postgres,
    options = sqlx::postgres::PgConnectOptions,
    begin_with = "BEGIN ISOLATION LEVEL SERIALIZABLE",
    migrations = "tests/port/migrations/postgres",
    queries = "queries/postgres.rs",
);

port!(
    mysql,
    db = sqlx::MySql,
    options = sqlx::mysql::MySqlConnectOptions,
    begin_with = "START TRANSACTION READ WRITE",
    migrations = "tests/port/migrations/mysql",
    queries = "queries/mysql.rs",
);

/// Unattributed statements, all operations, since the process started.
fn unattributed() -> u64 {
    Operation::ALL
        .iter()
        .map(|op| stats().unattributed_statements(*op))
        .sum()
}

/// What both builds must answer.
fn check_behaviour(seen: &Observed) {
    let (first, second) = seen.ids;
    let expected = Observed {
        after_migrate: 1,
        ids: (2, 3),
        bumped: 1,
        titles: vec!["welcome".into(), "renamed".into(), "kept".into()],
        // One view from `bump_views`, one from `read_all`.
        first: Some((first, "renamed".into(), 2)),
        missing: true,
        events: vec!["rename".into()],
        read_events: vec!["read_all".into()],
        counts: (3, 3, 1),
        status: seen.status,
        closed: true,
    };
    assert_eq!(second, first + 1);
    assert_eq!(*seen, expected);
    let (size, idle) = seen.status;
    assert!(
        size >= 1 && idle <= size as usize,
        "pool status {:?}",
        seen.status
    );
}

/// The bare build audits nothing: its call scopes stay empty.
fn check_bare(calls: &Calls) {
    for (tool, effect) in calls {
        assert!(effect.is_empty(), "{tool}: {effect:?}");
    }
}

/// The call of the scenario named `tool`.
fn call<'a>(calls: &'a Calls, tool: &str) -> &'a Effect {
    &calls.iter().find(|(t, _)| *t == tool).expect(tool).1
}

/// Whether `effect` holds a committed write to `table`, by row changes (SQLite's hooks), a
/// transaction observation (PostgreSQL's oracle) or a statement's rows affected (MySQL's OK
/// packet; a write its transaction rolled back is marked failed).
fn wrote(effect: &Effect, table: &str) -> bool {
    effect
        .row_changes
        .iter()
        .any(|r| r.committed && r.table == table)
        || effect
            .transactions
            .iter()
            .any(|t| t.committed && t.wrote && t.tables.iter().any(|w| w.table == table))
        || effect.statements.iter().any(|s| {
            s.outcome == StatementOutcome::Ok
                && s.operation.is_write()
                && s.rows_affected.is_some_and(|n| n > 0)
                && s.tables.iter().any(|t| t == table)
        })
}

/// The operations of `effect`'s statements on `table`, in order, with their outcome.
fn statements(effect: &Effect, table: &str) -> Vec<(Operation, StatementOutcome)> {
    effect
        .statements
        .iter()
        .filter(|s| {
            s.tables
                .iter()
                .chain(s.read_tables.iter())
                .any(|t| t == table)
        })
        .map(|s| (s.operation, s.outcome))
        .collect()
}

/// The audited build attributed every statement to its tool call, and saw its writes.
fn check_audited(calls: &Calls) {
    use Operation::{Insert, Select, Update};
    use StatementOutcome::{Failed, Ok};
    let create = call(calls, "create");
    assert_eq!(statements(create, "notes"), [(Insert, Ok)]);
    assert!(wrote(create, "notes"), "create: {create:?}");

    // `begin_with`, then `fetch_one(&mut *tx)`.
    let create_with = call(calls, "create_with");
    assert_eq!(statements(create_with, "notes"), [(Insert, Ok)]);
    assert!(wrote(create_with, "notes"), "create_with: {create_with:?}");

    // `execute(&mut *tx)` and a helper over `impl Executor` given `&mut *tx`.
    let rename = call(calls, "rename");
    assert_eq!(statements(rename, "notes"), [(Update, Ok)]);
    assert_eq!(statements(rename, "events"), [(Insert, Ok)]);
    assert!(
        wrote(rename, "notes") && wrote(rename, "events"),
        "rename: {rename:?}"
    );

    // The savepoint's statement is audited too (`&mut *savepoint`).
    let keep = call(calls, "rename_keep_first");
    assert_eq!(statements(keep, "notes"), [(Update, Ok), (Update, Ok)]);
    assert!(wrote(keep, "notes"), "rename_keep_first: {keep:?}");

    // A dropped transaction committed nothing.
    let abandoned = call(calls, "rename_abandoned");
    let ops = statements(abandoned, "notes");
    assert_eq!(ops.len(), 1, "rename_abandoned: {abandoned:?}");
    assert_eq!(ops[0].0, Update);
    assert!(
        !wrote(abandoned, "notes"),
        "rename_abandoned: {abandoned:?}"
    );
    assert!(
        ops[0].1 == Failed || abandoned.row_changes.iter().all(|r| !r.committed),
        "rename_abandoned: {abandoned:?}"
    );

    // `query!`: the statement, and its non-convergent SET.
    let bump = call(calls, "bump_views");
    assert_eq!(statements(bump, "notes"), [(Update, Ok)]);
    assert_eq!(bump.statements[0].non_convergent[0].0, "views");
    assert!(wrote(bump, "notes"), "bump_views: {bump:?}");

    // `&mut *conn` on a held connection, then `conn.begin()` and `&mut *tx`.
    let read_all = call(calls, "read_all");
    assert_eq!(statements(read_all, "notes"), [(Update, Ok), (Select, Ok)]);
    assert_eq!(statements(read_all, "events"), [(Insert, Ok)]);
    assert!(
        wrote(read_all, "notes") && wrote(read_all, "events"),
        "read_all: {read_all:?}"
    );

    // `query_as!` on a pool converted with `From<sqlx::Pool>`.
    let note = call(calls, "note");
    assert_eq!(statements(note, "notes"), [(Select, Ok)]);
    assert!(!wrote(note, "notes"));
}
