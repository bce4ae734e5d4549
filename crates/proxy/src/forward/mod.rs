//! [`Forward`]: an rmcp `ServerHandler` that sends every request to the upstream server and
//! returns its answer unchanged: results, JSON-RPC errors (code, message and data as the
//! upstream sent them), `_meta`, progress (the upstream's notifications, with the client's
//! own token), cancellation (sent on upstream) and the upstream's `initialize` answer (its
//! name, version, capabilities and instructions).
//!
//! Each downstream session has its own upstream connection, opened at the session's
//! `initialize` with the client's own `initialize` params, so the upstream sees the real
//! client; what the upstream asks or notifies on it goes to that session only (the
//! [`Relay`](crate::Relay)). Requests that arrive without a session (stateless streamable
//! HTTP, a client that skips `initialize`) go on the start-up connection.
//!
//! Around tools/call it runs the [`Observers`] (the database log's capture, `--watch`'s
//! file watch: it knows none of them by kind), whose shares are recorded in the call's
//! scope, which the `HintAuditLayer` wrapping this handler judges like an in-process call's
//! effects. The answer goes back first: the shares are recorded on a task of their own once
//! each observer has read past the call's end, and the layer judges the call then
//! ([`CallScope::defer`](hintaudit_core::CallScope::defer)).

mod handler;

use parking_lot::Mutex;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use lru::LruCache;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, ClientRequest,
    InitializeRequestParams, ServerConfig, ServerResult, Tool,
};
use rmcp::service::{Peer, PeerRequestOptions, RequestContext, ServiceError};
use rmcp::{ErrorData as McpError, RoleServer};

use crate::capture::Capture;
use crate::exchange::{answer_or_cancel, meta_and_token, passed_on_error, unexpected_answer};
use crate::observe::Observers;
use crate::session::Session;
use crate::upstream::{Upstream, UpstreamError};

/// The proxy's handler for one downstream session (or for requests without one).
///
/// Clones are the same handler: they share the session's upstream connection as well as
/// what every session shares (the start-up connection, the capture, `--serialize`'s turn and
/// the tool cache). [`Forward::for_session`] makes the handler of another session.
#[derive(Debug, Clone)]
pub struct Forward {
    shared: Arc<Shared>,
    session: Arc<Session>,
}

/// Tools kept for `get_tool`, at most: far more than a server lists.
const TOOLS_KEPT: NonZeroUsize = NonZeroUsize::new(10_000).expect("not zero");

/// What every session's handler shares.
#[derive(Debug)]
struct Shared {
    /// The start-up connection: requests without a session.
    startup: Arc<Upstream>,
    /// Whether the start-up connection was closed when the first session opened its own (it
    /// connects again for the next request without a session).
    retired: AtomicBool,
    /// Every session's connection slot, to close them all at shutdown.
    sessions: Mutex<Vec<Weak<Session>>>,
    /// The database log's capture: its sessions read the log to now before their `--stdio`
    /// child stops, and calls on the start-up child take turns.
    capture: Option<Capture>,
    /// Every source of calls' evidence (the capture among them).
    observers: Observers,
    /// `--serialize`: tool calls go upstream one at a time, across sessions.
    serialize: Option<tokio::sync::Mutex<()>>,
    /// The start-up child's turn: with a capture, calls without a session (MCP 2026-07-28
    /// clients, stateless requests) go to it one at a time, so that each of its commits is
    /// one call's.
    startup_turn: tokio::sync::Mutex<()>,
    /// The tools of the tools/list answers, for `get_tool`: at most [`TOOLS_KEPT`], the
    /// least recently listed or called first out.
    tools: Mutex<LruCache<String, Tool>>,
    /// The upstream's answer to the start-up handshake.
    info: ServerConfig,
}

impl Forward {
    /// Forwards to `upstream` (the start-up connection); gathers each tool call's evidence
    /// with `observers`; `capture`, when given, is the one among them that reads the
    /// database's log.
    pub async fn new(
        upstream: Arc<Upstream>,
        capture: Option<Capture>,
        observers: Observers,
        serialize: bool,
    ) -> Self {
        let info = upstream.info().await.unwrap_or_default();
        let base = Forward {
            shared: Arc::new(Shared {
                startup: upstream,
                retired: AtomicBool::new(false),
                sessions: Mutex::default(),
                capture,
                observers,
                serialize: serialize.then(|| tokio::sync::Mutex::new(())),
                startup_turn: tokio::sync::Mutex::new(()),
                tools: Mutex::new(LruCache::new(TOOLS_KEPT)),
                info,
            }),
            session: Arc::default(),
        };
        // Its session is in the registry too, should it be served as one.
        base.for_session()
    }

    /// The handler of a new downstream session: shares the start-up connection, the
    /// capture, `--serialize` and the tool cache with `self`, and has no upstream connection
    /// of its own until the session's `initialize`. rmcp's `StreamableHttpService` calls its
    /// factory once per session: the factory calls this.
    pub fn for_session(&self) -> Forward {
        let session = Arc::new(Session::new(self.shared.capture.clone()));
        let mut sessions = self.shared.sessions.lock();
        sessions.retain(|s| s.strong_count() > 0);
        sessions.push(Arc::downgrade(&session));
        drop(sessions);
        Forward {
            shared: self.shared.clone(),
            session,
        }
    }

    /// The connection this handler's requests go on: the session's own once open, else the
    /// start-up connection.
    pub fn upstream(&self) -> &Arc<Upstream> {
        self.session.upstream().unwrap_or(&self.shared.startup)
    }

    /// Whether this session has its own upstream connection.
    fn has_own_upstream(&self) -> bool {
        self.session.upstream().is_some()
    }

    /// Closes the session's own upstream connection, if any (a `--stdio` child is stopped).
    /// Dropping the session's last handler does the same.
    pub async fn close(&self) {
        self.session.close().await;
    }

    /// At shutdown: closes the upstream connection of every session still open and the
    /// start-up connection, waiting for each (`--stdio` children are stopped).
    pub async fn close_all(&self) {
        let sessions: Vec<Arc<Session>> = {
            let sessions = self.shared.sessions.lock();
            sessions.iter().filter_map(Weak::upgrade).collect()
        };
        for session in sessions {
            session.close().await;
        }
        self.shared.startup.close().await;
    }

    /// Remembers `tools` for `get_tool` (the layer's source of hints for a call).
    pub fn learn(&self, tools: &[Tool]) {
        let mut map = self.shared.tools.lock();
        for t in tools {
            map.put(t.name.to_string(), t.clone());
        }
    }

    /// The tool `name` as last listed.
    fn tool(&self, name: &str) -> Option<Tool> {
        let mut map = self.shared.tools.lock();
        map.get(name).cloned()
    }

    /// The upstream's `initialize` answer for this session: its own handshake's, or the
    /// start-up connection's.
    fn info(&self) -> ServerConfig {
        self.session.info().unwrap_or(&self.shared.info).clone()
    }

    /// At the session's `initialize`: opens its own upstream connection with the client's
    /// params, and closes the start-up connection the first time (it reconnects for the
    /// next request without a session), so that a `--stdio` upstream runs one child per
    /// session.
    async fn open_session(
        &self,
        client: InitializeRequestParams,
        downstream: Peer<RoleServer>,
    ) -> Result<(), UpstreamError> {
        self.session
            .open(&self.shared.startup, client, downstream)
            .await?;
        if !self.shared.retired.swap(true, Ordering::AcqRel) {
            self.shared.startup.close().await;
        }
        Ok(())
    }

    /// Sends `request` upstream with the downstream request's `_meta`, relays its progress
    /// and its cancellation, and returns the upstream's answer.
    async fn forward(
        &self,
        request: ClientRequest,
        context: &RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        let (meta, downstream_token) = meta_and_token(&context.meta);
        let options = || PeerRequestOptions::no_options().with_meta(meta.clone());
        let upstream = self.upstream();
        let peer = upstream.peer().await.map_err(unavailable)?;
        let handle = match peer
            .send_request_with_option(request.clone(), options())
            .await
        {
            // The connection was found closed before the request left: nothing reached the
            // upstream, so connect again and send it once more.
            Err(ServiceError::TransportClosed) => {
                upstream.reset().await;
                let peer = upstream.peer().await.map_err(unavailable)?;
                peer.send_request_with_option(request, options()).await
            }
            sent => sent,
        }
        .map_err(upstream_error)?;
        let up_token = handle.progress_token.clone();
        if let Some(token) = downstream_token {
            upstream
                .relay()
                .progress(up_token.clone(), token, context.peer.clone());
        }
        let result = answer_or_cancel(handle, &context.ct, "cancelled by the client").await;
        upstream.relay().done(&up_token);
        if matches!(
            result,
            Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))
        ) {
            // The connection is gone (a child that exited, an HTTP server that restarted and
            // no longer knows the session): the next request connects again.
            upstream.reset().await;
        }
        result.map_err(upstream_error)
    }

    /// tools/call, one at a time under `--serialize`, watched by every observer; their
    /// shares are recorded after the answer went back ([`Observers::finish`]).
    async fn call(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let _turn = match &self.shared.serialize {
            Some(m) => Some(m.lock().await),
            None => self.startup_turn().await,
        };
        let tool: Arc<str> = Arc::from(params.name.as_ref());
        let observed = self
            .shared
            .observers
            .begin(&tool, self.upstream().link())
            .await;
        let result = self
            .forward(
                ClientRequest::CallToolRequest(CallToolRequest::new(params)),
                &context,
            )
            .await;
        self.shared.observers.finish(observed);
        match result? {
            ServerResult::CallToolResult(r) => Ok(CallToolResponse::Complete(r)),
            ServerResult::InputRequiredResult(r) => Ok(CallToolResponse::InputRequired(r)),
            ServerResult::CreateTaskResult(r) => Ok(CallToolResponse::Task(r)),
            _ => Err(unexpected()),
        }
    }
}

impl Forward {
    /// A call without a session of its own goes on the start-up connection, which every such
    /// client shares: with a capture and a `--stdio` child, it waits for the child's other
    /// calls to end, so that the child serves one call at a time and its commits are that
    /// call's (its writer is the child; by position alone, overlapping calls of several
    /// tools would be ambiguous). `None` when the call goes on a session's own connection.
    async fn startup_turn(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        let shared_child = self.shared.capture.is_some()
            && !self.has_own_upstream()
            && self.shared.startup.is_child();
        if shared_child {
            Some(self.shared.startup_turn.lock().await)
        } else {
            None
        }
    }
}

/// A JSON-RPC internal error for an upstream that cannot be reached, naming it.
pub(crate) fn unavailable(e: UpstreamError) -> McpError {
    McpError::internal_error(format!("hintaudit proxy: upstream unavailable: {e}"), None)
}

pub(crate) fn upstream_error(e: ServiceError) -> McpError {
    passed_on_error(e, "upstream")
}

pub(crate) fn unexpected() -> McpError {
    unexpected_answer("upstream")
}
