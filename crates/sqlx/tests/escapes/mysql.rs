//! The MySQL and MariaDB escapes: each on a fresh database of a one-connection audited pool.

use hintaudit_sqlx::AuditedPool;
use sqlx::mysql::{MySqlConnectOptions, MySqlPoolOptions};
use sqlx::{Executor, MySql};

use crate::databases::{self, Fresh};
use crate::{Escape, Subject, escape as e};

/// `t` with three rows; `log`, which the stored routines append to; a function and a
/// procedure that write, a view over the function, and a plain view.
const SETUP: &[&str] = &[
    "CREATE TABLE t (id INT PRIMARY KEY, a INT NOT NULL DEFAULT 0)",
    "INSERT INTO t VALUES (1, 0), (2, 0), (3, 0)",
    "CREATE TABLE log (n INT)",
    "CREATE FUNCTION do_insert() RETURNS INT MODIFIES SQL DATA \
     BEGIN INSERT INTO log VALUES (1); RETURN 1; END",
    "CREATE PROCEDURE drop_first() BEGIN DELETE FROM t WHERE id = 1; END",
    "CREATE VIEW writing_view AS SELECT id, do_insert() AS x FROM t",
    "CREATE VIEW plain_view AS SELECT id, lower(a) AS a FROM t",
];

const ROWS: &str = "SELECT CAST(count(*) AS CHAR) FROM t";
const LOG: &str = "SELECT CAST(count(*) AS CHAR) FROM log";

/// The corpus.
const CORPUS: &[Escape] = &[
    e("ANALYZE DELETE FROM t WHERE id = 1", ROWS, "DELETE"),
    e("SELECT do_insert()", LOG, "SELECT"),
    e("DO do_insert()", LOG, "DO"),
    e("SET @x = (SELECT do_insert())", LOG, "SET"),
    e(
        "REPLACE INTO t VALUES (1, 5)",
        "SELECT CAST(sum(a) AS CHAR) FROM t",
        "REPLACE",
    ),
    e("CALL drop_first()", ROWS, "CALL"),
    e("SELECT 1; DELETE FROM t WHERE id = 2", ROWS, "DELETE"),
    e("SELECT * FROM writing_view", LOG, "SELECT"),
];

/// Escapes of the same kinds, written after the fix and never tuned against.
const HELD_OUT: &[Escape] = &[
    e(
        "analyze format=json update t set a = a + 1",
        "SELECT CAST(sum(a) AS CHAR) FROM t",
        "UPDATE",
    ),
    e("SELECT id FROM t WHERE id = do_insert()", LOG, "SELECT"),
    e(
        "SELECT * FROM (SELECT do_insert() AS y) AS s",
        LOG,
        "SELECT",
    ),
    e("COMMIT; DELETE FROM t", ROWS, "DELETE"),
];

/// Statements that do not write.
const CLEAN: &[&str] = &[
    "SELECT * FROM t WHERE id = 1",
    "SELECT * FROM t FOR UPDATE",
    "SELECT * FROM plain_view",
    "SELECT GET_LOCK('k', 0), RELEASE_LOCK('k')",
    "SET @x = 1",
    "CREATE TEMPORARY TABLE tmp (n INT)",
];

/// A fresh database with [`SETUP`], and a one-connection audited pool on it.
pub(crate) struct My {
    pool: AuditedPool<MySql>,
    fresh: Fresh<MySqlConnectOptions>,
}

impl Subject for My {
    async fn fresh(_n: usize) -> Option<My> {
        let fresh = databases::mysql().await?;
        let pool = AuditedPool::<MySql>::options()
            .connect_with(
                MySqlPoolOptions::new().max_connections(1),
                fresh.options.clone(),
            )
            .await
            .expect("connect");
        for s in SETUP {
            pool.inner()
                .execute(sqlx::raw_sql(sqlx::AssertSqlSafe(*s)))
                .await
                .expect("setup");
        }
        Some(My { pool, fresh })
    }

    async fn run(&self, sql: &str) -> Result<(), sqlx::Error> {
        let sql = sqlx::AssertSqlSafe(sql.to_owned());
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
        self.fresh.drop().await;
    }
}

crate::corpus_tests!(My);
