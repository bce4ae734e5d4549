//! One round of traffic against the bookings example: every tool, with the planted
//! violations made again each round.

use rmcp::RoleClient;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use serde_json::{Value, json};

use crate::demo::Called;

/// What one round did.
#[derive(Debug, Default)]
pub struct RoundOutcome {
    /// Every call, in order, with its answer.
    pub called: Vec<Called>,
    /// The appointment the round confirmed and left in place, for the next round to cancel.
    pub kept: Option<i64>,
}

impl RoundOutcome {
    /// Tool calls made.
    pub fn calls(&self) -> usize {
        self.called.len()
    }

    /// Calls that failed: a protocol error or a tool error (`isError: true`).
    pub fn errors(&self) -> usize {
        self.called
            .iter()
            .filter(|c| match &c.result {
                Ok(result) => result.is_error == Some(true),
                Err(_) => true,
            })
            .count()
    }
}

/// Drives one round against the bookings example: the demo's plan
/// ([`bookings_plan`](crate::demo::bookings_plan)) with arguments of the round's own, so
/// that every round, on any replica of a shared database, breaks every planted rule again
/// instead of finding the demo's rows already cancelled, confirmed and purged:
///
/// 1. the reads: `list_appointments` (all, then booked), `search_patients`,
///    `export_appointments`;
/// 2. `add_patient` with an e-mail unique to `tag` and `round` (honest);
/// 3. `create_appointment` twice with the same arguments (idempotency_broken), at a time
///    unique to the round, which books two new appointments A and B;
/// 4. `get_appointment` A (read_only_write), `reschedule_appointment` A twice (honest),
///    `confirm_appointment` A twice (undeclared_destructive through the trigger);
/// 5. `cancel_appointment` B and `previous` (the appointment the previous round kept), each
///    twice (honest), then `purge_cancelled` twice (undeclared_destructive), which deletes
///    them. A is kept ([`RoundOutcome::kept`]) until the next round: SQLite reuses the
///    highest deleted id, and a new appointment with the id of a confirmed one would find its
///    confirmation there and not fire the trigger. So the database holds one appointment
///    more than the seed, one confirmation and one patient more per round.
///
/// Tools the server lists that the plan does not name are called once with `{}`. Idempotent
/// tools are called twice with the same arguments, as the demo does. A failing call is
/// returned in its [`Called`]; when `create_appointment` fails, the steps that need its
/// ids are skipped.
///
/// # Errors
/// When tools/list fails.
pub async fn drive_round(
    client: &RunningService<RoleClient, ()>,
    tag: &str,
    round: u64,
    previous: Option<i64>,
) -> anyhow::Result<RoundOutcome> {
    let tools = client.list_all_tools().await?;
    let mut out = RoundOutcome::default();
    let mut call = async |tool: &str, arguments: Value| -> Option<Value> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(map) = arguments {
            params = params.with_arguments(map);
        }
        let result = client.call_tool(params).await;
        let answer = match &result {
            Ok(r) if r.is_error != Some(true) => r
                .content
                .first()
                .and_then(|c| c.as_text())
                .and_then(|t| serde_json::from_str::<Value>(&t.text).ok()),
            _ => None,
        };
        out.called.push(Called {
            tool: tool.to_owned(),
            result,
        });
        answer
    };
    let id = |answer: Option<Value>| answer.and_then(|v| v.get("id").and_then(Value::as_i64));

    call("list_appointments", json!({})).await;
    call(
        "list_appointments",
        json!({"status": "booked", "limit": 10}),
    )
    .await;
    call("search_patients", json!({"query": "a"})).await;
    call("export_appointments", json!({"format": "csv"})).await;
    call(
        "add_patient",
        json!({"name": format!("Traffic {tag} {round}"), "email": format!("traffic-{tag}-{round}@example.org")}),
    )
    .await;
    let booking = json!({
        "patient_id": 1,
        "starts_at": format!("2027-01-01T09:00 {tag}-{round}"),
        "reason": "traffic",
    });
    let a = id(call("create_appointment", booking.clone()).await);
    let b = id(call("create_appointment", booking).await);
    if let Some(a) = a {
        call("get_appointment", json!({"id": a})).await;
        let moved = json!({"id": a, "starts_at": format!("2027-01-02T09:00 {tag}-{round}")});
        for _ in 0..2 {
            call("reschedule_appointment", moved.clone()).await;
        }
        for _ in 0..2 {
            call("confirm_appointment", json!({"id": a})).await;
        }
    }
    for id in [b, previous].into_iter().flatten() {
        for _ in 0..2 {
            call("cancel_appointment", json!({"id": id})).await;
        }
    }
    for _ in 0..2 {
        call("purge_cancelled", json!({})).await;
    }
    for tool in &tools {
        if !PLANNED.contains(&tool.name.as_ref()) {
            call(&tool.name, json!({})).await;
        }
    }
    out.kept = a;
    Ok(out)
}

/// The tools [`drive_round`] calls by name, or leaves alone: notify_patient needs a
/// notification service the traffic's targets may not have (the demo calls it).
const PLANNED: [&str; 11] = [
    "notify_patient",
    "list_appointments",
    "search_patients",
    "export_appointments",
    "add_patient",
    "create_appointment",
    "get_appointment",
    "reschedule_appointment",
    "confirm_appointment",
    "cancel_appointment",
    "purge_cancelled",
];
