//! [`HintAudit`], the service the layer makes, and the path of a tools/call through it, top to
//! bottom:
//!
//! 1. `call_tool` (the `ServerHandler` method) hands the request to `audited_call`;
//! 2. `audited_call` looks up the tool's declared hints (`hints_for_call`), makes the call's
//!    span (`call_span`, with the [`MakeSpan`](crate::MakeSpan)), opens a [`CallScope`] and
//!    runs the inner `call_tool` inside both, timed;
//! 3. `finish_call` (finish.rs) takes the answer's status (`call_status`) and the effects
//!    the call recorded, asks the [`Judge`] for a verdict and advice, records them on the
//!    span (`record_on_span`, make_span.rs) and hands an
//!    [`AuditEvent::Call`](hintaudit_core::AuditEvent::Call) to the recorder.
//!
//! tools/list goes through listing.rs; every other method is forwarded unchanged by
//! delegate.rs. Each step after the inner call runs under [`guarded`], so none of them can
//! change what the client gets.
//!
//! [`guarded`]: crate::guard::guarded

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use hintaudit_core::{AuditStage, CallScope, DeclaredHints, Enforcement, Judge};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, InitializeRequestParams, InitializeResult,
    ListToolsResult, PaginatedRequestParams, Tool,
};
use rmcp::service::{MaybeSendFuture, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tracing::{Instrument, Span};

use crate::config::Config;
use crate::correct::{advertise_list_changed, subscription_hooks};
use crate::delegate::delegate_to_inner;
use crate::finish::{Finished, call_status, finish_call};
use crate::guard::guarded;
use crate::listing::{audit_listing, declare_tools};
use crate::make_span::{CallInfo, request_meta, session_id};
use crate::registry::Registry;

/// An rmcp [`ServerHandler`] that audits the tool calls of the handler `H` it wraps.
///
/// Every `ServerHandler` method is delegated to `H` unchanged, so `HintAudit<H>` serves
/// wherever `H` does (stdio, child process, streamable HTTP) and answers exactly as `H` does.
/// Two methods add auditing:
///
/// - `call_tool` runs `H::call_tool` inside a [`CallScope`] for the tool and inside the span
///   [`MakeSpan`](crate::MakeSpan) makes, times it (wall time, from the start of the inner call
///   to its answer), judges its effects against the tool's declared hints and sends an
///   `AuditEvent::Call` to the recorder. Its result, `Ok` or `Err`, is returned as is. Status:
///   `ok`, `tool_error` (`isError: true`) or `protocol_error` (a JSON-RPC error: unknown tool,
///   invalid params, internal error). A tool the server does not declare is judged under the
///   name the client sent and reported with `known_tool: false`.
/// - `list_tools` returns `H`'s answer as is, caches every tool's hints and, per tool, sends an
///   `AuditEvent::Listing` with the listing findings (`hint_missing`, `hint_contradiction`,
///   `hints_changed`).
///
/// With `correct_hints`, `list_tools` serves corrected hints, and `initialize`, `get_info`,
/// `discover`, `accepted_subscription_filter` and `listen` advertise and accept
/// `tools/list_changed`, for legacy sessions and 2026-07-28 listen streams alike (correct.rs).
///
/// Clones share the inner handler's clone, the judge, the recorder and the hints registry.
///
/// # Tools that spawn tasks
///
/// The call scope is a `tokio::task_local!`: code the tool body awaits sees it, a task the tool
/// spawns with `tokio::spawn` does not, and statements run there are counted as unattributed
/// (`hintaudit_unattributed_statements_total`). Spawn with [`CallScope::spawn`], or wrap the
/// future in [`CallScope::carry`] before handing it to another task, and its effects count for
/// the call, as long as they happen before the call answers: the layer takes the effects when
/// the inner `call_tool` returns.
///
/// # Tools that answer with a task (MCP tasks extension, SEP-2663)
///
/// A tool that answers `CallToolResponse::Task` has, by then, only started its work: rmcp's
/// `TaskManager::spawn` calls the `make_future` closure synchronously inside `call_tool` (so
/// inside the scope), but runs the future it returns in a plain `tokio::spawn`, re-entering
/// only rmcp's own originating-request task-local. So:
///
/// - the call is judged and reported when the `CreateTaskResult` is returned, with status `ok`
///   and the effects recorded until then (usually none);
/// - statements the task's future runs afterwards have no scope and are counted as
///   unattributed;
/// - a future wrapped in [`CallScope::carry`] inside `make_future` does run in the call's
///   scope, but what it records after the call answered is not judged (the effects have already
///   been taken): it is attributed, not audited. Auditing task results is not supported yet.
///
/// The same holds for `CallToolResponse::InputRequired` (multi-round-trip requests): each
/// round is judged as a call of its own.
///
/// # Evidence after the answer
///
/// An inner handler may defer part of a call's evidence past its answer
/// ([`CallScope::defer`]): `hintaudit proxy` does, for the call's share of the database log.
/// The answer goes back at once; the call is judged, reported and recorded on its span when
/// the last deferred share is in (so the span closes then). Its duration is still the inner
/// call's own.
///
/// # Cancellation
///
/// On `notifications/cancelled` rmcp cancels the request's `RequestContext::ct` rather than
/// dropping the handler's future, so a tool that stops early still answers and is judged. A
/// call whose future is dropped before it answers (runtime shutdown) is not reported.
pub struct HintAudit<H> {
    inner: H,
    config: Config,
    registry: Arc<Registry>,
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

    /// The same audit around another handler: the result shares this one's judge,
    /// recorder, span maker, settings and learned hints (so a tool listed through one is
    /// known to the other, and its listing findings are not given twice), and wraps `inner`.
    ///
    /// For servers that make a handler per session, each with state of its own: rmcp's
    /// `StreamableHttpService` calls its factory once per session, and
    /// `move || Ok(audit.rewrap(MyHandler::for_session()))` gives each session a fresh
    /// handler under one audit. ([`Clone`] wraps a clone of the *same* inner handler.)
    pub fn rewrap(&self, inner: H) -> Self {
        HintAudit {
            inner,
            config: self.config.clone(),
            registry: self.registry.clone(),
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

    /// The fleet's shared history, when the layer has one: flush it at shutdown
    /// ([`SharedHistory::flush`](crate::SharedHistory::flush)) so that the repeats of the last
    /// calls are judged before the process exits.
    #[cfg(feature = "shared-history")]
    pub fn shared_history(&self) -> Option<&crate::SharedHistory> {
        self.config.shared.as_ref()
    }

    /// The declared hints of `tool` as last learned (from `get_tool` or a tools/list answer),
    /// asking the inner handler's `get_tool` when the tool has not been seen yet. `None` when
    /// the server does not declare the tool.
    pub fn declared_hints(&self, tool: &str) -> Option<DeclaredHints> {
        self.hints_for_call(tool)
    }

    /// The operator's lever on corrected annotations (`correct_hints`): lifts `tool`'s
    /// correction, in the fleet's store too with a shared history, and sends every open
    /// session `notifications/tools/list_changed`. The tool is served as the server lists it
    /// until a call of it has a finding again. Whether a correction was in force in this
    /// process; `false` too without `correct_hints`.
    pub fn lift_correction(&self, tool: &str) -> bool {
        self.config
            .corrections
            .as_ref()
            .is_some_and(|c| c.lift(tool))
    }

    /// Every tool learned so far with its declared hints, sorted by name: the tools called
    /// since start (for `#[tool_handler]` servers) and those of every tools/list answer that
    /// passed through. A `RequestContext` cannot be built outside rmcp, so the layer cannot
    /// ask the inner handler for its full list on its own; see [`HintAudit::learn_tools`].
    pub fn known_tools(&self) -> Vec<(String, DeclaredHints)> {
        self.registry.snapshot()
    }

    /// Learns the hints of these tools, as a tools/list answer would, without linting them,
    /// and sends the recorder one
    /// [`AuditEvent::Declared`](hintaudit_core::AuditEvent::Declared) per tool. Use it at
    /// start-up with the tool list the server already has at hand (for `#[tool_router]`
    /// servers, `Self::tool_router().list_all()`), so [`Self::known_tools`] is complete, and a metrics
    /// recorder exports every tool (its declared hints, its violation series at 0), before
    /// any client call. Returns how many tools were learned.
    ///
    /// A hand-written handler that does not implement `get_tool` has its tools reported as
    /// unknown until a client has listed them; this seeds them at start-up instead.
    ///
    /// Not a listing: no `hint_missing` or `hints_changed` findings, and the judge's
    /// first-seen hints are set by the first tools/list, not by this. A recorder that panics
    /// is counted at stage `record`, as everywhere in the layer.
    pub fn learn_tools<'a>(&self, tools: impl IntoIterator<Item = &'a Tool>) -> usize {
        declare_tools(tools, &self.registry, &self.config)
    }

    /// Audits these tools as a tools/list answer that passed through the layer: caches their
    /// hints, lints them (`hint_missing`, `hint_contradiction`, and `hints_changed` against the
    /// hints first listed) and sends one
    /// [`AuditEvent::Listing`](hintaudit_core::AuditEvent::Listing) per tool. For a handler
    /// whose tool list is itself a tools/list answer, taken outside a client's request:
    /// `hintaudit proxy` lists its upstream's tools at start-up, and that listing is the
    /// upstream's, linted before any client lists it. (A server's own router list is not a
    /// listing: use [`HintAudit::learn_tools`].)
    pub fn audit_listing(&self, tools: &[Tool]) {
        audit_listing(tools, &self.registry, &self.config)
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

impl<H: ServerHandler> ServerHandler for HintAudit<H> {
    /// tools/call: the audited path, below.
    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, McpError>> + MaybeSendFuture + '_ {
        self.audited_call(request, context)
    }

    /// tools/list: the inner answer after listing.rs has cached and linted it; unchanged, but
    /// for the corrected tools with `correct_hints` (correct.rs).
    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let mut result = self.inner.list_tools(request, context).await;
        if let Ok(list) = &mut result {
            audit_listing(&list.tools, &self.registry, &self.config);
            if let Some(corrections) = &self.config.corrections {
                // With a shared history: the fleet's corrections first (one round trip).
                corrections.sync().await;
                guarded(AuditStage::Registry, "correcting hints panicked", || {
                    corrections.serve(&mut list.tools)
                });
            }
        }
        result
    }

    /// initialize: the inner answer; with `correct_hints`, it advertises `tools.listChanged`
    /// and the session is told when a correction changes the tools (correct.rs).
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        let peer = context.peer.clone();
        let mut result = self.inner.initialize(request, context).await;
        if let (Ok(info), Some(corrections)) = (&mut result, &self.config.corrections) {
            corrections.register(peer);
            advertise_list_changed(info);
        }
        result
    }

    /// The inner handler's tool, whose hints are cached on the way if they were not yet.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        let tool = self.inner.get_tool(name);
        if let Some(tool) = &tool
            && !self.registry.contains(name)
        {
            self.registry.learn(tool);
        }
        tool
    }

    // get_info, discover, accepted_subscription_filter, listen: the inner server's, with
    // `toolsListChanged` added under `correct_hints` (correct/listen.rs).
    subscription_hooks!();

    // Every other `ServerHandler` method: forwarded to `self.inner` unchanged (delegate.rs).
    delegate_to_inner!();
}

/// The tools/call path: `call_tool` → `audited_call` → `finish_call`.
impl<H: ServerHandler> HintAudit<H> {
    /// tools/call with auditing around the inner handler's `call_tool`: hints, span and scope
    /// before it, `finish_call` after it (or when its deferred evidence is in). Returns the inner result unchanged.
    async fn audited_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // `None` for a tool the server does not declare: judged with all hints unset. A
        // declared tool's name is the registry's, shared rather than copied per call.
        let (tool, declared) = match self.declared_entry(&request.name) {
            Some((name, hints)) => (name, Some(hints)),
            None => (Arc::from(request.name.as_ref()), None),
        };
        let hints = declared.unwrap_or_default();
        // The judge's idempotency history needs the arguments' hash; taken now, before the
        // request moves into the inner handler.
        let args_key = self.config.args_key(request.arguments.as_ref());
        let span = self.call_span(&tool, declared, &request, &context);

        // A call without a span (not sampled, tracing off) gets no statement spans either.
        // Enforce mode: what the audited pool and hintaudit-http refuse for this call.
        let enforcement = Enforcement::for_hints(self.config.mode_for(&tool), hints);
        let scope = CallScope::new(tool.clone())
            .with_spans(!span.is_disabled())
            .with_enforcement(enforcement);
        let effects = scope.effects_handle();
        let started = Instant::now();
        // Boxed: a tool's future can be kilobytes, and ours would otherwise carry it by value
        // through every move until it is pinned.
        let call = scope.run(Box::pin(self.inner.call_tool(request, context)));
        // A disabled span (no subscriber, not sampled) is not entered on every poll.
        let result = if span.is_disabled() {
            call.await
        } else {
            call.instrument(span.clone()).await
        };
        let duration = started.elapsed();

        let action = self.registry.action(&tool);
        let finished = Finished {
            tool,
            known_tool: declared.is_some(),
            hints,
            args_key,
            duration,
            status: call_status(&result),
            action,
        };
        if self.config.disclose {
            // The judgement goes into the answer's `_meta`: the one case where the answer waits
            // for evidence that comes after it (the proxy's share of the database log, bounded
            // by `--capture-wait-ms`).
            let mut result = result;
            if effects.is_deferred() {
                let (settled, wait) = tokio::sync::oneshot::channel();
                effects.when_settled(move || {
                    let _ = settled.send(());
                });
                let _ = wait.await;
            }
            finish_call(
                &self.config,
                finished,
                effects.take(),
                &span,
                Some(&mut result),
            );
            return result;
        }
        // Judged now, or, when part of its evidence comes after the answer (the proxy's
        // share of the database log: `CallScope::defer`), when that is in; the answer goes
        // back either way.
        let (config, handle) = (self.config.clone(), effects.clone());
        effects.when_settled(move || finish_call(&config, finished, handle.take(), &span, None));
        result
    }

    /// The declared hints of `tool`: cached, or asked of the inner `get_tool` and cached.
    /// `None` for a tool the server does not declare.
    fn hints_for_call(&self, tool: &str) -> Option<DeclaredHints> {
        self.declared_entry(tool).map(|(_, hints)| hints)
    }

    /// [`Self::hints_for_call`], with the tool's name as the registry keeps it (a copy when
    /// the registry is full).
    fn declared_entry(&self, tool: &str) -> Option<(Arc<str>, DeclaredHints)> {
        if let Some(entry) = self.registry.entry(tool) {
            return Some(entry);
        }
        let found = guarded(AuditStage::Registry, "get_tool panicked", || {
            self.inner.get_tool(tool)
        })
        .flatten()?;
        let hints = self.registry.learn(&found);
        Some(
            self.registry
                .entry(tool)
                .unwrap_or_else(|| (Arc::from(tool), hints)),
        )
    }

    /// The span the call runs in, from the configured [`MakeSpan`](crate::MakeSpan); no span
    /// when the span maker panics.
    fn call_span(
        &self,
        tool: &str,
        declared: Option<DeclaredHints>,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Span {
        let info = CallInfo {
            tool,
            hints: declared.unwrap_or_default(),
            known_tool: declared.is_some(),
            request_id: &context.id,
            meta: request_meta(request, context),
            session_id: session_id(&context.extensions),
            extensions: &context.extensions,
        };
        guarded(AuditStage::Record, "make_span panicked", || {
            self.config.make_span.make_span(&info)
        })
        .unwrap_or_else(Span::none)
    }
}

#[cfg(test)]
mod tests;
