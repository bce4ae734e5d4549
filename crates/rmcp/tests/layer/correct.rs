//! Corrected annotations (`correct_hints`, docs/design.md#corrected-annotations): a client
//! connected through the layer is told with `notifications/tools/list_changed` once a
//! read-only tool is caught writing, and re-lists it corrected; every other tool is served
//! as the server lists it. Without the option nothing changes.

use std::sync::Arc;
use std::time::Duration;

use hintaudit_core::Config;
use rmcp::model::*;
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient, ServerHandler};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tower::Layer;

use crate::common::*;

/// A client that wakes `changed` on every `notifications/tools/list_changed`.
#[derive(Clone, Default)]
struct Watcher {
    changed: Arc<Notify>,
}

impl ClientHandler for Watcher {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }
}

/// The tools of a listing as JSON, by name.
fn by_name(list: &ListToolsResult) -> serde_json::Map<String, Value> {
    list.tools
        .iter()
        .map(|t| (t.name.to_string(), serde_json::to_value(t).expect("json")))
        .collect()
}

async fn touch(client: &rmcp::service::RunningService<RoleClient, Watcher>) {
    client
        .call_tool(CallToolRequestParams::new("touch_appointment"))
        .await
        .expect("tools/call");
}

#[tokio::test]
async fn a_read_only_tool_caught_writing_is_served_corrected_and_clients_are_told() {
    let (layer, seen) = recording_layer();
    let config = Config::default().with_correct_hints(true);
    let watcher = Watcher::default();
    let client = connect_with(
        layer.with_corrections_of(&config).layer(Clinic::new()),
        watcher.clone(),
    )
    .await;
    let info = client.peer_info().expect("initialized");
    let tools_cap = info.capabilities.tools.as_ref().expect("tools capability");
    assert_eq!(tools_cap.list_changed, Some(true), "listChanged advertised");

    let before = by_name(&list_tools_raw(&client).await);
    touch(&client).await;
    tokio::time::timeout(Duration::from_secs(30), watcher.changed.notified())
        .await
        .expect("notifications/tools/list_changed");

    let after = by_name(&list_tools_raw(&client).await);
    assert_eq!(
        after["touch_appointment"]["annotations"],
        json!({"readOnlyHint": false, "destructiveHint": true, "openWorldHint": false}),
        "corrected: an update is destructive"
    );
    for (name, tool) in &before {
        if name != "touch_appointment" {
            assert_eq!(&after[name], tool, "{name} served as listed");
        }
    }
    // The listing rules judged the server's own listing, never the corrected one.
    let listed: Vec<_> = seen
        .lock()
        .unwrap()
        .iter()
        .filter_map(|s| match s {
            Seen::Listing { tool, hints, rules } if tool == "touch_appointment" => {
                Some((hints.read_only, rules.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(listed.iter().all(
        |(ro, rules)| *ro == Some(true) && !rules.contains(&hintaudit_rmcp::Rule::HintsChanged)
    ));

    // Another call that writes the same way changes nothing more: no tighter correction.
    touch(&client).await;
    let again = by_name(&list_tools_raw(&client).await);
    assert_eq!(again, after);
    client.cancel().await.expect("cancel");
}

#[tokio::test]
async fn without_the_option_nothing_changes() {
    let (layer, _seen) = recording_layer();
    let client = connect_with(layer.layer(Clinic::new()), Watcher::default()).await;
    let info = client.peer_info().expect("initialized");
    let unwrapped = Clinic::new().get_info();
    assert_eq!(
        serde_json::to_value(&info.capabilities).unwrap(),
        serde_json::to_value(&unwrapped.capabilities).unwrap()
    );
    let before = by_name(&list_tools_raw(&client).await);
    touch(&client).await;
    let after = by_name(&list_tools_raw(&client).await);
    assert_eq!(before, after);
    assert_eq!(
        after["touch_appointment"]["annotations"]["readOnlyHint"],
        json!(true)
    );
    client.cancel().await.expect("cancel");
}
