//! Snapshot and diff tests on PostgreSQL and MariaDB: keyed and key-less tables, NULLs,
//! binary values, floats, column order. Each test works in its own schema (PostgreSQL, via
//! `search_path`) or database (MariaDB) and drops it at the end. They skip with a printed
//! reason when the server is unreachable, unless `HINTAUDIT_REQUIRE_ALL=1` (or
//! `HINTAUDIT_REQUIRE_PG=1`, `HINTAUDIT_REQUIRE_MYSQL=1`). `HINTAUDIT_PG_URL` and
//! `HINTAUDIT_MYSQL_URL` (server root, no database) override the local defaults.

use hintaudit_core::Policy;
use sqlx::Connection;
use sqlx::mysql::MySqlConnection;
use sqlx::postgres::PgConnection;

use super::tests::object_steps;
use super::{Database, Snapshotter};
use crate::objects::ObjectKind;
use crate::snapshot::{Diff, TableDiff};

fn pg_admin() -> String {
    std::env::var("HINTAUDIT_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// The server's root URL, without a database path.
fn my_server() -> String {
    std::env::var("HINTAUDIT_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".into())
}

use hintaudit_test_support::required;

/// The schema of a [`pg_schema`] URL (its `search_path`); none for other URLs.
fn schema_of(url: &str) -> Vec<String> {
    url.split_once("search_path%3D")
        .map(|(_, s)| vec![s.to_owned()])
        .unwrap_or_default()
}

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{prefix}_{}_{nanos}", std::process::id())
}

/// An admin connection, a fresh schema and a URL whose `search_path` is that schema; `None`
/// (with the reason printed) when PostgreSQL is unreachable and not required.
async fn pg_schema(prefix: &str) -> Option<(PgConnection, String, String)> {
    let admin_url = pg_admin();
    let Ok(mut admin) = PgConnection::connect(&admin_url).await else {
        assert!(
            !required("HINTAUDIT_REQUIRE_PG"),
            "PostgreSQL required at {admin_url}"
        );
        eprintln!("skipped: PostgreSQL unreachable at {admin_url}");
        return None;
    };
    let schema = unique(prefix);
    exec(&mut admin, &format!("CREATE SCHEMA {schema}")).await;
    let sep = if admin_url.contains('?') { '&' } else { '?' };
    let url = format!("{admin_url}{sep}options=-c%20search_path%3D{schema}");
    Some((admin, schema, url))
}

/// An admin connection, a fresh database and its URL; `None` (with the reason printed) when
/// MariaDB/MySQL is unreachable and not required.
async fn my_database(prefix: &str) -> Option<(MySqlConnection, String, String)> {
    let server_url = my_server();
    let Ok(mut admin) = MySqlConnection::connect(&server_url).await else {
        assert!(
            !required("HINTAUDIT_REQUIRE_MYSQL"),
            "MariaDB required at {server_url}"
        );
        eprintln!("skipped: MariaDB/MySQL unreachable at {server_url}");
        return None;
    };
    let db = unique(prefix);
    exec(&mut admin, &format!("CREATE DATABASE {db}")).await;
    let url = format!("{}/{db}", server_url.trim_end_matches('/'));
    Some((admin, db, url))
}

async fn exec<C>(c: &mut C, sql: &str)
where
    for<'c> &'c mut C: sqlx::Executor<'c>,
{
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(c)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

fn counts(d: &[TableDiff]) -> (u64, u64, u64) {
    d.first()
        .map(|d| (d.added, d.removed, d.changed))
        .unwrap_or((0, 0, 0))
}

/// Runs `steps` (SQL by the "server" connection, expected (added, removed, changed)) between
/// snapshots taken through `url`.
async fn steps<C>(server: &mut C, url: &str, steps: &[(&str, (u64, u64, u64))])
where
    for<'c> &'c mut C: sqlx::Executor<'c>,
{
    let mut s = Snapshotter::new(Database::connect(url).await.unwrap(), Policy::default())
        .with_schemas(schema_of(url));
    let mut before = s.take().await.unwrap();
    for (sql, want) in steps {
        exec(server, sql).await;
        let after = s.take().await.unwrap();
        assert_eq!(
            counts(&Diff::between(&before, &after).tables),
            *want,
            "{sql}"
        );
        before = after;
    }
}

#[tokio::test]
async fn postgres_snapshots_and_diffs() {
    let Some((mut admin, schema, url)) = pg_schema("hv_snap").await else {
        return;
    };
    let mut server = PgConnection::connect(&url).await.unwrap();
    exec(
        &mut server,
        "CREATE TABLE b (id int PRIMARY KEY, name text, price double precision, photo bytea, at timestamptz);
         INSERT INTO b VALUES (1, 'a', 1.5, '\\x00ff', now()), (2, NULL, NULL, NULL, NULL), (3, 'c', 0.1, '', NULL);
         CREATE TABLE log (msg text, n numeric);
         INSERT INTO log VALUES ('a', 1.10), ('a', 1.10);
         CREATE TABLE s (a text, b int, v real, PRIMARY KEY (b, a));
         INSERT INTO s VALUES ('x', 1, 1.0);",
    )
    .await;
    steps(
        &mut server,
        &url,
        &[
            ("INSERT INTO b (id) VALUES (4)", (1, 0, 0)),
            ("DELETE FROM b WHERE id = 1", (0, 1, 0)),
            ("UPDATE b SET name = 'x' WHERE id = 2", (0, 0, 1)),
            ("UPDATE b SET name = NULL WHERE id = 2", (0, 0, 1)),
            (
                "UPDATE b SET price = 0.30000000000000004 WHERE id = 3",
                (0, 0, 1),
            ),
            (
                "UPDATE b SET price = 0.30000000000000004 WHERE id = 3",
                (0, 0, 0),
            ),
            ("UPDATE b SET photo = '\\x00' WHERE id = 3", (0, 0, 1)),
            ("UPDATE b SET name = name", (0, 0, 0)),
            ("INSERT INTO log VALUES ('a', 1.10)", (1, 0, 0)),
            ("UPDATE log SET n = 1.1 WHERE msg = 'a'", (3, 3, 0)), // numeric scale shows
            ("DELETE FROM log", (0, 3, 0)),
            // Column order: rebuild s with its columns reversed; no row changes.
            (
                "CREATE TABLE s2 (v real, b int, a text, PRIMARY KEY (b, a));
                 INSERT INTO s2 SELECT v, b, a FROM s; DROP TABLE s; ALTER TABLE s2 RENAME TO s;",
                (0, 0, 0),
            ),
        ],
    )
    .await;
    // Values for generated id arguments: smallest first, as text.
    let mut db = Database::connect(&url).await.unwrap();
    let tables = db
        .tables(&Policy::default(), &schema_of(&url))
        .await
        .unwrap();
    let b = tables.iter().find(|t| t.name == "b").expect("table b");
    assert_eq!(db.sample(b, "id", 2).await.unwrap(), ["2", "3"]);
    // The WAL marker lets an unchanged database reuse its snapshot.
    let mut s = Snapshotter::new(Database::connect(&url).await.unwrap(), Policy::default())
        .with_schemas(schema_of(&url));
    s.take().await.unwrap();
    s.take().await.unwrap();
    assert!(s.stats().scans <= 2, "{:?}", s.stats());
    drop(server);
    exec(&mut admin, &format!("DROP SCHEMA {schema} CASCADE")).await;
}

#[tokio::test]
async fn mariadb_snapshots_and_diffs() {
    let Some((mut admin, db, url)) = my_database("hv_snap").await else {
        return;
    };
    let mut server = MySqlConnection::connect(&url).await.unwrap();
    exec(
        &mut server,
        "CREATE TABLE b (id INT PRIMARY KEY, name TEXT, price DOUBLE, photo BLOB);
         INSERT INTO b VALUES (1, 'a', 1.5, x'00ff'), (2, NULL, NULL, NULL), (3, 'c', 0.1, x'');
         CREATE TABLE log (msg TEXT, n INT);
         INSERT INTO log VALUES ('a', 1), ('a', 1);",
    )
    .await;
    steps(
        &mut server,
        &url,
        &[
            ("INSERT INTO b (id) VALUES (4)", (1, 0, 0)),
            ("DELETE FROM b WHERE id = 1", (0, 1, 0)),
            ("UPDATE b SET name = 'x' WHERE id = 2", (0, 0, 1)),
            ("UPDATE b SET name = NULL WHERE id = 2", (0, 0, 1)),
            (
                "UPDATE b SET price = 0.30000000000000004 WHERE id = 3",
                (0, 0, 1),
            ),
            ("UPDATE b SET photo = x'00' WHERE id = 3", (0, 0, 1)),
            ("UPDATE b SET photo = x'00' WHERE id = 3", (0, 0, 0)),
            ("INSERT INTO log VALUES ('a', 1)", (1, 0, 0)),
            ("UPDATE log SET n = 2 LIMIT 1", (1, 1, 0)),
            ("ALTER TABLE b MODIFY name TEXT AFTER photo", (0, 0, 0)),
        ],
    )
    .await;
    let mut conn = Database::connect(&url).await.unwrap();
    let tables = conn.tables(&Policy::default(), &[]).await.unwrap();
    let b = tables.iter().find(|t| t.name == "b").expect("table b");
    assert_eq!(conn.sample(b, "id", 2).await.unwrap(), ["2", "3"]);
    assert_eq!(conn.sample(b, "photo", 1).await.unwrap(), ["00"]);
    conn.execute_script("INSERT INTO b (id) VALUES (1); INSERT INTO b (id) VALUES (0)")
        .await
        .unwrap();
    assert_eq!(conn.sample(b, "id", 1).await.unwrap(), ["0"]);
    drop(conn);
    drop(server);
    exec(&mut admin, &format!("DROP DATABASE {db}")).await;
}

/// Runs `steps` (SQL by the "server", whether sequence `s` moved) between snapshots of
/// `snaps`, with no blind spot on the way; then `cached` (DDL creating sequence `c` with a
/// cache, and the blind spot it must give): `c` appears, and is the one blind spot.
async fn sequence_steps<C>(
    server: &mut C,
    snaps: &mut Snapshotter,
    steps: &[(&str, bool)],
    cached: (&str, &str),
) where
    for<'c> &'c mut C: sqlx::Executor<'c>,
{
    let mut before = snaps.take().await.unwrap();
    assert_eq!(before.tables.len(), 1, "a sequence is no table");
    for (sql, want) in steps.iter().chain([&(cached.0, false)]) {
        exec(&mut *server, sql).await;
        let after = snaps.take().await.unwrap();
        let d = Diff::between(&before, &after).tables;
        let moved: Vec<&str> = d
            .iter()
            .filter(|d| d.kind == crate::objects::ObjectKind::Sequence && d.moved)
            .map(|d| d.table.as_str())
            .collect();
        let want: Vec<&str> = if *want { vec!["s"] } else { vec![] };
        assert_eq!(moved, want, "{sql}");
        let blind: Vec<&str> = snaps.blind_spots().collect();
        if *sql == cached.0 {
            assert!(d.iter().any(|d| d.table == "c" && d.created), "{d:?}");
            assert!(blind.len() == 1 && blind[0].contains(cached.1), "{blind:?}");
        } else {
            assert!(blind.is_empty(), "{sql}: {blind:?}");
        }
        before = after;
    }
}

#[tokio::test]
async fn postgres_sequences_move_and_cached_ones_are_blind_spots() {
    let Some((mut admin, schema, url)) = pg_schema("hv_seq").await else {
        return;
    };
    let mut server = PgConnection::connect(&url).await.unwrap();
    exec(
        &mut server,
        "CREATE TABLE t (id int PRIMARY KEY); CREATE SEQUENCE s; SELECT nextval('s');",
    )
    .await;
    // A serial column's sequence belongs to its table: ignoring the table ignores it.
    exec(&mut server, "CREATE TABLE log (id serial PRIMARY KEY)").await;
    let policy = Policy::default().with_ignored_table("log");
    let mut snaps = Snapshotter::new(Database::connect(&url).await.unwrap(), policy)
        .with_schemas(schema_of(&url));
    let seen = snaps
        .db()
        .sequences(&Policy::default(), &schema_of(&url))
        .await
        .unwrap();
    let owners: Vec<(&str, Option<&str>)> = seen
        .iter()
        .map(|s| (s.name.as_str(), s.owner.as_deref()))
        .collect();
    assert_eq!(owners, [("log_id_seq", Some("log")), ("s", None)]);
    // nextval writes WAL only every 32 values: the WAL marker alone would have reused the
    // last snapshot.
    sequence_steps(
        &mut server,
        &mut snaps,
        &[
            ("SELECT nextval('s')", true),
            ("SELECT currval('s')", false),
            ("SELECT setval('s', 100)", true),
            ("SELECT setval('s', 100)", false),
            ("SELECT setval('s', 100, false)", true),
        ],
        ("CREATE SEQUENCE c CACHE 20", "sequence c caches 20"),
    )
    .await;
    drop(server);
    exec(&mut admin, &format!("DROP SCHEMA {schema} CASCADE")).await;
}

#[tokio::test]
async fn mariadb_sequences_move_and_cached_ones_are_blind_spots() {
    let Some((mut admin, db, url)) = my_database("hv_seq").await else {
        return;
    };
    let mut server = MySqlConnection::connect(&url).await.unwrap();
    exec(
        &mut server,
        "CREATE TABLE t (id INT PRIMARY KEY); CREATE SEQUENCE s NOCACHE;",
    )
    .await;
    let mut snaps = Snapshotter::new(Database::connect(&url).await.unwrap(), Policy::default());
    sequence_steps(
        &mut server,
        &mut snaps,
        &[
            ("SELECT NEXTVAL(s)", true),
            ("SELECT LASTVAL(s)", false),
            ("SELECT SETVAL(s, 100)", true),
        ],
        ("CREATE SEQUENCE c", "sequence c caches 1000"),
    )
    .await;
    drop(server);
    exec(&mut admin, &format!("DROP DATABASE {db}")).await;
}

#[tokio::test]
async fn postgres_indexes_views_functions_triggers_types_are_objects() {
    use ObjectKind::*;
    let Some((mut admin, schema, url)) = pg_schema("hv_obj").await else {
        return;
    };
    let mut server = PgConnection::connect(&url).await.unwrap();
    exec(&mut server, "CREATE TABLE t (id int PRIMARY KEY, v text)").await;
    let mut snaps = Snapshotter::new(Database::connect(&url).await.unwrap(), Policy::default())
        .with_schemas(schema_of(&url));
    object_steps(
        &mut server,
        &mut snaps,
        &[
            ("CREATE INDEX t_v ON t (v)", &[(Index, "t_v", '+')]),
            ("CREATE VIEW w AS SELECT id FROM t", &[(View, "w", '+')]),
            (
                "CREATE OR REPLACE VIEW w AS SELECT id FROM t WHERE id > 1",
                &[(View, "w", '~')],
            ),
            (
                "CREATE FUNCTION f(x int) RETURNS int LANGUAGE sql AS 'SELECT x'",
                &[(Function, "f(integer)", '+')],
            ),
            (
                "CREATE FUNCTION tf() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END';
                 CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION tf()",
                &[(Function, "tf()", '+'), (Trigger, "tr on t", '+')],
            ),
            ("CREATE TYPE mood AS ENUM ('a')", &[(Type, "mood", '+')]),
            ("ALTER TYPE mood ADD VALUE 'b'", &[(Type, "mood", '~')]),
            ("DROP INDEX t_v", &[(Index, "t_v", '-')]),
            ("CREATE TABLE n (id serial PRIMARY KEY)", &[]),
            ("INSERT INTO t VALUES (1, 'x')", &[]),
        ],
    )
    .await;
    drop(server);
    exec(&mut admin, &format!("DROP SCHEMA {schema} CASCADE")).await;
}

#[tokio::test]
async fn mariadb_indexes_views_routines_triggers_are_objects() {
    use ObjectKind::*;
    let Some((mut admin, db, url)) = my_database("hv_obj").await else {
        return;
    };
    let mut server = MySqlConnection::connect(&url).await.unwrap();
    exec(&mut server, "CREATE TABLE t (id INT PRIMARY KEY, v TEXT)").await;
    let mut snaps = Snapshotter::new(Database::connect(&url).await.unwrap(), Policy::default());
    object_steps(
        &mut server,
        &mut snaps,
        &[
            ("CREATE INDEX t_v ON t (v(10))", &[(Index, "t_v on t", '+')]),
            ("CREATE VIEW w AS SELECT id FROM t", &[(View, "w", '+')]),
            (
                "CREATE FUNCTION f(x INT) RETURNS INT DETERMINISTIC RETURN x",
                &[(Function, "function f", '+')],
            ),
            (
                "CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.v = 'x'",
                &[(Trigger, "tr on t", '+')],
            ),
            ("DROP INDEX t_v ON t", &[(Index, "t_v on t", '-')]),
            ("CREATE TABLE n (id INT PRIMARY KEY)", &[]),
            ("INSERT INTO t VALUES (1, 'y')", &[]),
        ],
    )
    .await;
    drop(server);
    exec(&mut admin, &format!("DROP DATABASE {db}")).await;
}

/// A full snapshot of a 100,000-row PostgreSQL table sees every row. The time is printed,
/// not asserted.
#[tokio::test]
async fn postgres_snapshot_of_100k_rows() {
    let Some((mut admin, schema, url)) = pg_schema("hv_time").await else {
        return;
    };
    let mut server = PgConnection::connect(&url).await.unwrap();
    exec(
        &mut server,
        "CREATE TABLE events (id bigint PRIMARY KEY, kind int NOT NULL, title text NOT NULL,
            amount double precision, payload bytea, status text, at timestamptz);
         INSERT INTO events SELECT i, i % 70, 'event number ' || i, i * 0.25,
            decode(md5(i::text), 'hex'), CASE WHEN i % 3 = 0 THEN NULL ELSE 'open' END, now()
         FROM generate_series(1, 100000) i;",
    )
    .await;
    let mut s = Snapshotter::new(Database::connect(&url).await.unwrap(), Policy::default())
        .with_schemas(schema_of(&url));
    let t = std::time::Instant::now();
    assert_eq!(s.take().await.unwrap().row_count(), 100_000);
    eprintln!("PostgreSQL snapshot of 100,000 rows: {:?}", t.elapsed());
    drop(server);
    exec(&mut admin, &format!("DROP SCHEMA {schema} CASCADE")).await;
}
