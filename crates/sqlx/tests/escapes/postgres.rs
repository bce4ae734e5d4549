//! The PostgreSQL escapes: each on a fresh schema of a one-connection audited pool.

use hintaudit_sqlx::AuditedPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Executor, Postgres};

use crate::databases::{self, Fresh};
use crate::{Escape, Subject, escape as e};

/// `t` with three rows; `log`, which the writing functions append to; a sequence; a
/// function that writes and says so, one that lies (`STABLE`, and calls the writer), a view
/// over the writer, a view over that view, and a plain view.
const SETUP: &str = "
CREATE TABLE t (id int PRIMARY KEY, a int NOT NULL DEFAULT 0);
INSERT INTO t VALUES (1, 0), (2, 0), (3, 0);
CREATE TABLE log (n int);
CREATE SEQUENCE s;
CREATE FUNCTION do_insert() RETURNS int VOLATILE LANGUAGE plpgsql AS $$
BEGIN INSERT INTO log VALUES (1); RETURN 1; END $$;
CREATE FUNCTION lies() RETURNS int STABLE LANGUAGE plpgsql AS $$
BEGIN RETURN do_insert(); END $$;
CREATE VIEW writing_view AS SELECT id, do_insert() AS x FROM t;
CREATE VIEW view_of_view AS SELECT * FROM writing_view;
CREATE VIEW plain_view AS SELECT id, lower(a::text) AS a FROM t;
";

const ROWS: &str = "SELECT count(*)::text FROM t";
const LOG: &str = "SELECT count(*)::text FROM log";
const SEQ: &str = "SELECT last_value::text || is_called::text FROM s";

/// The corpus.
const CORPUS: &[Escape] = &[
    e("EXPLAIN ANALYZE DELETE FROM t WHERE id = 1", ROWS, "DELETE"),
    e(
        "EXPLAIN (ANALYZE) DELETE FROM t WHERE id = 3",
        ROWS,
        "DELETE",
    ),
    e(
        "EXPLAIN (ANALYZE, FORMAT JSON) DELETE FROM t WHERE id = 2",
        ROWS,
        "DELETE",
    ),
    e("SELECT 1; DELETE FROM t WHERE id = 2", ROWS, "DELETE"),
    e(
        "SELECT 1; COMMIT; DELETE FROM t WHERE id = 2",
        ROWS,
        "DELETE",
    ),
    e(
        "COMMIT; DROP TABLE log",
        "SELECT (to_regclass('log') IS NULL)::text",
        "DROP",
    ),
    e(
        "WITH d AS (DELETE FROM t WHERE id = 1 RETURNING *) SELECT * FROM d",
        ROWS,
        "DELETE",
    ),
    e(
        "SELECT * INTO t_copy FROM t",
        "SELECT (to_regclass('t_copy') IS NULL)::text",
        "SELECT INTO",
    ),
    e(
        "CREATE TABLE t_as AS SELECT * FROM t",
        "SELECT (to_regclass('t_as') IS NULL)::text",
        "CREATE TABLE",
    ),
    e("DO $$ BEGIN DELETE FROM t WHERE id = 1; END $$", ROWS, "DO"),
    e(
        "PREPARE p AS DELETE FROM t WHERE id = 1; EXECUTE p",
        ROWS,
        "EXECUTE",
    ),
    e("SELECT lies()", LOG, "SELECT"),
    e("SELECT * FROM writing_view", LOG, "SELECT"),
    e("SELECT nextval('s')", SEQ, "SELECT"),
    e("SELECT setval('s', 100)", SEQ, "SELECT"),
];

/// Escapes of the same kinds, written after the fix and never tuned against.
const HELD_OUT: &[Escape] = &[
    e(
        "EXPLAIN (VERBOSE, ANALYZE on) UPDATE t SET a = a + 1",
        "SELECT sum(a)::text FROM t",
        "UPDATE",
    ),
    e("explain analyse delete from t", ROWS, "DELETE"),
    e("SELECT * FROM (SELECT do_insert()) AS s", LOG, "SELECT"),
    e("SELECT count(*) FROM t WHERE id = lies()", LOG, "SELECT"),
    e("SELECT * FROM view_of_view", LOG, "SELECT"),
    e(
        "WITH i AS (INSERT INTO log VALUES (2) RETURNING n) SELECT * FROM i",
        LOG,
        "INSERT",
    ),
    e("SELECT 1 ; ; DELETE FROM t", ROWS, "DELETE"),
    e("SELECT pg_catalog.nextval('s')", SEQ, "SELECT"),
    e("ROLLBACK; SELECT do_insert()", LOG, "SELECT"),
];

/// Statements that do not write: clean (info at most) for a read-only tool.
const CLEAN: &[&str] = &[
    "SELECT * FROM t WHERE id = 1",
    "SELECT * FROM t FOR UPDATE",
    "SELECT set_config('app.user', 'x', false)",
    "SELECT pg_advisory_lock(7), pg_advisory_unlock(7)",
    "SELECT * FROM plain_view",
    "EXPLAIN DELETE FROM t",
    "EXPLAIN (ANALYZE false) DELETE FROM t",
    "CREATE TEMP TABLE tmp AS SELECT * FROM t",
    "CREATE TEMP TABLE tmp2 (n int); INSERT INTO tmp2 VALUES (1); DELETE FROM tmp2",
    "SET search_path = public",
];

/// A fresh schema with [`SETUP`], and a one-connection audited pool on it.
pub(crate) struct Pg {
    pool: AuditedPool<Postgres>,
    fresh: Fresh<PgConnectOptions>,
}

impl Subject for Pg {
    async fn fresh(_n: usize) -> Option<Pg> {
        let fresh = databases::postgres().await?;
        let pool = AuditedPool::<Postgres>::options()
            .connect_with(
                PgPoolOptions::new().max_connections(1),
                fresh.options.clone(),
            )
            .await
            .expect("connect");
        pool.inner().execute(SETUP).await.expect("setup");
        Some(Pg { pool, fresh })
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

crate::corpus_tests!(Pg);
