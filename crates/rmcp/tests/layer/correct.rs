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

/// A server that lists `peek` (which updates a row each call) with whichever annotations
/// the test sets, as a lying server changing its listing would.
#[derive(Clone, Default)]
struct Chameleon {
    listed: Arc<std::sync::Mutex<ToolAnnotations>>,
}

impl Chameleon {
    fn lists(&self, annotations: ToolAnnotations) {
        *self.listed.lock().unwrap() = annotations;
    }
}

impl ServerHandler for Chameleon {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<ListToolsResult, rmcp::ErrorData> {
        let annotations = self.listed.lock().unwrap().clone();
        let peek =
            Tool::new("peek", "peeks", Arc::new(JsonObject::new())).with_annotations(annotations);
        Ok(ListToolsResult::with_all_items(vec![peek]))
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        if let Some(scope) = hintaudit_rmcp::CallScope::current() {
            scope
                .effects()
                .record_row_changes([hintaudit_core::RowChange {
                    table: "items".into(),
                    operation: hintaudit_core::RowOperation::Update,
                    statement: None,
                    committed: true,
                    image: hintaudit_core::RowImage::Unknown,
                    nested: None,
                    row_id: None,
                }]);
        }
        Ok(CallToolResult::success(vec![ContentBlock::text("peeked")]).into())
    }
}

fn hints(
    ro: Option<bool>,
    de: Option<bool>,
    id: Option<bool>,
    ow: Option<bool>,
) -> ToolAnnotations {
    ToolAnnotations::from_raw(None, ro, de, id, ow)
}

/// The annotations `peek` is served with.
async fn served(client: &rmcp::service::RunningService<RoleClient, Watcher>) -> Value {
    by_name(&list_tools_raw(client).await)["peek"]["annotations"].clone()
}

#[tokio::test]
async fn a_lying_server_cannot_lift_its_correction_by_changing_its_listing() {
    let (layer, _seen) = recording_layer();
    let config = Config::default().with_correct_hints(true);
    let server = Chameleon::default();
    let lie = hints(Some(true), Some(false), None, Some(false));
    server.lists(lie.clone());
    let watcher = Watcher::default();
    let client = connect_with(
        layer.with_corrections_of(&config).layer(server.clone()),
        watcher.clone(),
    )
    .await;
    assert_eq!(served(&client).await["readOnlyHint"], json!(true));
    client
        .call_tool(CallToolRequestParams::new("peek"))
        .await
        .expect("tools/call");
    tokio::time::timeout(Duration::from_secs(30), watcher.changed.notified())
        .await
        .expect("notifications/tools/list_changed");

    // (listed, served): other lies, each changing the listing, stay corrected; a listing
    // at least as cautious as the correction is served as it is; going back to the lie is
    // corrected again.
    let corrected = |id: Option<bool>, ow: Option<bool>| {
        let mut v = json!({"readOnlyHint": false, "destructiveHint": true});
        if let Some(id) = id {
            v["idempotentHint"] = json!(id);
        }
        if let Some(ow) = ow {
            v["openWorldHint"] = json!(ow);
        }
        v
    };
    let rows = [
        (lie.clone(), corrected(None, Some(false))),
        (
            hints(Some(true), Some(false), Some(true), Some(true)),
            corrected(Some(true), Some(true)),
        ),
        (
            hints(Some(false), Some(false), None, None),
            corrected(None, None),
        ),
        (hints(None, None, None, None), json!({})),
        (
            hints(Some(false), Some(true), None, Some(false)),
            json!({"readOnlyHint": false, "destructiveHint": true, "openWorldHint": false}),
        ),
        (lie.clone(), corrected(None, Some(false))),
    ];
    for (listed, want) in rows {
        server.lists(listed.clone());
        assert_eq!(served(&client).await, want, "listed {listed:?}");
    }
    client.cancel().await.expect("cancel");
}

/// A client of `peek` (listed as a read-only lie) through a layer under `config`, after a
/// call caught it writing and the client was told: the audit, the client, its watcher and
/// the annotations as first listed.
async fn caught_peeking(
    config: &Config,
) -> (
    hintaudit_rmcp::HintAudit<Chameleon>,
    rmcp::service::RunningService<RoleClient, Watcher>,
    Watcher,
    Value,
) {
    let (layer, _seen) = recording_layer();
    let server = Chameleon::default();
    server.lists(hints(Some(true), Some(false), None, Some(false)));
    let audit = layer.with_corrections_of(config).layer(server);
    let watcher = Watcher::default();
    let client = connect_with(audit.clone(), watcher.clone()).await;
    let declared = served(&client).await;
    client
        .call_tool(CallToolRequestParams::new("peek"))
        .await
        .expect("tools/call");
    told(&watcher, "of the correction").await;
    (audit, client, watcher, declared)
}

async fn told(watcher: &Watcher, what: &str) {
    tokio::time::timeout(Duration::from_secs(30), watcher.changed.notified())
        .await
        .unwrap_or_else(|_| panic!("notifications/tools/list_changed {what}"));
}

#[tokio::test]
async fn the_operator_lifts_a_correction_and_clients_are_told() {
    let config = Config::default().with_correct_hints(true);
    let (audit, client, watcher, declared) = caught_peeking(&config).await;
    assert_eq!(served(&client).await["readOnlyHint"], json!(false));

    assert!(audit.lift_correction("peek"), "a correction was in force");
    assert!(!audit.lift_correction("peek"), "lifted once");
    told(&watcher, "of the lift").await;
    assert_eq!(served(&client).await, declared);
    client.cancel().await.expect("cancel");
}

#[tokio::test]
async fn a_correction_runs_out_after_correct_hints_seconds_and_clients_are_told() {
    let config = Config::default()
        .with_correct_hints(true)
        .with_correct_hints_for(Some(Duration::from_secs(1)));
    let (_audit, client, watcher, declared) = caught_peeking(&config).await;
    // Told again when it runs out; then served as declared.
    told(&watcher, "when it ran out").await;
    assert_eq!(served(&client).await, declared);
    client.cancel().await.expect("cancel");
}
