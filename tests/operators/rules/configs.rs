//! The configs around the rules: the compose and local scrape configs (promtool), and the
//! Alertmanager example (amtool, and a real Alertmanager for its inhibit rule).

use super::*;

#[test]
fn promtool_checks_the_scrape_config_as_mounted_and_in_place() {
    let config_path = repo_path("deploy/prometheus/prometheus.yml");
    let config: Yaml = read_yaml(&config_path);
    assert_eq!(config["global"]["scrape_interval"].as_str(), Some("15s"));
    assert_eq!(
        config["global"]["evaluation_interval"].as_str(),
        Some("15s")
    );
    let job = &config["scrape_configs"][0];
    assert_eq!(job["job_name"].as_str(), Some("hintaudit"));
    assert_eq!(job["metrics_path"].as_str(), Some("/metrics"));
    let targets = &job["static_configs"][0]["targets"];
    let targets: Vec<&str> = targets
        .as_sequence()
        .expect("targets")
        .iter()
        .flat_map(Yaml::as_str)
        .collect();
    assert_eq!(targets, ["bookings-1:8080", "bookings-2:8080"]);
    let am = &config["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"][0];
    assert_eq!(am.as_str(), Some("alertmanager:9093"));
    if !tool("promtool", "prometheus") {
        return;
    }
    // In place, and as compose mounts it: prometheus.yml at /etc/prometheus/prometheus.yml,
    // deploy/prometheus/rules/ at /etc/prometheus/rules/. Either way the rules must be found.
    let root = tempfile::tempdir().expect("temp dir");
    let etc = root.path().join("etc/prometheus");
    std::fs::create_dir_all(etc.join("rules")).expect("mkdir");
    std::fs::copy(&config_path, etc.join("prometheus.yml")).expect("copy config");
    std::fs::copy(rules_file(), etc.join("rules/hintaudit.rules.yaml")).expect("copy rules");
    for config in [config_path, etc.join("prometheus.yml")] {
        let (ok, out) = run("promtool", &["check", "config", path_str(&config)]);
        assert!(ok, "promtool check config {}:\n{out}", config.display());
        assert!(out.contains("1 rule files found"), "{out}");
        let count = ALERTS.len() + RECORDING.len();
        assert!(out.contains(&format!("{count} rules found")), "{out}");
    }
}

/// The local config of the README's "See it in Prometheus and Grafana": the same job and
/// rules, scraping the demo on 127.0.0.1:8080.
#[test]
fn promtool_checks_the_local_config() {
    let config_path = repo_path("deploy/prometheus/local.yml");
    let config: Yaml = read_yaml(&config_path);
    let job = &config["scrape_configs"][0];
    assert_eq!(job["job_name"].as_str(), Some("hintaudit"));
    assert_eq!(
        job["static_configs"][0]["targets"][0].as_str(),
        Some("127.0.0.1:8080")
    );
    if !tool("promtool", "prometheus") {
        return;
    }
    let (ok, out) = run("promtool", &["check", "config", path_str(&config_path)]);
    assert!(
        ok,
        "promtool check config {}:\n{out}",
        config_path.display()
    );
    let count = ALERTS.len() + RECORDING.len();
    assert!(out.contains(&format!("{count} rules found")), "{out}");
}

#[test]
fn amtool_checks_the_alertmanager_config_and_routes_by_severity() {
    if !tool("amtool", "prometheus-alertmanager") {
        return;
    }
    let config = alertmanager_config();
    let (ok, out) = run("amtool", &["check-config", path_str(&config)]);
    assert!(ok, "amtool check-config:\n{out}");
    let flag = format!("--config.file={}", config.display());
    for (label, receiver) in [
        ("severity=critical", "page"),
        ("severity=warning", "ticket"),
        ("severity=info", "low-priority"),
        ("alertname=SomethingElse", "ticket"),
    ] {
        let verify = format!("--verify.receivers={receiver}");
        let args = ["config", "routes", "test", &flag, &verify, label];
        let (ok, out) = run("amtool", &args);
        assert!(ok, "{label} should route to {receiver}:\n{out}");
    }
}

/// A child process killed and reaped on drop.
/// The shipped Alertmanager config, unmodified, in a real Alertmanager: a critical violation
/// inhibits the repeated warning about the same tool and hint, and nothing else. (Nothing is
/// sent: the test ends long before group_wait, 30 s, would flush to the placeholder URLs.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alertmanager_inhibits_only_warnings_on_the_critical_tool_and_hint() {
    use serde_json::{Value, json};
    use std::time::{Duration, Instant};

    let bin = crate::servers::alertmanager_bin();
    let why = "neither prometheus-alertmanager nor alertmanager runs";
    if !available("alertmanager", bin.is_some(), why) {
        return;
    }
    let am =
        crate::servers::Alertmanager::with_config(bin.expect("checked"), &alertmanager_config())
            .await;
    let crit = "HintAuditCriticalViolation";
    let warn = "HintAuditRepeatedWarningViolation";
    let (get, ro, ow) = ("get_appointment", "readOnlyHint", "openWorldHint");
    let sent = json!([
        {"labels": {"alertname": crit, "severity": "critical", "tool": get,
                    "rule": "read_only_write", "hint": ro}},
        // The same tool and hint: inhibited.
        {"labels": {"alertname": warn, "severity": "warning", "tool": get,
                    "rule": "read_only_write_attempt", "hint": ro}},
        // The same tool with another hint, or none; another tool: not inhibited.
        {"labels": {"alertname": warn, "severity": "warning", "tool": get,
                    "rule": "undeclared_open_world", "hint": ow}},
        {"labels": {"alertname": "HintAuditHintsChanged", "severity": "warning", "tool": get}},
        {"labels": {"alertname": warn, "severity": "warning", "tool": "search_patients",
                    "rule": "read_only_write_attempt", "hint": ro}},
    ]);
    let key = |a: &Value| {
        let label = |k: &str| a["labels"][k].as_str().unwrap_or("").to_owned();
        (label("tool"), label("rule"))
    };
    let api = format!("http://{}/api/v2/alerts", am.addr);
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut inhibited = BTreeSet::new();
    // Inhibition is computed when the alerts are listed, once the inhibitor holds the source.
    while inhibited.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let posted = http
            .post(&api)
            .json(&sent)
            .send()
            .await
            .expect("post alerts");
        assert!(posted.status().is_success(), "{posted:?}");
        let listed = http.get(&api).send().await.expect("list");
        let listed: Vec<Value> = listed.json().await.expect("alerts");
        assert_eq!(listed.len(), 5, "{listed:?}");
        let by = |a: &&Value| a["status"]["inhibitedBy"].as_array().cloned();
        let is_inhibited = |a: &&Value| by(a).is_some_and(|v| !v.is_empty());
        inhibited = listed.iter().filter(is_inhibited).map(key).collect();
    }
    assert_eq!(inhibited, BTreeSet::from([key(&sent[1])]));
}
