//! [`Forward`]: an rmcp `ServerHandler` that sends every request to the upstream server and
//! returns its answer unchanged: results, JSON-RPC errors (code, message and data as the
//! upstream sent them), `_meta`, progress (the upstream's notifications, with the client's
//! own token), cancellation (sent on upstream) and the upstream's `initialize` answer (its
//! name, version, capabilities and instructions).
//!
//! Around tools/call it asks the [`Capture`] for the call's share of the database log and
//! records it in the call's scope, which the `HintAuditLayer` wrapping this handler judges
//! like an in-process call's effects.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use hintaudit_core::{
    CallScope, ObservationSource, Operation, StatementEffect, TransactionObservation,
};
// Logging and resources/subscribe are deprecated upstream (SEP-2577, subscriptions/listen) and
// still forwarded: the proxy passes on what its upstream serves.
#[allow(deprecated)]
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, CancelledNotificationParam,
    ClientRequest, CompleteRequest, CompleteRequestParams, CompleteResult, CustomRequest,
    CustomResult, GetPromptRequest, GetPromptRequestParams, GetPromptResponse,
    InitializeRequestParams, InitializeResult, ListPromptsRequest, ListPromptsResult,
    ListResourceTemplatesRequest, ListResourceTemplatesResult, ListResourcesRequest,
    ListResourcesResult, ListToolsRequest, ListToolsResult, PaginatedRequestParams, PingRequest,
    ReadResourceRequest, ReadResourceRequestParams, ReadResourceResponse, ServerConfig,
    ServerResult, SetLevelRequest, SetLevelRequestParams, SubscribeRequest, SubscribeRequestParams,
    Tool, UnsubscribeRequest, UnsubscribeRequestParams,
};
use rmcp::service::{PeerRequestOptions, RequestContext, ServiceError};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

use crate::capture::{CallShare, Capture};
use crate::upstream::Upstream;

/// The proxy's handler. Clones share the upstream connection, the capture and the tool
/// cache.
#[derive(Debug, Clone)]
pub struct Forward {
    upstream: Arc<Upstream>,
    capture: Option<Capture>,
    /// `--serialize`: tool calls go upstream one at a time.
    serialize: Option<Arc<tokio::sync::Mutex<()>>>,
    /// The tools of the last tools/list answer, for `get_tool`.
    tools: Arc<Mutex<HashMap<String, Tool>>>,
    info: ServerConfig,
}

impl Forward {
    /// Forwards to `upstream`; attributes database changes with `capture`, when given.
    pub async fn new(upstream: Arc<Upstream>, capture: Option<Capture>, serialize: bool) -> Self {
        let info = upstream.info().await.unwrap_or_default();
        Forward {
            upstream,
            capture,
            serialize: serialize.then(|| Arc::new(tokio::sync::Mutex::new(()))),
            tools: Arc::default(),
            info,
        }
    }

    /// Remembers `tools` for `get_tool` (the layer's source of hints for a call).
    pub fn learn(&self, tools: &[Tool]) {
        let mut map = self.tools.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() + tools.len() > 10_000 {
            map.clear();
        }
        for t in tools {
            map.insert(t.name.to_string(), t.clone());
        }
    }

    /// Sends `request` upstream with the downstream request's `_meta`, relays its progress
    /// and its cancellation, and returns the upstream's answer.
    async fn forward(
        &self,
        request: ClientRequest,
        context: &RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        let unavailable = |e: crate::upstream::UpstreamError| {
            McpError::internal_error(format!("hintaudit proxy: upstream unavailable: {e}"), None)
        };
        let mut meta = context.meta.clone();
        let downstream_token = meta.get_progress_token();
        meta.remove("progressToken");
        let options = || PeerRequestOptions::no_options().with_meta(meta.clone());
        let peer = self.upstream.peer().await.map_err(unavailable)?;
        let handle = match peer
            .send_request_with_option(request.clone(), options())
            .await
        {
            // The connection was found closed before the request left: nothing reached the
            // upstream, so connect again and send it once more.
            Err(ServiceError::TransportClosed) => {
                self.upstream.reset().await;
                let peer = self.upstream.peer().await.map_err(unavailable)?;
                peer.send_request_with_option(request, options()).await
            }
            sent => sent,
        }
        .map_err(upstream_error)?;
        let (id, up_peer, up_token) = (
            handle.id.clone(),
            handle.peer.clone(),
            handle.progress_token.clone(),
        );
        if let Some(token) = downstream_token {
            self.upstream
                .relay()
                .progress(up_token.clone(), token, context.peer.clone());
        }
        let answer = handle.await_response();
        tokio::pin!(answer);
        let result = tokio::select! {
            r = &mut answer => r,
            () = context.ct.cancelled() => {
                let cancel = CancelledNotificationParam::new(
                    Some(id),
                    Some("cancelled by the client".into()),
                );
                let _ = up_peer.notify_cancelled(cancel).await;
                answer.await
            }
        };
        self.upstream.relay().done(&up_token);
        if matches!(
            result,
            Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))
        ) {
            // The connection is gone (a child that exited, an HTTP server that restarted and
            // no longer knows the session): the next request connects again.
            self.upstream.reset().await;
        }
        result.map_err(upstream_error)
    }

    /// tools/call, one at a time under `--serialize`, with the call's share of the log.
    async fn call(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let _turn = match &self.serialize {
            Some(m) => Some(m.lock().await),
            None => None,
        };
        let tool: Arc<str> = Arc::from(params.name.as_ref());
        let ticket = match &self.capture {
            Some(c) => Some(c.begin(tool).await),
            None => None,
        };
        let result = self
            .forward(
                ClientRequest::CallToolRequest(CallToolRequest::new(params)),
                &context,
            )
            .await;
        if let (Some(capture), Some(ticket)) = (&self.capture, ticket) {
            let share = capture.finish(ticket).await;
            record(&share);
        }
        match result? {
            ServerResult::CallToolResult(r) => Ok(CallToolResponse::Complete(r)),
            ServerResult::InputRequiredResult(r) => Ok(CallToolResponse::InputRequired(r)),
            ServerResult::CreateTaskResult(r) => Ok(CallToolResponse::Task(r)),
            _ => Err(unexpected()),
        }
    }
}

/// Puts a call's share of the log into its scope: attributed commits as transaction
/// observations from the log (`likely`), truncations as statements; ambiguous ones are
/// logged with their candidate tools, never recorded as this call's.
fn record(share: &CallShare) {
    let Some(scope) = CallScope::current() else {
        return;
    };
    let effects = scope.effects();
    for commit in &share.attributed {
        if !commit.tables.is_empty() {
            effects.record_transaction(TransactionObservation {
                wrote: true,
                tables: commit.tables.clone(),
                sequences: Vec::new(),
                committed: true,
                source: ObservationSource::Log,
            });
        }
        for t in &commit.truncated {
            let mut s = StatementEffect::new(Operation::Truncate, vec![t.clone()]);
            s.summary = format!("TRUNCATE {t} (database log)").into();
            effects.record_statement(s);
        }
    }
    for (commit, tools) in &share.ambiguous {
        let tables: Vec<&str> = commit.tables.iter().map(|w| w.table.as_str()).collect();
        tracing::info!(
            target: "hintaudit::proxy",
            tool = effects.tool(),
            candidates = ?tools,
            ?tables,
            "a commit while calls of several tools were in flight: not attributed"
        );
    }
    if share.gap {
        tracing::warn!(
            target: "hintaudit::proxy",
            tool = effects.tool(),
            "the capture did not read the whole log of this call: its evidence is incomplete"
        );
    }
}

fn upstream_error(e: ServiceError) -> McpError {
    match e {
        // The upstream's own JSON-RPC error, unchanged.
        ServiceError::McpError(e) => e,
        other => McpError::internal_error(format!("hintaudit proxy: upstream: {other}"), None),
    }
}

fn unexpected() -> McpError {
    McpError::internal_error("hintaudit proxy: unexpected answer from the upstream", None)
}

/// Unwraps the one `ServerResult` variant a method expects.
macro_rules! expect {
    ($result:expr, $variant:ident) => {
        match $result? {
            ServerResult::$variant(r) => Ok(r),
            _ => Err(unexpected()),
        }
    };
}

impl ServerHandler for Forward {
    fn get_info(&self) -> ServerConfig {
        self.info.clone()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        // Once per session: where the upstream's broadcast notifications go.
        self.upstream.relay().session(&context.peer);
        self.negotiate_initialize(&request)
    }

    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), McpError> {
        self.forward(ClientRequest::PingRequest(PingRequest::default()), &context)
            .await
            .map(|_| ())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let r = self
            .forward(
                ClientRequest::CompleteRequest(CompleteRequest::new(request)),
                &context,
            )
            .await;
        expect!(r, CompleteResult)
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.forward(
            ClientRequest::SetLevelRequest(SetLevelRequest::new(request)),
            &context,
        )
        .await
        .map(|_| ())
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let r = self
            .forward(
                ClientRequest::GetPromptRequest(GetPromptRequest::new(request)),
                &context,
            )
            .await?;
        match r {
            ServerResult::GetPromptResult(r) => Ok(GetPromptResponse::Complete(r)),
            ServerResult::InputRequiredResult(r) => Ok(GetPromptResponse::InputRequired(r)),
            _ => Err(unexpected()),
        }
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let req = ListPromptsRequest {
            params: request,
            ..Default::default()
        };
        let r = self
            .forward(ClientRequest::ListPromptsRequest(req), &context)
            .await;
        expect!(r, ListPromptsResult)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let req = ListResourcesRequest {
            params: request,
            ..Default::default()
        };
        let r = self
            .forward(ClientRequest::ListResourcesRequest(req), &context)
            .await;
        expect!(r, ListResourcesResult)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let req = ListResourceTemplatesRequest {
            params: request,
            ..Default::default()
        };
        let r = self
            .forward(ClientRequest::ListResourceTemplatesRequest(req), &context)
            .await;
        expect!(r, ListResourceTemplatesResult)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let req = ReadResourceRequest::new(request);
        match self
            .forward(ClientRequest::ReadResourceRequest(req), &context)
            .await?
        {
            ServerResult::ReadResourceResult(r) => Ok(ReadResourceResponse::Complete(r)),
            ServerResult::InputRequiredResult(r) => Ok(ReadResourceResponse::InputRequired(r)),
            _ => Err(unexpected()),
        }
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let req = ClientRequest::SubscribeRequest(SubscribeRequest::new(request));
        self.forward(req, &context).await.map(|_| ())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let req = ClientRequest::UnsubscribeRequest(UnsubscribeRequest::new(request));
        self.forward(req, &context).await.map(|_| ())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.call(request, context).await
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let req = ListToolsRequest {
            params: request,
            ..Default::default()
        };
        let r = self
            .forward(ClientRequest::ListToolsRequest(req), &context)
            .await;
        let list = expect!(r, ListToolsResult)?;
        self.learn(&list.tools);
        Ok(list)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        let r = self
            .forward(ClientRequest::CustomRequest(request), &context)
            .await;
        expect!(r, CustomResult)
    }
}
