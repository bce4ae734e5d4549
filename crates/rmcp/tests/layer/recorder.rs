//! What the recorder receives: one Call event per call, Listing events per listed tool, and
//! findings from the judge.

use hintaudit_rmcp::{CallInfo, CallStatus, DeclaredHints, HintAudit, HintAuditLayer, Rule};
use rmcp::model::CallToolRequestParams;
use tower::Layer;

use crate::common::*;

fn calls(seen: &[Seen]) -> Vec<Seen> {
    seen.iter()
        .filter(|s| matches!(s, Seen::Call { .. }))
        .cloned()
        .collect()
}

fn listing_of<'a>(seen: &'a [Seen], name: &str) -> Vec<&'a Seen> {
    seen.iter()
        .filter(|s| matches!(s, Seen::Listing { tool, .. } if tool == name))
        .collect()
}

#[tokio::test]
async fn a_call_event_per_call_with_status_and_hints() {
    let (layer, seen) = recording_layer();
    let client = connect(layer.layer(Clinic::new())).await;

    client
        .call_tool(CallToolRequestParams::new("get_appointment"))
        .await
        .unwrap();
    let failed = client
        .call_tool(CallToolRequestParams::new("broken"))
        .await
        .unwrap();
    assert_eq!(failed.is_error, Some(true));
    let unknown = client
        .call_tool(CallToolRequestParams::new("no_such_tool"))
        .await;
    assert!(unknown.is_err());
    client
        .call_tool(CallToolRequestParams::new("legacy_lookup"))
        .await
        .unwrap();

    let calls = calls(&seen.lock().unwrap());
    assert_eq!(
        calls,
        vec![
            Seen::Call {
                tool: "get_appointment".into(),
                known_tool: true,
                hints: DeclaredHints::new(Some(true), None, None, Some(false)),
                status: CallStatus::Ok,
                rules: vec![],
                verdict: "clean",
            },
            Seen::Call {
                tool: "broken".into(),
                known_tool: true,
                hints: DeclaredHints::new(Some(true), Some(true), None, None),
                status: CallStatus::ToolError,
                rules: vec![],
                verdict: "clean",
            },
            Seen::Call {
                tool: "no_such_tool".into(),
                known_tool: false,
                hints: DeclaredHints::new(None, None, None, None),
                status: CallStatus::ProtocolError,
                rules: vec![],
                verdict: "clean",
            },
            Seen::Call {
                tool: "legacy_lookup".into(),
                known_tool: true,
                hints: DeclaredHints::new(None, None, None, None),
                status: CallStatus::Ok,
                rules: vec![],
                verdict: "clean",
            },
        ]
    );
}

#[tokio::test]
async fn listing_events_lint_the_hints() {
    let (layer, seen) = recording_layer();
    let server = layer.layer(Clinic::new());
    let audit_view = server.clone();
    let client = connect(server).await;
    let list = list_tools_raw(&client).await;

    let seen = seen.lock().unwrap().clone();
    assert_eq!(listing_of(&seen, "legacy_lookup").len(), 1);
    assert_eq!(
        listing_of(&seen, "legacy_lookup")[0],
        &Seen::Listing {
            tool: "legacy_lookup".into(),
            hints: DeclaredHints::new(None, None, None, None),
            rules: vec![Rule::HintMissing; 4],
        }
    );
    // readOnlyHint true: only openWorldHint is meaningful and missing.
    assert_eq!(
        listing_of(&seen, "get_appointment")[0],
        &Seen::Listing {
            tool: "get_appointment".into(),
            hints: DeclaredHints::new(Some(true), None, None, Some(false)),
            rules: vec![],
        }
    );
    let Seen::Listing { rules, .. } = listing_of(&seen, "broken")[0] else {
        unreachable!()
    };
    assert!(rules.contains(&Rule::HintContradiction), "{rules:?}");
    assert_eq!(
        seen.iter()
            .filter(|s| matches!(s, Seen::Listing { .. }))
            .count(),
        list.tools.len()
    );

    // The registry learned every listed tool.
    let known = audit_view.known_tools();
    assert_eq!(known.len(), list.tools.len());
    assert_eq!(
        audit_view.declared_hints("cancel_appointment"),
        Some(DeclaredHints::new(
            Some(false),
            Some(true),
            Some(true),
            Some(false)
        ))
    );
}

#[tokio::test]
async fn hints_changed_when_a_listing_flips() {
    let (layer, seen) = recording_layer();
    let server = layer.layer(Flipper::default());
    let audit_view = server.clone();
    let client = connect(server).await;

    // Before any listing, a hand-written handler without get_tool declares nothing.
    client
        .call_tool(CallToolRequestParams::new("flip"))
        .await
        .ok();
    assert_eq!(audit_view.declared_hints("flip"), None);

    list_tools_raw(&client).await;
    assert_eq!(
        audit_view.declared_hints("flip").unwrap().read_only,
        Some(true)
    );
    list_tools_raw(&client).await;
    assert_eq!(
        audit_view.declared_hints("flip").unwrap().read_only,
        Some(false)
    );

    let seen = seen.lock().unwrap().clone();
    let Seen::Call { known_tool, .. } = &seen[0] else {
        panic!("{seen:?}")
    };
    assert!(!known_tool);
    let flips = listing_of(&seen, "flip");
    assert_eq!(flips.len(), 2);
    let rules = |s: &Seen| match s {
        Seen::Listing { rules, .. } => rules.clone(),
        _ => unreachable!(),
    };
    assert!(!rules(flips[0]).contains(&Rule::HintsChanged));
    assert_eq!(rules(flips[1]), vec![Rule::HintsChanged]);
    // An empty annotations object and no annotations are both "all unset".
    for name in ["bare", "plain"] {
        let listed = listing_of(&seen, name);
        assert_eq!(rules(listed[0]), vec![Rule::HintMissing; 4], "{name}");
    }
}

#[tokio::test]
async fn read_only_tool_that_writes_is_flagged_and_answer_is_unchanged() {
    let (layer, seen) = recording_layer();
    let audited = connect(layer.layer(Clinic::new())).await;
    let plain = connect(Clinic::new()).await;

    let with = audited
        .call_tool(CallToolRequestParams::new("touch_appointment"))
        .await
        .unwrap();
    let without = plain
        .call_tool(CallToolRequestParams::new("touch_appointment"))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&with).unwrap(),
        serde_json::to_value(&without).unwrap()
    );

    let calls = calls(&seen.lock().unwrap());
    let [
        Seen::Call {
            tool,
            rules,
            verdict,
            status,
            ..
        },
    ] = calls.as_slice()
    else {
        panic!("{calls:?}")
    };
    assert_eq!(tool, "touch_appointment");
    assert_eq!(*status, CallStatus::Ok);
    assert_eq!(rules, &vec![Rule::ReadOnlyWrite]);
    assert_eq!(*verdict, "critical");
}

#[tokio::test]
async fn layer_made_handlers_share_the_judge() {
    let layer = hintaudit_rmcp::HintAuditLayer::new().with_recorder(());
    let a = layer.layer(Clinic::new());
    let b = layer.layer(Clinic::new());
    assert!(std::sync::Arc::ptr_eq(a.judge(), b.judge()));
    assert!(std::sync::Arc::ptr_eq(a.judge(), layer.judge()));
    let own = HintAudit::new(Clinic::new());
    assert!(!std::sync::Arc::ptr_eq(a.judge(), own.judge()));
}

#[tokio::test]
async fn a_panicking_make_span_does_not_fail_the_call() {
    let before = hintaudit_rmcp::stats().audit_errors(hintaudit_rmcp::AuditStage::Record);
    let layer = HintAuditLayer::new()
        .with_recorder(())
        .with_make_span(|_: &CallInfo<'_>| -> tracing::Span { panic!("span maker bug") });
    let client = connect(layer.layer(Clinic::new())).await;
    let answer = client
        .call_tool(CallToolRequestParams::new("get_appointment"))
        .await
        .unwrap();
    assert_eq!(text_of(&answer), "get_appointment");
    assert!(hintaudit_rmcp::stats().audit_errors(hintaudit_rmcp::AuditStage::Record) > before);
}

#[tokio::test]
async fn a_panicking_recorder_does_not_fail_the_call() {
    let before = hintaudit_rmcp::stats().audit_errors(hintaudit_rmcp::AuditStage::Record);
    let layer = HintAuditLayer::new()
        .with_recorder(|_: &hintaudit_rmcp::AuditEvent<'_>| panic!("recorder bug"));
    let plain = connect(Clinic::new()).await;
    let client = connect(layer.layer(Clinic::new())).await;
    let want = serde_json::to_value(list_tools_raw(&plain).await).unwrap();
    assert_eq!(
        serde_json::to_value(list_tools_raw(&client).await).unwrap(),
        want
    );
    let answer = client
        .call_tool(CallToolRequestParams::new("touch_appointment"))
        .await
        .unwrap();
    assert_eq!(text_of(&answer), "shown");
    assert!(hintaudit_rmcp::stats().audit_errors(hintaudit_rmcp::AuditStage::Record) > before);
    // The default constructor works without a layer too.
    let wrapped = HintAudit::new(Clinic::new());
    assert_eq!(
        wrapped
            .declared_hints("touch_appointment")
            .unwrap()
            .read_only,
        Some(true)
    );
    assert_eq!(
        wrapped.known_tools().len(),
        1,
        "only the tool asked about is learned"
    );
}
