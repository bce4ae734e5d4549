//! deploy/compose.yaml: valid against the Compose Specification schema, every service wired
//! to the others as their configuration files say, and every file it names present.
//!
//! The schema is the one PyPI's `check-jsonschema` ships (vendored from
//! compose-spec/compose-spec, refreshed with each release): `python3` prints its path through
//! `importlib.resources`, and the Rust `jsonschema` crate validates against it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use super::docker::instructions;
use super::{dashboard_names, json_names, read, strings, yaml};
use crate::support::{available, repo, repo_path};

/// Where compose resolves relative paths: the compose file's directory.
const COMPOSE_DIR: &str = "deploy";

/// The compose services, as the shared names fix them.
const SERVICES: [&str; 10] = [
    "alertmanager",
    "bookings-1",
    "bookings-2",
    "grafana",
    "otel-collector",
    "postgres",
    "prometheus",
    "tempo",
    "traffic",
    "valkey",
];

fn compose() -> Value {
    yaml("deploy/compose.yaml")
}

fn service<'a>(compose: &'a Value, name: &str) -> &'a Value {
    let s = &compose["services"][name];
    assert!(s.is_object(), "compose has no service {name}");
    s
}

/// The host path behind a path inside a service's container, through its bind mounts
/// (`./src:/dst[:ro]`, relative to deploy/), or `None` when no mount covers it.
fn host_path(service: &Value, container: &str) -> Option<PathBuf> {
    let volumes = service["volumes"].as_array()?;
    volumes.iter().filter_map(Value::as_str).find_map(|v| {
        let mut parts = v.split(':');
        let (src, dst) = (parts.next()?, parts.next()?);
        let rest = container.strip_prefix(dst)?;
        let host = repo_path(COMPOSE_DIR).join(src);
        match rest.strip_prefix('/') {
            _ if rest.is_empty() => Some(host),
            Some(rest) => Some(host.join(rest)),
            None => None,
        }
    })
}

/// The files a one-star pattern (`dir/prefix*suffix`) names.
fn glob(pattern: &Path) -> Vec<PathBuf> {
    let name = pattern.file_name().unwrap().to_str().unwrap();
    let (prefix, suffix) = name.split_once('*').unwrap_or((name, ""));
    let dir = pattern.parent().unwrap();
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().unwrap().to_str().unwrap_or("");
            n.starts_with(prefix) && n.ends_with(suffix) && n.len() >= name.len() - 1
        })
        .collect();
    found.sort();
    found
}

/// `host:port` of a URL or address.
fn authority(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split('/').next().unwrap()
}

/// The port of a `host:port` endpoint.
fn port(endpoint: &Value) -> &str {
    let endpoint = endpoint
        .as_str()
        .unwrap_or_else(|| panic!("endpoint {endpoint}"));
    authority(endpoint).rsplit(':').next().unwrap()
}

/// The Compose Specification schema file from PyPI's check-jsonschema, or `None` (skip).
fn compose_schema() -> Option<PathBuf> {
    const FIND: &str = "import importlib.resources as r; \
        print(r.files('check_jsonschema.builtin_schemas.vendor').joinpath('compose-spec.json'))";
    let out = Command::new("python3").args(["-c", FIND]).output();
    let path = out
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .filter(|p| p.is_file());
    let reason = "python3 -m pip install check-jsonschema (it ships compose-spec.json)";
    available("the Compose Specification schema", path.is_some(), reason).then(|| path.unwrap())
}

#[test]
fn compose_file_validates_against_the_compose_specification() {
    let compose = compose();
    assert!(compose.get("version").is_none(), "`version:` is obsolete");
    let names: BTreeSet<&str> = compose["services"]
        .as_object()
        .expect("services")
        .keys()
        .map(String::as_str)
        .collect();
    let want: BTreeSet<&str> = SERVICES.iter().copied().collect();
    assert_eq!(names, want, "compose services");
    for (name, s) in compose["services"].as_object().unwrap() {
        let image = s["image"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: no image"));
        let tag = image.rsplit_once(':').map(|(_, t)| t).unwrap_or("");
        assert!(
            !tag.is_empty() && !tag.contains('/') && tag != "latest",
            "{name}: image {image} is not pinned to a version tag"
        );
    }

    let Some(path) = compose_schema() else { return };
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&compose)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{}: {errors:#?}", path.display());
    // The same validator rejects a misspelt key, so the check above is not vacuous.
    let mut broken = compose.clone();
    broken["services"]["bookings-1"]["dependson"] = json!(["postgres"]);
    assert!(!validator.is_valid(&broken), "the schema accepts anything");
}

#[test]
fn compose_services_reach_each_other_where_their_configs_say() {
    let compose = compose();
    let collector = yaml("deploy/otel-collector/config.yaml");
    let tempo = yaml("deploy/tempo/tempo.yaml");
    let otlp = &collector["receivers"]["otlp"]["protocols"];
    let collector_http = port(&otlp["http"]["endpoint"]);
    assert_eq!(port(&otlp["grpc"]["endpoint"]), "4317");
    assert_eq!(collector_http, "4318");

    let image = service(&compose, "bookings-1")["image"].clone();
    for name in ["bookings-1", "bookings-2", "traffic"] {
        let s = service(&compose, name);
        assert_eq!(
            s["image"], image,
            "{name}: one image for the bookings services"
        );
        // One service builds it; two builds exporting one tag at once can collide.
        let (build, pull) = (&s["build"], &s["pull_policy"]);
        match name {
            "bookings-1" => assert_eq!(build["context"], "..", "{name}"),
            _ => assert!(build.is_null() && pull == "never", "{name}: {build} {pull}"),
        }
    }
    for name in ["bookings-1", "bookings-2"] {
        let s = service(&compose, name);
        // The traffic generator reaches it by its service name, which rmcp's Host check
        // refuses unless it is allowed.
        assert_eq!(
            s["command"],
            json!(["--http", "0.0.0.0:8080", "--audit", "--allowed-host", name]),
            "{name}"
        );
        let env = &s["environment"];
        assert!(
            env["DATABASE_URL"]
                .as_str()
                .unwrap()
                .contains("@postgres:5432/"),
            "{name}"
        );
        // crates/telemetry speaks grpc and http/protobuf; http/protobuf goes to 4318.
        assert_eq!(
            env["OTEL_EXPORTER_OTLP_PROTOCOL"], "http/protobuf",
            "{name}"
        );
        let endpoint = env["OTEL_EXPORTER_OTLP_ENDPOINT"].as_str().unwrap();
        assert_eq!(
            authority(endpoint),
            format!("otel-collector:{collector_http}")
        );
        assert_eq!(env["OTEL_SERVICE_NAME"], "bookings", "{name}");
        assert_eq!(s["depends_on"]["postgres"]["condition"], "service_healthy");
        // The shared history: the settings file HINTAUDIT_CONFIG names is mounted from
        // deploy/, and its history_url is the valkey service.
        let config = env["HINTAUDIT_CONFIG"].as_str().expect("HINTAUDIT_CONFIG");
        let file = host_path(s, config).expect("the settings file is mounted");
        let text = std::fs::read_to_string(&file).expect("settings file");
        let settings = hintaudit::core::Config::parse(&text, "hintaudit.toml").unwrap();
        let shared = settings
            .with_history_secret("a test secret of 16+ chars")
            .shared_history()
            .unwrap()
            .expect("history_url");
        assert_eq!(authority(&shared.url), "valkey:6379", "{name}");
        assert!(env["HINTAUDIT_HISTORY_KEY"].is_string(), "{name}");
        // A replica serves whether the store is up or not: started, not healthy.
        assert_eq!(s["depends_on"]["valkey"]["condition"], "service_started");
    }
    assert!(service(&compose, "postgres")["healthcheck"]["test"].is_array());
    let exporter = &collector["exporters"]["otlp/tempo"]["endpoint"];
    let tempo_grpc = &tempo["distributor"]["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"];
    assert_eq!(
        authority(exporter.as_str().unwrap()),
        format!("tempo:{}", port(tempo_grpc))
    );
    let pipeline = &collector["service"]["pipelines"]["traces"];
    for (part, section) in [
        ("receivers", "receivers"),
        ("processors", "processors"),
        ("exporters", "exporters"),
    ] {
        for used in strings(&pipeline[part], part) {
            assert!(
                collector[section][used].is_object(),
                "{used} is not defined"
            );
        }
    }
    assert_eq!(strings(&pipeline["exporters"], "exporters"), ["otlp/tempo"]);

    // The traffic generator drives both replicas, after Prometheus scraped the zeros twice.
    let traffic = service(&compose, "traffic");
    assert_eq!(traffic["entrypoint"], json!(["hintaudit"]));
    let args = strings(&traffic["command"], "traffic command");
    let urls: Vec<&str> = args
        .windows(2)
        .filter(|w| w[0] == "--url")
        .map(|w| w[1])
        .collect();
    assert_eq!(
        urls,
        ["http://bookings-1:8080/mcp", "http://bookings-2:8080/mcp"]
    );
    let after: f64 = args.windows(2).find(|w| w[0] == "--start-after").unwrap()[1]
        .parse()
        .unwrap();

    let prometheus = yaml("deploy/prometheus/prometheus.yml");
    let job = prometheus["scrape_configs"]
        .as_array()
        .expect("scrape_configs")
        .iter()
        .find(|j| j["job_name"] == "hintaudit")
        .expect("a scrape job named hintaudit");
    let interval = job["scrape_interval"]
        .as_str()
        .or(prometheus["global"]["scrape_interval"].as_str())
        .unwrap_or("1m");
    assert!(
        after > 2.0 * seconds(interval),
        "--start-after {after} is not longer than two scrape intervals ({interval})"
    );
    let mut targets: Vec<&str> = job["static_configs"]
        .as_array()
        .expect("static_configs")
        .iter()
        .flat_map(|c| strings(&c["targets"], "targets"))
        .collect();
    targets.sort();
    assert_eq!(targets, ["bookings-1:8080", "bookings-2:8080"]);
    let alertmanagers: Vec<&str> = prometheus["alerting"]["alertmanagers"]
        .as_array()
        .expect("alerting.alertmanagers")
        .iter()
        .flat_map(|a| a["static_configs"].as_array().unwrap())
        .flat_map(|c| strings(&c["targets"], "alertmanager targets"))
        .collect();
    assert_eq!(alertmanagers, ["alertmanager:9093"]);

    // Grafana's datasources are the compose services, at the ports they listen on.
    let datasources = yaml("deploy/grafana/provisioning/datasources/datasources.yaml");
    let urls: Vec<(&str, &str)> = datasources["datasources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["uid"].as_str().unwrap(),
                authority(d["url"].as_str().unwrap()),
            )
        })
        .collect();
    let tempo_http = format!("tempo:{}", tempo["server"]["http_listen_port"]);
    assert_eq!(
        urls,
        [
            ("prometheus", "prometheus:9090"),
            ("tempo", tempo_http.as_str())
        ]
    );
}

/// Seconds in a Prometheus duration such as `15s`, `1m` or `500ms`.
fn seconds(duration: &str) -> f64 {
    let split = duration
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(duration.len());
    let (n, unit) = duration.split_at(split);
    let n: f64 = n
        .parse()
        .unwrap_or_else(|_| panic!("duration {duration:?}"));
    n * match unit {
        "ms" => 0.001,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => panic!("duration {duration:?}"),
    }
}

#[test]
fn every_file_the_compose_stack_names_exists() {
    let compose = compose();
    let deploy = repo_path(COMPOSE_DIR);
    let mut missing = Vec::new();
    let absent = |what: String, path: PathBuf| {
        (!path.exists()).then(|| format!("{what}: {}", path.display()))
    };
    for (name, s) in compose["services"].as_object().unwrap() {
        if let Some(build) = s.get("build") {
            let context = deploy.join(build["context"].as_str().unwrap());
            missing.extend(absent(format!("{name} build context"), context.clone()));
            let dockerfile = context.join(build["dockerfile"].as_str().unwrap_or("Dockerfile"));
            missing.extend(absent(format!("{name} dockerfile"), dockerfile));
        }
        for v in s["volumes"].as_array().into_iter().flatten() {
            let (src, dst) = v.as_str().unwrap().split_once(':').unwrap();
            let dst = dst.split(':').next().unwrap();
            missing.extend(absent(format!("{name} mount {dst}"), deploy.join(src)));
        }
        // Configuration files named on command lines are mounted from the repository.
        let args = match s["command"].is_array() {
            true => strings(&s["command"], name),
            false => Vec::new(),
        };
        for arg in args {
            if let Some((flag, path)) = arg.split_once('=')
                && flag.trim_start_matches('-').starts_with("config")
            {
                let host = host_path(s, path);
                let host = host.unwrap_or_else(|| panic!("{name}: {path} is not mounted"));
                missing.extend(absent(format!("{name} {flag}"), host));
            }
        }
    }
    // Prometheus's rule files (relative to its config file), through its mounts.
    let prometheus = yaml("deploy/prometheus/prometheus.yml");
    let server = service(&compose, "prometheus");
    let config = strings(&server["command"], "prometheus command")
        .into_iter()
        .find_map(|a| a.strip_prefix("--config.file="))
        .expect("--config.file");
    for pattern in strings(&prometheus["rule_files"], "rule_files") {
        let in_container = Path::new(config).parent().unwrap().join(pattern);
        let host = host_path(server, in_container.to_str().unwrap())
            .unwrap_or_else(|| panic!("rule_files {pattern} is not mounted"));
        if glob(&host).is_empty() {
            missing.push(format!("rule_files {pattern}: no file {}", host.display()));
        }
    }
    // Grafana: provisioning, the dashboards folder its provider reads, the home dashboard.
    let grafana = service(&compose, "grafana");
    let provisioning = host_path(grafana, "/etc/grafana/provisioning").expect("provisioning");
    missing.extend(absent(
        "provisioning".into(),
        provisioning.join("datasources"),
    ));
    let providers = yaml("deploy/grafana/provisioning/dashboards/dashboards.yaml");
    for p in providers["providers"].as_array().unwrap() {
        let path = p["options"]["path"].as_str().unwrap();
        let host = host_path(grafana, path).unwrap_or_else(|| panic!("{path} is not mounted"));
        let names = json_names(&host);
        assert_eq!(
            names,
            dashboard_names(),
            "dashboards under {}",
            host.display()
        );
        assert!(!names.is_empty(), "no dashboard in {}", host.display());
    }
    let home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"].as_str();
    missing.extend(absent(
        "home dashboard".into(),
        host_path(grafana, home.unwrap()).unwrap(),
    ));
    // The Dockerfile's COPY sources (those not from another stage), relative to its context.
    for line in instructions().iter().filter(|l| l.starts_with("COPY ")) {
        let words: Vec<&str> = line.split_whitespace().skip(1).collect();
        if words.iter().any(|w| w.starts_with("--from")) {
            continue;
        }
        for src in &words[..words.len() - 1] {
            missing.extend(absent(format!("Dockerfile {line}"), repo().join(src)));
        }
    }
    assert!(missing.is_empty(), "missing: {missing:#?}");
}

/// deploy/proxy-sidecar/compose.yaml, merged over deploy/compose.yaml: the server unaudited on
/// its loopback, `hintaudit proxy` in its network namespace in front of it, PostgreSQL with
/// wal_level = logical, Prometheus scraping the proxy; valid against the specification.
#[test]
fn the_proxy_sidecar_compose_file_puts_the_proxy_in_front_of_the_unaudited_server() {
    let overlay = yaml("deploy/proxy-sidecar/compose.yaml");
    let base = compose();
    let server = service(&overlay, "bookings-proxied");
    let proxy = service(&overlay, "hintaudit-proxy");
    fn command(s: &Value) -> Vec<&str> {
        strings(&s["command"], "command")
    }
    assert_eq!(command(server), ["--http", "127.0.0.1:8081"], "no --audit");
    assert_eq!(proxy["network_mode"], "service:bookings-proxied");
    let args = command(proxy);
    assert_eq!(
        args[..3],
        ["proxy", "--upstream", "http://127.0.0.1:8081/mcp"]
    );
    let db = args[args
        .iter()
        .position(|a| *a == "--database")
        .expect("--database")
        + 1];
    let url = service(&base, "bookings-1")["environment"]["DATABASE_URL"].clone();
    assert_eq!(Some(db), url.as_str(), "the server's own database");
    let postgres = command(service(&overlay, "postgres"));
    assert!(postgres.contains(&"wal_level=logical"), "{postgres:?}");
    // Prometheus's config for this stack scrapes the proxy, and is the base's otherwise.
    let scraped = read("deploy/proxy-sidecar/prometheus.yml");
    let base_config = read("deploy/prometheus/prometheus.yml");
    assert!(scraped.contains("\"bookings-proxied:8080\""), "{scraped}");
    let strip = |t: &str| {
        t.lines()
            .filter(|l| !l.starts_with('#') && !l.contains("targets: [\"bookings-1"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        strip(&scraped),
        strip(&base_config),
        "only the scrape targets differ"
    );

    let Some(path) = compose_schema() else { return };
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&overlay)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{}: {errors:#?}", path.display());
}
