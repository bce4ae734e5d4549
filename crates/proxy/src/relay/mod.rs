//! [`Relay`]: the client side of one upstream connection, the proxy's rmcp `ClientHandler`.
//!
//! A downstream session's own connection ([`Relay::for_session`]) introduces itself upstream
//! with that client's `initialize` params (protocol version, capabilities, clientInfo,
//! `_meta`), so the upstream server sees the real client. What the upstream sends on it goes
//! to that session, and to no other:
//!
//! - server→client requests (`sampling/createMessage`, `elicitation/create`, `roots/list`,
//!   `ping`, custom requests) are sent to the session's client with the upstream's `_meta`,
//!   and the client's answer or JSON-RPC error comes back unchanged (requests.rs);
//! - notifications (progress of a request in flight, with the downstream request's own token;
//!   log messages; resource updates; tools, prompts and resources list changes; task status;
//!   custom notifications) are sent to the session's client with their `_meta`.
//!
//! The start-up connection ([`Relay::default`]) has no session: it declares no client
//! capabilities, relays the progress of the requests it carries (requests that arrive
//! without a session), and answers server→client requests as rmcp's default client does.

mod requests;

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

// Logging, roots and sampling are deprecated upstream (SEP-2577) and still relayed: the
// proxy passes on what its upstream and its client speak.
#[allow(deprecated)]
use rmcp::model::{
    ClientConfig, CreateMessageRequestParams, CreateMessageResult, CustomNotification,
    CustomRequest, CustomResult, ElicitRequestParams, ElicitResult, GetMeta,
    InitializeRequestParams, ListRootsResult, LoggingMessageNotification,
    LoggingMessageNotificationParam, NotificationMetaObject, ProgressNotificationParam,
    ProgressToken, PromptListChangedNotification, ResourceListChangedNotification,
    ResourceUpdatedNotification, ResourceUpdatedNotificationParam, ServerNotification,
    TaskStatusNotification, TaskStatusNotificationParams, ToolListChangedNotification,
};
use rmcp::service::{NotificationContext, Peer, RequestContext};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient, RoleServer};

/// The `ClientHandler` of one upstream connection. Clones share the same state (rmcp keeps
/// one clone inside the running connection, the proxy another).
#[derive(Debug, Clone, Default)]
pub struct Relay {
    inner: Arc<RelayInner>,
}

#[derive(Debug, Default)]
struct RelayInner {
    /// What the proxy sends upstream as its `initialize` params.
    client: ClientConfig,
    /// The downstream session this connection serves; `None` for the start-up connection.
    downstream: Option<Peer<RoleServer>>,
    state: Mutex<RelayState>,
}

#[derive(Debug, Default)]
struct RelayState {
    /// The upstream progress token of a downstream request in flight → the downstream
    /// token and the session that asked.
    progress: HashMap<ProgressToken, (ProgressToken, Peer<RoleServer>)>,
    /// The downstream progress token of a server→client request in flight → the upstream
    /// token it stands for and the upstream connection that asked.
    back: HashMap<ProgressToken, (ProgressToken, Peer<RoleClient>)>,
}

/// How long a finished request's progress mapping is kept: rmcp handles each notification on
/// a task of its own, so progress sent just before an answer may be handled just after it.
const PROGRESS_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

impl Relay {
    /// The relay of a downstream session's own upstream connection: introduces itself
    /// upstream with `client` (the session's `initialize` params, unchanged) and sends what
    /// the upstream asks or notifies to `downstream`.
    pub fn for_session(client: InitializeRequestParams, downstream: Peer<RoleServer>) -> Self {
        Relay {
            inner: Arc::new(RelayInner {
                client,
                downstream: Some(downstream),
                state: Mutex::default(),
            }),
        }
    }

    fn state(&self) -> parking_lot::MutexGuard<'_, RelayState> {
        self.inner.state.lock()
    }

    /// The downstream session, if this connection serves one.
    pub fn downstream(&self) -> Option<&Peer<RoleServer>> {
        self.inner.downstream.as_ref()
    }

    /// Progress for `upstream` goes to `downstream` on `peer` while the request is in flight.
    pub fn progress(
        &self,
        upstream: ProgressToken,
        downstream: ProgressToken,
        peer: Peer<RoleServer>,
    ) {
        self.state().progress.insert(upstream, (downstream, peer));
    }

    /// The request with progress token `upstream` finished. Its mapping stays 2 s longer
    /// (progress handled just after the answer still passes).
    pub fn done(&self, upstream: &ProgressToken) {
        let token = upstream.clone();
        self.after_grace(move |s| {
            s.progress.remove(&token);
        });
    }

    /// Runs `forget` on the state once [`PROGRESS_GRACE`] has passed.
    fn after_grace(&self, forget: impl FnOnce(&mut RelayState) + Send + 'static) {
        let relay = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(PROGRESS_GRACE).await;
            forget(&mut relay.state());
        });
    }

    /// Progress the downstream client sent for a server→client request this relay forwarded
    /// (`params` carries the downstream token): sent upstream with the upstream's own token.
    /// Returns whether the token was one of this relay's.
    pub async fn progress_back(&self, mut params: ProgressNotificationParam) -> bool {
        let target = self.state().back.get(&params.progress_token).cloned();
        let Some((token, upstream)) = target else {
            return false;
        };
        params.progress_token = token;
        let _ = upstream.notify_progress(params).await;
        true
    }

    /// Progress the client reports under `downstream` goes upstream as `upstream`, on `peer`.
    fn expect_back(
        &self,
        downstream: ProgressToken,
        upstream: ProgressToken,
        peer: Peer<RoleClient>,
    ) {
        self.state().back.insert(downstream, (upstream, peer));
    }

    /// The server→client request with downstream token `downstream` finished (kept 2 s).
    fn back_done(&self, downstream: &ProgressToken) {
        let token = downstream.clone();
        self.after_grace(move |s| {
            s.back.remove(&token);
        });
    }

    /// Sends `notification` with `meta` to the session, if this connection has one.
    async fn notify(&self, mut notification: ServerNotification, meta: NotificationMetaObject) {
        let Some(peer) = self.downstream() else {
            return;
        };
        if !meta.is_empty() {
            *notification.get_meta_mut() = meta;
        }
        if let Err(e) = peer.send_notification(notification).await {
            tracing::debug!(target: "hintaudit::proxy", error = %e, "a notification for a closed session was dropped");
        }
    }
}

impl ClientHandler for Relay {
    async fn ping(&self, context: RequestContext<RoleClient>) -> Result<(), McpError> {
        requests::ping(self, context).await
    }

    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, McpError> {
        requests::create_message(self, params, context).await
    }

    #[allow(deprecated)]
    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, McpError> {
        requests::list_roots(self, context).await
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        requests::create_elicitation(self, request, context).await
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleClient>,
    ) -> Result<CustomResult, McpError> {
        requests::custom(self, request, context).await
    }

    async fn on_progress(
        &self,
        mut params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let target = self.state().progress.get(&params.progress_token).cloned();
        if let Some((token, peer)) = target {
            params.progress_token = token;
            let _ = peer.notify_progress(params).await;
        }
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        let n = LoggingMessageNotification::new(params);
        self.notify(n.into(), context.meta).await;
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        let n = ResourceUpdatedNotification::new(params);
        self.notify(n.into(), context.meta).await;
    }

    async fn on_resource_list_changed(&self, context: NotificationContext<RoleClient>) {
        let n = ResourceListChangedNotification::default();
        self.notify(n.into(), context.meta).await;
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        let n = ToolListChangedNotification::default();
        self.notify(n.into(), context.meta).await;
    }

    async fn on_prompt_list_changed(&self, context: NotificationContext<RoleClient>) {
        let n = PromptListChangedNotification::default();
        self.notify(n.into(), context.meta).await;
    }

    async fn on_task_status(
        &self,
        params: TaskStatusNotificationParams,
        context: NotificationContext<RoleClient>,
    ) {
        let n = TaskStatusNotification::new(params);
        self.notify(n.into(), context.meta).await;
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        context: NotificationContext<RoleClient>,
    ) {
        self.notify(notification.into(), context.meta).await;
    }

    fn get_info(&self) -> ClientConfig {
        self.inner.client.clone()
    }
}
