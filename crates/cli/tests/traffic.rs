//! `hintaudit traffic` as the compose stack runs it, against audited bookings servers on
//! loopback; and the demo server's zero series, which the traffic's first violations land on.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::process::{Output, Stdio};
use std::time::Duration;

use bookings::{PLANTED_CALL_FINDINGS, PLANTED_OPEN_WORLD_FINDINGS};
use hintaudit_cli::demo::{DemoArgs, DemoServer, bookings_plan, connect, drive, start};
use hintaudit_core::Rule;
use hintaudit_telemetry::{MetricName, encode_text};
use hintaudit_test_support::scrape::Scraped;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const VIOLATIONS: &str = MetricName::HintViolations.as_str();
const CALLS: &str = MetricName::ToolCalls.as_str();
/// Calls in a traffic round against the bookings example, every one answered without error:
/// the first, and the later ones, which also cancel the appointment the previous round kept.
const FIRST_ROUND_CALLS: usize = 16;
const ROUND_CALLS: usize = 18;

/// An audited bookings server as the demo serves it, on `database_url` (a fresh SQLite file
/// when `None`), on a free loopback port.
async fn server(database_url: Option<String>) -> DemoServer {
    let args = DemoArgs {
        serve: false,
        addr: "127.0.0.1:0".parse().unwrap(),
        database_url,
        config: None,
        mode: None,
    };
    start(&args).await.expect("the demo server starts")
}

/// The samples of `metric`, `k=v,…` sorted → value, from the recorder's exposition.
fn series(server: &DemoServer, metric: &str) -> BTreeMap<String, f64> {
    Scraped::parse(&encode_text(server.metrics.registry())).series_by_labels(metric)
}

/// The violation series a planted finding increments: the rule's hint and severity.
fn planted_key(tool: &str, rule: &str) -> String {
    let r = Rule::parse(rule).expect("a rule id");
    let hint = r.hints()[0].spec_name();
    format!(
        "hint={hint},rule={rule},severity={},tool={tool}",
        r.severity().as_str()
    )
}

fn keys(m: &BTreeMap<String, f64>) -> BTreeSet<String> {
    m.keys().cloned().collect()
}

/// The planted calls of the bookings example increment only series that were there, at 0,
/// before any client: `increase()` sees every first violation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_violations_land_on_series_that_existed_at_zero() {
    let s = server(None).await;
    let before = series(&s, VIOLATIONS);
    assert!(before.values().all(|v| *v == 0.0), "{before:#?}");
    for (tool, rule) in PLANTED_CALL_FINDINGS {
        let key = planted_key(tool, rule);
        assert!(before.contains_key(&key), "{key} missing before any call");
    }

    let client = connect(&s.server.url).await.unwrap();
    drive(&client, &bookings_plan()).await.unwrap();
    client.cancel().await.ok();

    let after = series(&s, VIOLATIONS);
    assert_eq!(keys(&after), keys(&before), "no new violation series");
    let incremented: BTreeSet<String> = after
        .iter()
        .filter(|(_, v)| **v > 0.0)
        .map(|(k, _)| k.clone())
        .collect();
    // The demo's plan also notifies a patient through the outside service.
    let planted: BTreeSet<String> = PLANTED_CALL_FINDINGS
        .iter()
        .chain(PLANTED_OPEN_WORLD_FINDINGS)
        .map(|(t, r)| planted_key(t, r))
        .collect();
    assert_eq!(incremented, planted);
    s.server.shutdown().await;
}

/// Runs `hintaudit traffic` with `args` to the end (at most 120 s).
async fn traffic(args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_hintaudit"))
        .arg("traffic")
        .args(args)
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start hintaudit traffic");
    tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("traffic ends within 120 s")
        .expect("traffic output")
}

/// Two replicas on one database, four rounds: rounds alternate between them, every round
/// breaks every planted rule once more (on the shared database too), and traffic exits 0
/// after its rounds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rounds_go_to_each_url_in_turn_and_break_every_planted_rule_each_time() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("shared.db").display()
    );
    let a = server(Some(url.clone())).await;
    let b = server(Some(url)).await;
    let (ua, ub) = (a.server.url.clone(), b.server.url.clone());
    let out = traffic(&[
        "--url",
        &ua,
        "--url",
        &ub,
        "--rounds",
        "4",
        "--interval",
        "0.1",
    ])
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}\n{stdout}\n{stderr}", out.status);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "one line per round:\n{stdout}");
    let rounds = [
        (1, &ua, FIRST_ROUND_CALLS),
        (2, &ub, ROUND_CALLS),
        (3, &ua, ROUND_CALLS),
        (4, &ub, ROUND_CALLS),
    ];
    for (line, (n, url, want)) in lines.iter().zip(rounds) {
        let prefix = format!("traffic: round {n}/4 {url}: ");
        let counts = line
            .strip_prefix(&prefix)
            .unwrap_or_else(|| panic!("{line}"));
        assert!(counts.ends_with(" calls, 0 errors"), "{line}");
        let calls: usize = counts.split(' ').next().unwrap().parse().unwrap();
        assert_eq!(calls, want, "{line}");
    }

    let servers = [
        ("first", &a, FIRST_ROUND_CALLS + ROUND_CALLS),
        ("second", &b, 2 * ROUND_CALLS),
    ];
    for (name, s, want) in servers {
        let calls: f64 = series(s, CALLS).values().sum();
        assert_eq!(calls, want as f64, "the {name} server saw its two rounds");
        let violations = series(s, VIOLATIONS);
        for (tool, rule) in PLANTED_CALL_FINDINGS {
            let key = planted_key(tool, rule);
            let v = violations.get(&key).copied().unwrap_or_default();
            assert_eq!(v, 2.0, "{name} server, once per round: {key}");
        }
        // Honest tools stay clean.
        let clean = violations.iter().filter(|(k, v)| {
            **v > 0.0
                && !PLANTED_CALL_FINDINGS
                    .iter()
                    .any(|(t, r)| **k == planted_key(t, r))
        });
        assert_eq!(clean.count(), 0, "{name} server: {violations:#?}");
    }
    a.server.shutdown().await;
    b.server.shutdown().await;
}

/// A server that is not up yet is retried, with a message, and driven once it is up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_is_not_up_yet_is_waited_for() {
    let free: SocketAddr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let url = format!("http://{free}/mcp");
    let run = tokio::spawn({
        let url = url.clone();
        async move { traffic(&["--url", &url, "--rounds", "1"]).await }
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let args = DemoArgs {
        serve: false,
        addr: free,
        database_url: None,
        config: None,
        mode: None,
    };
    let s = start(&args).await.expect("the port is still free");
    let out = run.await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!("traffic: {url} is not up yet (")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("traffic: {url} is up")),
        "{stderr}"
    );
    assert!(
        stdout.starts_with(&format!("traffic: round 1/1 {url}: ")),
        "{stdout}"
    );
    let calls: f64 = series(&s, CALLS).values().sum();
    assert_eq!(calls, FIRST_ROUND_CALLS as f64);
    s.server.shutdown().await;
}

/// Without --rounds it runs until SIGTERM, then exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_rounds_it_runs_until_sigterm() {
    let s = server(None).await;
    let mut child = Command::new(env!("CARGO_BIN_EXE_hintaudit"))
        .args(["traffic", "--url", &s.server.url, "--interval", "0.2"])
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for n in 1..=2 {
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .expect("a round within 60 s")
            .unwrap()
            .unwrap();
        assert!(line.starts_with(&format!("traffic: round {n} ")), "{line}");
    }
    let pid = child.id().unwrap().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("stops within 10 s of SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
    s.server.shutdown().await;
}

#[test]
fn usage_errors_exit_2() {
    // (arguments, what the error names)
    let rows: [(&[&str], &str); 6] = [
        (&[], "--url"),
        (
            &["--url", "http://127.0.0.1:1/mcp", "--interval", "soon"],
            "--interval",
        ),
        (&["--url", "http://127.0.0.1:1/mcp", "--rounds", "-1"], "-1"),
        // Beyond what a Duration holds: a usage error, not a panic.
        (
            &["--url", "http://127.0.0.1:1/mcp", "--start-after", "1e30"],
            "--start-after",
        ),
        (
            &["--url", "http://127.0.0.1:1/mcp", "--interval", "1e30"],
            "--interval",
        ),
        // Not an MCP endpoint URL: refused at once, not retried for a minute.
        (
            &["--url", "not-a-url", "--rounds", "1"],
            "http:// or https://",
        ),
    ];
    for (args, named) in rows {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_hintaudit"))
            .arg("traffic")
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(named), "{args:?}: {stderr}");
    }
}
