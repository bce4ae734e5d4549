//! `/metrics` of the demo server, scraped over HTTP after a demo run.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use bookings::{PLANTED_CALL_FINDINGS, PLANTED_OPEN_WORLD_FINDINGS};
use hintaudit_cli::demo::connect;
use hintaudit_core::{DeclaredHints, Hint};
use hintaudit_telemetry::{MetricName, UNKNOWN_TOOL};
use hintaudit_test_support::promtool;
use hintaudit_test_support::scrape::{Scraped, http_get, labels};
use rmcp::model::CallToolRequestParams;

use crate::support::demo;

type Labels = Vec<(String, String)>;

fn nonzero(series: Vec<(Labels, f64)>) -> BTreeMap<Labels, f64> {
    series.into_iter().filter(|(_, v)| *v != 0.0).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_scrape_has_the_planted_counts_and_every_tools_declared_hints() {
    let run = demo().await;
    let (status, headers, body) = http_get(run.server.addr, "/metrics").await;
    assert!(status.contains(" 200 "), "{status}");
    assert!(
        headers.contains("content-type: text/plain; version=0.0.4"),
        "{headers}"
    );
    let s = Scraped::parse(&body);

    // What the scrape must say, from the demo's own record of every judged call.
    let calls = &run.collected.calls;
    let mut violations: BTreeMap<Labels, f64> = BTreeMap::new();
    let mut statuses: BTreeMap<Labels, f64> = BTreeMap::new();
    let mut statements: BTreeMap<Labels, f64> = BTreeMap::new();
    let mut rows: BTreeMap<Labels, f64> = BTreeMap::new();
    for c in calls {
        let tool = c.tool.as_str();
        *statuses
            .entry(labels(&[("tool", tool), ("status", c.status.as_str())]))
            .or_default() += 1.0;
        for f in &c.findings {
            let key = labels(&[
                ("tool", tool),
                ("rule", f.rule.as_str()),
                ("hint", f.hint.spec_name()),
                ("severity", f.severity.as_str()),
            ]);
            *violations.entry(key).or_default() += 1.0;
        }
        for st in &c.observed.statements {
            let key = labels(&[("tool", tool), ("operation", st.operation.as_str())]);
            *statements.entry(key).or_default() += 1.0;
        }
        for r in c.observed.row_changes.iter().filter(|r| r.committed) {
            let key = labels(&[
                ("tool", tool),
                ("table", r.table.as_str()),
                ("operation", r.operation.as_str()),
            ]);
            *rows.entry(key).or_default() += 1.0;
        }
    }
    // The planted violations, exactly: each (tool, rule) of the example and nothing else.
    let planted: BTreeSet<(String, String)> = PLANTED_CALL_FINDINGS
        .iter()
        .chain(PLANTED_OPEN_WORLD_FINDINGS)
        .map(|(t, r)| (t.to_string(), r.to_string()))
        .collect();
    let found: BTreeSet<(String, String)> = violations
        .keys()
        .map(|l| {
            let get = |k: &str| l.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
            (get("tool").unwrap(), get("rule").unwrap())
        })
        .collect();
    assert_eq!(found, planted);
    let name = |m: MetricName| m.as_str();
    assert_eq!(
        nonzero(s.series(name(MetricName::HintViolations))),
        violations
    );
    assert_eq!(nonzero(s.series(name(MetricName::ToolCalls))), statuses);
    assert_eq!(
        nonzero(s.series(name(MetricName::ToolStatements))),
        statements
    );
    assert_eq!(nonzero(s.series(name(MetricName::ToolRowChanges))), rows);
    for (tool, _) in PLANTED_CALL_FINDINGS {
        let count = s
            .series(&format!("{}_count", MetricName::ToolCallDuration))
            .into_iter()
            .find(|(l, _)| *l == labels(&[("tool", tool)]))
            .map(|(_, v)| v);
        let want = calls.iter().filter(|c| c.tool == *tool).count() as f64;
        assert_eq!(count, Some(want), "{tool}");
    }

    // The declared-hints gauge: one series per tool, as tools/list serves its annotations.
    let client = connect(&run.server.url).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    client.cancel().await.ok();
    let mut want: BTreeMap<Labels, f64> = BTreeMap::new();
    for t in &tools {
        let annotations = serde_json::to_value(&t.annotations).ok();
        let h = DeclaredHints::from_annotations_json(annotations.as_ref());
        let l = labels(&[
            ("tool", &t.name),
            ("read_only", h.label(Hint::ReadOnly)),
            ("destructive", h.label(Hint::Destructive)),
            ("idempotent", h.label(Hint::Idempotent)),
            ("open_world", h.label(Hint::OpenWorld)),
        ]);
        want.insert(l, 1.0);
    }
    assert_eq!(tools.len(), 11);
    let declared: BTreeMap<Labels, f64> = s
        .series(name(MetricName::ToolDeclaredHints))
        .into_iter()
        .collect();
    assert_eq!(declared, want);
    let unset = labels(&[
        ("tool", "export_appointments"),
        ("read_only", "unset"),
        ("destructive", "unset"),
        ("idempotent", "unset"),
        ("open_world", "unset"),
    ]);
    assert_eq!(
        declared.get(&unset),
        Some(&1.0),
        "unset is shown as `unset`"
    );

    promtool::assert_accepts("promtool check", &body);
    run.server.shutdown().await;
}

/// A deterministic stream of random-looking names.
fn random_names(n: usize) -> Vec<String> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("t{x:016x}")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_unknown_tool_names_add_one_label_value() {
    const CALLS: usize = 10_000;
    const CLIENTS: usize = 8;
    let run = demo().await;
    let names = random_names(CALLS);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for chunk in names.chunks(CALLS / CLIENTS) {
        let url = run.server.url.clone();
        let chunk = chunk.to_vec();
        tasks.push(tokio::spawn(async move {
            let client = connect(&url).await.unwrap();
            for name in chunk {
                let answer = client.call_tool(CallToolRequestParams::new(name)).await;
                assert!(answer.is_err(), "an unknown tool is a protocol error");
            }
            client.cancel().await.ok();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    println!(
        "{CALLS} unknown-tool calls over streamable HTTP in {:?}",
        started.elapsed()
    );

    let (_, _, body) = http_get(run.server.addr, "/metrics").await;
    let s = Scraped::parse(&body);
    let mut want: BTreeSet<String> = run
        .collected
        .listings
        .iter()
        .map(|(t, _, _)| t.clone())
        .collect();
    assert_eq!(want.len(), 11);
    want.insert(UNKNOWN_TOOL.to_owned());
    assert_eq!(s.label_values("tool"), want);
    let unknown = s
        .series(MetricName::ToolCalls.as_str())
        .into_iter()
        .find(|(l, _)| *l == labels(&[("tool", UNKNOWN_TOOL), ("status", "protocol_error")]))
        .map(|(_, v)| v);
    assert_eq!(unknown, Some(CALLS as f64));
    run.server.shutdown().await;
}
