//! Draft action metadata in the layer, end to end (docs/design.md#action-metadata): the
//! bookings server on a real SQLite file through its audited pool, its reminders POSTed
//! through hintaudit-http to a loopback service configured as outside the closed world,
//! served over streamable HTTP by a server that declares, in each tool's `_meta`:
//!
//! - `cancel_appointment`: outcome `Benign` (it overwrites a row's status) → `undeclared_outcome`;
//! - `notify_patient`: destination `INTERNAL` (it POSTs outside) → `undeclared_destination`;
//! - `list_appointments`: outcome `benign`, destination `internal`, and it reads: honest;
//! - `add_patient`: values the draft does not define, and it inserts: tolerated.
//!
//! With `correct_hints`, a real rmcp client is told and re-lists the two liars with their
//! action metadata tightened, every other tool as the server lists it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bookings::{Bookings, Db, Notifier};
use hintaudit::core::{ACTION_METADATA_KEY, AuditEvent, Config, Judge};
use hintaudit::rmcp::HintAuditLayer;
use hintaudit_cli::demo::{OutsideService, demo_policy, serve_http};
use hintaudit_http::OutboundRecorder;
use hintaudit_test_support::mcp::{ListChangedWatcher, tools_by_name};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListToolsResult, PaginatedRequestParams, ServerConfig,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

use crate::support;

/// The bookings server, declaring action metadata in its tools' `_meta`.
#[derive(Clone)]
struct Declaring(Bookings);

/// `(tool, outcome, destination)` as the server declares them.
const DECLARED: [(&str, &str, &str); 4] = [
    ("cancel_appointment", "Benign", "internal"),
    ("notify_patient", "consequential", "INTERNAL"),
    ("list_appointments", "benign", "internal"),
    ("add_patient", "Research Execution", "ephemeral"),
];

fn declare(tool: &mut Tool) {
    let Some((_, outcome, destination)) = DECLARED.iter().find(|(t, ..)| *t == tool.name) else {
        return;
    };
    let action = json!({
        "outcome": outcome,
        "inputMetadata": {"destination": destination, "sensitivity": "none"},
        "requiresReview": false,
    });
    let mut meta = rmcp::model::MetaObject::new();
    meta.0.insert(ACTION_METADATA_KEY.to_owned(), action);
    tool.meta = Some(meta);
}

impl ServerHandler for Declaring {
    fn get_info(&self) -> ServerConfig {
        self.0.get_info()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut list = self.0.list_tools(request, context).await?;
        list.tools.iter_mut().for_each(declare);
        Ok(list)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        let mut tool = self.0.get_tool(name)?;
        declare(&mut tool);
        Some(tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.0.call_tool(request, context).await
    }
}

/// The rules of action metadata.
const ACTION_RULES: [&str; 4] = [
    "undeclared_outcome",
    "undeclared_destination",
    "action_metadata_missing",
    "action_metadata_contradiction",
];

/// `(event, tool, rule, hint)` of every finding recorded.
type Seen = Arc<Mutex<Vec<(&'static str, String, String, String)>>>;

fn recorder(seen: Seen) -> impl Fn(&AuditEvent<'_>) + Send + Sync + 'static {
    move |event: &AuditEvent<'_>| {
        let (kind, findings) = match event {
            AuditEvent::Call(report) => ("call", &report.verdict.findings[..]),
            AuditEvent::Listing { findings, .. } => ("listing", *findings),
            _ => return,
        };
        let mut seen = seen.lock().unwrap();
        for f in findings {
            let row = (kind, f.tool.clone(), f.rule.to_string(), f.hint.to_string());
            seen.push(row);
        }
    }
}

#[tokio::test]
async fn action_metadata_is_judged_linted_and_corrected_in_the_layer() {
    let db = support::sqlite();
    let pool = Db::connect(&db.url).await.expect("connect");
    let outside = OutsideService::start().await.expect("outside service");
    let world = outside
        .outside_of(Config::default().closed_world().clone())
        .expect("world");
    let notifier = Notifier::new(outside.url(), OutboundRecorder::new(world.clone()));
    let seen = Seen::default();
    let layer = HintAuditLayer::new()
        .with_judge(Arc::new(Judge::new(demo_policy().with_closed_world(world))))
        .with_recorder(recorder(seen.clone()))
        .with_corrections_of(&Config::default().with_correct_hints(true));
    let server = Declaring(Bookings::new(pool).with_notifier(notifier));
    let server = serve_http(server, layer, "127.0.0.1:0".parse().unwrap(), None)
        .await
        .expect("serve");
    let watcher = ListChangedWatcher::default();
    let client = watcher
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(server.url.clone()))
        .await
        .expect("MCP handshake");
    let before = tools_by_name(&client.list_all_tools().await.expect("tools/list"));

    let call = |tool: &'static str, args: Value| {
        let params = CallToolRequestParams::new(tool)
            .with_arguments(args.as_object().cloned().unwrap_or_default());
        let client = &client;
        async move { client.call_tool(params).await.expect("tools/call") }
    };
    call("list_appointments", json!({})).await;
    call(
        "add_patient",
        json!({"name": "Ada Lovelace", "email": "ada@example.org"}),
    )
    .await;
    call("cancel_appointment", json!({"id": 1})).await;
    tokio::time::timeout(Duration::from_secs(30), watcher.changed.notified())
        .await
        .expect("notifications/tools/list_changed");
    call("notify_patient", json!({"id": 2})).await;
    assert_eq!(outside.received(), 1, "the reminder went outside");

    let action_rules = |kind: &str| -> Vec<(String, String, String)> {
        let mut rows: Vec<_> = seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(k, _, rule, _)| *k == kind && ACTION_RULES.contains(&rule.as_str()))
            .map(|(_, tool, rule, hint)| (tool.clone(), rule.clone(), hint.clone()))
            .collect();
        rows.sort();
        rows.dedup();
        rows
    };
    let owned = |rows: &[(&str, &str, &str)]| -> Vec<(String, String, String)> {
        rows.iter()
            .map(|(t, r, h)| ((*t).to_owned(), (*r).to_owned(), (*h).to_owned()))
            .collect()
    };
    assert_eq!(
        action_rules("call"),
        owned(&[
            (
                "cancel_appointment",
                "undeclared_outcome",
                "destructiveHint"
            ),
            ("notify_patient", "undeclared_destination", "openWorldHint"),
        ]),
        "honest and unknown declarations give no finding"
    );
    assert_eq!(
        action_rules("listing"),
        owned(&[(
            "cancel_appointment",
            "action_metadata_contradiction",
            "destructiveHint"
        )]),
    );

    let after = tools_by_name(&client.list_all_tools().await.expect("tools/list"));
    let action = |tool: &str| after[tool]["_meta"][ACTION_METADATA_KEY].clone();
    assert_eq!(
        action("cancel_appointment")["outcome"],
        json!("consequential")
    );
    assert_eq!(
        action("cancel_appointment")["inputMetadata"],
        json!({"destination": "internal", "sensitivity": "none"}),
        "only the contradicted field is tightened"
    );
    assert_eq!(
        action("notify_patient")["inputMetadata"]["destination"],
        json!("external")
    );
    assert_eq!(action("notify_patient")["outcome"], json!("consequential"));
    for tool in ["list_appointments", "add_patient", "search_patients"] {
        assert_eq!(after[tool], before[tool], "{tool} served as listed");
    }
    client.cancel().await.ok();
    server.shutdown().await;
}
