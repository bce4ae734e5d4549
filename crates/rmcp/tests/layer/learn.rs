//! `HintAudit::learn_tools`: the registry is complete and the recorder has every tool
//! declared before any client call; a later listing is a listing of its own.

use hintaudit_rmcp::{AuditStage, DeclaredHints, HintAuditLayer, Rule, stats};
use rmcp::model::CallToolRequestParams;
use tower::Layer;

use crate::common::*;

fn declared(seen: &[Seen]) -> Vec<(String, DeclaredHints)> {
    seen.iter()
        .filter_map(|s| match s {
            Seen::Declared { tool, hints } => Some((tool.clone(), *hints)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn learn_tools_declares_every_tool_to_the_recorder_before_any_client() {
    let (layer, seen) = recording_layer();
    let server = layer.layer(Clinic::new());
    let tools = Clinic::tools();
    assert_eq!(server.learn_tools(&tools), tools.len());

    // Before any client: one Declared event per tool, with the hints the tool serves, and
    // nothing else (no listing findings, no calls).
    let events = seen.lock().unwrap().clone();
    assert_eq!(events.len(), tools.len(), "{events:?}");
    let want = server.known_tools(); // sorted by name
    let mut got = declared(&events);
    got.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(got, want);
    assert!(
        got.contains(&(
            "get_appointment".to_owned(),
            DeclaredHints::new(Some(true), None, None, Some(false))
        )),
        "{got:?}"
    );
    assert!(
        got.contains(&(
            "legacy_lookup".to_owned(),
            DeclaredHints::new(None, None, None, None)
        )),
        "unset stays unset: {got:?}"
    );

    // A client lists and calls: the listing is linted as usual, with no hints_changed
    // (learning is not a first listing with other hints), and the call is judged.
    let client = connect(server).await;
    let list = list_tools_raw(&client).await;
    client
        .call_tool(CallToolRequestParams::new("touch_appointment"))
        .await
        .unwrap();
    let events = seen.lock().unwrap().clone();
    let listings: Vec<&Seen> = events
        .iter()
        .filter(|s| matches!(s, Seen::Listing { .. }))
        .collect();
    assert_eq!(listings.len(), list.tools.len());
    for l in listings {
        let Seen::Listing { rules, .. } = l else {
            unreachable!()
        };
        assert!(!rules.contains(&Rule::HintsChanged), "{l:?}");
    }
    assert_eq!(declared(&events).len(), tools.len(), "no further Declared");
    let call = events.last().unwrap();
    assert!(
        matches!(call, Seen::Call { tool, rules, .. } if tool == "touch_appointment" && rules == &[Rule::ReadOnlyWrite]),
        "{call:?}"
    );
}

#[tokio::test]
async fn a_panicking_recorder_while_learning_is_counted() {
    let before = stats().audit_errors(AuditStage::Record);
    let layer = HintAuditLayer::new()
        .with_recorder(|_: &hintaudit_rmcp::AuditEvent<'_>| panic!("recorder bug"));
    let server = layer.layer(Clinic::new());
    let tools = Clinic::tools();
    assert_eq!(server.learn_tools(&tools), tools.len());
    assert_eq!(
        server.known_tools().len(),
        tools.len(),
        "the registry still learns"
    );
    assert!(stats().audit_errors(AuditStage::Record) >= before + tools.len() as u64);
}

#[tokio::test]
async fn a_rewrapped_handler_shares_the_audit() {
    let (layer, seen) = recording_layer();
    let first = layer.layer(Clinic::new());
    let tools = Clinic::tools();
    first.learn_tools(&tools);
    let second = first.rewrap(Clinic::new());
    // The hints learned through one are known to the other, and nothing is declared again.
    assert_eq!(second.known_tools(), first.known_tools());
    assert!(std::sync::Arc::ptr_eq(second.judge(), first.judge()));
    let declared_before = declared(&seen.lock().unwrap()).len();
    // A call through the second is judged and reaches the same recorder.
    let client = connect(second).await;
    client
        .call_tool(CallToolRequestParams::new("touch_appointment"))
        .await
        .unwrap();
    let events = seen.lock().unwrap().clone();
    assert_eq!(declared(&events).len(), declared_before);
    assert!(
        matches!(events.last(), Some(Seen::Call { tool, .. }) if tool == "touch_appointment"),
        "{events:?}"
    );
}
