//! [`HintAudit`]: an rmcp `ServerHandler` that delegates every method to the wrapped handler
//! and audits `call_tool` and `list_tools`.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use hintaudit_core::{AuditEvent, AuditStage, DeclaredHints, Judge, stats};
use rmcp::model::*;
use rmcp::service::{MaybeSendFuture, NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

use crate::config::Config;
use crate::registry::Registry;

/// An rmcp [`ServerHandler`] that audits the tool calls of the handler `H` it wraps.
///
/// Every `ServerHandler` method is delegated to `H` unchanged, so `HintAudit<H>` serves
/// wherever `H` does (stdio, child process, streamable HTTP) and answers exactly as `H` does.
/// Two methods add auditing:
///
/// - `call_tool` runs `H::call_tool` inside a [`CallScope`](crate::CallScope) for the tool and
///   inside the span [`MakeSpan`](crate::MakeSpan) makes, times it (wall time, from the start of
///   the inner call to its answer), judges its effects against the tool's declared hints and
///   sends an `AuditEvent::Call` to the recorder. Its result, `Ok` or `Err`, is returned as is.
/// - `list_tools` returns `H`'s answer as is, caches every tool's hints and, per tool, sends an
///   `AuditEvent::Listing` with the listing findings (`hint_missing`, `hint_contradiction`,
///   `hints_changed`).
///
/// Clones share the inner handler's clone, the judge, the recorder and the hints registry.
pub struct HintAudit<H> {
    pub(crate) inner: H,
    pub(crate) config: Config,
    pub(crate) registry: Arc<Registry>,
}

impl<H: ServerHandler> HintAudit<H> {
    /// Wraps `inner` with the defaults of [`HintAuditLayer::new`](crate::HintAuditLayer::new):
    /// a judge under the default policy, the `LogRecorder` and the `DefaultMakeSpan`.
    pub fn new(inner: H) -> Self {
        HintAudit::with_config(inner, Config::default())
    }

    pub(crate) fn with_config(inner: H, config: Config) -> Self {
        HintAudit {
            inner,
            config,
            registry: Arc::default(),
        }
    }

    /// The wrapped handler.
    pub fn inner(&self) -> &H {
        &self.inner
    }

    /// The judge.
    pub fn judge(&self) -> &Arc<Judge> {
        &self.config.judge
    }

    /// The declared hints of `tool` as last learned (from `get_tool` or a tools/list answer),
    /// asking the inner handler's `get_tool` when the tool has not been seen yet. `None` when
    /// the server does not declare the tool.
    pub fn declared_hints(&self, tool: &str) -> Option<DeclaredHints> {
        self.hints_for_call(tool)
    }

    /// Every tool learned so far with its declared hints, sorted by name: the tools called
    /// since start (for `#[tool_handler]` servers) and those of every tools/list answer that
    /// passed through. A `RequestContext` cannot be built outside rmcp, so the layer cannot
    /// ask the inner handler for its full list on its own; see [`HintAudit::learn_tools`].
    pub fn known_tools(&self) -> Vec<(String, DeclaredHints)> {
        self.registry.snapshot()
    }

    /// Learns the hints of these tools, as a tools/list answer would, without linting them,
    /// and sends the recorder one [`AuditEvent::Declared`] per tool. Use it at start-up with
    /// the tool list the server already has at hand (for `#[tool_router]` servers,
    /// `Self::tool_router().list_all()`), so [`Self::known_tools`] is complete, and a metrics
    /// recorder exports every tool (its declared hints, its violation series at 0), before
    /// any client call. Returns how many tools were learned.
    ///
    /// Not a listing: no `hint_missing` or `hints_changed` findings, and the judge's
    /// first-seen hints are set by the first tools/list, not by this. A recorder that panics
    /// is counted at stage `record`, as everywhere in the layer.
    pub fn learn_tools<'a>(&self, tools: impl IntoIterator<Item = &'a Tool>) -> usize {
        let mut learned = 0;
        for tool in tools {
            let hints = self.registry.learn(tool);
            let event = AuditEvent::Declared {
                tool: &tool.name,
                hints,
            };
            let recorded = catch_unwind(AssertUnwindSafe(|| self.config.recorder.record(&event)));
            if recorded.is_err() {
                stats().audit_error(AuditStage::Record, &"recorder panicked");
            }
            learned += 1;
        }
        learned
    }
}

impl<H: Clone> Clone for HintAudit<H> {
    fn clone(&self) -> Self {
        HintAudit {
            inner: self.inner.clone(),
            config: self.config.clone(),
            registry: self.registry.clone(),
        }
    }
}

impl<H: fmt::Debug> fmt::Debug for HintAudit<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HintAudit")
            .field("inner", &self.inner)
            .field("judge", &self.config.judge)
            .finish_non_exhaustive()
    }
}

// Mirrors rmcp 3.11's `impl_server_handler_for_wrapper!` (handler/server.rs), which lists every
// `ServerHandler` method; only `call_tool` and `list_tools` do more than delegate. The
// deprecated methods (logging, legacy subscribe/unsubscribe) are delegated as well.
#[allow(deprecated)]
impl<H: ServerHandler> ServerHandler for HintAudit<H> {
    fn ping(
        &self,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        self.inner.ping(context)
    }

    fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<InitializeResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.initialize(request, context)
    }

    fn negotiate_initialize(
        &self,
        request: &InitializeRequestParams,
    ) -> Result<InitializeResult, McpError> {
        self.inner.negotiate_initialize(request)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }

    fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<DiscoverResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.discover(context)
    }

    fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CompleteResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.complete(request, context)
    }

    fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        self.inner.set_level(request, context)
    }

    fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetPromptResponse, McpError>> + MaybeSendFuture + '_ {
        self.inner.get_prompt(request, context)
    }

    fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListPromptsResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.list_prompts(request, context)
    }

    fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListResourcesResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.list_resources(request, context)
    }

    fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListResourceTemplatesResult, McpError>> + MaybeSendFuture + '_
    {
        self.inner.list_resource_templates(request, context)
    }

    fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ReadResourceResponse, McpError>> + MaybeSendFuture + '_ {
        self.inner.read_resource(request, context)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.inner.accepted_subscription_filter(requested)
    }

    fn listen(
        &self,
        context: SubscriptionContext,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        self.inner.listen(context)
    }

    fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        self.inner.subscribe(request, context)
    }

    fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        self.inner.unsubscribe(request, context)
    }

    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, McpError>> + MaybeSendFuture + '_ {
        self.audited_call(request, context)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let result = self.inner.list_tools(request, context).await;
        if let Ok(list) = &result {
            self.audit_listing(&list.tools);
        }
        result
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        let tool = self.inner.get_tool(name);
        if let Some(tool) = &tool
            && !self.registry.contains(name)
        {
            self.registry.learn(tool);
        }
        tool
    }

    fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CustomResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.on_custom_request(request, context)
    }

    fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_cancelled(notification, context)
    }

    fn on_progress(
        &self,
        notification: ProgressNotificationParam,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_progress(notification, context)
    }

    fn on_initialized(
        &self,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_initialized(context)
    }

    fn on_roots_list_changed(
        &self,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_roots_list_changed(context)
    }

    fn on_custom_notification(
        &self,
        notification: CustomNotification,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_custom_notification(notification, context)
    }

    fn get_info(&self) -> ServerConfig {
        self.inner.get_info()
    }

    fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetTaskResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.get_task(request, context)
    }

    fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        self.inner.update_task(request, context)
    }

    fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        self.inner.cancel_task(request, context)
    }

    fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListSkillsResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.list_skills(request, context)
    }

    fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetSkillResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.get_skill(request, context)
    }

    fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ReadResourceDirectoryResult, McpError>> + MaybeSendFuture + '_
    {
        self.inner.read_resource_directory(request, context)
    }
}
