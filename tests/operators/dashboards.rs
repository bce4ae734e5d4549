//! The Grafana dashboards in `dashboards/`: identity and import form (uid, schema, datasource
//! variables, `__inputs`), layout (unique ids, no overlapping grid), every panel's datasource,
//! description and unit, `rate()`/`increase()` around every counter, Tempo trace links on the
//! per-tool violation panels, and metric names in step with `MetricName` and the rules file.
//! Every query is parsed (crate::promql) once its variables are substituted; [`panel_queries`]
//! hands them to the stack test, which runs them against a real Prometheus.

use std::collections::{BTreeSet, HashMap, HashSet};

use hintaudit_core::semconv;
use hintaudit_telemetry::MetricName;
use serde_json::Value;

use crate::promql::{self, scan};
use crate::support::repo_path;

mod scan;

use scan::{explore_links, rules, substitute};

/// The dashboards, by file below the repository root, and their uid.
pub const DASHBOARDS: &[(&str, &str)] = &[
    ("dashboards/hintaudit-overview.json", "hintaudit-overview"),
    ("dashboards/hintaudit-tool.json", "hintaudit-tool"),
    ("dashboards/hintaudit-fleet.json", "hintaudit-fleet"),
];

/// The rules file the dashboards' recording rules come from.
pub const RULES: &str = "deploy/prometheus/rules/hintaudit.rules.yaml";

/// Template variables substituted when the caller gives none: the planted read-only writer
/// of the bookings example, every instance, and Grafana's interval macros at a 1 s scrape.
const DEFAULT_VARS: &[(&str, &str)] = &[
    ("tool", "get_appointment"),
    ("instance", ".*"),
    ("__rate_interval", "1m"),
    ("__interval", "15s"),
    ("__interval_ms", "15000"),
    ("__range", "1h"),
    ("__range_s", "3600"),
    ("__range_ms", "3600000"),
];

/// One Prometheus query of one panel, with template variables substituted.
#[derive(Debug, Clone)]
pub struct PanelQuery {
    /// The dashboard uid, e.g. `hintaudit-overview`.
    pub dashboard: String,
    /// The panel id within that dashboard.
    pub panel_id: u64,
    /// The panel title (variables left as written).
    pub title: String,
    /// The PromQL expression, ready for `/api/v1/query`.
    pub expr: String,
}

/// Every Prometheus target expression of every dashboard, in file and panel order, with
/// `$var`, `${var}` and `${var:format}` replaced from `vars`, then [`DEFAULT_VARS`].
pub fn panel_queries(vars: &[(&str, &str)]) -> Vec<PanelQuery> {
    let mut lookup: HashMap<&str, &str> = DEFAULT_VARS.iter().copied().collect();
    lookup.extend(vars.iter().copied());
    let mut out = Vec::new();
    for (file, uid) in DASHBOARDS {
        let d = load(file);
        for p in panels(&d) {
            for t in targets(p) {
                if let Some(expr) = t["expr"].as_str() {
                    out.push(PanelQuery {
                        dashboard: (*uid).to_owned(),
                        panel_id: p["id"].as_u64().unwrap_or(0),
                        title: str_of(p, "title").to_owned(),
                        expr: substitute(expr, &lookup),
                    });
                }
            }
        }
    }
    out
}

fn load(rel: &str) -> Value {
    let path = repo_path(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn all() -> Vec<(&'static str, Value)> {
    DASHBOARDS.iter().map(|(f, _)| (*f, load(f))).collect()
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or("")
}

/// Every panel, rows' nested panels included.
fn panels(d: &Value) -> Vec<&Value> {
    fn walk<'a>(list: &'a Value, out: &mut Vec<&'a Value>) {
        for p in list.as_array().into_iter().flatten() {
            out.push(p);
            walk(&p["panels"], out);
        }
    }
    let mut out = Vec::new();
    walk(&d["panels"], &mut out);
    out
}

fn targets(p: &Value) -> impl Iterator<Item = &Value> {
    p["targets"].as_array().into_iter().flatten()
}

fn is_layout(p: &Value) -> bool {
    matches!(str_of(p, "type"), "row" | "text")
}

fn variable<'a>(d: &'a Value, name: &str) -> Option<&'a Value> {
    d["templating"]["list"]
        .as_array()?
        .iter()
        .find(|v| v["name"] == name)
}

#[test]
fn each_dashboard_has_its_uid_schema_variables_and_inputs() {
    let mut uids = HashSet::new();
    for ((file, uid), (_, d)) in DASHBOARDS.iter().zip(all()) {
        assert_eq!(str_of(&d, "uid"), *uid, "{file}: uid");
        assert!(
            uids.insert(str_of(&d, "uid").to_owned()),
            "{file}: uid twice"
        );
        assert!(
            d["schemaVersion"].as_u64().unwrap_or(0) >= 39,
            "{file}: schemaVersion"
        );
        let text = d.to_string();
        let inputs: Vec<&str> = d["__inputs"]
            .as_array()
            .unwrap_or_else(|| panic!("{file}: no __inputs"))
            .iter()
            .map(|i| str_of(i, "name"))
            .collect();
        for (var, plugin, input) in [
            ("datasource", "prometheus", "DS_PROMETHEUS"),
            ("tempo", "tempo", "DS_TEMPO"),
        ] {
            let used =
                text.contains(&format!("${{{var}}}")) || text.contains(&format!("${{{var}:"));
            if var == "datasource" {
                assert!(used, "{file}: no panel uses ${{datasource}}");
            }
            if !used {
                assert!(
                    variable(&d, var).is_none(),
                    "{file}: ${{{var}}} declared, unused"
                );
                continue;
            }
            let v = variable(&d, var).unwrap_or_else(|| panic!("{file}: no {var} variable"));
            assert_eq!(
                (str_of(v, "type"), str_of(v, "query")),
                ("datasource", plugin)
            );
            assert!(inputs.contains(&input), "{file}: __inputs lacks {input}");
            let input_def = d["__inputs"]
                .as_array()
                .unwrap()
                .iter()
                .find(|i| i["name"] == input);
            assert_eq!(
                input_def.map(|i| str_of(i, "pluginId")),
                Some(plugin),
                "{file}"
            );
            // UI import replaces ${DS_...} with the chosen datasource: the variable's default.
            assert_eq!(
                str_of(&v["current"], "value"),
                format!("${{{input}}}"),
                "{file}: {var}"
            );
        }
        let required: HashSet<&str> = d["__requires"]
            .as_array()
            .unwrap_or_else(|| panic!("{file}: no __requires"))
            .iter()
            .map(|r| str_of(r, "id"))
            .collect();
        for p in panels(&d).into_iter().filter(|p| !is_layout(p)) {
            assert!(
                required.contains(str_of(p, "type")),
                "{file}: __requires {}",
                p["type"]
            );
        }
        assert!(
            required.contains("grafana") && required.contains("prometheus"),
            "{file}"
        );
    }
}

#[test]
fn panel_ids_are_unique_and_the_grid_does_not_overlap() {
    for (file, d) in all() {
        let mut ids = HashSet::new();
        for p in panels(&d) {
            let id = p["id"]
                .as_u64()
                .unwrap_or_else(|| panic!("{file}: panel without id"));
            assert!(ids.insert(id), "{file}: panel id {id} twice");
        }
        // Top-level panels share one grid; a collapsed row's panels form their own.
        let mut layers = vec![d["panels"].as_array().unwrap().iter().collect::<Vec<_>>()];
        for p in panels(&d) {
            if let Some(nested) = p["panels"].as_array().filter(|n| !n.is_empty()) {
                layers.push(nested.iter().collect());
            }
        }
        for layer in layers {
            let boxes: Vec<(u64, [u64; 4])> = layer
                .iter()
                .map(|p| {
                    let g = &p["gridPos"];
                    let v = ["x", "y", "w", "h"].map(|k| g[k].as_u64().expect("gridPos"));
                    assert!(v[0] + v[2] <= 24 && v[2] > 0 && v[3] > 0, "{file}: {g}");
                    (p["id"].as_u64().unwrap(), v)
                })
                .collect();
            for (i, (a, [ax, ay, aw, ah])) in boxes.iter().enumerate() {
                for (b, [bx, by, bw, bh]) in &boxes[i + 1..] {
                    let apart =
                        ax + aw <= *bx || bx + bw <= *ax || ay + ah <= *by || by + bh <= *ay;
                    assert!(apart, "{file}: panels {a} and {b} overlap");
                }
            }
        }
    }
}

#[test]
fn every_panel_has_a_datasource_description_and_unit() {
    let allowed = ["${datasource}", "${tempo}"];
    for (file, d) in all() {
        for p in panels(&d).into_iter().filter(|p| !is_layout(p)) {
            let title = str_of(p, "title");
            let uid = str_of(&p["datasource"], "uid");
            assert!(
                allowed.contains(&uid),
                "{file} {title:?}: datasource {uid:?}"
            );
            let ts: Vec<&Value> = targets(p).collect();
            assert!(!ts.is_empty(), "{file} {title:?}: no targets");
            for t in ts {
                let tuid = str_of(&t["datasource"], "uid");
                assert!(
                    allowed.contains(&tuid),
                    "{file} {title:?}: target datasource {tuid:?}"
                );
            }
            assert!(
                !str_of(p, "description").trim().is_empty(),
                "{file} {title:?}: description"
            );
            let unit = str_of(&p["fieldConfig"]["defaults"], "unit");
            assert!(
                !unit.is_empty(),
                "{file} {title:?}: fieldConfig.defaults.unit"
            );
        }
    }
}

#[test]
fn every_counter_is_inside_rate_or_increase() {
    for q in panel_queries(&[]) {
        let s = scan(&q.expr);
        assert!(
            !s.metrics.is_empty(),
            "{} {:?}: no metric in {}",
            q.dashboard,
            q.title,
            q.expr
        );
        if let Some((name, call)) = s.bare_counters.first() {
            panic!(
                "{} {:?}: {name} inside {call:?}, not rate()/irate()/increase(): {}",
                q.dashboard, q.title, q.expr
            );
        }
    }
}

#[test]
fn per_tool_violation_panels_link_to_their_traces_in_tempo() {
    let d = load("dashboards/hintaudit-tool.json");
    // By span name, `tools/call <tool>`: it is `tools/call __unknown__` for every undeclared
    // tool, as the metrics' tool label, while gen_ai.tool.name holds the name sent.
    let tool_attr = "name = \"tools/call ${tool";
    let rule_attr = format!(
        "event.{} = \"${{__field.labels.rule}}\"",
        semconv::FINDING_RULE
    );
    let violations = MetricName::HintViolations.as_str();
    // `$tool` substituted by itself: a string literal the matcher keeps.
    let queries = panel_queries(&[("tool", "$tool")]);
    let tool_filter = ("tool".to_owned(), "$tool".to_owned());
    let mut checked = 0;
    for p in panels(&d) {
        let exprs: Vec<(&str, promql::Scan)> = queries
            .iter()
            .filter(|q| q.dashboard == "hintaudit-tool" && Some(q.panel_id) == p["id"].as_u64())
            .map(|q| (q.expr.as_str(), scan(&q.expr)))
            .collect();
        if !exprs
            .iter()
            .any(|(_, s)| s.metrics.iter().any(|m| m == violations))
        {
            continue;
        }
        let title = str_of(p, "title");
        for (e, s) in &exprs {
            assert!(
                s.equal_matchers.contains(&tool_filter),
                "{title:?}: not filtered by $tool: {e}"
            );
            assert!(
                s.grouping.contains("rule") && !s.without,
                "{title:?}: no rule label for the link: {e}"
            );
        }
        let tempo: Vec<Value> = explore_links(p)
            .into_iter()
            .filter(|l| l["datasource"] == "${tempo}")
            .collect();
        assert!(
            !tempo.is_empty(),
            "{title:?}: no Explore link to ${{tempo}}"
        );
        for state in tempo {
            let q = &state["queries"][0];
            assert_eq!(q["datasource"]["type"], "tempo", "{title:?}");
            assert_eq!(q["datasource"]["uid"], "${tempo}", "{title:?}");
            assert_eq!(q["queryType"], "traceql", "{title:?}");
            let traceql = str_of(q, "query");
            assert!(traceql.contains(tool_attr), "{title:?}: {traceql}");
            assert!(traceql.contains(&rule_attr), "{title:?}: {traceql}");
            assert!(
                traceql.starts_with('{') && traceql.ends_with('}'),
                "{traceql}"
            );
            assert_eq!(state["range"]["from"], "${__from}", "{title:?}");
        }
        checked += 1;
    }
    assert!(
        checked >= 2,
        "only {checked} violation panels on the per-tool dashboard"
    );
}

#[test]
fn metric_names_are_the_exported_ones_and_all_are_shown() {
    let (rule_exprs, records) = rules();
    let exported: BTreeSet<String> = MetricName::ALL
        .iter()
        .flat_map(|m| m.series_names())
        .collect();
    let mut used: Vec<(String, String)> = Vec::new(); // (where, name)
    for q in panel_queries(&[]) {
        for n in scan(&q.expr).metrics {
            used.push((format!("{} {:?}", q.dashboard, q.title), n));
        }
    }
    for (file, d) in all() {
        for v in d["templating"]["list"].as_array().into_iter().flatten() {
            let q = str_of(v, "query");
            // Grafana's label_values(selector, label): the selector is PromQL.
            let inner = q
                .strip_prefix("label_values(")
                .and_then(|i| i.rsplit_once(','));
            if let Some((selector, _label)) = inner {
                for n in scan(selector).metrics {
                    used.push((format!("{file} variable {}", str_of(v, "name")), n));
                }
            }
        }
    }
    for e in &rule_exprs {
        for n in scan(e).metrics {
            used.push((RULES.to_owned(), n));
        }
    }
    for (place, name) in &used {
        let known = exported.contains(name) || records.contains(name) || name == "up";
        assert!(
            known,
            "{place}: {name} is neither exported, `up`, nor recorded in {RULES}"
        );
    }
    let names: HashSet<&str> = used.iter().map(|(_, n)| n.as_str()).collect();
    for m in MetricName::ALL {
        let shown = m.series_names().iter().any(|s| names.contains(s.as_str()));
        assert!(shown, "{m} is on no dashboard and in no rule");
    }
    for r in &records {
        assert!(
            names.contains(r.as_str()),
            "recording rule {r} is used nowhere"
        );
    }
}

#[test]
fn panel_queries_cover_every_target_and_leave_no_variable() {
    fn count_exprs(v: &Value) -> usize {
        match v {
            Value::Object(m) => {
                usize::from(m.get("expr").is_some_and(Value::is_string))
                    + m.values().map(count_exprs).sum::<usize>()
            }
            Value::Array(a) => a.iter().map(count_exprs).sum(),
            _ => 0,
        }
    }
    let in_json: usize = all().iter().map(|(_, d)| count_exprs(d)).sum();
    let queries = panel_queries(&[("tool", "create_appointment"), ("__range", "10m")]);
    assert_eq!(queries.len(), in_json);
    for q in &queries {
        assert!(
            !q.expr.contains('$'),
            "{} {}: {}",
            q.dashboard,
            q.panel_id,
            q.expr
        );
        promql::parse(&q.expr);
    }
    assert!(
        queries
            .iter()
            .any(|q| q.expr.contains("tool=\"create_appointment\""))
    );
    assert!(queries.iter().any(|q| q.expr.contains("[10m]")));
    assert!(!queries.iter().any(|q| q.expr.contains("[1h]")));
    let vars = HashMap::from([
        ("tool", "t"),
        ("__interval", "15s"),
        ("__interval_ms", "15000"),
    ]);
    assert_eq!(
        substitute(
            "a{tool=\"$tool\"}[$__interval] ${tool:regex} $__interval_ms $nope",
            &vars
        ),
        "a{tool=\"t\"}[15s] t 15000 $nope"
    );
}
