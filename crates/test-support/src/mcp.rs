//! A real rmcp client connected to a server over an in-memory duplex stream, tools/call
//! requests that carry a client's trace context in `_meta`, and a client handler that sees
//! `notifications/tools/list_changed`.

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, JsonObject, RequestMetaObject};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServerHandler, ServiceExt};
use tokio::sync::Notify;

/// A client handler that wakes `changed` on every `notifications/tools/list_changed` (serve
/// a clone of it and await `changed.notified()`).
#[derive(Clone, Default)]
pub struct ListChangedWatcher {
    /// Notified once per `notifications/tools/list_changed` received.
    pub changed: Arc<Notify>,
}

impl ClientHandler for ListChangedWatcher {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }
}

/// Serves `server` on one end of a duplex stream (on a task of the current Tokio runtime)
/// and connects a plain client to the other.
pub async fn connect<S: ServerHandler>(server: S) -> RunningService<RoleClient, ()> {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(client_io).await.expect("client connects")
}

/// A tools/call request of `tool` with `args`; with a `traceparent`, its `_meta` carries it
/// and `tracestate: client=1`, as an instrumented client sends them.
pub fn call_params(
    tool: &'static str,
    args: Option<JsonObject>,
    traceparent: Option<&str>,
) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(tool);
    if let Some(args) = args {
        params = params.with_arguments(args);
    }
    if let Some(tp) = traceparent {
        let mut meta = RequestMetaObject::new();
        meta.insert("traceparent".into(), tp.into());
        meta.insert("tracestate".into(), "client=1".into());
        params.meta = Some(meta);
    }
    params
}

/// Asserts that the listing `after` (tools by name, as JSON) serves `tool` corrected for a
/// write (readOnlyHint false, destructiveHint true) and every other tool of `before`
/// JSON-equal: the corrected-annotations tests' check.
pub fn assert_served_corrected(
    before: &serde_json::Map<String, serde_json::Value>,
    after: &serde_json::Map<String, serde_json::Value>,
    tool: &str,
) {
    let annotations = &after[tool]["annotations"];
    assert_eq!(annotations["readOnlyHint"], false, "{tool}: {annotations}");
    assert_eq!(
        annotations["destructiveHint"], true,
        "{tool}: {annotations}"
    );
    for (other, listed) in before {
        if other != tool {
            assert_eq!(
                &after[other], listed,
                "{other} served as the server lists it"
            );
        }
    }
}

/// A listing's tools by name, as JSON: what [`assert_served_corrected`] compares.
pub fn tools_by_name<'a>(
    tools: impl IntoIterator<Item = &'a rmcp::model::Tool>,
) -> serde_json::Map<String, serde_json::Value> {
    tools
        .into_iter()
        .map(|t| (t.name.to_string(), serde_json::to_value(t).expect("json")))
        .collect()
}

/// The `correct_hints` scenario for a client without a session (MCP 2026-07-28, connected
/// with `server/discover`): it listens for `toolsListChanged` on `subscriptions/listen`
/// (accepted as asked), lists the tools, calls `tool` (declared read-only) with `arguments`,
/// which the server answers by writing, is told `notifications/tools/list_changed` on its
/// stream within `wait`, re-lists, and finds `tool` served corrected and every other tool
/// as before ([`assert_served_corrected`]). Panics where any step fails.
pub async fn told_on_listen_and_relisted<S: rmcp::Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    tool: &str,
    arguments: JsonObject,
    wait: std::time::Duration,
) {
    use rmcp::model::{ServerNotification, SubscriptionFilter};

    let tools = SubscriptionFilter::builder().tools_list_changed().build();
    let mut stream = client
        .listen(tools.clone())
        .await
        .expect("subscriptions/listen");
    assert_eq!(stream.acknowledged(), &tools, "toolsListChanged accepted");
    let before = tools_by_name(&client.list_all_tools().await.expect("tools/list"));
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    client.call_tool(params).await.expect("tools/call");
    let told = tokio::time::timeout(wait, stream.next())
        .await
        .expect("a notification on the listen stream")
        .expect("the stream is sound");
    assert!(
        matches!(
            told,
            Some(ServerNotification::ToolListChangedNotification(_))
        ),
        "{told:?}"
    );
    let after = tools_by_name(&client.list_all_tools().await.expect("tools/list"));
    assert_served_corrected(&before, &after, tool);
    stream.cancel().await.ok();
}
