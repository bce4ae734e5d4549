//! Case 5, hostile input: the same hostile tools/call requests go to the bookings server
//! bare and to the same server behind the layer (each on its own fresh SQLite file, over a
//! real rmcp transport); every answer must be the same. Distinct bogus tool names (among
//! them NUL, bidi overrides, 64 KiB names, `__unknown__` itself), a 10 MB argument, and JSON
//! nested 10,000 deep. The `tool` label keeps to the declared tools and `__unknown__`.

use std::collections::BTreeSet;
use std::time::Duration;

use bookings::{Bookings, Db};
use hintaudit::core::Judge;
use hintaudit::rmcp::HintAuditLayer;
use hintaudit_cli::demo::demo_policy;
use hintaudit_telemetry::{PrometheusRecorder, UNKNOWN_TOOL, encode_text};
use hintaudit_test_support::mcp::connect;
use hintaudit_test_support::scrape::Scraped;
use rmcp::RoleClient;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use serde_json::{Value, json};
use tower::Layer;

use crate::support::{figure, rss_kb, size};

type Client = RunningService<RoleClient, ()>;

/// The answer as text: the result's JSON, or the error's message, or `timeout`.
async fn answer(client: &Client, params: CallToolRequestParams) -> String {
    answer_within(client, params, Duration::from_secs(20)).await
}

async fn answer_within(client: &Client, params: CallToolRequestParams, limit: Duration) -> String {
    match tokio::time::timeout(limit, client.call_tool(params)).await {
        Ok(Ok(r)) => serde_json::to_string(&r).expect("json"),
        Ok(Err(e)) => format!("error: {e}"),
        Err(_) => "timeout".to_owned(),
    }
}

async fn database(dir: &tempfile::TempDir, name: &str) -> Db {
    let url = format!("sqlite://{}?mode=rwc", dir.path().join(name).display());
    Db::connect(&url).await.expect("db")
}

/// Distinct bogus names: hostile ones first, then pseudo-random ones.
fn bogus_names(n: usize) -> Vec<String> {
    let mut names: Vec<String> = vec![
        String::new(),
        "\0".into(),
        "nul\0inside".into(),
        "\u{202e}etelpmoc_".into(),
        "\u{feff}list_appointments".into(),
        "list_appointments ".into(),
        "LIST_APPOINTMENTS".into(),
        UNKNOWN_TOOL.into(),
        "\u{fffd}\u{fffd}".into(),
        "a".repeat(64 * 1024),
        "tool{quote=\"x\"}\n# HELP".into(),
        "👾".repeat(100),
    ];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    while names.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        names.push(format!("bogus_{x:016x}"));
    }
    names
}

fn nested(depth: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..depth {
        v = Value::Array(vec![v]);
    }
    v
}

fn hostile_inputs() {
    // Deep JSON is built, sent and dropped recursively (serde_json): a big stack for it.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(256 << 20)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async { tokio::spawn(run()).await.expect("the run") });
}

async fn run() {
    let dir = tempfile::tempdir().unwrap();
    let bare = connect(Bookings::new(database(&dir, "bare.db").await)).await;
    let metrics = PrometheusRecorder::new();
    let audit = HintAuditLayer::new()
        .with_judge(std::sync::Arc::new(Judge::new(demo_policy())))
        .with_recorder(metrics.clone())
        .layer(Bookings::new(database(&dir, "audited.db").await));
    audit.learn_tools(&Bookings::tools());
    let audited = connect(audit).await;

    let mut requests: Vec<(&str, CallToolRequestParams)> = Vec::new();
    let names = bogus_names(size(1_000, 10_000));
    for name in &names {
        let p = CallToolRequestParams::new(name.clone())
            .with_arguments(json!({"x": 1}).as_object().unwrap().clone());
        requests.push(("bogus_name", p));
    }
    let big = "x".repeat(10 << 20);
    for (tool, key) in [
        ("search_patients", "query"),
        ("add_patient", "name"),
        ("no_such_tool", "q"),
    ] {
        let mut args = serde_json::Map::new();
        args.insert(key.into(), Value::String(big.clone()));
        args.insert("email".into(), json!("big@example.org"));
        requests.push((
            "argument_10mb",
            CallToolRequestParams::new(tool).with_arguments(args),
        ));
    }
    let rss_before = rss_kb();
    let (mut changed, mut sent) = (0usize, 0usize);
    let mut kinds: BTreeSet<&str> = BTreeSet::new();
    for (kind, params) in requests {
        let (a, b) = tokio::join!(answer(&bare, params.clone()), answer(&audited, params));
        sent += 1;
        kinds.insert(kind);
        if a != b {
            changed += 1;
            eprintln!("{kind}: bare {:.200} vs audited {:.200}", a, b);
        }
    }
    // Deep JSON last: a server that cannot read a message may drop the connection.
    let mut deep_args = serde_json::Map::new();
    deep_args.insert("query".into(), nested(10_000));
    let deep = CallToolRequestParams::new("search_patients").with_arguments(deep_args);
    // Both servers' transport refuses it (serde_json's depth limit) and never answers.
    let limit = Duration::from_secs(3);
    let (a, b) = tokio::join!(
        answer_within(&bare, deep.clone(), limit),
        answer_within(&audited, deep, limit)
    );
    sent += 1;
    kinds.insert("json_depth_10000");
    if a != b {
        changed += 1;
        eprintln!("deep json: bare {a:.200} vs audited {b:.200}");
    }
    let rss_after = rss_kb();
    let scraped = Scraped::parse(&encode_text(metrics.registry()));
    let tools = scraped.label_values("tool");
    let mut allowed: BTreeSet<String> = Bookings::tools()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    allowed.insert(UNKNOWN_TOOL.to_owned());
    let stray: Vec<&String> = tools.iter().filter(|t| !allowed.contains(*t)).collect();
    figure(
        "hostile",
        &[
            ("calls", sent.to_string()),
            ("distinct_bogus_names", names.len().to_string()),
            ("kinds", kinds.len().to_string()),
            ("tool_label_values", tools.len().to_string()),
            ("declared_tools", (allowed.len() - 1).to_string()),
            ("stray_label_values", stray.len().to_string()),
            ("calls_changed", changed.to_string()),
            (
                "deep_json_answer",
                if a.starts_with("error") {
                    "error".into()
                } else {
                    a.chars().take(20).collect()
                },
            ),
            ("rss_mb_before", (rss_before / 1024).to_string()),
            ("rss_mb_after", (rss_after / 1024).to_string()),
        ],
    );
    assert!(
        stray.is_empty(),
        "label values beyond the declared tools: {stray:?}"
    );
    assert_eq!(changed, 0, "answers changed by the audit");
    bare.cancel().await.ok();
    audited.cancel().await.ok();
}

#[test]
fn hostile_inputs_change_no_answer_and_no_label_set() {
    // Its own runtime (big stacks): a plain test.
    hostile_inputs();
}
