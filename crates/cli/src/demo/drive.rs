//! Driving every tool of a server with a real rmcp client, idempotent ones twice.

use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

use hintaudit_core::DeclaredHints;

/// One planned call.
#[derive(Debug, Clone)]
pub struct Step {
    /// The tool.
    pub tool: &'static str,
    /// Its arguments (a JSON object).
    pub arguments: Value,
}

/// The demo's plan for the bookings example: reads first, then writes, cancelling an
/// appointment before purging, so that every planted tool shows what it does.
pub fn bookings_plan() -> Vec<Step> {
    let step = |tool, arguments| Step { tool, arguments };
    vec![
        step("list_appointments", json!({})),
        step(
            "list_appointments",
            json!({"status": "booked", "limit": 10}),
        ),
        step("get_appointment", json!({"id": 1})),
        step("search_patients", json!({"query": "a"})),
        step("export_appointments", json!({"format": "csv"})),
        step(
            "add_patient",
            json!({"name": "Edsger Dijkstra", "email": "edsger@example.org"}),
        ),
        step(
            "create_appointment",
            json!({"patient_id": 4, "starts_at": "2026-12-24T10:00", "reason": "consultation"}),
        ),
        step(
            "reschedule_appointment",
            json!({"id": 2, "starts_at": "2026-12-09T10:00"}),
        ),
        step("cancel_appointment", json!({"id": 3})),
        step("confirm_appointment", json!({"id": 4})),
        step("purge_cancelled", json!({})),
        step("notify_patient", json!({"id": 1})),
    ]
}

/// One finished call, as the client saw it.
#[derive(Debug)]
pub struct Called {
    /// The tool.
    pub tool: String,
    /// The answer: a result (possibly `isError`) or a protocol error.
    pub result: Result<CallToolResult, ServiceError>,
}

/// Connects an rmcp client to the streamable HTTP endpoint `url`.
///
/// # Errors
/// When the server cannot be reached or the MCP handshake fails.
pub async fn connect(url: &str) -> anyhow::Result<RunningService<RoleClient, ()>> {
    let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
    Ok(().serve(transport).await?)
}

/// Lists the tools, then runs `plan`; a step is repeated once, with the same arguments, when
/// its tool declares `idempotentHint: true`. Tools the plan does not name are called once
/// with `{}`, so every tool is exercised.
///
/// # Errors
/// When tools/list fails; a failing call is returned in its [`Called`], not as an error.
pub async fn drive(
    client: &RunningService<RoleClient, ()>,
    plan: &[Step],
) -> anyhow::Result<(Vec<Tool>, Vec<Called>)> {
    let tools = client.list_all_tools().await?;
    let idempotent = |name: &str| {
        tools.iter().any(|t| {
            t.name == name
                && DeclaredHints::from_annotations_json(
                    serde_json::to_value(&t.annotations).ok().as_ref(),
                )
                .idempotent
                    == Some(true)
        })
    };
    let mut steps: Vec<(String, Value)> = plan
        .iter()
        .map(|s| (s.tool.to_owned(), s.arguments.clone()))
        .collect();
    for t in &tools {
        if !plan.iter().any(|s| s.tool == t.name) {
            steps.push((t.name.to_string(), json!({})));
        }
    }
    let mut called = Vec::new();
    for (tool, arguments) in steps {
        let times = if idempotent(&tool) { 2 } else { 1 };
        for _ in 0..times {
            let mut params = CallToolRequestParams::new(tool.clone());
            if let Value::Object(map) = arguments.clone() {
                params = params.with_arguments(map);
            }
            let result = client.call_tool(params).await;
            called.push(Called {
                tool: tool.clone(),
                result,
            });
        }
    }
    Ok((tools, called))
}
