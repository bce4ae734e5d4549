//! Grafana's provisioning (deploy/grafana/provisioning) against the dashboards it loads.

use serde_json::{Value, json};

use super::{dashboard_names, read, yaml};

/// Grafana does not substitute `__inputs` in a provisioned dashboard. A datasource variable
/// whose current value names no datasource (`${DS_PROMETHEUS}`, left for imports) resolves by
/// its text, the datasource's name; anything else must be a variable or a provisioned uid.
#[test]
fn provisioned_dashboards_resolve_their_datasources() {
    let provisioned = yaml("deploy/grafana/provisioning/datasources/datasources.yaml");
    let sources = provisioned["datasources"].as_array().unwrap();
    let source = |kind: &str| {
        let ds = sources.iter().find(|d| d["type"] == kind);
        ds.unwrap_or_else(|| panic!("no {kind} datasource provisioned"))
    };
    let defaults: Vec<&Value> = sources.iter().filter(|d| d["isDefault"] == true).collect();
    assert_eq!(defaults.len(), 1, "one default datasource");
    assert_eq!(defaults[0]["type"], "prometheus");
    let names = dashboard_names();
    assert!(!names.is_empty(), "no dashboards/*.json");
    for name in names {
        let mut dashboard: Value = serde_json::from_str(&read(&format!("dashboards/{name}")))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let inputs = dashboard.as_object_mut().unwrap().remove("__inputs");
        let input_kind = |value: &str| {
            let input = value.strip_prefix("${")?.strip_suffix('}')?;
            let inputs = inputs.as_ref()?.as_array()?;
            let found = inputs.iter().find(|i| i["name"] == input)?;
            found["pluginId"].as_str()
        };
        let mut variables = Vec::new();
        let list = dashboard["templating"]["list"].as_array_mut();
        for var in list
            .into_iter()
            .flatten()
            .filter(|v| v["type"] == "datasource")
        {
            let kind = var["query"].as_str().unwrap().to_owned();
            let ds = source(&kind);
            let (value, text) = (&var["current"]["value"], &var["current"]["text"]);
            let resolves = *value == ds["uid"]
                || (value.as_str().and_then(input_kind) == Some(&kind) && *text == ds["name"]);
            assert!(
                resolves,
                "{name}: variable {} defaults to {value} ({text}), which Grafana does not \
                 resolve to the provisioned {kind} datasource: set its current value to {}",
                var["name"], ds["uid"]
            );
            variables.push((var["name"].as_str().unwrap().to_owned(), kind));
            var["current"] = json!({});
        }
        assert!(
            variables.iter().any(|(_, k)| k == "prometheus"),
            "{name}: no Prometheus variable"
        );
        assert!(
            !dashboard.to_string().contains("${DS_"),
            "{name} uses an __inputs placeholder outside a variable's current value"
        );
        let mut uids = Vec::new();
        datasource_uids(&dashboard, &mut uids);
        for uid in uids {
            let variable = variables
                .iter()
                .any(|(v, _)| uid == format!("${{{v}}}") || uid == format!("${v}"));
            let known = variable
                || sources.iter().any(|d| d["uid"] == uid.as_str())
                || ["-- Grafana --", "-- Mixed --", "-- Dashboard --", "grafana"]
                    .contains(&uid.as_str());
            assert!(
                known,
                "{name}: datasource uid {uid} is neither a variable nor provisioned"
            );
        }
    }
}

/// Every `datasource.uid` in a dashboard, panels and targets alike.
fn datasource_uids(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            if let Some(uid) = map.get("datasource").and_then(|d| d["uid"].as_str()) {
                out.push(uid.to_owned());
            }
            map.values().for_each(|v| datasource_uids(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| datasource_uids(v, out)),
        _ => {}
    }
}
