//! A `/metrics` scrape over a real socket, and the exposition parsed with a text-format
//! parser (prometheus-parse).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

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

/// A sample's labels as sorted `(name, value)` pairs.
pub type Labels = Vec<(String, String)>;

/// Sorted `(name, value)` label pairs, to compare with [`Scraped::series`].
pub fn labels(pairs: &[(&str, &str)]) -> Labels {
    let mut v: Labels = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    v.sort();
    v
}

/// A parsed exposition.
pub struct Scraped {
    /// The text as scraped.
    pub text: String,
    /// Its samples.
    pub scrape: prometheus_parse::Scrape,
}

impl Scraped {
    /// Parses the text format; panics when it is not valid.
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

    /// The value of the one sample of `metric` whose labels are exactly `labels`; panics when
    /// there are two.
    pub fn value(&self, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let matching: Vec<f64> = self
            .samples(metric)
            .filter(|s| {
                s.labels.len() == labels.len()
                    && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v))
            })
            .map(|s| self.number(s))
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

    /// `(labels, value)` of every sample of `metric`, in exposition order.
    pub fn series(&self, metric: &str) -> Vec<(Labels, f64)> {
        self.samples(metric)
            .map(|s| {
                let mut labels: Labels = s
                    .labels
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                labels.sort();
                (labels, self.number(s))
            })
            .collect()
    }

    /// Every sample of `metric` keyed by its labels written `k=v,…` (sorted).
    pub fn series_by_labels(&self, metric: &str) -> BTreeMap<String, f64> {
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
    pub fn label_values(&self, name: &str) -> BTreeSet<String> {
        self.scrape
            .samples
            .iter()
            .filter(|s| s.metric.starts_with("hintaudit_"))
            .filter_map(|s| s.labels.get(name).map(str::to_owned))
            .collect()
    }
}
