//! The SQLite escapes: each on a fresh database file of a one-connection audited pool.

use hintaudit_sqlx::AuditedPool;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use sqlx::{Executor, Sqlite};

use crate::{Escape, Subject, escape as e};

const SETUP: &str = "
CREATE TABLE t (id INTEGER PRIMARY KEY, a INT NOT NULL DEFAULT 0);
INSERT INTO t VALUES (1, 0), (2, 0), (3, 0);
CREATE TABLE log (n INT);
CREATE VIEW plain_view AS SELECT id, lower(a) AS a FROM t;
";

const ROWS: &str = "SELECT CAST(count(*) AS TEXT) FROM t";

/// The corpus. `ATTACH` needs a file: `{aux}` is replaced by one in the test's directory.
const CORPUS: &[Escape] = &[
    e("SELECT 1; DELETE FROM t WHERE id = 2", ROWS, "DELETE"),
    e(
        "WITH x AS (SELECT 1) DELETE FROM t WHERE id = 1",
        ROWS,
        "DELETE",
    ),
    e("DELETE FROM t NOT INDEXED", ROWS, "DELETE"),
    e(
        "PRAGMA user_version = 5",
        "SELECT CAST(user_version AS TEXT) FROM pragma_user_version",
        "PRAGMA",
    ),
    e(
        "ATTACH DATABASE '{aux}' AS aux; CREATE TABLE aux.t2 (n INT)",
        "SELECT CAST(count(*) AS TEXT) FROM pragma_table_list WHERE name = 't2'",
        "CREATE TABLE",
    ),
];

/// Escapes of the same kinds, written after the fix and never tuned against.
const HELD_OUT: &[Escape] = &[
    e("select 1 ; delete from t", ROWS, "DELETE"),
    e("DELETE FROM main.t NOT INDEXED WHERE 1", ROWS, "DELETE"),
    e(
        "INSERT INTO log SELECT 1 FROM t",
        "SELECT CAST(count(*) AS TEXT) FROM log",
        "INSERT",
    ),
];

/// Statements that do not write.
const CLEAN: &[&str] = &[
    "SELECT * FROM t WHERE id = 1",
    "SELECT * FROM plain_view",
    "PRAGMA table_info(t)",
    "CREATE TEMP TABLE tmp AS SELECT * FROM t",
    "CREATE TEMP TABLE tmp2 (n INT); INSERT INTO tmp2 VALUES (1); DELETE FROM tmp2",
    "EXPLAIN QUERY PLAN DELETE FROM t",
];

/// A fresh database file with [`SETUP`], in a directory of its own, and a one-connection
/// audited pool on it. `{aux}` in a text names a file beside it, for `ATTACH`.
pub(crate) struct Lite {
    pool: AuditedPool<Sqlite>,
    dir: tempfile::TempDir,
}

impl Subject for Lite {
    async fn fresh(_: usize) -> Option<Lite> {
        let dir = tempfile::tempdir().expect("tempdir");
        let opts = SqliteConnectOptions::new()
            .filename(dir.path().join("escape.db"))
            .create_if_missing(true);
        let pool = AuditedPool::<Sqlite>::options()
            .connect_with(SqlitePoolOptions::new().max_connections(1), opts)
            .await
            .expect("connect");
        pool.inner().execute(SETUP).await.expect("setup");
        Some(Lite { pool, dir })
    }

    async fn run(&self, sql: &str) -> Result<(), sqlx::Error> {
        let aux = self.dir.path().join("aux.db");
        let sql = sqlx::AssertSqlSafe(sql.replace("{aux}", &aux.to_string_lossy()));
        sqlx::raw_sql(sql).execute(&self.pool).await.map(|_| ())
    }

    async fn probe(&self, sql: &str) -> String {
        sqlx::query_scalar::<_, String>(sqlx::AssertSqlSafe(sql.to_owned()))
            .fetch_one(self.pool.inner())
            .await
            .unwrap_or_else(|e| format!("error: {e}"))
    }

    async fn finish(self) {
        self.pool.close().await;
    }
}

crate::corpus_tests!(Lite);
