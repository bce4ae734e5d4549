//! A one-tool rmcp server for the settings and log-line tests, and a call through a layer.

use hintaudit_core::{RowChange, RowImage, RowOperation};
use hintaudit_rmcp::{CallScope, HintAuditLayer};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::CallToolRequestParams;
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use tower::Layer;

#[derive(Clone)]
pub struct Shop {
    tool_router: ToolRouter<Shop>,
}

impl Shop {
    pub fn new() -> Self {
        Shop {
            tool_router: Shop::tool_router(),
        }
    }
}

#[tool_router]
impl Shop {
    /// Declares read-only, and updates a row (a `read_only_write`). Answers whether the call
    /// runs under enforcement (what the audited pool would enforce).
    #[tool(
        description = "Shows an item",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_item(&self) -> String {
        let scope = CallScope::current().expect("inside a call");
        scope.effects().record_row_changes([RowChange {
            table: "items".into(),
            operation: RowOperation::Update,
            statement: None,
            committed: true,
            image: RowImage::Unknown,
            nested: None,
            row_id: None,
        }]);
        format!("enforced={}", scope.enforcement().is_active())
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Shop {}

/// Serves `layer` around the shop and calls `get_item` once: its answer.
pub async fn call_get_item(layer: HintAuditLayer) -> String {
    let server = layer.layer(Shop::new());
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_io).await.expect("client connects");
    let answer = client
        .call_tool(CallToolRequestParams::new("get_item"))
        .await
        .expect("get_item answers");
    let _ = client.cancel().await;
    answer.content[0].as_text().expect("text").text.clone()
}
