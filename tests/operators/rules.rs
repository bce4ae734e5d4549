//! The shipped Prometheus rules, scrape config and Alertmanager config (deploy/prometheus/,
//! deploy/alertmanager/): promtool and amtool accept them; the promtool unit tests pass and
//! test every alert firing and not firing; every alert carries the monitoring-mixin label and
//! annotations, with a runbook in deploy/README.md; no alert keeps a per-replica label; every
//! metric a rule reads is one the code exports; and a real Alertmanager running the shipped
//! config inhibits as documented.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use hintaudit_telemetry::MetricName;
use serde::Deserialize;
use serde_yaml_ng::Value as Yaml;

use crate::promql::scan;
use crate::support::{available, repo_path, runs};

mod configs;

/// The alerts the issue asks for, with their severity.
const ALERTS: [(&str, &str); 12] = [
    ("HintAuditCriticalViolation", "critical"),
    ("HintAuditRepeatedWarningViolation", "warning"),
    ("HintAuditHintsMissing", "info"),
    ("HintAuditHintsChanged", "warning"),
    ("HintAuditReplicasDisagreeOnHints", "warning"),
    ("HintAuditAuditFailing", "warning"),
    ("HintAuditSharedHistoryFailing", "warning"),
    ("HintAuditUnattributedStatementsRising", "warning"),
    ("HintAuditCaptureBehind", "warning"),
    ("HintAuditCaptureDropping", "warning"),
    ("HintAuditCaptureGap", "warning"),
    ("HintAuditTargetDown", "warning"),
];
/// The recording rules the dashboards use.
const RECORDING: [&str; 2] = [
    "tool_status:hintaudit_tool_calls:rate5m",
    "tool:hintaudit_declared_hint_sets:count",
];
const RUNBOOK_BASE: &str = "https://example.invalid/hintaudit/blob/main/deploy/README.md#";
/// The one alert about targets rather than tools: it may keep per-target labels.
const TARGET_ALERT: &str = "HintAuditTargetDown";

#[derive(Debug, Deserialize)]
struct RuleFile {
    groups: Vec<Group>,
}

#[derive(Debug, Deserialize)]
struct Group {
    name: String,
    rules: Vec<Rule>,
}

#[derive(Debug, Deserialize)]
struct Rule {
    record: Option<String>,
    alert: Option<String>,
    expr: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

/// The shipped rules file, deploy/prometheus/rules/hintaudit.rules.yaml.
pub fn rules_file() -> PathBuf {
    repo_path("deploy/prometheus/rules/hintaudit.rules.yaml")
}

fn test_file() -> PathBuf {
    repo_path("deploy/prometheus/tests/hintaudit.rules.test.yaml")
}

fn alertmanager_config() -> PathBuf {
    repo_path("deploy/alertmanager/alertmanager.yml")
}

fn read_yaml<T: for<'de> Deserialize<'de>>(path: &Path) -> T {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn all_rules() -> Vec<Rule> {
    read_yaml::<RuleFile>(&rules_file())
        .groups
        .into_iter()
        .flat_map(|g| g.rules)
        .collect()
}

/// The names of the recording rules the rules file defines, in file order.
pub fn recording_rule_names() -> Vec<String> {
    all_rules().into_iter().filter_map(|r| r.record).collect()
}

/// Runs a command; returns whether it succeeded and its stdout and stderr together.
fn run(program: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    (out.status.success(), format!("{stdout}{stderr}"))
}

/// Whether `program --version` runs; skips (or, in CI, fails) with the package to install.
fn tool(program: &str, package: &str) -> bool {
    let reason = format!("`{program} --version` does not run (Debian package {package})");
    available(program, runs(program, &["--version"]), &reason)
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

#[test]
fn promtool_checks_and_tests_the_shipped_rules() {
    if !tool("promtool", "prometheus") {
        return;
    }
    let (ok, out) = run("promtool", &["check", "rules", path_str(&rules_file())]);
    assert!(ok, "promtool check rules:\n{out}");
    let count = ALERTS.len() + RECORDING.len();
    assert!(out.contains(&format!("{count} rules found")), "{out}");
    let (ok, out) = run("promtool", &["test", "rules", path_str(&test_file())]);
    assert!(ok, "promtool test rules:\n{out}");
}

#[test]
fn groups_hold_exactly_the_named_recording_rules_then_the_alerts() {
    let file: RuleFile = read_yaml(&rules_file());
    let names: Vec<&str> = file.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["hintaudit.recording", "hintaudit.alerts"]);
    let [recording, alerting] = &file.groups[..] else {
        unreachable!()
    };
    let records = recording.rules.iter().map(|r| r.record.as_deref());
    assert!(records.eq(RECORDING.map(Some)));
    let alerts = alerting.rules.iter().map(|r| r.alert.as_deref());
    assert!(alerts.eq(ALERTS.map(|(name, _)| Some(name))));
    assert_eq!(recording_rule_names(), RECORDING);
}

#[test]
fn every_alert_has_severity_summary_description_and_runbook() {
    let readme = std::fs::read_to_string(repo_path("deploy/README.md")).expect("deploy/README.md");
    let anchors: BTreeSet<String> = readme
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|l| github_anchor(l.trim_start_matches('#')))
        .collect();
    let severities: BTreeMap<&str, &str> = ALERTS.into_iter().collect();
    for rule in all_rules() {
        let Some(name) = rule.alert.as_deref() else {
            continue;
        };
        let camel =
            name.starts_with("HintAudit") && name.chars().all(|c| c.is_ascii_alphanumeric());
        assert!(camel, "{name}: CamelCase with the HintAudit prefix");
        let severity = rule.labels.get("severity").map(String::as_str);
        let known = matches!(severity, Some("critical" | "warning" | "info"));
        assert!(known, "{name}: severity {severity:?}");
        assert_eq!(severity, severities.get(name).copied(), "{name}: severity");
        for key in ["summary", "description", "runbook_url"] {
            let value = rule.annotations.get(key).map(String::as_str).unwrap_or("");
            assert!(!value.trim().is_empty(), "{name}: annotation {key}");
        }
        let anchor = name.to_lowercase();
        let url = format!("{RUNBOOK_BASE}{anchor}");
        assert_eq!(rule.annotations["runbook_url"], url, "{name}");
        assert!(anchors.contains(&anchor), "no README heading #{anchor}");
        // The description says what the alert is about, and how much.
        let description = &rule.annotations["description"];
        assert!(description.contains("$value"), "{name}: {description}");
        for label in by_labels(&rule.expr) {
            let template = format!("$labels.{label}");
            assert!(description.contains(&template), "{name}: {template}");
        }
    }
    let names: BTreeSet<&str> = severities.keys().copied().collect();
    for heading in readme.lines().filter_map(|l| l.strip_prefix("### ")) {
        let alert = names.contains(heading.trim());
        assert!(alert || !heading.starts_with("HintAudit"), "{heading}");
    }
}

/// GitHub's heading anchor: lowercased, spaces to hyphens, other punctuation dropped.
fn github_anchor(heading: &str) -> String {
    let keep = |c: &char| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ';
    let kept: String = heading.trim().to_lowercase().chars().filter(keep).collect();
    kept.replace(' ', "-")
}

#[test]
fn promtool_tests_cover_every_alert_firing_and_not_firing_and_every_recording_rule() {
    let tests: Yaml = read_yaml(&test_file());
    // The tests load the shipped file, at the shipped evaluation interval.
    let dir = test_file().parent().expect("tests dir").to_path_buf();
    let files = tests["rule_files"].as_sequence().expect("rule_files");
    let path = |f: &Yaml| dir.join(f.as_str().expect("a path")).canonicalize();
    let loaded: Vec<PathBuf> = files
        .iter()
        .map(path)
        .collect::<Result<_, _>>()
        .expect("paths");
    assert_eq!(loaded, [rules_file().canonicalize().expect("rules file")]);
    let config: Yaml = read_yaml(&repo_path("deploy/prometheus/prometheus.yml"));
    let interval = &config["global"]["evaluation_interval"];
    assert_eq!(&tests["evaluation_interval"], interval);

    let groups = tests["tests"].as_sequence().expect("tests");
    let cases = |key: &str| -> Vec<Yaml> {
        let of = |g: &Yaml| g[key].as_sequence().cloned().unwrap_or_default();
        groups.iter().flat_map(of).collect()
    };
    let alert_cases = cases("alert_rule_test");
    let fires = |c: &Yaml| c["exp_alerts"].as_sequence().is_some_and(|a| !a.is_empty());
    // promtool passes a test of an alert that does not exist when it expects none.
    for case in &alert_cases {
        let name = case["alertname"].as_str().unwrap_or("");
        assert!(ALERTS.iter().any(|(a, _)| *a == name), "no alert {name}");
    }
    for (name, _) in ALERTS {
        let of_name = alert_cases
            .iter()
            .filter(|c| c["alertname"].as_str() == Some(name));
        let (firing, quiet): (Vec<_>, Vec<_>) = of_name.partition(|c| fires(c));
        assert!(
            !firing.is_empty(),
            "no promtool test expects {name} to fire"
        );
        assert!(!quiet.is_empty(), "no promtool test expects {name} quiet");
    }
    let exprs: Vec<String> = cases("promql_expr_test")
        .iter()
        .filter_map(|t| t["expr"].as_str().map(str::to_owned))
        .collect();
    for record in RECORDING {
        let read = exprs.iter().any(|e| e.contains(record));
        assert!(read, "no promql_expr_test reads {record}");
    }
}

#[test]
fn alerts_aggregate_across_replicas() {
    for rule in all_rules() {
        if rule.alert.as_deref() == Some(TARGET_ALERT) {
            continue;
        }
        let expr = &rule.expr;
        let scanned = scan(expr);
        assert!(!scanned.without, "`without` keeps other labels: {expr}");
        let by = scanned.grouping;
        for label in ["instance", "pod"] {
            assert!(!by.contains(label), "groups by {label}: {expr}");
        }
        // No raw selector escapes aggregation: an expression without `by` reads only recording
        // rules (themselves checked here).
        if by.is_empty() {
            let (metrics, records) = referenced_names(expr);
            let ok = metrics.is_empty() && !records.is_empty();
            assert!(ok, "neither aggregates nor reads a recording rule: {expr}");
        }
    }
}

/// The labels of every aggregation's `by (...)` clause in a PromQL expression (empty when
/// an aggregation uses `without`, which `alerts_aggregate_across_replicas` forbids).
fn by_labels(expr: &str) -> BTreeSet<String> {
    let scanned = scan(expr);
    if scanned.without {
        return BTreeSet::new();
    }
    scanned.grouping
}

/// The metric names and the recording-rule names (`level:metric:operations`) an expression
/// selects.
fn referenced_names(expr: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let names = scan(expr).metrics.into_iter();
    let (records, metrics) = names.partition(|n| n.matches(':').count() == 2);
    (metrics, records)
}

/// The PromQL of every `query` template function call in an annotation: `query "..."`, or
/// `query (printf "..." ...)` with each `%q` given a placeholder string.
fn template_queries(text: &str) -> Vec<String> {
    text.match_indices("query ")
        .filter_map(|(i, _)| {
            let rest = text[i + "query ".len()..].trim_start();
            let (format, rest) = match rest.strip_prefix("(printf ") {
                Some(printf) => (true, printf.trim_start()),
                None => (false, rest),
            };
            let literal = go_string(rest)?;
            Some(if format {
                literal.replace("%q", "\"x\"")
            } else {
                literal
            })
        })
        .collect()
}

/// The Go double-quoted string literal at the start of `text`, unescaped (`\"`, `\\`).
fn go_string(text: &str) -> Option<String> {
    let mut chars = text.strip_prefix('"')?.chars();
    let mut out = String::new();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => out.push(chars.next()?),
            c => out.push(c),
        }
    }
    None
}

#[test]
fn template_queries_are_found_and_parsed() {
    let text = r#"down:{{ range query (printf "up{job=%q} == 0" $labels.job) }} {{ .Labels.instance }}{{ end }}; {{ with query "sum(hintaudit_audit_errors_total{stage=\"x\"})" }}{{ . | first | value }}{{ end }}; the query is slow"#;
    let queries = template_queries(text);
    assert_eq!(
        queries,
        [
            r#"up{job="x"} == 0"#,
            r#"sum(hintaudit_audit_errors_total{stage="x"})"#
        ]
    );
    let metrics: Vec<BTreeSet<String>> = queries.iter().map(|q| referenced_names(q).0).collect();
    assert_eq!(metrics[0], BTreeSet::from(["up".to_owned()]));
}

/// Every metric name the rules read, in expressions and in annotation queries.
pub fn referenced_metric_names() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for rule in all_rules() {
        let queries = rule.annotations.values().flat_map(|a| template_queries(a));
        for expr in std::iter::once(rule.expr.clone()).chain(queries) {
            names.extend(referenced_names(&expr).0);
        }
    }
    names
}

#[test]
fn rules_read_only_metrics_the_code_exports() {
    let exported: BTreeSet<String> = MetricName::ALL
        .into_iter()
        .flat_map(|m| m.series_names())
        .chain(["up".to_owned()])
        .collect();
    let used = referenced_metric_names();
    for name in &used {
        assert!(
            exported.contains(name),
            "the rules read {name}, which nothing exports"
        );
    }
    // The parse finds what it must (one that finds nothing would pass the loop above).
    assert!(used.contains("hintaudit_hint_violations_total"), "{used:?}");
    assert!(used.contains("up"), "{used:?}");
    let defined: BTreeSet<String> = recording_rule_names().into_iter().collect();
    for rule in all_rules() {
        for record in referenced_names(&rule.expr).1 {
            assert!(
                defined.contains(&record),
                "{} reads undefined {record}",
                rule.expr
            );
        }
    }
}
