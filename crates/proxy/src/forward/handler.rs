//! `impl ServerHandler for Forward`: each MCP method sent upstream by `Forward::forward`,
//! the session's upstream connection opened at `initialize`, and the client's notifications
//! (progress of a server→client request, roots list changes, custom notifications) sent on
//! that connection. `notifications/cancelled` needs nothing here: rmcp cancels the request's
//! token, and the forwarding sends the cancellation upstream under the upstream's request id.

// Logging, roots and resources/subscribe are deprecated upstream (SEP-2577, subscriptions/
// listen) and still forwarded: the proxy passes on what its upstream serves.
#[allow(deprecated)]
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientNotification, ClientRequest, CompleteRequest,
    CompleteRequestParams, CompleteResult, CustomNotification, CustomRequest, CustomResult,
    GetMeta, GetPromptRequest, GetPromptRequestParams, GetPromptResponse, InitializeRequestParams,
    InitializeResult, ListPromptsRequest, ListPromptsResult, ListResourceTemplatesRequest,
    ListResourceTemplatesResult, ListResourcesRequest, ListResourcesResult, ListToolsRequest,
    ListToolsResult, PaginatedRequestParams, PingRequest, ProgressNotificationParam,
    ReadResourceRequest, ReadResourceRequestParams, ReadResourceResponse,
    RootsListChangedNotification, ServerConfig, ServerResult, SetLevelRequest,
    SetLevelRequestParams, SubscribeRequest, SubscribeRequestParams, Tool, UnsubscribeRequest,
    UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

use super::{Forward, unavailable, unexpected};
use crate::exchange::meta_and_token;

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
        self.info()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        // The session's own upstream connection, introduced with the client's own params;
        // the answer is the upstream's answer to them. rmcp hands the request's `_meta` over
        // in the context, not in the params: it goes back into the params sent upstream.
        let mut client = request.clone();
        let (meta, _) = meta_and_token(&context.meta);
        if !meta.is_empty() {
            client.meta = Some(meta);
        }
        self.open_session(client, context.peer.clone())
            .await
            .map_err(unavailable)?;
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
        self.tool(name)
    }

    /// Progress the client reports on a server→client request (sampling, elicitation): sent
    /// upstream with the upstream's own token.
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        self.upstream().relay().progress_back(params).await;
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        let n = RootsListChangedNotification::default();
        self.notify(n.into(), context).await;
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        context: NotificationContext<RoleServer>,
    ) {
        self.notify(notification.into(), context).await;
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

impl Forward {
    /// Sends a client's notification, with its `_meta`, on the session's own upstream
    /// connection (made again first if it was lost). Without a session it is dropped: the
    /// start-up connection does not speak for this client.
    async fn notify(
        &self,
        mut notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) {
        if !self.has_own_upstream() {
            return;
        }
        if !context.meta.is_empty() {
            *notification.get_meta_mut() = context.meta;
        }
        if let Ok(peer) = self.upstream().peer().await {
            let _ = peer.send_notification(notification).await;
        }
    }
}
