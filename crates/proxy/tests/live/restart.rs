//! The database restarting under a running proxy, on a private server of the test's own
//! (hintaudit-test-support's `PgServer`, `MariaDbServer`), so no other test is disturbed.
//!
//! On both backends the proxy keeps serving while the database is down (tools/list answers;
//! a call answers with whatever the upstream says), its capture comes back by itself, and a
//! planted lie made after the restart is found live. What differs is the log: PostgreSQL
//! drops the temporary slot with its session, so the capture makes a new one and what
//! committed between is counted as a gap (`hintaudit_capture_gaps_total`), the calls
//! overlapping it marked incomplete; MariaDB keeps its binary log, so the stream resumes
//! where it stopped and commits made while it was down are read and settled, not lost (a
//! file purged meanwhile is a counted gap, as on PostgreSQL).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use hintaudit_telemetry::MetricName;
use hintaudit_test_support::mariadb::MariaDbServer;
use hintaudit_test_support::postgres::PgServer;
use hintaudit_test_support::scrape::Scraped;
use serde_json::json;
use sqlx::Connection;

use crate::holds::Holds;
use crate::support::*;

/// `hintaudit proxy ARGS --http 127.0.0.1:PORT` with its stderr (the log) in `log`.
async fn proxy_logged(args: &[&str], log: &Path) -> (Child, SocketAddr) {
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let file = std::fs::File::create(log).expect("log file");
    let mut cmd = tokio::process::Command::new(hintaudit());
    cmd.arg("proxy")
        .args(args)
        .args(["--http", &addr.to_string()])
        .stdout(Stdio::null())
        .stderr(file)
        .kill_on_drop(true);
    let child = Child(cmd.spawn().expect("hintaudit starts"));
    wait_port(addr).await;
    (child, addr)
}

fn log_path(test: &str) -> PathBuf {
    std::env::temp_dir().join(format!("hintaudit-{test}-{}.log", std::process::id()))
}

/// The text of a tool's answer (its first content item), or the JSON-RPC error.
fn text(answer: &serde_json::Value) -> String {
    answer["content"][0]["text"]
        .as_str()
        .or(answer["error"].as_str())
        .unwrap_or_default()
        .to_owned()
}

fn errors(s: &Scraped) -> f64 {
    s.value(MetricName::AuditErrors.as_str(), &[("stage", "oracle")])
        .unwrap_or(0.0)
}

fn gaps(s: &Scraped, backend: &str) -> f64 {
    s.value(MetricName::CaptureGaps.as_str(), &[("backend", backend)])
        .unwrap_or(0.0)
}

/// Calls get_item until the upstream's own answer is not an error (its database connection
/// was lost with the restart; the fixture reconnects on the next call), at most 100 times.
async fn get_item_until_it_works(client: &Client) {
    for _ in 0..100 {
        let answer = call(client, "get_item", args(json!({"id": 1}))).await;
        if !text(&answer).starts_with("Error") && answer.get("error").is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("get_item never worked again after the restart");
}

/// Once get_item works again, one more call of it is found live: its read_only_write
/// violations go up by one. The scrape after it.
async fn a_lie_is_found_live(client: &Client, addr: SocketAddr) -> Scraped {
    get_item_until_it_works(client).await;
    let before = violations(&metrics(addr).await, "get_item", "read_only_write");
    call(client, "get_item", args(json!({"id": 1}))).await;
    let s = metrics(addr).await;
    assert_eq!(
        violations(&s, "get_item", "read_only_write"),
        before + 1.0,
        "{}",
        s.text
    );
    s
}

/// add_note(9) on a client of its own, in flight while the test goes on.
fn add_note_in_flight(addr: SocketAddr) -> tokio::task::JoinHandle<serde_json::Value> {
    tokio::spawn(async move {
        let c = http_client(&format!("http://{addr}/mcp")).await;
        call(&c, "add_note", args(json!({"id": 9, "text": "nine"}))).await
    })
}

/// Whether the proxy's log marks a call of `tool` as having incomplete evidence.
fn marked_incomplete(log: &Path, tool: &str) -> bool {
    let logged = std::fs::read_to_string(log).unwrap_or_default();
    logged
        .lines()
        .any(|l| l.contains(tool) && l.contains("the capture did not read the whole log"))
}

/// MariaDB: runs `sql` on a connection of the test's own, outside every call (a foreign
/// write, as the writer trigger names it).
async fn write_outside_calls(db: &str, sql: &'static str) {
    let mut conn = sqlx::MySqlConnection::connect(db).await.expect("connect");
    sqlx::query(sql)
        .execute(&mut conn)
        .await
        .expect("a write outside calls");
}

/// Runs `f` (a blocking restart, stop or start of a private server) off the async workers.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

/// PostgreSQL: the capture's slot on `db` is active and consistent (a new one after a
/// restart), polled at most 30 s.
async fn slot_active(url: &str) {
    for _ in 0..300 {
        if let Ok(mut c) = sqlx::PgConnection::connect(url).await {
            let n: Result<i64, _> = sqlx::query_scalar(
                "SELECT count(*) FROM pg_replication_slots WHERE active \
                 AND slot_name LIKE 'hintaudit_proxy_%' AND confirmed_flush_lsn IS NOT NULL",
            )
            .fetch_one(&mut c)
            .await;
            let _ = c.close().await;
            if n.is_ok_and(|n| n == 1) {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the capture made no new slot");
}

/// The fixture over HTTP on `db` behind the proxy (its log in a file), and a client of it.
struct Proxied {
    _fixture: Child,
    holds: Holds,
    _proxy: Child,
    addr: SocketAddr,
    client: Client,
    log: PathBuf,
}

/// Starts the fixture on `db` (add_note inserts, then stays in flight until the test releases
/// it: the database restarts under it) and the proxy in front of it; one get_item call before
/// any restart is judged as always.
async fn proxied(py: &str, db: &str, test: &str) -> Proxied {
    let holds = Holds::new(test);
    let hold = holds.env("add_note");
    let (fixture, upstream) = fixture_http(py, db, &[("FIXTURE_HOLD_AFTER", &hold)]).await;
    let log = log_path(test);
    let (proxy, addr) = proxy_logged(&["--upstream", &upstream, "--database", db], &log).await;
    let client = http_client(&format!("http://{addr}/mcp")).await;
    client.list_all_tools().await.expect("tools/list");
    call(&client, "get_item", args(json!({"id": 1}))).await;
    let s = metrics(addr).await;
    let found = violations(&s, "get_item", "read_only_write");
    assert_eq!(found, 1.0, "{}", s.text);
    Proxied {
        _fixture: fixture,
        holds,
        _proxy: proxy,
        addr,
        client,
        log,
    }
}

/// PostgreSQL: polls `sql` (one boolean) until it is true, at most 30 s.
async fn wait_for(conn: &mut sqlx::PgConnection, sql: &str, what: &str) {
    for _ in 0..600 {
        let done: bool = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
            .fetch_one(&mut *conn)
            .await
            .expect(what);
        if done {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never: {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgresql_restart_leaves_a_counted_gap_and_the_capture_comes_back() {
    let Some(py) = python_or_skip() else {
        return;
    };
    let test = "a_postgresql_restart";
    let Some(mut pg) = blocking(|| PgServer::start(test)) else {
        return;
    };
    let db = pg.url("postgres");
    let Proxied {
        _fixture,
        holds,
        _proxy,
        addr,
        client,
        log,
    } = proxied(py, &db, test).await;
    let s = metrics(addr).await;
    assert_eq!(gaps(&s, "postgresql"), 0.0, "{}", s.text);

    // A call in flight across a restart: its insert was read before the restart, and the
    // part of its interval no slot read makes its evidence incomplete.
    let slow = add_note_in_flight(addr);
    let mut conn = sqlx::PgConnection::connect(&db).await.expect("connect");
    let noted = "SELECT EXISTS (SELECT 1 FROM public.notes WHERE id = 9)";
    wait_for(&mut conn, noted, "add_note's insert").await;
    let read = format!(
        "SELECT coalesce(bool_and(confirmed_flush_lsn >= '{}'::pg_lsn), false) \
         FROM pg_replication_slots WHERE slot_name LIKE 'hintaudit_proxy_%'",
        sqlx::query_scalar::<_, String>("SELECT pg_current_wal_flush_lsn()::text")
            .fetch_one(&mut conn)
            .await
            .expect("the flush position")
    );
    wait_for(&mut conn, &read, "the capture read past the insert").await;
    drop(conn);
    blocking(|| pg.restart());
    holds.release_all();
    let noted = slow.await.expect("add_note answered");
    assert_eq!(text(&noted), "Note added", "{noted}");

    // The proxy serves on; the capture makes a new slot by itself; a lie after it is live.
    client
        .list_all_tools()
        .await
        .expect("tools/list after the restart");
    slot_active(&db).await;
    let s = a_lie_is_found_live(&client, addr).await;
    assert_eq!(rows(&s, "add_note", "notes", "insert"), 1.0, "{}", s.text);
    assert_eq!(gaps(&s, "postgresql"), 1.0, "{}", s.text);
    assert!(
        errors(&s) >= 1.0,
        "the lost slot is an audit error: {}",
        s.text
    );

    // Down: the proxy still answers tools/list, and a call gets the upstream's own answer.
    blocking(|| pg.stop());
    client
        .list_all_tools()
        .await
        .expect("tools/list while down");
    let down = call(&client, "get_item", args(json!({"id": 1}))).await;
    assert!(text(&down).starts_with("Error"), "{down}");
    blocking(|| pg.start_again());
    slot_active(&db).await;
    let s = a_lie_is_found_live(&client, addr).await;
    assert_eq!(
        gaps(&s, "postgresql"),
        2.0,
        "one gap per lost slot: {}",
        s.text
    );
    assert_eq!(commits(&s, "dropped"), 0.0, "{}", s.text);
    let lag = s.value(
        MetricName::CaptureLag.as_str(),
        &[("backend", "postgresql")],
    );
    assert!(lag.is_some(), "{}", s.text);

    assert!(
        marked_incomplete(&log, "add_note"),
        "add_note overlapped the gap: marked incomplete"
    );
    let counted = s.value(
        MetricName::EvidenceIncomplete.as_str(),
        &[("source", "postgresql")],
    );
    assert!(
        counted.is_some_and(|n| n >= 1.0),
        "add_note's incomplete evidence is counted: {}",
        s.text
    );
    drop(client);
    let _ = std::fs::remove_file(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mariadb_restart_resumes_the_binary_log_and_loses_nothing() {
    let Some(py) = python_or_skip() else {
        return;
    };
    let test = "a_mariadb_restart";
    let Some(mut my) = blocking(|| MariaDbServer::start(test)) else {
        return;
    };
    let mut admin = sqlx::MySqlConnection::connect(&my.url(""))
        .await
        .expect("connect");
    sqlx::raw_sql("CREATE DATABASE app")
        .execute(&mut admin)
        .await
        .expect("database");
    drop(admin);
    let db = my.url("app");
    let Proxied {
        _fixture,
        holds,
        _proxy,
        addr,
        client,
        log,
    } = proxied(py, &db, test).await;

    // A call in flight across the restart: its insert is its own, and nothing is missing.
    let slow = add_note_in_flight(addr);
    let mut conn = sqlx::MySqlConnection::connect(&db).await.expect("connect");
    for _ in 0..300 {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM notes WHERE id = 9")
            .fetch_one(&mut conn)
            .await
            .expect("count");
        if n == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(conn);
    blocking(|| my.restart());
    // add_note answers once the stream is back (a write of this test's own, read as foreign),
    // so that its end is read on the resumed stream within the capture's wait.
    let before = metrics(addr).await;
    write_outside_calls(&db, "INSERT INTO notes (id, text) VALUES (99, 'resumed?')").await;
    until(addr, |s| {
        commits(s, "foreign") > commits(&before, "foreign")
    })
    .await;
    holds.release_all();
    let noted = slow.await.expect("add_note answered");
    assert_eq!(text(&noted), "Note added", "{noted}");

    // Down: the proxy answers tools/list, and a call gets the upstream's own answer; a
    // write made as soon as it is back, before the stream has resumed, is read when it does.
    blocking(|| my.stop());
    client
        .list_all_tools()
        .await
        .expect("tools/list while down");
    let down = call(&client, "get_item", args(json!({"id": 1}))).await;
    assert!(text(&down).starts_with("Error"), "{down}");
    let before = metrics(addr).await;
    blocking(|| my.start_again());
    write_outside_calls(&db, "INSERT INTO notes (id, text) VALUES (100, 'cron')").await;
    // Another writer's (this test's connection): foreign, as the writer trigger names it.
    let s = until(addr, |s| {
        commits(s, "foreign") > commits(&before, "foreign")
    })
    .await;
    assert_eq!(
        commits(&s, "foreign"),
        commits(&before, "foreign") + 1.0,
        "the write while the stream was down is read: {}",
        s.text
    );

    let s = a_lie_is_found_live(&client, addr).await;
    assert_eq!(rows(&s, "add_note", "notes", "insert"), 1.0, "{}", s.text);
    assert_eq!(
        gaps(&s, "mysql"),
        0.0,
        "the binary log was kept: {}",
        s.text
    );
    assert_eq!(commits(&s, "dropped"), 0.0, "{}", s.text);
    assert!(
        errors(&s) >= 1.0,
        "the lost stream is an audit error: {}",
        s.text
    );
    let lag = s.value(MetricName::CaptureLag.as_str(), &[("backend", "mysql")]);
    assert!(lag.is_some(), "{}", s.text);
    assert!(
        !marked_incomplete(&log, "add_note"),
        "add_note's log was all read"
    );
    let counted = s.value(
        MetricName::EvidenceIncomplete.as_str(),
        &[("source", "mysql")],
    );
    assert_eq!(counted, Some(0.0), "nothing was lost: {}", s.text);

    // The file the stream would resume from is purged while no client can connect: it goes
    // on from the log's end, and the part it could not read is a counted gap.
    blocking(|| my.offline_sql("PURGE BINARY LOGS BEFORE NOW() + INTERVAL 1 DAY"));
    blocking(|| my.start_again());
    let s = until(addr, |s| gaps(s, "mysql") >= 1.0).await;
    assert_eq!(
        gaps(&s, "mysql"),
        1.0,
        "the purged file is a gap: {}",
        s.text
    );
    a_lie_is_found_live(&client, addr).await;
    drop(client);
    let _ = std::fs::remove_file(&log);
}
