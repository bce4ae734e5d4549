//! Shared set-up: databases (SQLite file, PostgreSQL schema, MySQL/MariaDB database),
//! audited servers, snapshots.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use bookings::{Bookings, Db};
use hintaudit::core::Judge;
use hintaudit::rmcp::HintAuditLayer;
use hintaudit_cli::demo::{Collector, RunningServer, demo_policy, serve_http};

/// A database for one test: a SQLite file in a temp dir, a fresh PostgreSQL schema, or a
/// fresh MySQL/MariaDB database.
pub struct TestDb {
    pub url: String,
    pub backend: &'static str,
    _dir: Option<tempfile::TempDir>,
    pg_schema: Option<String>,
    mysql_database: Option<String>,
}

pub fn sqlite() -> TestDb {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("bookings.db").display()
    );
    TestDb {
        url,
        backend: "sqlite",
        _dir: Some(dir),
        pg_schema: None,
        mysql_database: None,
    }
}

fn pg_base_url() -> String {
    std::env::var("HINTAUDIT_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// A fresh PostgreSQL schema (its name is made here from the test name and a counter, so
/// formatting it into DDL is safe), or `None` (with the reason printed) when PostgreSQL is not
/// reachable. With HINTAUDIT_REQUIRE_PG=1 (CI), an unreachable server fails the test.
pub async fn postgres(test: &str) -> Option<TestDb> {
    static N: AtomicUsize = AtomicUsize::new(0);
    let base = pg_base_url();
    let admin = match sqlx::PgPool::connect(&base).await {
        Ok(pool) => pool,
        Err(e) => {
            if hintaudit_test_support::required("HINTAUDIT_REQUIRE_PG") {
                panic!(
                    "PostgreSQL is required (HINTAUDIT_REQUIRE_PG=1) but {base} is unreachable: {e}"
                );
            }
            eprintln!(
                "skipping {test} on PostgreSQL: {base} is unreachable ({e}); set HINTAUDIT_PG_URL"
            );
            return None;
        }
    };
    let schema = format!(
        "live_{}_{}_{}",
        test.replace(|c: char| !c.is_ascii_alphanumeric(), "_"),
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP SCHEMA IF EXISTS {schema} CASCADE"
    )))
    .execute(&admin)
    .await
    .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&admin)
        .await
        .unwrap();
    admin.close().await;
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}options=-c%20search_path%3D{schema}");
    Some(TestDb {
        url,
        backend: "postgres",
        _dir: None,
        pg_schema: Some(schema),
        mysql_database: None,
    })
}

fn mysql_base_url() -> String {
    std::env::var("HINTAUDIT_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".to_owned())
}

/// A fresh MySQL/MariaDB database (its name is made here from the test name and a counter),
/// or `None` (with the reason printed) when the server is not reachable. With
/// HINTAUDIT_REQUIRE_MYSQL=1 or HINTAUDIT_REQUIRE_ALL=1 (CI), an unreachable server fails
/// the test.
pub async fn mysql(test: &str) -> Option<TestDb> {
    static N: AtomicUsize = AtomicUsize::new(0);
    let base = mysql_base_url();
    let admin = match sqlx::MySqlPool::connect(&base).await {
        Ok(pool) => pool,
        Err(e) => {
            if hintaudit_test_support::required("HINTAUDIT_REQUIRE_MYSQL") {
                panic!("MySQL is required but {base} is unreachable: {e}");
            }
            eprintln!(
                "skipping {test} on MySQL: {base} is unreachable ({e}); set HINTAUDIT_MYSQL_URL"
            );
            return None;
        }
    };
    let name = format!(
        "live_{}_{}_{}",
        test.replace(|c: char| !c.is_ascii_alphanumeric(), "_"),
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    for sql in [
        format!("DROP DATABASE IF EXISTS {name}"),
        format!("CREATE DATABASE {name}"),
    ] {
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .execute(&admin)
            .await
            .unwrap();
    }
    admin.close().await;
    Some(TestDb {
        url: format!("{}/{name}", base.trim_end_matches('/')),
        backend: "mysql",
        _dir: None,
        pg_schema: None,
        mysql_database: Some(name),
    })
}

impl TestDb {
    /// Drops the PostgreSQL schema (SQLite files go with the temp dir).
    pub async fn cleanup(self) {
        if let Some(schema) = &self.pg_schema
            && let Ok(admin) = sqlx::PgPool::connect(&pg_base_url()).await
        {
            let drop = format!("DROP SCHEMA IF EXISTS {schema} CASCADE");
            let _ = sqlx::query(sqlx::AssertSqlSafe(drop)).execute(&admin).await;
            admin.close().await;
        }
        if let Some(name) = &self.mysql_database
            && let Ok(admin) = sqlx::MySqlPool::connect(&mysql_base_url()).await
        {
            let drop = format!("DROP DATABASE IF EXISTS {name}");
            let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(drop))
                .execute(&admin)
                .await;
            admin.close().await;
        }
    }
}

/// The bookings server on `db`, audited with the demo policy, collecting every event.
pub async fn audited(db: &TestDb) -> (RunningServer<Bookings>, Collector, Db) {
    let collector = Collector::default();
    let layer = HintAuditLayer::new()
        .with_judge(std::sync::Arc::new(Judge::new(demo_policy())))
        .with_recorder(collector.clone());
    let (server, pool) = serve_bookings(db, layer).await;
    (server, collector, pool)
}

/// The bookings server on `db` behind `layer`, over streamable HTTP on a free loopback port;
/// its pool.
pub async fn serve_bookings(db: &TestDb, layer: HintAuditLayer) -> (RunningServer<Bookings>, Db) {
    let pool = Db::connect(&db.url).await.expect("connect");
    let server = serve_http(
        Bookings::new(pool.clone()),
        layer,
        "127.0.0.1:0".parse().unwrap(),
        None,
    )
    .await
    .expect("serve");
    (server, pool)
}

/// Every row of every watched bookings table, rendered as text, read through a plain sqlx
/// pool (not the audited one), keyed by table then by primary key.
pub type Snapshot = BTreeMap<&'static str, BTreeMap<String, String>>;

const SNAPSHOT_QUERIES: &[(&str, &str)] = &[
    (
        "patients",
        "SELECT CAST(id AS TEXT), name || '|' || email FROM patients",
    ),
    (
        "appointments",
        "SELECT CAST(id AS TEXT), CAST(patient_id AS TEXT) || '|' || starts_at || '|' || reason || '|' || status || '|' || CAST(view_count AS TEXT) || '|' || COALESCE(last_viewed_at, '') FROM appointments",
    ),
    (
        "confirmations",
        "SELECT CAST(appointment_id AS TEXT), confirmed_at FROM confirmations",
    ),
];

/// [`SNAPSHOT_QUERIES`] in MySQL's words (`||` is OR there, and TEXT is no cast target).
const MYSQL_SNAPSHOT_QUERIES: &[(&str, &str)] = &[
    (
        "patients",
        "SELECT CAST(id AS CHAR), CONCAT(name, '|', email) FROM patients",
    ),
    (
        "appointments",
        "SELECT CAST(id AS CHAR), CONCAT(patient_id, '|', starts_at, '|', reason, '|', status, '|', view_count, '|', COALESCE(last_viewed_at, '')) FROM appointments",
    ),
    (
        "confirmations",
        "SELECT CAST(appointment_id AS CHAR), confirmed_at FROM confirmations",
    ),
];

/// A plain (unaudited) sqlx pool on the test's database.
pub enum Snapshotter {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
    MySql(sqlx::MySqlPool),
}

impl Snapshotter {
    pub async fn new(db: &TestDb) -> Self {
        match db.backend {
            "sqlite" => Snapshotter::Sqlite(sqlx::SqlitePool::connect(&db.url).await.unwrap()),
            "mysql" => Snapshotter::MySql(sqlx::MySqlPool::connect(&db.url).await.unwrap()),
            _ => Snapshotter::Postgres(sqlx::PgPool::connect(&db.url).await.unwrap()),
        }
    }

    pub async fn take(&self) -> Snapshot {
        let mut snap = Snapshot::new();
        let queries = match self {
            Snapshotter::MySql(_) => MYSQL_SNAPSHOT_QUERIES,
            _ => SNAPSHOT_QUERIES,
        };
        for (table, sql) in queries {
            let rows: Vec<(String, String)> = match self {
                Snapshotter::Sqlite(p) => sqlx::query_as(*sql).fetch_all(p).await.unwrap(),
                Snapshotter::Postgres(p) => sqlx::query_as(*sql).fetch_all(p).await.unwrap(),
                Snapshotter::MySql(p) => sqlx::query_as(*sql).fetch_all(p).await.unwrap(),
            };
            snap.insert(table, rows.into_iter().collect());
        }
        snap
    }
}

/// Rows added, removed and changed between two snapshots, over all tables.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Diff {
    pub added: usize,
    pub removed: usize,
    pub changed: usize,
}

impl Diff {
    pub fn is_empty(&self) -> bool {
        *self == Diff::default()
    }
    pub fn destructive(&self) -> bool {
        self.removed + self.changed > 0
    }
}

pub fn diff(before: &Snapshot, after: &Snapshot) -> Diff {
    let mut d = Diff::default();
    for (table, rows) in before {
        let after_rows = &after[table];
        for (k, v) in rows {
            match after_rows.get(k) {
                None => d.removed += 1,
                Some(w) if w != v => d.changed += 1,
                _ => {}
            }
        }
        d.added += after_rows.keys().filter(|k| !rows.contains_key(*k)).count();
    }
    d
}

/// The layer with the demo policy and `correct_hints` on, recording nothing.
pub fn correcting_layer() -> HintAuditLayer {
    let config = hintaudit::core::Config::default().with_correct_hints(true);
    HintAuditLayer::new()
        .with_judge(std::sync::Arc::new(Judge::new(demo_policy())))
        .with_recorder(())
        .with_corrections_of(&config)
}
