//! Running the `bookings` binary as an operator does, and reading its `/metrics`.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hintaudit_test_support::scrape::Scraped;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A running `bookings` process.
pub struct Process {
    pub child: Child,
    /// The address printed in `bookings: serving http://ADDR/mcp`, if serving HTTP.
    pub http: Option<SocketAddr>,
    /// The address printed in `bookings: metrics at http://ADDR/metrics`, if any.
    pub metrics: Option<SocketAddr>,
    /// Everything it wrote on stderr so far.
    pub stderr: Arc<Mutex<String>>,
}

/// Starts `bookings` with `args` on `database_url` and waits (up to 60 s) until it says where
/// it serves: the MCP address for `--http`, else the metrics address.
pub async fn start(args: &[&str], database_url: &str) -> Process {
    start_with_env(args, database_url, &[]).await
}

/// [`start`] with these environment variables (`OTEL_*` are removed unless given here).
pub async fn start_with_env(args: &[&str], database_url: &str, env: &[(&str, &str)]) -> Process {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bookings"));
    for (name, _) in std::env::vars().filter(|(n, _)| n.starts_with("OTEL_")) {
        command.env_remove(name);
    }
    let mut child = command
        .args(args)
        .env("DATABASE_URL", database_url)
        .envs(env.iter().copied())
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start bookings");
    let stderr = Arc::new(Mutex::new(String::new()));
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let wants_http = args.contains(&"--http");
    let (mut http, mut metrics) = (None, None);
    let found = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(line)) = lines.next_line().await {
            stderr.lock().unwrap().push_str(&format!("{line}\n"));
            let addr = |prefix: &str, suffix: &str| {
                line.strip_prefix(prefix)
                    .and_then(|l| l.strip_suffix(suffix))
                    .and_then(|a| a.parse::<SocketAddr>().ok())
            };
            http = http.or(addr("bookings: serving http://", "/mcp"));
            metrics = metrics.or(addr("bookings: metrics at http://", "/metrics"));
            if (wants_http && http.is_some()) || (!wants_http && metrics.is_some()) {
                return true;
            }
        }
        false
    })
    .await;
    // Keep draining stderr, so the child never blocks on a full pipe.
    let sink = stderr.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            sink.lock().unwrap().push_str(&format!("{line}\n"));
        }
    });
    let said = stderr.lock().unwrap().clone();
    assert!(
        found == Ok(true),
        "bookings {args:?} did not come up:\n{said}"
    );
    if wants_http {
        metrics = metrics.or(http);
    }
    Process {
        child,
        http,
        metrics,
        stderr,
    }
}

impl Process {
    /// `http://ADDR/mcp`.
    pub fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.http.expect("serving HTTP"))
    }

    /// Sends SIGTERM, as a container runtime does, waits up to 10 s for the exit and asserts
    /// that it was clean (exit 0).
    pub async fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().expect("running").to_string();
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill -TERM");
        assert!(sent.success());
        match tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await {
            Ok(status) => {
                let status = status.expect("wait");
                // Give the drain task a moment to take the last lines.
                tokio::time::sleep(Duration::from_millis(50)).await;
                assert!(
                    status.success(),
                    "bookings exited with {status:?} on SIGTERM:\n{}",
                    self.stderr.lock().unwrap()
                );
                status
            }
            Err(_) => panic!(
                "bookings ignored SIGTERM for 10 s:\n{}",
                self.stderr.lock().unwrap()
            ),
        }
    }
}

/// `GET path` over HTTP/1.1: (status line, body).
pub async fn http_get(addr: SocketAddr, path: &str) -> (String, String) {
    let (status, _headers, body) = hintaudit_test_support::scrape::http_get(addr, path).await;
    (status, body)
}

/// The samples of `metric` on `/metrics`: sorted `k=v,…` labels → value.
pub async fn scrape(addr: SocketAddr, metric: &str) -> BTreeMap<String, f64> {
    let (status, body) = http_get(addr, "/metrics").await;
    assert!(status.contains(" 200 "), "{status}");
    Scraped::parse(&body).series_by_labels(metric)
}

/// The label key [`scrape`] gives a violation series.
pub fn violation(tool: &str, rule: &str, hint: &str, severity: &str) -> String {
    format!("hint={hint},rule={rule},severity={severity},tool={tool}")
}
