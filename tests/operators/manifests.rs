//! The deploy stack's manifests, proven by rendering and schema validation (no container
//! engine needed). Each submodule names the external tools it runs; a test whose tool is
//! absent prints why it skips (mandatory in CI, `HINTAUDIT_REQUIRE_ALL=1`):
//! - `compose`: deploy/compose.yaml against the Compose Specification schema (from PyPI's
//!   `check-jsonschema`), the wiring between the services and their configuration files, and
//!   every file the stack names;
//! - `grafana`: the provisioned datasources against the dashboards' datasource variables;
//! - `docker`: the Dockerfile's one cargo line, which .ci/run must run too (`cargo metadata`),
//!   and its `hintaudit` target, the proxy sidecar's image;
//! - `kubernetes`: `kubectl kustomize deploy/kubernetes`, PyPI's `kubernetes-validate`, the
//!   Prometheus Operator resources, and the generated PrometheusRule and dashboard copies;
//! - `packaging`: the wheel's and npm packages' manifests, action.yml's inputs against
//!   `hintaudit verify`'s flags, action.yml and the release workflow against their schemas
//!   (from `check-jsonschema` too).

mod compose;
mod docker;
mod grafana;
mod kubernetes;
mod packaging;

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use crate::support::repo_path;

/// A repository file's text.
pub(super) fn read(rel: &str) -> String {
    std::fs::read_to_string(repo_path(rel)).unwrap_or_else(|e| panic!("reading {rel}: {e}"))
}

/// A YAML document parsed into JSON values (anchors and aliases resolved).
pub(super) fn yaml(rel: &str) -> Value {
    serde_yaml_ng::from_str(&read(rel)).unwrap_or_else(|e| panic!("parsing {rel}: {e}"))
}

/// The file names of the top-level dashboards/*.json, sorted.
pub(super) fn dashboard_names() -> Vec<String> {
    json_names(&repo_path("dashboards"))
}

/// The names of the .json files in a directory, sorted (none when it does not exist).
pub(super) fn json_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    names
}

/// The strings of a JSON array (a panic names `what` when it is not one).
pub(super) fn strings<'a>(v: &'a Value, what: &str) -> Vec<&'a str> {
    v.as_array()
        .unwrap_or_else(|| panic!("{what}: not a list: {v}"))
        .iter()
        .map(|s| {
            s.as_str()
                .unwrap_or_else(|| panic!("{what}: not a string: {s}"))
        })
        .collect()
}

/// The JSON path of the first place where two values differ, with both sides there (for
/// assertion messages that do not print two whole rule files).
pub(super) fn difference(a: &Value, b: &Value) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| {
                let (l, r) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                difference(l, r).map(|d| format!(".{k}{d}"))
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (l, r))| difference(l, r).map(|d| format!("[{i}]{d}"))),
        (Value::Array(x), Value::Array(y)) => Some(format!(": {} items != {}", x.len(), y.len())),
        _ => (a != b).then(|| format!(": {a} != {b}")),
    }
}
