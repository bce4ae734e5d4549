//! The span a tool call runs in: [`MakeSpan`], its default [`DefaultMakeSpan`], the
//! [`CallInfo`] it is made from, and what the layer records on it once the call is judged.
//!
//! [`crate::HintAudit`] calls [`MakeSpan::make_span`] once per tools/call, before the inner
//! `call_tool` runs, and polls the inner future inside the span (`Instrument`), so spans and
//! events of the tool body (the audited sqlx pool's statement spans, say) become its children.
//! When the call has been judged, the layer records on the span (`record_on_span`):
//!
//! - `hintaudit.verdict` ([`semconv::VERDICT`]): `clean`, `info`, `warning` or `critical`;
//! - `error.type` ([`semconv::ERROR_TYPE`]): `tool_error` for results with `isError: true`, or
//!   the JSON-RPC error code (e.g. `-32602`) for protocol errors;
//! - `otel.status_code` ([`semconv::OTEL_STATUS_CODE`]) `error` on either kind of error;
//!
//! and emits one event per finding inside the span, with message `hintaudit.finding`
//! ([`semconv::FINDING_EVENT`]) and fields `hintaudit.rule`, `hintaudit.hint`,
//! `hintaudit.severity`, `hintaudit.confidence`, `hintaudit.evidence`; tracing-opentelemetry
//! turns these into span events. They are TRACE-level events with target `hintaudit::finding`
//! ([`semconv::FINDING_EVENT_TARGET`]), for the trace exporter, so that a log subscriber at
//! its usual level does not print them: the recorder ([`LogRecorder`](crate::LogRecorder)
//! by default) logs each finding once, at the level of its severity. A subscriber that
//! exports spans must let that target through at TRACE (hintaudit-telemetry's
//! `init_tracing` and `otel_filter` do). A custom span must declare those fields
//! (`= tracing::field::Empty`) for the recorded values to show: tracing ignores values recorded
//! for fields a span did not declare.
//!
//! Arguments and results are never recorded.
//!
//! ```
//! use hintaudit_rmcp::{CallInfo, HintAuditLayer};
//! // A closure is a MakeSpan: here a debug-level span with just the tool name.
//! let layer = HintAuditLayer::new()
//!     .with_make_span(|call: &CallInfo<'_>| tracing::debug_span!("tool", tool = call.tool()));
//! # let _ = layer;
//! ```
//!
//! [`semconv::VERDICT`]: hintaudit_core::semconv::VERDICT
//! [`semconv::ERROR_TYPE`]: hintaudit_core::semconv::ERROR_TYPE
//! [`semconv::OTEL_STATUS_CODE`]: hintaudit_core::semconv::OTEL_STATUS_CODE
//! [`semconv::FINDING_EVENT`]: hintaudit_core::semconv::FINDING_EVENT
//! [`semconv::FINDING_EVENT_TARGET`]: hintaudit_core::semconv::FINDING_EVENT_TARGET

use hintaudit_core::{DeclaredHints, Finding, Hint, Verdict, semconv};
use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, Extensions, JsonObject, RequestId};
use rmcp::service::RequestContext;
use tracing::Span;
use tracing::field::Empty;

/// What is known about a tools/call when its span is made, before the inner handler runs.
///
/// Borrowed from the request; nothing here outlives [`MakeSpan::make_span`]. Arguments are
/// deliberately absent.
#[derive(Debug, Clone, Copy)]
pub struct CallInfo<'a> {
    pub(crate) tool: &'a str,
    pub(crate) hints: DeclaredHints,
    pub(crate) known_tool: bool,
    pub(crate) request_id: &'a RequestId,
    pub(crate) meta: &'a JsonObject,
    pub(crate) session_id: Option<&'a str>,
    pub(crate) extensions: &'a Extensions,
}

impl<'a> CallInfo<'a> {
    /// The tool name as the client sent it (`params.name`).
    pub fn tool(&self) -> &'a str {
        self.tool
    }

    /// The hints the server declares for the tool (all unset for unknown tools).
    pub fn hints(&self) -> DeclaredHints {
        self.hints
    }

    /// Whether the server declares the tool (via `get_tool` or a tools/list seen earlier).
    pub fn known_tool(&self) -> bool {
        self.known_tool
    }

    /// The JSON-RPC request id (a number or a string; `Display` prints it bare).
    pub fn request_id(&self) -> &'a RequestId {
        self.request_id
    }

    /// The request's `params._meta` map (MCP: `RequestMetaObject`), empty when the client sent
    /// none. rmcp moves it off the params into `RequestContext::meta` when it decodes
    /// the request; it holds `progressToken`, the SEP-414 trace context keys `traceparent`,
    /// `tracestate` and `baggage`, and for protocol 2026-07-28 the per-request client
    /// metadata.
    pub fn meta(&self) -> &'a JsonObject {
        self.meta
    }

    /// The W3C `traceparent` from `_meta` (SEP-414), if the client sent a string there.
    pub fn traceparent(&self) -> Option<&'a str> {
        self.meta.get("traceparent").and_then(|v| v.as_str())
    }

    /// The W3C `tracestate` from `_meta` (SEP-414), if the client sent a string there.
    pub fn tracestate(&self) -> Option<&'a str> {
        self.meta.get("tracestate").and_then(|v| v.as_str())
    }

    /// The MCP session id, when the transport has one: the `Mcp-Session-Id` header of the HTTP
    /// request under rmcp's streamable HTTP server (from the `http::request::Parts` it puts in
    /// the request's extensions). `None` over stdio and other streams, for stateless HTTP, and
    /// for the `initialize` request itself, before the server has assigned one.
    pub fn session_id(&self) -> Option<&'a str> {
        self.session_id
    }

    /// The request's extensions (`RequestContext::extensions`): under streamable HTTP they
    /// hold the request's `http::request::Parts`, with all its headers.
    pub fn extensions(&self) -> &'a Extensions {
        self.extensions
    }
}

/// Makes the span a tools/call runs in. One method; implemented by [`DefaultMakeSpan`] and by
/// closures `Fn(&CallInfo<'_>) -> tracing::Span`.
///
/// Called once per call on the task that serves it; it should be quick. A panic in it is
/// caught: the call then runs in no span and the failure is counted at stage `record`.
pub trait MakeSpan: Send + Sync + 'static {
    /// Makes the span for one call.
    fn make_span(&self, call: &CallInfo<'_>) -> Span;
}

impl<F> MakeSpan for F
where
    F: Fn(&CallInfo<'_>) -> Span + Send + Sync + 'static,
{
    fn make_span(&self, call: &CallInfo<'_>) -> Span {
        self(call)
    }
}

/// The default span: INFO level, named `tools/call`, with the attributes of the MCP and GenAI
/// semantic conventions ([design: telemetry names](../../../docs/design.md#5-telemetry-names)):
///
/// | field | value |
/// |---|---|
/// | `otel.name` | `tools/call {tool}`; `tools/call __unknown__` for a tool the server does not declare |
/// | `otel.kind` | `server` |
/// | `mcp.method.name` | `tools/call` |
/// | `gen_ai.tool.name` | the tool name; for an undeclared tool, the name sent cut to [`semconv::TOOL_NAME_MAX_BYTES`] |
/// | `gen_ai.operation.name` | `execute_tool` |
/// | `jsonrpc.request.id` | the request id |
/// | `mcp.session.id` | the session id, when known |
/// | `hintaudit.hint.read_only` … `hintaudit.hint.open_world` | `true`, `false` or `unset` |
/// | `hintaudit.verdict`, `error.type`, `otel.status_code` | empty; recorded after the call |
///
/// A client can send any text as a tool name: span names, which backends index and group
/// by, take the declared name or `__unknown__` ([`semconv::UNKNOWN_TOOL`], as the metrics'
/// `tool` label does), so they stay as few as the declared tools; the attribute keeps what
/// was asked for, bounded ([`semconv::bounded_tool_name`]).
///
/// The remote parent (`traceparent` in `_meta`) is not set here: hintaudit-telemetry wraps or
/// replaces this to do so, reading [`CallInfo::traceparent`].
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultMakeSpan {
    _priv: (),
}

impl DefaultMakeSpan {
    /// The default span maker.
    pub fn new() -> Self {
        DefaultMakeSpan::default()
    }
}

impl MakeSpan for DefaultMakeSpan {
    fn make_span(&self, call: &CallInfo<'_>) -> Span {
        let (tool, name) = if call.known_tool() {
            (call.tool(), call.tool())
        } else {
            (
                semconv::bounded_tool_name(call.tool()),
                semconv::UNKNOWN_TOOL,
            )
        };
        let hints = call.hints();
        let span = tracing::info_span!(
            "tools/call",
            { semconv::OTEL_NAME } = %format_args!("tools/call {name}"),
            { semconv::OTEL_KIND } = "server",
            { semconv::MCP_METHOD_NAME } = "tools/call",
            { semconv::GEN_AI_TOOL_NAME } = tool,
            { semconv::GEN_AI_OPERATION_NAME } = "execute_tool",
            { semconv::JSONRPC_REQUEST_ID } = %call.request_id(),
            { semconv::MCP_SESSION_ID } = Empty,
            { semconv::HINT_READ_ONLY } = hints.label(Hint::ReadOnly),
            { semconv::HINT_DESTRUCTIVE } = hints.label(Hint::Destructive),
            { semconv::HINT_IDEMPOTENT } = hints.label(Hint::Idempotent),
            { semconv::HINT_OPEN_WORLD } = hints.label(Hint::OpenWorld),
            { semconv::VERDICT } = Empty,
            { semconv::ERROR_TYPE } = Empty,
            { semconv::OTEL_STATUS_CODE } = Empty,
        );
        if let Some(session) = call.session_id() {
            span.record(semconv::MCP_SESSION_ID, session);
        }
        span
    }
}

/// Records the verdict, error type and status on the call's span, and one event per finding.
pub(crate) fn record_on_span(span: &Span, verdict: &Verdict, error_type: Option<&str>) {
    if span.is_none() {
        return;
    }
    span.record(semconv::VERDICT, verdict.label());
    if let Some(error_type) = error_type {
        span.record(semconv::ERROR_TYPE, error_type);
        span.record(semconv::OTEL_STATUS_CODE, "error");
    }
    for finding in &verdict.findings {
        finding_event(span, finding);
    }
}

/// One `hintaudit.finding` event inside `span`: TRACE, target `hintaudit::finding`, so that
/// it reaches the trace exporter and no log (the recorder logs the finding). The severity is
/// a field; the level is never ERROR, which tracing-opentelemetry would turn into an error
/// status of a call that did not fail.
fn finding_event(span: &Span, f: &Finding) {
    tracing::event!(
        target: "hintaudit::finding",
        parent: span,
        tracing::Level::TRACE,
        { semconv::FINDING_RULE } = f.rule.as_str(),
        { semconv::FINDING_HINT } = f.hint.spec_name(),
        { semconv::FINDING_SEVERITY } = f.severity.as_str(),
        { semconv::FINDING_CONFIDENCE } = f.confidence.as_str(),
        { semconv::FINDING_EVIDENCE } = f.evidence.as_str(),
        "hintaudit.finding"
    );
}

/// The request's `_meta`: rmcp moves it from the params into `RequestContext::meta` when it
/// decodes a request; a request built in-process may still carry it in the params.
pub(crate) fn request_meta<'a>(
    params: &'a CallToolRequestParams,
    context: &'a RequestContext<RoleServer>,
) -> &'a JsonObject {
    let from_context = &context.meta.0.0;
    match params.meta.as_ref() {
        Some(meta) if from_context.is_empty() => &meta.0.0,
        _ => from_context,
    }
}

/// The `Mcp-Session-Id` header of the HTTP request, when rmcp's streamable HTTP server put the
/// request's `http::request::Parts` into the extensions.
pub(crate) fn session_id(extensions: &Extensions) -> Option<&str> {
    extensions
        .get::<http::request::Parts>()?
        .headers
        .get("mcp-session-id")?
        .to_str()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finding_message_matches_semconv() {
        // The event message and target are spelled in the macro; keep them equal to the
        // semconv names.
        assert_eq!(semconv::FINDING_EVENT, "hintaudit.finding");
        assert_eq!(semconv::FINDING_EVENT_TARGET, "hintaudit::finding");
    }
}
