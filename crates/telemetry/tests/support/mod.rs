//! Shared parts of the telemetry tests: an HTTP scrape over a real socket, a text-format
//! parser (prometheus-parse), and synthetic audit events.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use hintaudit_core::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `GET path` over HTTP/1.1 on a fresh connection: (status line, headers, body).
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
    pub text: String,
    pub scrape: prometheus_parse::Scrape,
}

impl Scraped {
    pub fn parse(text: &str) -> Scraped {
        let lines = text.lines().map(|l| Ok(l.to_owned()));
        let scrape = prometheus_parse::Scrape::parse(lines).expect("valid text format");
        Scraped {
            text: text.to_owned(),
            scrape,
        }
    }

    /// Samples of `metric` (exact name as exposed).
    pub fn samples<'a>(
        &'a self,
        metric: &'a str,
    ) -> impl Iterator<Item = &'a prometheus_parse::Sample> {
        self.scrape
            .samples
            .iter()
            .filter(move |s| s.metric == metric)
    }

    /// The value of the one sample of `metric` whose labels are exactly `labels`.
    pub fn value(&self, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let matching: Vec<f64> = self
            .samples(metric)
            .filter(|s| {
                s.labels.len() == labels.len()
                    && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v))
            })
            .map(|s| match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => f64::NAN,
            })
            .collect();
        assert!(matching.len() <= 1, "{metric} {labels:?} twice");
        matching.first().copied()
    }

    /// The value of one sample (NaN for histograms and summaries).
    pub fn number(&self, sample: &prometheus_parse::Sample) -> f64 {
        match sample.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            _ => f64::NAN,
        }
    }

    /// Every sample of `metric` as `(labels "k=v,…" sorted, value)`.
    pub fn series(&self, metric: &str) -> std::collections::BTreeMap<String, f64> {
        self.samples(metric)
            .map(|s| {
                let mut labels: Vec<String> =
                    s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
                labels.sort();
                (labels.join(","), self.number(s))
            })
            .collect()
    }

    /// Distinct values of label `name` over every sample of every hintaudit metric.
    pub fn label_values(&self, name: &str) -> std::collections::BTreeSet<String> {
        self.scrape
            .samples
            .iter()
            .filter(|s| s.metric.starts_with("hintaudit_"))
            .filter_map(|s| s.labels.get(name).map(str::to_owned))
            .collect()
    }
}

pub fn hints(
    ro: Option<bool>,
    d: Option<bool>,
    i: Option<bool>,
    ow: Option<bool>,
) -> DeclaredHints {
    DeclaredHints {
        read_only: ro,
        destructive: d,
        idempotent: i,
        open_world: ow,
    }
}

pub fn statement(op: Operation, table: &str) -> StatementEffect {
    StatementEffect::new(op, vec![table.to_owned()])
}

pub fn row(table: &str, op: RowOperation, committed: bool) -> RowChange {
    RowChange {
        table: table.to_owned(),
        operation: op,
        statement: None,
        committed,
        image: RowImage::Unknown,
        nested: None,
        row_id: None,
    }
}

pub fn finding(tool: &str, rule: Rule, hint: Hint) -> Finding {
    Finding::new(tool, rule, hint, Confidence::Confirmed, "test evidence")
}

/// Records one call.
#[allow(clippy::too_many_arguments)]
pub fn call(
    recorder: &impl Recorder,
    tool: &str,
    known_tool: bool,
    hints: DeclaredHints,
    status: CallStatus,
    millis: u64,
    effect: &Effect,
    findings: Vec<Finding>,
    advice: &[Advice],
) {
    let verdict = Verdict {
        findings,
        ..Default::default()
    };
    let report = CallReport {
        tool,
        known_tool,
        hints,
        status,
        duration: Duration::from_millis(millis),
        effect,
        verdict: &verdict,
        advice,
    };
    recorder.record(&AuditEvent::Call(&report));
}

pub fn listing(recorder: &impl Recorder, tool: &str, hints: DeclaredHints, findings: &[Finding]) {
    recorder.record(&AuditEvent::Listing {
        tool,
        hints,
        findings,
    });
}

/// Whether tests that need an external tool must not skip (CI).
pub fn required(tool_var: &str) -> bool {
    ["HINTAUDIT_REQUIRE_ALL", tool_var]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|x| x == "1" || x.eq_ignore_ascii_case("true")))
}

pub mod mcp;
pub mod otlp;
