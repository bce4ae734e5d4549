//! The layer changes no answer: tools/list, tool errors and protocol errors come back as the
//! inner server sent them.

use hintaudit_rmcp::HintAudit;
use rmcp::model::CallToolRequestParams;
use rmcp::{RoleClient, ServiceError, service::RunningService};
use serde_json::{Value, json};

use crate::common::*;

async fn call_value(
    client: &RunningService<RoleClient, ()>,
    request: CallToolRequestParams,
) -> Value {
    match client.call_tool(request).await {
        Ok(result) => json!({ "ok": result }),
        Err(ServiceError::McpError(error)) => json!({ "err": error }),
        Err(other) => panic!("transport failure: {other}"),
    }
}

fn requests() -> Vec<CallToolRequestParams> {
    vec![
        // (not get_appointment: it answers with the scope it sees, which only the layer opens)
        CallToolRequestParams::new("legacy_lookup"),
        // a tool error: isError true
        CallToolRequestParams::new("broken"),
        // a protocol error: unknown tool
        CallToolRequestParams::new("no_such_tool"),
        // arguments that do not deserialize: rmcp answers with a tool error
        CallToolRequestParams::new("cancel_appointment")
            .with_arguments(json!({"id": "not a number"}).as_object().unwrap().clone()),
        CallToolRequestParams::new("cancel_appointment")
            .with_arguments(json!({"id": 7}).as_object().unwrap().clone()),
    ]
}

#[tokio::test]
async fn tools_list_and_call_answers_are_identical() {
    let plain = connect(Clinic::new()).await;
    let audited = connect(HintAudit::new(Clinic::new())).await;

    let want = serde_json::to_value(list_tools_raw(&plain).await).unwrap();
    let got = serde_json::to_value(list_tools_raw(&audited).await).unwrap();
    assert_eq!(got, want);
    assert!(want["tools"].as_array().unwrap().len() >= 5);

    for request in requests() {
        let want = call_value(&plain, request.clone()).await;
        let got = call_value(&audited, request.clone()).await;
        assert_eq!(got, want, "{}", request.name);
    }
    // The cases above really cover both kinds of error.
    let broken = call_value(&plain, CallToolRequestParams::new("broken")).await;
    assert_eq!(broken["ok"]["isError"], json!(true));
    let unknown = call_value(&plain, CallToolRequestParams::new("no_such_tool")).await;
    assert!(unknown["err"]["code"].is_i64(), "{unknown}");
    let bad_arguments = call_value(&plain, requests()[3].clone()).await;
    assert_eq!(
        bad_arguments["ok"]["isError"],
        json!(true),
        "{bad_arguments}"
    );
}

#[tokio::test]
async fn invalid_params_error_is_identical() {
    let plain = connect(ScopeProbe).await;
    let audited = connect(HintAudit::new(ScopeProbe)).await;
    let want = call_value(&plain, CallToolRequestParams::new("invalid")).await;
    let got = call_value(&audited, CallToolRequestParams::new("invalid")).await;
    assert_eq!(got, want);
    assert_eq!(want["err"]["code"], json!(-32602), "{want}");
    assert_eq!(want["err"]["message"], json!("probe: invalid params"));
}

#[tokio::test]
async fn listing_with_empty_annotations_passes_through() {
    let plain = connect(Flipper::default()).await;
    let audited = connect(HintAudit::new(Flipper::default())).await;
    let want = serde_json::to_value(list_tools_raw(&plain).await).unwrap();
    let got = serde_json::to_value(list_tools_raw(&audited).await).unwrap();
    assert_eq!(got, want);
    // rmcp serializes unset hints by omitting them (it cannot send `null`): `bare` carries `{}`.
    assert_eq!(want["tools"][1]["annotations"], json!({}));
    assert!(want["tools"][2].get("annotations").is_none());
}
