//! Shared parts: real rmcp servers, a real rmcp client over an in-memory duplex stream, and a
//! recorder that keeps owned copies of what it receives.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hintaudit_core::{RowChange, RowImage, RowOperation};
use hintaudit_rmcp::{AuditEvent, CallScope, CallStatus, DeclaredHints, HintAuditLayer, Rule};
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::*;
use rmcp::service::{RequestContext, RunningService};
use rmcp::{
    ClientHandler, ErrorData, RoleClient, RoleServer, ServerHandler, ServiceExt, tool,
    tool_handler, tool_router,
};

/// Serves `server` on one end of a duplex stream and connects `client` to the other.
pub async fn connect_with<S: ServerHandler, C: ClientHandler>(
    server: S,
    client: C,
) -> RunningService<RoleClient, C> {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    client.serve(client_io).await.expect("client connects")
}

/// Connects a plain client (`()`: legacy initialize lifecycle) to `server`.
pub async fn connect<S: ServerHandler>(server: S) -> RunningService<RoleClient, ()> {
    connect_with(server, ()).await
}

/// tools/list straight through the peer, bypassing the client's response cache.
pub async fn list_tools_raw(
    client: &RunningService<RoleClient, impl ClientHandler>,
) -> ListToolsResult {
    match client
        .send_request(ClientRequest::ListToolsRequest(ListToolsRequest {
            method: Default::default(),
            params: None,
            extensions: Default::default(),
        }))
        .await
        .expect("tools/list")
    {
        ServerResult::ListToolsResult(list) => list,
        other => panic!("unexpected answer {other:?}"),
    }
}

/// A recorder event, owned.
#[derive(Debug, Clone, PartialEq)]
pub enum Seen {
    Call {
        tool: String,
        known_tool: bool,
        hints: DeclaredHints,
        status: CallStatus,
        rules: Vec<Rule>,
        verdict: &'static str,
    },
    Listing {
        tool: String,
        hints: DeclaredHints,
        rules: Vec<Rule>,
    },
    Declared {
        tool: String,
        hints: DeclaredHints,
    },
}

/// A layer whose recorder keeps every event.
pub fn recording_layer() -> (HintAuditLayer, Arc<Mutex<Vec<Seen>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let layer = HintAuditLayer::new().with_recorder(move |event: &AuditEvent<'_>| {
        let owned = match event {
            AuditEvent::Call(r) => Seen::Call {
                tool: r.tool.to_owned(),
                known_tool: r.known_tool,
                hints: r.hints,
                status: r.status,
                rules: r.verdict.findings.iter().map(|f| f.rule).collect(),
                verdict: r.verdict.label(),
            },
            AuditEvent::Listing {
                tool,
                hints,
                findings,
            } => Seen::Listing {
                tool: (*tool).to_owned(),
                hints: *hints,
                rules: findings.iter().map(|f| f.rule).collect(),
            },
            AuditEvent::Declared { tool, hints } => Seen::Declared {
                tool: (*tool).to_owned(),
                hints: *hints,
            },
            _ => return,
        };
        sink.lock().unwrap().push(owned);
    });
    (layer, seen)
}

pub fn text_of(result: &CallToolResult) -> String {
    result.content[0]
        .as_text()
        .expect("text content")
        .text
        .clone()
}

/// Waits until `check` holds, for up to two seconds (notifications are asynchronous).
pub async fn eventually(what: &str, check: impl Fn() -> bool) {
    for _ in 0..200 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}

#[derive(Debug, serde::Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct CancelArgs {
    pub id: u64,
}

/// A `#[tool_router]` server with tools of assorted annotations.
#[derive(Clone)]
pub struct Clinic {
    tool_router: ToolRouter<Clinic>,
}

impl Clinic {
    pub fn new() -> Self {
        Clinic {
            tool_router: Self::tool_router(),
        }
    }

    /// Every tool, as the server would list them.
    pub fn tools() -> Vec<Tool> {
        Self::tool_router().list_all()
    }
}

fn scope_tool() -> String {
    CallScope::current().map_or_else(|| "none".to_owned(), |s| s.effects().tool().to_owned())
}

#[tool_router]
impl Clinic {
    #[tool(
        description = "Look up an appointment",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_appointment(&self) -> String {
        scope_tool()
    }

    #[tool(
        description = "Cancel an appointment",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn cancel_appointment(&self, Parameters(args): Parameters<CancelArgs>) -> String {
        format!("cancelled {}", args.id)
    }

    /// Declares itself read-only but writes (records a committed row change, as the audited
    /// pool's SQLite hooks would).
    #[tool(
        description = "Show an appointment",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn touch_appointment(&self) -> String {
        // Without the layer there is no scope, and nothing to record into.
        let Some(scope) = CallScope::current() else {
            return "shown".to_owned();
        };
        scope.effects().record_row_changes([RowChange {
            table: "appointments".into(),
            operation: RowOperation::Update,
            statement: None,
            committed: true,
            image: RowImage::Unknown,
            nested: None,
            row_id: None,
        }]);
        "shown".to_owned()
    }

    #[tool(description = "No annotations at all")]
    async fn legacy_lookup(&self) -> String {
        "legacy".to_owned()
    }

    #[tool(
        description = "Always fails",
        annotations(read_only_hint = true, destructive_hint = true)
    )]
    async fn broken(&self) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::error(vec![ContentBlock::text("boom")]))
    }

    #[tool(
        description = "Spawns tasks",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn spawner(&self) -> String {
        let carried = CallScope::spawn(async { scope_tool() })
            .await
            .expect("join");
        let plain = tokio::spawn(async { scope_tool() }).await.expect("join");
        format!("carried={carried} plain={plain}")
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Clinic {}

/// A hand-written handler (no `get_tool`) whose tools answer with the call scope they see,
/// before and after yielding: `probe_N` sleeps N % 7 ms. `invalid` answers with a JSON-RPC
/// invalid-params error.
#[derive(Clone, Default)]
pub struct ScopeProbe;

impl ServerHandler for ScopeProbe {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name == "invalid" {
            return Err(ErrorData::invalid_params("probe: invalid params", None));
        }
        let before = scope_tool();
        let n: u64 = request
            .name
            .trim_start_matches("probe_")
            .parse()
            .unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(n % 7)).await;
        tokio::task::yield_now().await;
        let after = scope_tool();
        Ok(CallToolResult::success(vec![ContentBlock::text(format!("{before}|{after}"))]).into())
    }
}

/// A hand-written handler whose listing changes: `flip`'s readOnlyHint alternates between
/// listings; `bare` has an empty annotations object; `plain` has none.
#[derive(Clone, Default)]
pub struct Flipper {
    pub listings: Arc<AtomicUsize>,
}

impl ServerHandler for Flipper {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let n = self.listings.fetch_add(1, Ordering::SeqCst);
        let schema = Arc::new(JsonObject::new());
        let flip = Tool::new("flip", "flips", schema.clone()).with_annotations(
            ToolAnnotations::new()
                .read_only(n.is_multiple_of(2))
                .destructive(false)
                .idempotent(true)
                .open_world(false),
        );
        let bare = Tool::new("bare", "empty annotations", schema.clone())
            .with_annotations(ToolAnnotations::from_raw(None, None, None, None, None));
        let plain = Tool::new("plain", "no annotations", schema);
        Ok(ListToolsResult::with_all_items(vec![flip, bare, plain]))
    }
}
