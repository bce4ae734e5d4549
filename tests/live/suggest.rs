//! The live layer offers the suggestions `hintaudit verify --suggest` makes: a recorder
//! behind the layer gets, for every planted lie of the bookings server, the corrected
//! annotations ([`CallReport::suggestion`]), driven by a real rmcp client over streamable
//! HTTP on a real SQLite file.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bookings::{Bookings, Db, PLANTED_CALL_FINDINGS};
use hintaudit::core::{AuditEvent, CallReport, Judge, SuggestedHints};
use hintaudit::rmcp::HintAuditLayer;
use hintaudit_cli::demo::{bookings_plan, connect, demo_policy, serve_http};
use rmcp::model::CallToolRequestParams;

use crate::support;

#[tokio::test]
async fn every_planted_lie_gets_corrected_annotations_through_the_recorder() {
    let db = support::sqlite();
    let pool = Db::connect(&db.url).await.expect("connect");
    // Per tool, the suggestions its calls produced.
    let seen: Arc<Mutex<BTreeMap<String, Vec<SuggestedHints>>>> = Arc::default();
    let store = seen.clone();
    let recorder = move |event: &AuditEvent<'_>| {
        if let AuditEvent::Call(r) = event
            && let Some(s) = CallReport::suggestion(r)
        {
            let mut seen = store.lock().unwrap();
            seen.entry(r.tool.to_owned()).or_default().push(s);
        }
    };
    let layer = HintAuditLayer::new()
        .with_judge(Arc::new(Judge::new(demo_policy())))
        .with_recorder(recorder);
    let server = serve_http(
        Bookings::new(pool),
        layer,
        "127.0.0.1:0".parse().unwrap(),
        None,
    )
    .await
    .expect("serve");
    let client = connect(&server.url).await.expect("client");
    let tools = client.list_all_tools().await.expect("tools/list");
    let idempotent = |name: &str| {
        tools.iter().any(|t| {
            t.name == name
                && t.annotations
                    .as_ref()
                    .and_then(|a| a.idempotent_hint)
                    .unwrap_or(false)
        })
    };
    for step in bookings_plan() {
        // Idempotent tools twice: a second call is what shows a broken idempotentHint.
        for _ in 0..if idempotent(step.tool) { 2 } else { 1 } {
            let params = CallToolRequestParams::new(step.tool)
                .with_arguments(step.arguments.as_object().unwrap().clone());
            client.call_tool(params).await.expect("call");
        }
    }
    client.cancel().await.ok();
    let seen = seen.lock().unwrap().clone();
    for (tool, rule) in PLANTED_CALL_FINDINGS {
        let fixes = |s: &&SuggestedHints| match *rule {
            "read_only_write" => s.corrected.read_only == Some(false),
            "undeclared_destructive" => s.corrected.destructive == Some(true),
            "idempotency_broken" => s.corrected.idempotent == Some(false),
            other => panic!("{other}"),
        };
        let s = seen
            .get(*tool)
            .and_then(|all| all.iter().find(fixes))
            .unwrap_or_else(|| panic!("{tool} {rule}: no suggestion fixes it in {seen:#?}"));
        assert!(
            s.evidence.iter().any(|e| e.contains(rule)),
            "{tool}: {:?}",
            s.evidence
        );
        let text = s.rmcp_attribute();
        assert!(text.starts_with("#[tool(annotations("), "{text}");
    }
    db.cleanup().await;
}
