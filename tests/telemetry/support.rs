//! Shared parts: an HTTP scrape over a real socket, a parsed exposition, promtool.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::process::{Command, Stdio};

use hintaudit_cli::demo::{DemoArgs, DemoRun, run_once};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Runs the demo once on a fresh SQLite file; the server keeps running.
pub async fn demo() -> DemoRun {
    let args = DemoArgs {
        serve: false,
        addr: "127.0.0.1:0".parse().expect("an address"),
        database_url: None,
    };
    run_once(&args).await.expect("the demo runs")
}

/// `GET path` over HTTP/1.1 on a fresh connection: (status line, lower-cased headers, body).
pub async fn http_get(addr: SocketAddr, path: &str) -> (String, String, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.expect("read");
    let raw = String::from_utf8(raw).expect("utf-8 response");
    let (head, body) = raw.split_once("\r\n\r\n").expect("a head and a body");
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    (
        status.to_owned(),
        headers.to_ascii_lowercase(),
        body.to_owned(),
    )
}

/// A parsed exposition.
pub struct Scraped {
    pub scrape: prometheus_parse::Scrape,
}

impl Scraped {
    pub fn parse(text: &str) -> Scraped {
        let lines = text.lines().map(|l| Ok(l.to_owned()));
        Scraped {
            scrape: prometheus_parse::Scrape::parse(lines).expect("valid text format"),
        }
    }

    /// `(labels as sorted (name, value) pairs, value)` of every sample of `metric`.
    pub fn series(&self, metric: &str) -> Vec<(Vec<(String, String)>, f64)> {
        self.scrape
            .samples
            .iter()
            .filter(|s| s.metric == metric)
            .map(|s| {
                let mut labels: Vec<(String, String)> = s
                    .labels
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                labels.sort();
                let value = match s.value {
                    prometheus_parse::Value::Counter(v)
                    | prometheus_parse::Value::Gauge(v)
                    | prometheus_parse::Value::Untyped(v) => v,
                    _ => f64::NAN,
                };
                (labels, value)
            })
            .collect()
    }

    /// Distinct values of label `name` over every hintaudit sample.
    pub fn label_values(&self, name: &str) -> BTreeSet<String> {
        self.scrape
            .samples
            .iter()
            .filter(|s| s.metric.starts_with("hintaudit_"))
            .filter_map(|s| s.labels.get(name).map(str::to_owned))
            .collect()
    }
}

/// Sorted `(name, value)` label pairs.
pub fn labels(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    v.sort();
    v
}

/// Whether CI demands a tool that a developer's machine may lack.
pub fn required(tool_var: &str) -> bool {
    ["HINTAUDIT_REQUIRE_ALL", tool_var]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|x| x == "1" || x.eq_ignore_ascii_case("true")))
}

/// Runs `promtool check metrics` on `text`: `None` when promtool is not installed (and not
/// required), else its verdict and remarks.
pub fn promtool_check(text: &str) -> Option<(bool, String)> {
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) if !required("HINTAUDIT_REQUIRE_PROMTOOL") => {
            println!(
                "SKIPPED promtool check: promtool not runnable ({e}); it ships in Prometheus's \
                 Debian package (apt-get install prometheus)"
            );
            return None;
        }
        Err(e) => panic!("promtool is required (HINTAUDIT_REQUIRE_PROMTOOL) but not runnable: {e}"),
    };
    use std::io::Write;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(text.as_bytes()).expect("write to promtool");
    }
    let out = child.wait_with_output().expect("promtool runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some((out.status.success(), said))
}
