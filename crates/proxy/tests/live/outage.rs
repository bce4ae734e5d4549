//! What an operator sees when the database goes away under a running proxy: one audit error
//! per outage, however many times the capture tries again meanwhile, and one "recovered"
//! line when it comes back (design.md, *6. Behaviour under trouble*). On a private server of
//! the test's own (hintaudit-test-support's `PgServer`, `MariaDbServer`), stopped long enough
//! for several failed tries (counted in the proxy's DEBUG log, not by a clock), then started
//! again.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hintaudit_test_support::mariadb::MariaDbServer;
use hintaudit_test_support::postgres::PgServer;
use serde_json::json;

use crate::support::*;

/// The proxy's log line when an outage starts (counted), when a try fails during one (DEBUG)
/// and when it ends.
const STARTS: &str = "(trying again; until it works";
const STILL: &str = "(still failing)";
const RECOVERED: &str = "capture: recovered after";

/// Failed tries seen in the log before the database is started again.
const TRIES: usize = 3;

/// The proxy's log filter: its own lines at DEBUG, so that each failed try is seen.
const DEBUG: (&str, &str) = ("RUST_LOG", "info,rmcp=off,sqlx=warn,hintaudit::proxy=debug");

/// Lines of `log` that contain `text`.
fn lines(log: &Path, text: &str) -> usize {
    let logged = std::fs::read_to_string(log).unwrap_or_default();
    logged.lines().filter(|l| l.contains(text)).count()
}

/// Polls the log until `text` is in it `n` times, at most 60 s.
async fn logged(log: &Path, text: &str, n: usize) {
    for _ in 0..600 {
        if lines(log, text) >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let all = std::fs::read_to_string(log).unwrap_or_default();
    panic!("the proxy never logged {text:?} {n} times:\n{all}");
}

/// Calls get_item until its answer is not an error (the fixture's connection came back),
/// then once more: that call's read-only lie is found, so the capture reads again.
async fn capture_works(client: &Client, addr: SocketAddr) {
    for _ in 0..100 {
        let answer = call(client, "get_item", args(json!({"id": 1}))).await;
        let text = answer["content"][0]["text"].as_str().unwrap_or("Error");
        if !text.starts_with("Error") && answer.get("error").is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let before = violations(&metrics(addr).await, "get_item", "read_only_write");
    call(client, "get_item", args(json!({"id": 1}))).await;
    let s = metrics(addr).await;
    let after = violations(&s, "get_item", "read_only_write");
    assert_eq!(after, before + 1.0, "{}", s.text);
}

/// A private database server the test stops and starts.
trait Server {
    fn stop(&mut self);
    fn start_again(&mut self);
}

impl Server for PgServer {
    fn stop(&mut self) {
        PgServer::stop(self);
    }
    fn start_again(&mut self) {
        PgServer::start_again(self);
    }
}

impl Server for MariaDbServer {
    fn stop(&mut self) {
        MariaDbServer::stop(self);
    }
    fn start_again(&mut self) {
        MariaDbServer::start_again(self);
    }
}

/// The proxy in front of the fixture on `db`, through an outage of `server`: stopped, a call
/// made while it is down, several failed tries, started again. Returns the audit errors the
/// outage added and the proxy's log.
async fn through_an_outage(
    py: &str,
    server: &mut impl Server,
    db: &str,
    test: &str,
) -> (f64, PathBuf) {
    let (_fixture, upstream) = fixture_http(py, db, &[]).await;
    let log = std::env::temp_dir().join(format!("hintaudit-{test}-{}.log", std::process::id()));
    let proxy_args = ["--upstream", &upstream, "--database", db];
    let (_proxy, addr) = proxy_logged(&proxy_args, &[DEBUG], &log).await;
    let client = http_client(&format!("http://{addr}/mcp")).await;
    client.list_all_tools().await.expect("tools/list");
    capture_works(&client, addr).await;
    let before = audit_errors(&metrics(addr).await);

    blocking(|| server.stop());
    // A call while down: its end position cannot be read either.
    let down = call(&client, "get_item", args(json!({"id": 1}))).await;
    assert!(down.to_string().contains("Error"), "{down}");
    logged(&log, STILL, TRIES).await;
    blocking(|| server.start_again());
    logged(&log, RECOVERED, 1).await;
    capture_works(&client, addr).await;

    let after = audit_errors(&metrics(addr).await);
    drop(client);
    (after - before, log)
}

/// What the log says of one outage: started once, tried again, recovered once.
fn one_outage_logged(log: &Path) {
    let all = std::fs::read_to_string(log).unwrap_or_default();
    // The capture's own line (the audit error's first-of-its-stage line quotes it too).
    let starts = all
        .lines()
        .filter(|l| l.contains(STARTS) && !l.contains("audit failure"))
        .count();
    assert_eq!(starts, 1, "{all}");
    assert!(lines(log, STILL) >= TRIES, "{all}");
    assert_eq!(lines(log, RECOVERED), 1, "{all}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgresql_outage_is_one_audit_error_and_one_recovery() {
    let Some(py) = python_or_skip() else {
        return;
    };
    let test = "an_outage_pg";
    let Some(mut pg) = blocking(|| PgServer::start(test)) else {
        return;
    };
    let db = pg.url("postgres");
    let (errors, log) = through_an_outage(py, &mut pg, &db, test).await;
    assert_eq!(errors, 1.0, "one error for the outage");
    one_outage_logged(&log);
    let _ = std::fs::remove_file(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mariadb_outage_is_one_audit_error_and_one_recovery() {
    let Some(py) = python_or_skip() else {
        return;
    };
    let test = "an_outage_mariadb";
    let Some(mut my) = blocking(|| MariaDbServer::start(test)) else {
        return;
    };
    let db = mariadb_database(&my, "app").await;
    let (errors, log) = through_an_outage(py, &mut my, &db, test).await;
    assert_eq!(errors, 1.0, "one error for the outage");
    one_outage_logged(&log);
    let _ = std::fs::remove_file(&log);
}
