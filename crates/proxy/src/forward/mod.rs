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
//! Around tools/call it asks the [`Capture`] for the call's share of the database log and
//! records it in the call's scope, which the `HintAuditLayer` wrapping this handler judges
//! like an in-process call's effects; with `--watch`, the [`FileWatch`]'s share of the
//! watched trees' changes too. The answer goes back first: the log's share is recorded on a
//! task of its own once the capture has read past the call's end, and the layer judges the
//! call then ([`CallScope::defer`]).

mod handler;

use parking_lot::Mutex;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use hintaudit_core::{
    CallEffects, CallScope, EvidenceSource, ObservationSource, Operation, StatementEffect,
    TransactionObservation,
};
use lru::LruCache;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, ClientRequest,
    InitializeRequestParams, ServerConfig, ServerResult, Tool,
};
use rmcp::service::{Peer, PeerRequestOptions, RequestContext, ServiceError};
use rmcp::{ErrorData as McpError, RoleServer};

use crate::capture::{CallShare, Capture, Settling};
use crate::exchange::{answer_or_cancel, meta_and_token, passed_on_error, unexpected_answer};
use crate::files::FileWatch;
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
    capture: Option<Capture>,
    /// `--watch`: the watched trees' changes.
    files: Option<FileWatch>,
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
    /// Forwards to `upstream` (the start-up connection); attributes database changes with
    /// `capture` and file changes with `files`, when given.
    pub async fn new(
        upstream: Arc<Upstream>,
        capture: Option<Capture>,
        files: Option<FileWatch>,
        serialize: bool,
    ) -> Self {
        let info = upstream.info().await.unwrap_or_default();
        let base = Forward {
            shared: Arc::new(Shared {
                startup: upstream,
                retired: AtomicBool::new(false),
                sessions: Mutex::default(),
                capture,
                files,
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

    /// tools/call, one at a time under `--serialize`, with the call's share of the log,
    /// recorded after the answer went back ([`record_later`]).
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
        let files = self
            .shared
            .files
            .as_ref()
            .map(|f| (f, f.begin(tool.clone())));
        let ticket = match &self.shared.capture {
            Some(c) => Some(c.begin(tool, self.upstream().link()).await),
            None => None,
        };
        let result = self
            .forward(
                ClientRequest::CallToolRequest(CallToolRequest::new(params)),
                &context,
            )
            .await;
        // An answer that carries the call's effects would await the share here instead:
        // `let share = settling.share().await; record(scope.effects(), &share);
        // settling.recorded(&share);` before it returns.
        if let (Some(capture), Some(ticket)) = (&self.shared.capture, ticket) {
            record_later(
                capture.finish(ticket),
                EvidenceSource::Database(capture.kind()),
            );
        }
        if let Some((watch, ticket)) = files {
            crate::files::record(&watch.finish(ticket).await);
        }
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

/// Records the call's share of the log into its scope once it is judged, on a task of its
/// own: the call's judgement is deferred until then ([`CallScope::defer`]), its answer is not.
fn record_later(mut settling: Settling, source: EvidenceSource) {
    let Some(scope) = CallScope::current() else {
        return;
    };
    let deferred = scope.defer();
    tokio::spawn(async move {
        let share = settling.share().await;
        record(deferred.effects(), &share, source);
        // The layer judges the call here.
        drop(deferred);
        settling.recorded(&share);
    });
}

/// Puts a call's share of the log into its effects: attributed commits as transaction
/// observations from the log (`likely`), truncations as statements; ambiguous ones are
/// logged with their candidate tools, never recorded as this call's. A gap makes the call's
/// evidence from `source` incomplete, a late share pending (`Effect::completeness`).
fn record(effects: &CallEffects, share: &CallShare, source: EvidenceSource) {
    for commit in &share.attributed {
        if !commit.tables.is_empty() {
            effects.record_transaction(TransactionObservation {
                wrote: true,
                tables: commit.tables.clone(),
                sequences: Vec::new(),
                committed: true,
                source: ObservationSource::Log,
                images: commit.images.clone(),
            });
        }
        for t in &commit.truncated {
            let mut s = StatementEffect::new(Operation::Truncate, vec![t.clone()]);
            s.summary = format!("TRUNCATE {t} (database log)").into();
            effects.record_statement(s);
        }
        // A TRUNCATE of a table the log showed empty: observed, 0 rows (no driver counts a
        // TRUNCATE), it removed nothing.
        for t in &commit.truncated_empty {
            let mut s = StatementEffect::new(Operation::Truncate, vec![t.clone()]);
            s.summary = format!("TRUNCATE {t} (database log: already empty)").into();
            s.rows_affected = Some(0);
            s.observed = true;
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
    if share.late {
        effects.mark_pending(source);
    }
    if share.gap {
        effects.mark_incomplete(source);
        tracing::warn!(
            target: "hintaudit::proxy",
            tool = effects.tool(),
            "the capture did not read the whole log of this call: its evidence is incomplete"
        );
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
