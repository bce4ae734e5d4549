//! Observed effects disclosed (`disclose_effects`, docs/design.md#observed-effects-disclosed):
//! each tools/call result carries what the call was seen to do in
//! `_meta["io.hintaudit/effects"]`; everything else in the result is the server's, so a
//! client that ignores `_meta` sees the same result as without the option.

use hintaudit_core::Config;
use rmcp::model::*;
use serde_json::{Value, json};
use tower::Layer;

use crate::common::*;

const KEY: &str = "io.hintaudit/effects";

async fn call_json(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    tool: &str,
) -> Value {
    match client
        .call_tool(CallToolRequestParams::new(tool.to_owned()))
        .await
    {
        Ok(r) => serde_json::to_value(r).expect("json"),
        Err(e) => json!({ "error": e.to_string() }),
    }
}

/// The result of `tool` as a client that ignores the disclosure reads it (typed: the
/// disclosure's key dropped from `_meta`, and `_meta` when nothing else is in it), or the
/// error's text.
async fn ignoring_disclosure(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    tool: &str,
) -> Result<CallToolResult, String> {
    let mut result = client
        .call_tool(CallToolRequestParams::new(tool.to_owned()))
        .await
        .map_err(|e| e.to_string())?;
    if let Some(meta) = result.meta.as_mut() {
        meta.0.remove(KEY);
    }
    result.meta = result.meta.filter(|m| !m.0.is_empty());
    Ok(result)
}

#[tokio::test]
async fn a_call_discloses_its_tables_and_findings_and_nothing_else_changes() {
    let (layer, _seen) = recording_layer();
    let config = Config::default().with_disclose_effects(true);
    let disclosing = connect(layer.with_disclosure_of(&config).layer(Clinic::new())).await;
    let (plain_layer, _) = recording_layer();
    let plain = connect(plain_layer.layer(Clinic::new())).await;

    let touched = call_json(&disclosing, "touch_appointment").await;
    assert_eq!(
        touched["_meta"][KEY],
        json!({
            "status": "observed",
            "pending": [],
            "incomplete": [],
            "tables": [{"name": "appointments", "inserted": 0, "updated": 1, "deleted": 0,
                        "operations": []}],
            "files": [],
            "reported": [],
            "outbound": [],
            "findings": [
                {"rule": "read_only_write", "severity": "critical", "hint": "readOnlyHint",
                 "confidence": "confirmed"},
            ],
        }),
        "{touched}"
    );
    let clean = call_json(&disclosing, "get_appointment").await;
    assert_eq!(clean["_meta"][KEY]["tables"], json!([]), "{clean}");
    assert_eq!(clean["_meta"][KEY]["findings"], json!([]), "{clean}");
    // A tool error is a result: disclosed too.
    let failed = call_json(&disclosing, "broken").await;
    assert_eq!(failed["isError"], json!(true));
    assert_eq!(
        failed["_meta"][KEY]["status"],
        json!("observed"),
        "{failed}"
    );

    // A client that ignores `_meta` gets what it got without the option, call for call;
    // a JSON-RPC error carries no disclosure.
    for tool in [
        "touch_appointment",
        "get_appointment",
        "broken",
        "no_such_tool",
    ] {
        let without = ignoring_disclosure(&plain, tool).await;
        assert_eq!(call_json(&plain, tool).await.get("_meta"), None, "{tool}");
        assert_eq!(
            ignoring_disclosure(&disclosing, tool).await,
            without,
            "{tool}"
        );
    }
    disclosing.cancel().await.expect("cancel");
    plain.cancel().await.expect("cancel");
}
