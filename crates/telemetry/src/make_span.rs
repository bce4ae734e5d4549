//! The tools/call span with the client's remote parent: [`OtelMakeSpan`], a
//! [`hintaudit_rmcp::MakeSpan`] for [`hintaudit_rmcp::HintAuditLayer::with_make_span`].

use hintaudit_rmcp::{CallInfo, DefaultMakeSpan, MakeSpan};
use opentelemetry::Context;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::propagation::remote_parent;

/// Makes the tools/call span with [`DefaultMakeSpan`] (or the span maker given to
/// [`OtelMakeSpan::wrapping`]) and sets its OpenTelemetry parent from `_meta`'s
/// `traceparent`/`tracestate`. A span that is disabled, or already started, keeps its parent.
///
/// It builds the span of another span maker ([`DefaultMakeSpan`] unless told otherwise: the
/// `tools/call {tool}` server span with the attributes of design §5) and, when the request's
/// `params._meta` carries a valid W3C `traceparent` (and `tracestate`), makes that remote span
/// its OpenTelemetry parent, so the server span joins the client's trace. Without one, the
/// span starts a new trace: rmcp runs handlers inside session-long spans of its own
/// (`serve_inner`, `streamable_http_session`), and a call nested there would share one trace
/// with every call of the session, exported only when the session ends.
/// [`OtelMakeSpan::with_ambient_parent`] keeps tracing's nesting instead, for servers whose
/// own per-request span (an HTTP server span, say) should be the parent.
///
/// ```
/// use hintaudit_rmcp::HintAuditLayer;
/// use hintaudit_telemetry::{OtelMakeSpan, PrometheusRecorder};
/// let recorder = PrometheusRecorder::new();
/// let layer = HintAuditLayer::new()
///     .with_recorder(recorder.clone())
///     .with_make_span(OtelMakeSpan::new());
/// # let _ = layer;
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct OtelMakeSpan<M = DefaultMakeSpan> {
    inner: M,
    ambient_parent: bool,
}

impl OtelMakeSpan {
    /// Around the default span.
    pub fn new() -> Self {
        OtelMakeSpan::default()
    }
}

impl<M: MakeSpan> OtelMakeSpan<M> {
    /// Around another span maker, which must return a span not yet entered.
    pub fn wrapping(inner: M) -> Self {
        OtelMakeSpan {
            inner,
            ambient_parent: false,
        }
    }

    /// Without a trace context in `_meta`, nest the span under the current span (tracing's
    /// default) instead of starting a new trace.
    pub fn with_ambient_parent(mut self, ambient: bool) -> Self {
        self.ambient_parent = ambient;
        self
    }
}

impl<M: MakeSpan> MakeSpan for OtelMakeSpan<M> {
    fn make_span(&self, call: &CallInfo<'_>) -> Span {
        let span = self.inner.make_span(call);
        if span.is_disabled() {
            return span;
        }
        let parent = match remote_parent(call.meta()) {
            Some(cx) => cx,
            None if self.ambient_parent => return span,
            // An empty context: the span is a root.
            None => Context::new(),
        };
        if let Err(e) = span.set_parent(parent) {
            tracing::debug!("hintaudit: span parent not set: {e}");
        }
        span
    }
}
