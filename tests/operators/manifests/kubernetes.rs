//! deploy/kubernetes: `kubectl kustomize` renders it; PyPI's `kubernetes-validate` checks the
//! built-in kinds offline against the schemas of Kubernetes 1.32 (kubectl's version here);
//! the Prometheus Operator's kinds, for which it has no schema, are checked for the fields the
//! operator reads; the generated PrometheusRule and dashboard copies equal their sources.

use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Command, Stdio};

use serde::Deserialize;
use serde_json::{Value, json};

use super::{dashboard_names, difference, json_names, read, strings, yaml};
use crate::support::{available, repo, repo_path, runs};

const KUSTOMIZATION: &str = "deploy/kubernetes";
const NAMESPACE: &str = "hintaudit";
const RULES: &str = "deploy/prometheus/rules/hintaudit.rules.yaml";

/// `kubectl kustomize deploy/kubernetes`: the text and its documents, or `None` (skip).
fn render() -> Option<(String, Vec<Value>)> {
    render_dir(KUSTOMIZATION)
}

/// `kubectl kustomize` of the kustomization in `dir` (relative to the repository).
fn render_dir(dir: &str) -> Option<(String, Vec<Value>)> {
    let ok = runs("kubectl", &["version", "--client"]);
    if !available("kubectl", ok, "kubectl is not on PATH") {
        return None;
    }
    let out = Command::new("kubectl")
        .args(["kustomize", dir])
        .current_dir(repo())
        .output()
        .expect("running kubectl");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kubectl kustomize {dir}: {stderr}");
    let text = String::from_utf8(out.stdout).unwrap();
    let docs = serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).expect("rendered YAML"))
        .filter(|v| !v.is_null())
        .collect();
    Some((text, docs))
}

fn of_kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    docs.iter().filter(|d| d["kind"] == kind).collect()
}

fn one<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    let found = of_kind(docs, kind);
    assert_eq!(found.len(), 1, "one {kind}");
    found[0]
}

/// The one object of `kind` named `name`.
fn named<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    let found: Vec<_> = of_kind(docs, kind)
        .into_iter()
        .filter(|d| d["metadata"]["name"] == name)
        .collect();
    assert_eq!(found.len(), 1, "one {kind} {name}");
    found[0]
}

/// Whether every key of the `labels` map has the same value in `of`.
fn subset(labels: &Value, of: &Value) -> bool {
    let labels = labels.as_object().expect("a label map");
    !labels.is_empty() && labels.iter().all(|(k, v)| of.get(k) == Some(v))
}

/// Runs kubernetes-validate on YAML text: exit status success and its output.
fn kubernetes_validate(text: &str) -> (bool, String) {
    let mut child = Command::new("kubernetes-validate")
        .args(["--strict", "-k", "1.32.0", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running kubernetes-validate");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
    output.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.success(), output)
}

#[test]
fn kustomize_renders_and_the_built_in_kinds_validate_offline() {
    let Some((text, docs)) = render() else { return };
    let kinds: BTreeSet<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    let want = [
        "ConfigMap",
        "Deployment",
        "Namespace",
        "PrometheusRule",
        "Service",
        "ServiceMonitor",
    ];
    assert_eq!(kinds, BTreeSet::from(want));
    assert_eq!(one(&docs, "Namespace")["metadata"]["name"], NAMESPACE);
    for d in docs.iter().filter(|d| d["kind"] != "Namespace") {
        let name = &d["metadata"]["name"];
        assert_eq!(
            d["metadata"]["namespace"], NAMESPACE,
            "{} {name}",
            d["kind"]
        );
    }

    let ok = runs("kubernetes-validate", &["--version"]);
    let reason = "python3 -m pip install kubernetes-validate";
    if !available("kubernetes-validate", ok, reason) {
        return;
    }
    let (passed, output) = kubernetes_validate(&text);
    assert!(passed, "kubernetes-validate --strict -k 1.32.0:\n{output}");
    for d in &docs {
        let (kind, name) = (d["kind"].as_str().unwrap(), &d["metadata"]["name"]);
        let name = name.as_str().unwrap();
        let line = format!("passed for resource {}/{name}", kind.to_lowercase());
        let custom = d["apiVersion"].as_str().unwrap().contains(".coreos.com/");
        assert_eq!(output.contains(&line), !custom, "{kind} {name}:\n{output}");
    }
    for warning in output.lines().filter(|l| !l.starts_with("INFO")) {
        let operator_kind = ["ServiceMonitor", "PrometheusRule"]
            .iter()
            .any(|k| warning.contains(&format!("kind {k} ")));
        assert!(operator_kind, "unexpected: {warning}");
    }
    // The same validator rejects a Deployment with a field Kubernetes does not know.
    let mut broken = named(&docs, "Deployment", "bookings").clone();
    broken["spec"]["replica"] = json!(3);
    let (passed, output) = kubernetes_validate(&serde_json::to_string(&broken).unwrap());
    assert!(!passed, "an unknown field passed:\n{output}");
}

#[test]
fn the_service_monitor_scrapes_the_bookings_pods_as_job_hintaudit() {
    let Some((_, docs)) = render() else { return };
    let monitor = one(&docs, "ServiceMonitor");
    let service = named(&docs, "Service", "bookings");
    let deployment = named(&docs, "Deployment", "bookings");
    assert_eq!(monitor["apiVersion"], "monitoring.coreos.com/v1");
    let service_labels = &service["metadata"]["labels"];
    assert!(subset(
        &monitor["spec"]["selector"]["matchLabels"],
        service_labels
    ));
    let pod = &deployment["spec"]["template"];
    assert!(subset(
        &service["spec"]["selector"],
        &pod["metadata"]["labels"]
    ));
    // The operator sets job from the Service label named by jobLabel (else the Service name).
    let job_label = monitor["spec"]["jobLabel"].as_str().expect("spec.jobLabel");
    assert_eq!(
        service_labels[job_label], "hintaudit",
        "job label {job_label}"
    );
    let namespaces = &monitor["spec"]["namespaceSelector"];
    assert!(namespaces.is_null() || namespaces["matchNames"] == json!([NAMESPACE]));

    let container_ports: Vec<&str> = pod["spec"]["containers"][0]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    let service_ports = service["spec"]["ports"].as_array().unwrap();
    for p in service_ports {
        let target = p["targetPort"].as_str().expect("a named targetPort");
        assert!(container_ports.contains(&target), "targetPort {target}");
    }
    let endpoints = monitor["spec"]["endpoints"].as_array().expect("endpoints");
    assert!(!endpoints.is_empty());
    for e in endpoints {
        let port = e["port"].as_str().expect("a named port");
        assert!(
            service_ports.iter().any(|p| p["name"] == port),
            "port {port}"
        );
        assert_eq!(e["path"], "/metrics");
    }

    let rule = one(&docs, "PrometheusRule");
    assert_eq!(rule["apiVersion"], "monitoring.coreos.com/v1");
    let groups = yaml(RULES)["groups"].clone();
    let differs = difference(&rule["spec"]["groups"], &groups);
    assert_eq!(
        differs, None,
        "rendered PrometheusRule spec.groups against {RULES}"
    );
    for group in rule["spec"]["groups"].as_array().unwrap() {
        assert!(group["name"].is_string());
        for r in group["rules"].as_array().unwrap() {
            assert!(r["expr"].is_string() && (r["alert"].is_string() || r["record"].is_string()));
        }
    }
}

#[test]
fn the_bookings_deployment_runs_three_audited_non_root_replicas() {
    let Some((_, docs)) = render() else { return };
    let deployment = named(&docs, "Deployment", "bookings");
    assert_eq!(deployment["spec"]["replicas"], 3);
    let pod = &deployment["spec"]["template"]["spec"];
    let containers = pod["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    assert_eq!(c["image"], "hintaudit/bookings:0.1.0");
    assert_eq!(
        strings(&c["args"], "args"),
        ["--http", "0.0.0.0:8080", "--audit"]
    );
    assert_eq!(
        c["ports"],
        json!([{"name": "http", "containerPort": 8080, "protocol": "TCP"}])
    );
    let env = c["env"].as_array().unwrap();
    // Clients reach /mcp through the Service's names, which rmcp's Host check must allow.
    let service = named(&docs, "Service", "bookings");
    let service_name = service["metadata"]["name"].as_str().unwrap();
    let allowed = env
        .iter()
        .find(|e| e["name"] == "BOOKINGS_ALLOWED_HOSTS")
        .and_then(|e| e["value"].as_str())
        .expect("BOOKINGS_ALLOWED_HOSTS");
    assert!(
        allowed.split(',').any(|h| h == service_name),
        "{allowed} lacks the Service name {service_name}"
    );
    let database = env
        .iter()
        .find(|e| e["name"] == "DATABASE_URL")
        .expect("DATABASE_URL");
    assert!(
        database["valueFrom"]["secretKeyRef"]["name"].is_string(),
        "from a Secret"
    );
    for probe in ["readinessProbe", "livenessProbe"] {
        assert_eq!(
            c[probe]["httpGet"],
            json!({"path": "/metrics", "port": "http"}),
            "{probe}"
        );
    }
    for kind in ["requests", "limits"] {
        assert!(
            c["resources"][kind]["memory"].is_string(),
            "resources.{kind}"
        );
    }
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert!(
        pod["securityContext"]["runAsUser"]
            .as_u64()
            .is_some_and(|u| u > 0)
    );
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);

    // The OTEL_* variables come from a rendered ConfigMap (kustomize renames it with a hash).
    let otel = c["envFrom"][0]["configMapRef"]["name"]
        .as_str()
        .expect("envFrom");
    let maps = of_kind(&docs, "ConfigMap");
    let map = maps.iter().find(|m| m["metadata"]["name"] == otel);
    let data = &map.unwrap_or_else(|| panic!("no ConfigMap {otel}"))["data"];
    assert_eq!(data["OTEL_EXPORTER_OTLP_PROTOCOL"], "http/protobuf");
    assert!(
        data["OTEL_EXPORTER_OTLP_ENDPOINT"]
            .as_str()
            .is_some_and(|e| e.ends_with(":4318"))
    );
    assert_eq!(data["OTEL_SERVICE_NAME"], "bookings");
}

#[test]
fn the_dashboard_config_maps_hold_every_dashboard_unchanged() {
    let Some((_, docs)) = render() else { return };
    let mut seen = Vec::new();
    for map in of_kind(&docs, "ConfigMap") {
        if map["metadata"]["labels"]["grafana_dashboard"] != "1" {
            continue;
        }
        for (file, content) in map["data"].as_object().unwrap() {
            let source = read(&format!("dashboards/{file}"));
            assert!(content.as_str() == Some(source.as_str()), "{file} differs");
            seen.push(file.clone());
        }
    }
    seen.sort();
    assert_eq!(
        seen,
        dashboard_names(),
        "the dashboards in labelled ConfigMaps"
    );
}

/// Works without kubectl: the committed generated files are current, and every file the
/// kustomization names exists.
#[test]
fn the_generated_files_equal_their_sources() {
    let regenerate = "run deploy/kubernetes/generate.sh and commit its output";
    let rule = yaml(&format!("{KUSTOMIZATION}/prometheusrule.yaml"));
    assert_eq!(rule["kind"], "PrometheusRule");
    let groups = yaml(RULES)["groups"].clone();
    assert!(
        groups.as_array().is_some_and(|g| !g.is_empty()),
        "{RULES} has no groups"
    );
    let differs = difference(&rule["spec"]["groups"], &groups);
    assert_eq!(differs, None, "prometheusrule.yaml is stale: {regenerate}");

    let copies = json_names(&repo_path(&format!("{KUSTOMIZATION}/dashboards")));
    assert_eq!(copies, dashboard_names(), "dashboard copies: {regenerate}");
    for name in &copies {
        let copy = read(&format!("{KUSTOMIZATION}/dashboards/{name}"));
        assert!(
            copy == read(&format!("dashboards/{name}")),
            "{name} differs: {regenerate}"
        );
    }

    let kustomization = yaml(&format!("{KUSTOMIZATION}/kustomization.yaml"));
    let mut named = strings(&kustomization["resources"], "resources");
    let generators = kustomization["configMapGenerator"].as_array().unwrap();
    let mut dashboard_files = Vec::new();
    for g in generators {
        let files = g
            .get("files")
            .map(|f| strings(f, "files"))
            .unwrap_or_default();
        if g["options"]["labels"]["grafana_dashboard"] == "1" {
            dashboard_files.extend(files.iter().map(|f| f.trim_start_matches("dashboards/")));
        }
        named.extend(files);
    }
    dashboard_files.sort();
    assert_eq!(dashboard_files, copies, "dashboard ConfigMap generators");
    for file in named {
        let path = repo_path(&format!("{KUSTOMIZATION}/{file}"));
        assert!(
            path.is_file(),
            "{KUSTOMIZATION}/kustomization.yaml names {file}: missing"
        );
    }
}

/// deploy/proxy-sidecar/kubernetes: the base with the server unaudited on loopback and
/// `hintaudit proxy` in front of it, in the same pod, on the Service's port.
#[test]
fn the_proxy_sidecar_overlay_puts_the_proxy_in_front_of_the_unaudited_server() {
    let Some((text, docs)) = render_dir("deploy/proxy-sidecar/kubernetes") else {
        return;
    };
    let deployment = named(&docs, "Deployment", "bookings");
    let containers = deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers");
    let names: Vec<&str> = containers
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["bookings", "hintaudit-proxy"]);
    fn args(c: &Value) -> Vec<&str> {
        strings(&c["args"], "args")
    }
    assert_eq!(
        args(&containers[0]),
        ["--http", "127.0.0.1:8081"],
        "no --audit"
    );
    assert!(containers[0].get("ports").is_none());
    let proxy = args(&containers[1]);
    assert_eq!(
        proxy[..3],
        ["proxy", "--upstream", "http://127.0.0.1:8081/mcp"]
    );
    assert!(proxy.contains(&"--database"), "{proxy:?}");
    assert_eq!(containers[1]["ports"][0]["containerPort"], 8080);
    assert_eq!(
        containers[1]["readinessProbe"]["httpGet"]["path"],
        "/metrics"
    );

    let ok = runs("kubernetes-validate", &["--version"]);
    if !available(
        "kubernetes-validate",
        ok,
        "python3 -m pip install kubernetes-validate",
    ) {
        return;
    }
    let (passed, output) = kubernetes_validate(&text);
    assert!(passed, "kubernetes-validate --strict -k 1.32.0:\n{output}");
}

/// The replicas share the idempotency history on the valkey Service: the settings ConfigMap
/// mounted where HINTAUDIT_CONFIG says names it by the Service's name and port, and the
/// secret the replicas hash arguments with comes from a Secret, never from the manifests.
#[test]
fn the_replicas_share_their_history_on_the_valkey_service() {
    let Some((_, docs)) = render() else { return };
    let valkey = named(&docs, "Service", "valkey");
    let port = valkey["spec"]["ports"][0]["port"].as_u64().expect("port");
    let store = named(&docs, "Deployment", "valkey");
    assert_eq!(store["spec"]["replicas"], 1);
    assert!(subset(
        &valkey["spec"]["selector"],
        &store["spec"]["template"]["metadata"]["labels"]
    ));
    let pod = &named(&docs, "Deployment", "bookings")["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    let env = c["env"].as_array().unwrap();
    let var = |name: &str| {
        env.iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("{name}"))
    };
    let config = var("HINTAUDIT_CONFIG")["value"].as_str().unwrap();
    let key = &var("HINTAUDIT_HISTORY_KEY")["valueFrom"]["secretKeyRef"];
    assert_eq!(key["name"], "bookings-history-key");
    // The file HINTAUDIT_CONFIG names is the settings ConfigMap's, mounted.
    let mount = c["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| config.starts_with(m["mountPath"].as_str().unwrap()))
        .expect("HINTAUDIT_CONFIG is on a mounted volume");
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == mount["name"])
        .expect("the mounted volume");
    let map = named(
        &docs,
        "ConfigMap",
        volume["configMap"]["name"].as_str().unwrap(),
    );
    let file = config.rsplit('/').next().unwrap();
    let text = map["data"][file].as_str().expect("the settings file");
    let settings = hintaudit::core::Config::parse(text, file).expect("valid hintaudit.toml");
    let shared = settings
        .with_history_secret("a test secret of 16+ chars")
        .shared_history()
        .unwrap()
        .expect("history_url");
    assert_eq!(shared.url, format!("redis://valkey:{port}/0"));
}
