//! The whole operator's stack, end to end, on loopback: three audited bookings replicas
//! sharing one PostgreSQL database, a real Prometheus that scrapes them every second and
//! evaluates the shipped rules every second, and a real Alertmanager that sends to a webhook
//! inside the test. Proves the rules' semantics on live data (the first violation pages,
//! replicas add up to one alert per tool and rule, a restart fires nothing, clean tools never
//! alert) and runs every dashboard query against that Prometheus.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use hintaudit_cli::demo::{bookings_plan, connect, drive};
use hintaudit_core::{Rule, Severity};
use serde_json::{Value, json};
use sqlx::{Connection, Executor, PgConnection};

use crate::servers::{Alertmanager, Prometheus, Replica, Webhook, alertmanager_bin};
use crate::support::{available, repo_path, runs};
use hintaudit_test_support::workspace_bin;

const CRITICAL: &str = "HintAuditCriticalViolation";
const REPEATED: &str = "HintAuditRepeatedWarningViolation";
const MISSING: &str = "HintAuditHintsMissing";

/// The alert each planted finding of the bookings example must raise: (alertname, tool, rule).
fn expected_alerts() -> BTreeSet<(String, String, String)> {
    let call = bookings::PLANTED_CALL_FINDINGS.iter().map(|(tool, rule)| {
        let severity = Rule::ALL
            .into_iter()
            .find(|r| r.as_str() == *rule)
            .map(Rule::severity)
            .expect("a planted rule is a rule");
        let alert = if severity == Severity::Critical {
            CRITICAL
        } else {
            REPEATED
        };
        (alert.to_owned(), tool.to_string(), rule.to_string())
    });
    let listing = bookings::PLANTED_LISTING_FINDINGS
        .iter()
        .map(|(tool, _)| (MISSING.to_owned(), tool.to_string(), String::new()));
    call.chain(listing).collect()
}

/// A fresh PostgreSQL database for the replicas, dropped at the end.
pub(crate) struct Database {
    admin_url: String,
    name: String,
    pub(crate) url: String,
}

impl Database {
    pub(crate) async fn create() -> Option<Database> {
        let admin_url = std::env::var("HINTAUDIT_PG_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
        let conn = tokio::time::timeout(Duration::from_secs(5), PgConnection::connect(&admin_url))
            .await
            .map_err(|_| "timed out".to_owned())
            .and_then(|c| c.map_err(|e| e.to_string()));
        let mut conn = match conn {
            Ok(c) => c,
            Err(e) => {
                available("PostgreSQL", false, &format!("{admin_url}: {e}"));
                return None;
            }
        };
        // One database per test: the tests of this binary run at once (the stack's and the
        // capture row's), so the process id alone would give them the same one.
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("hintaudit_stack_{}_{n}", std::process::id());
        conn.execute(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
        )))
        .await
        .expect("drop an old stack database");
        conn.execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .await
            .expect("create the stack database");
        let (base, _) = admin_url.rsplit_once('/').expect("a database in the URL");
        Some(Database {
            url: format!("{base}/{name}"),
            admin_url,
            name,
        })
    }

    pub(crate) async fn drop_it(self) {
        if let Ok(mut conn) = PgConnection::connect(&self.admin_url).await {
            let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
            let _ = conn.execute(sqlx::AssertSqlSafe(sql)).await;
        }
    }
}

/// The Prometheus HTTP API.
pub(crate) struct Api {
    pub(crate) http: reqwest::Client,
    pub(crate) url: String,
}

impl Api {
    /// `GET /api/v1/query`: the result, or the error Prometheus gave.
    pub(crate) async fn try_query(&self, expr: &str) -> Result<Vec<Value>, String> {
        let body: Value = self
            .http
            .get(format!("{}/api/v1/query", self.url))
            .query(&[("query", expr)])
            .send()
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())?;
        if body["status"] != "success" {
            return Err(format!("{}: {}", body["errorType"], body["error"]));
        }
        Ok(body["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default())
    }

    async fn query(&self, expr: &str) -> Vec<Value> {
        self.try_query(expr)
            .await
            .unwrap_or_else(|e| panic!("query {expr}: {e}"))
    }

    /// The value of a one-element instant vector, if there is one element.
    async fn scalar(&self, expr: &str) -> Option<f64> {
        let result = self.query(expr).await;
        (result.len() == 1).then(|| value_of(&result[0]))
    }

    /// Pending and firing alerts: (alertname, tool, rule, state, value, labels).
    async fn alerts(&self) -> Vec<Value> {
        let body: Value = self
            .http
            .get(format!("{}/api/v1/alerts", self.url))
            .send()
            .await
            .expect("alerts API")
            .json()
            .await
            .expect("alerts JSON");
        body["data"]["alerts"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

pub(crate) fn value_of(sample: &Value) -> f64 {
    sample["value"][1]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

fn label<'a>(alert: &'a Value, name: &str) -> &'a str {
    alert["labels"][name].as_str().unwrap_or("")
}

fn key(alert: &Value) -> (String, String, String) {
    (
        label(alert, "alertname").to_owned(),
        label(alert, "tool").to_owned(),
        label(alert, "rule").to_owned(),
    )
}

/// Polls `check` every 250 ms until it returns `Some`, for up to `secs` seconds.
pub(crate) async fn eventually<T, F, Fut>(secs: u64, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {secs} s: {what}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Calls one tool on one replica with a fresh client; the call must answer without a protocol
/// error.
async fn call(replica: &Replica, tool: &str, arguments: Value) {
    let client = connect(&replica.mcp_url()).await.expect("connect");
    let mut params = rmcp::model::CallToolRequestParams::new(tool.to_owned());
    if let Value::Object(map) = arguments {
        params = params.with_arguments(map);
    }
    client.call_tool(params).await.expect("the call answers");
    client.cancel().await.ok();
}

/// What is needed, or a printed skip (a failure under `HINTAUDIT_REQUIRE_ALL=1`).
fn binaries() -> Option<&'static str> {
    if !available(
        "prometheus",
        runs("prometheus", &["--version"]),
        "apt-get install prometheus",
    ) {
        return None;
    }
    let am = alertmanager_bin();
    available(
        "alertmanager",
        am.is_some(),
        "apt-get install prometheus-alertmanager",
    )
    .then(|| am.unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_stack_pages_for_planted_tools_only() {
    let Some(alertmanager_bin) = binaries() else {
        return;
    };
    let Some(db) = Database::create().await else {
        return;
    };
    let bookings = workspace_bin("bookings", "bookings");
    // Three replicas start at the same moment on one fresh database, as a Deployment does.
    let replicas: Vec<Replica> = std::thread::scope(|s| {
        let started: Vec<_> = (0..3)
            .map(|i| {
                let (bin, url) = (&bookings, &db.url);
                s.spawn(move || Replica::start(bin, url, 0, &format!("bookings-{i}")))
            })
            .collect();
        started
            .into_iter()
            .map(|h| h.join().expect("replica"))
            .collect()
    });
    let (webhook, hook_url) = Webhook::start().await;
    let am = Alertmanager::start(alertmanager_bin, &hook_url).await;
    let rules = repo_path("deploy/prometheus/rules/hintaudit.rules.yaml");
    let addrs: Vec<_> = replicas.iter().map(|r| r.addr).collect();
    let prom = Prometheus::start(&addrs, &rules, &am.addr).await;
    let api = Api {
        http: reqwest::Client::new(),
        url: prom.url.clone(),
    };

    // Every replica is scraped, with the planted read-only tool's violation series at 0.
    let zero =
        r#"hintaudit_hint_violations_total{tool="get_appointment",rule="read_only_write"} == 0"#;
    eventually(30, "three replicas scraped with zero series", || async {
        (api.query(zero).await.len() == 3).then_some(())
    })
    .await;

    let replicas = stack_checks(&api, &webhook, replicas, &bookings, &db.url).await;
    every_panel_returns_data(&api, "get_appointment", &replicas[1]).await;
    drop((replicas, prom, am));
    db.drop_it().await;
}

/// Every Prometheus query of every dashboard, its template variables substituted, parses and
/// returns data from the live Prometheus, except the panels listed as possibly empty.
async fn every_panel_returns_data(api: &Api, tool: &str, replica: &Replica) {
    let instance = replica.addr.to_string();
    let vars = [
        ("tool", tool),
        ("instance", instance.as_str()),
        ("job", "hintaudit"),
    ];
    let queries = crate::dashboards::panel_queries(&vars);
    assert!(!queries.is_empty(), "the dashboards have queries");
    let mut empty = Vec::new();
    for q in &queries {
        let result = api.try_query(&q.expr).await.unwrap_or_else(|e| {
            panic!(
                "{} panel {} ({}): {e}\n{}",
                q.dashboard, q.panel_id, q.title, q.expr
            )
        });
        let may_be_empty = crate::empty_panels::MAY_BE_EMPTY
            .iter()
            .any(|(uid, title, _)| *uid == q.dashboard && *title == q.title)
            || crate::capture::is_proxy_only(q);
        if result.is_empty() && !may_be_empty {
            empty.push(format!("{} / {}: {}", q.dashboard, q.title, q.expr));
        }
    }
    println!(
        "dashboards: {} queries ran against Prometheus",
        queries.len()
    );
    assert!(
        empty.is_empty(),
        "panels without data:\n{}",
        empty.join("\n")
    );
}

/// The rule semantics, on live data. Returns the replicas, to be stopped by the caller.
async fn stack_checks(
    api: &Api,
    webhook: &Webhook,
    mut replicas: Vec<Replica>,
    bookings: &std::path::Path,
    database_url: &str,
) -> Vec<Replica> {
    // 1. The first violation pages within two evaluation intervals (1 s each here), measured
    //    on Prometheus's own clock: from the first scraped sample at 1 to the alert's first
    //    firing sample.
    call(&replicas[0], "get_appointment", json!({"id": 1})).await;
    let fired = format!(
        r#"ALERTS{{alertname="{CRITICAL}",alertstate="firing",tool="get_appointment",rule="read_only_write"}}[5m]"#
    );
    let alert_at = eventually(30, "the first violation's alert", || async {
        first_sample_time(&api.query(&fired).await, |_| true)
    })
    .await;
    let counted =
        r#"hintaudit_hint_violations_total{tool="get_appointment",rule="read_only_write"}[5m]"#;
    let seen_at = first_sample_time(&api.query(counted).await, |v| v >= 1.0)
        .expect("the violation was scraped");
    let delay = alert_at - seen_at;
    println!(
        "first violation: scraped at {seen_at:.3}, alert firing at {alert_at:.3} (+{delay:.3} s)"
    );
    assert!(
        (0.0..=2.0).contains(&delay),
        "the alert fired {delay:.3} s after the violation was scraped; at most two 1 s evaluation intervals"
    );

    // 2. The same tool and rule broken on two replicas: one alert, counting both.
    call(&replicas[1], "confirm_appointment", json!({"id": 1})).await;
    call(&replicas[2], "confirm_appointment", json!({"id": 2})).await;
    // The raw counters first: one violation on each of the two replicas.
    let per_replica = r#"hintaudit_hint_violations_total{tool="confirm_appointment",rule="undeclared_destructive"} == 1"#;
    eventually(30, "both replicas' violations scraped", || async {
        (api.query(per_replica).await.len() == 2).then_some(())
    })
    .await;
    // Then the alert: one, firing, whose value sums both. increase() extrapolates a young
    // series upwards (never below what it saw), so the value is at least 2 but may read 2.5;
    // one replica's violation alone stays well under 2 once both are counted.
    let alerts = eventually(
        30,
        "one alert for confirm_appointment counting 2",
        || async {
            let alerts: Vec<Value> = api
                .alerts()
                .await
                .into_iter()
                .filter(|a| label(a, "tool") == "confirm_appointment")
                .collect();
            let v = alerts
                .first()
                .and_then(|a| a["value"].as_str()?.parse::<f64>().ok());
            (alerts.len() == 1 && v.is_some_and(|v| v >= 2.0)).then_some(alerts)
        },
    )
    .await;
    assert_eq!(alerts[0]["state"], "firing");
    assert!(
        alerts[0]["labels"].get("instance").is_none(),
        "one alert per tool and rule, not per replica: {alerts:?}"
    );

    // 3. Every tool, once per replica (the plan calls idempotent tools twice in a row, so
    //    create_appointment breaks idempotency once on each replica).
    for r in &replicas {
        let client = connect(&r.mcp_url()).await.expect("connect");
        drive(&client, &bookings_plan()).await.expect("drive");
        client.cancel().await.ok();
    }
    let expected = expected_alerts();
    let paged: BTreeSet<_> = expected
        .iter()
        .filter(|(alert, _, _)| alert != MISSING)
        .cloned()
        .collect();
    eventually(
        60,
        "the webhook receives every planted tool's alert",
        || async {
            let got: BTreeSet<_> = webhook.alerts().iter().map(key).collect();
            paged.is_subset(&got).then_some(())
        },
    )
    .await;
    let missing_seen = api.alerts().await.iter().any(|a| {
        key(a)
            == (
                MISSING.to_owned(),
                "export_appointments".into(),
                String::new(),
            )
    });
    assert!(
        missing_seen,
        "HintAuditHintsMissing pending or firing for export_appointments"
    );

    // 4. A restart of a replica that had violations: its counters start again at 0. Nothing
    //    new fires, and the summed increase still counts each violation once.
    let addr = replicas[0].addr;
    replicas.remove(0).stop();
    replicas.insert(
        0,
        Replica::start(
            bookings,
            database_url,
            addr.port(),
            "bookings-0 (restarted)",
        ),
    );
    let restarted = format!(
        r#"hintaudit_hint_violations_total{{instance="{addr}",tool="get_appointment",rule="read_only_write"}} == 0"#
    );
    eventually(30, "the restarted replica scraped at 0", || async {
        (api.query(&restarted).await.len() == 1).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(4)).await; // four evaluations after the reset
    let increase = api
        .scalar(r#"sum(increase(hintaudit_hint_violations_total{tool="get_appointment",rule="read_only_write"}[10m]))"#)
        .await
        .expect("one sum");
    // One call in step 1, one per replica in step 3.
    // increase() extrapolates upwards by a fraction of a sample interval, never below the
    // count; a reset counted as a change would add the restarted replica's 2 again.
    assert!(
        (4.0..5.0).contains(&increase),
        "increase across the restart: {increase}, want 4 (each violation once)"
    );

    // 5. Nothing but the planted tools' alerts, at Prometheus and at the webhook.
    for alert in api.alerts().await {
        assert!(
            expected.contains(&key(&alert)),
            "unexpected alert at Prometheus: {alert}"
        );
    }
    for alert in webhook.alerts() {
        assert!(
            expected.contains(&key(&alert)),
            "unexpected alert at the webhook: {alert}"
        );
        assert!(alert["labels"].get("instance").is_none(), "{alert}");
    }
    replicas
}

/// The earliest timestamp, in seconds, among the samples of a range-vector result whose value
/// passes `keep`.
fn first_sample_time(result: &[Value], keep: impl Fn(f64) -> bool) -> Option<f64> {
    result
        .iter()
        .flat_map(|series| series["values"].as_array().cloned().unwrap_or_default())
        .filter_map(|pair| {
            let t = pair[0].as_f64()?;
            let v: f64 = pair[1].as_str()?.parse().ok()?;
            keep(v).then_some(t)
        })
        .min_by(f64::total_cmp)
}
