//! `hintaudit demo` and its telemetry, run as a user runs it: `--serve` exposes `/metrics`
//! beside `/mcp` on loopback, and an OTLP endpoint that is down never fails the demo.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn http_get(addr: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).expect("read");
    raw
}

#[test]
fn serve_exposes_metrics_beside_mcp() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hintaudit"))
        .args(["demo", "--serve", "--addr", "127.0.0.1:0"])
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start hintaudit demo --serve");
    let stdout = child.stdout.take().unwrap();
    let mut metrics_url = None;
    let mut mcp_url = None;
    let started = Instant::now();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(url) = line.strip_prefix("hintaudit: Prometheus metrics at ") {
            metrics_url = Some(url.to_owned());
        }
        if let Some(url) = line.strip_prefix("hintaudit: serving the audited bookings server at ") {
            mcp_url = Some(url.to_owned());
        }
        if (metrics_url.is_some() && mcp_url.is_some())
            || started.elapsed() > Duration::from_secs(60)
        {
            break;
        }
    }
    let metrics_url = metrics_url.expect("the demo prints the metrics URL");
    let mcp_url = mcp_url.expect("the demo prints the MCP URL");
    let addr = metrics_url
        .strip_prefix("http://")
        .and_then(|u| u.strip_suffix("/metrics"))
        .expect("http://ADDR/metrics");
    assert!(addr.starts_with("127.0.0.1:"), "loopback only: {addr}");
    assert_eq!(
        mcp_url,
        format!("http://{addr}/mcp"),
        "/metrics beside /mcp"
    );
    let answer = http_get(addr, "/metrics");
    let _ = child.kill();
    let _ = child.wait();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.contains(&format!(
            r#"{}{{hint="readOnlyHint",rule="read_only_write",severity="critical",tool="get_appointment"}} 1"#,
            hintaudit_telemetry::MetricName::HintViolations
        )),
        "{answer}"
    );
    // An honest read-only tool: its violation series is there, at 0, for increase() to see
    // a first violation.
    assert!(
        answer.contains(&format!(
            r#"{}{{hint="readOnlyHint",rule="read_only_write",severity="critical",tool="list_appointments"}} 0"#,
            hintaudit_telemetry::MetricName::HintViolations
        )),
        "{answer}"
    );
}

#[test]
fn a_collector_that_is_down_never_fails_the_demo() {
    // A port that was just free: nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hintaudit"))
        .arg("demo")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{closed}"))
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .env("OTEL_BSP_SCHEDULE_DELAY", "10")
        .env("NO_COLOR", "1")
        .output()
        .expect("run hintaudit demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(summary.contains("17 calls judged"), "{stdout}");
    // The first export failure is logged once (and counted as an audit error at stage export).
    assert!(stderr.contains("trace export failed"), "{stderr}");
    assert!(stderr.contains("stage=\"export\""), "{stderr}");
}
