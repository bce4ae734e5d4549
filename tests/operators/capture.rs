//! The fleet dashboard's capture row against a real `hintaudit proxy`: the proxy fronts the
//! bookings example (over stdio) on a fresh PostgreSQL database with `wal_level = logical`,
//! a real Prometheus scrapes the proxy's `/metrics` every second, and every panel that reads
//! the capture's metrics returns data, with the proxied call's commit counted as attributed.
//! Only the proxy exports these metrics, so the stack test (in-process replicas) leaves
//! those panels to this one ([`is_proxy_only`]).

use std::net::SocketAddr;
use std::process::{Command, Stdio};

use hintaudit_cli::demo::connect;
use hintaudit_telemetry::MetricName;
use hintaudit_test_support::workspace_bin;
use serde_json::json;

use crate::dashboards::{PanelQuery, panel_queries};
use crate::servers::{Prometheus, free_port};
use crate::stack::{Api, Database, eventually, value_of};
use crate::support::{available, repo_path, runs};

/// The metrics only `hintaudit proxy` exports: its capture's.
const PROXY_ONLY: [MetricName; 5] = [
    MetricName::CaptureLag,
    MetricName::CaptureCommits,
    MetricName::CaptureGaps,
    MetricName::CapturePendingCalls,
    MetricName::CaptureFindingLatency,
];

/// Whether a panel query reads a metric only `hintaudit proxy` exports.
pub fn is_proxy_only(q: &PanelQuery) -> bool {
    PROXY_ONLY.iter().any(|m| q.expr.contains(m.as_str()))
}

/// `hintaudit proxy --stdio bookings --database URL --http ADDR`, killed on drop.
struct Proxy(std::process::Child);

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Proxy {
    fn start(database_url: &str, addr: SocketAddr) -> Proxy {
        let bookings = workspace_bin("bookings", "bookings");
        let upstream = format!("DATABASE_URL={database_url} {} --stdio", bookings.display());
        let child = Command::new(workspace_bin("hintaudit-cli", "hintaudit"))
            .args(["proxy", "--stdio", &upstream, "--database", database_url])
            .args(["--http", &addr.to_string()])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("hintaudit proxy starts");
        Proxy(child)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_capture_row_shows_a_real_proxy() {
    if !available(
        "prometheus",
        runs("prometheus", &["--version"]),
        "apt-get install prometheus",
    ) {
        return;
    }
    let Some(db) = Database::create().await else {
        return;
    };
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let _proxy = Proxy::start(&db.url, addr);
    let mcp = format!("http://{addr}/mcp");
    let client = eventually(60, "the proxy serves /mcp", || async {
        connect(&mcp).await.ok()
    })
    .await;
    // No Alertmanager: alerts have nowhere to go, and none is looked at here.
    let rules = repo_path("deploy/prometheus/rules/hintaudit.rules.yaml");
    let prom = Prometheus::start(&[addr], &rules, "127.0.0.1:9").await;
    let api = Api {
        http: reqwest::Client::new(),
        url: prom.url.clone(),
    };

    // Scraped once before the write, so the counters' increase starts from their zero series.
    let zero = r#"hintaudit_capture_commits_total{attribution="attributed"} == 0"#;
    eventually(
        30,
        "the proxy scraped with its capture's zero series",
        || async { (api.try_query(zero).await.ok()?.len() == 1).then_some(()) },
    )
    .await;

    // One write through the proxy: a commit attributed to the one call in flight.
    let args = json!({"name": "Capture Row", "email": "capture-row@example.org"});
    let params = rmcp::model::CallToolRequestParams::new("add_patient")
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    client.call_tool(params).await.expect("add_patient answers");
    client.cancel().await.ok();
    let attributed = r#"hintaudit_capture_commits_total{attribution="attributed"} >= 1"#;
    eventually(30, "the attributed commit scraped", || async {
        (api.try_query(attributed).await.ok()?.len() == 1).then_some(())
    })
    .await;

    let instance = addr.to_string();
    let queries: Vec<PanelQuery> = panel_queries(&[("instance", &instance)])
        .into_iter()
        .filter(is_proxy_only)
        .collect();
    assert!(
        queries.len() >= 4 && queries.iter().all(|q| q.dashboard == "hintaudit-fleet"),
        "the fleet dashboard's capture row: {:?}",
        queries.iter().map(|q| &q.title).collect::<Vec<_>>()
    );
    for q in &queries {
        let result = eventually(30, &format!("data for {}", q.title), || async {
            let r = api.try_query(&q.expr).await.unwrap_or_else(|e| {
                panic!(
                    "{} panel {} ({}): {e}\n{}",
                    q.dashboard, q.panel_id, q.title, q.expr
                )
            });
            (!r.is_empty()).then_some(r)
        })
        .await;
        println!("{}: {} series", q.title, result.len());
        if q.expr.contains("attribution") {
            let labels: Vec<&str> = result
                .iter()
                .filter_map(|s| s["metric"]["attribution"].as_str())
                .collect();
            for a in ["attributed", "ambiguous", "unattributed", "dropped"] {
                assert!(labels.contains(&a), "{}: no {a} in {labels:?}", q.title);
            }
        }
        if q.title == "Capture commits in range by attribution" {
            let attributed = result
                .iter()
                .find(|s| s["metric"]["attribution"] == "attributed")
                .map(value_of);
            assert!(attributed.is_some_and(|v| v >= 1.0), "{result:?}");
        }
    }
    drop(prom);
    db.drop_it().await;
}
