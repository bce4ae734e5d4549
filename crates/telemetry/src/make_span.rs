//! The tools/call span with the client's remote parent: [`OtelMakeSpan`], a
//! [`hintaudit_rmcp::MakeSpan`] for [`hintaudit_rmcp::HintAuditLayer::with_make_span`].

use hintaudit_rmcp::{CallInfo, DefaultMakeSpan, MakeSpan};
use opentelemetry::Context;
use opentelemetry::trace::TraceContextExt;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::propagation::remote_parent;
use crate::sampling::{HeadSampled, head_sample};

/// Makes the tools/call span with [`DefaultMakeSpan`] (or the span maker given to
/// [`OtelMakeSpan::wrapping`]) and sets its OpenTelemetry parent from `_meta`'s
/// `traceparent`/`tracestate`. A span that is disabled, or already started, keeps its parent.
///
/// It builds the span of another span maker ([`DefaultMakeSpan`] unless told otherwise: the
/// `tools/call {tool}` server span with the attributes of
/// [design: telemetry names](../../../docs/design.md#5-telemetry-names)) and, when the request's
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
///
/// # Head sampling
///
/// [`OtelPipeline::make_span`](crate::OtelPipeline::make_span) (or
/// [`OtelMakeSpan::with_sample_ratio`]) decides whether a call is traced before its span
/// exists: a call whose `traceparent` is not sampled, or a root call outside the ratio, gets
/// no span and no statement spans, and so costs next to nothing. Without it, every call
/// builds its spans and the SDK's sampler drops the unsampled ones at the end.
#[derive(Debug, Clone, Copy, Default)]
pub struct OtelMakeSpan<M = DefaultMakeSpan> {
    inner: M,
    ambient_parent: bool,
    sample_ratio: Option<f64>,
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
            sample_ratio: None,
        }
    }

    /// Head sampling (see the type's docs): follow the sampled flag of the client's
    /// `traceparent`; without one, trace a call with probability `ratio` (clamped to 0..=1).
    ///
    /// Use it with a pipeline whose sampler honours the decision, which
    /// [`OtelPipeline::make_span`](crate::OtelPipeline::make_span) sets up for you: the
    /// pipeline keeps the root spans this sampled instead of applying its ratio again. With
    /// [`OtelMakeSpan::with_ambient_parent`], calls without a `traceparent` are left to the
    /// SDK's sampler.
    pub fn with_sample_ratio(mut self, ratio: f64) -> Self {
        self.sample_ratio = Some(ratio.clamp(0.0, 1.0));
        self
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
        // Head sampling reads `_meta` before the span exists; otherwise it is read only for a
        // span that is on (tracing off costs no `traceparent` parsing).
        let remote = match self.sample_ratio {
            Some(ratio) => {
                let remote = remote_parent(call.meta());
                let sampled = match &remote {
                    Some(cx) => cx.span().span_context().is_sampled(),
                    None if self.ambient_parent => true,
                    None => head_sample(ratio),
                };
                if !sampled {
                    return Span::none();
                }
                Some(remote)
            }
            None => None,
        };
        let span = self.inner.make_span(call);
        if span.is_disabled() {
            return span;
        }
        let parent = match remote.unwrap_or_else(|| remote_parent(call.meta())) {
            Some(cx) => cx,
            None if self.ambient_parent => return span,
            // An empty context: the span is a root, sampled here already when head sampling.
            None if self.sample_ratio.is_some() => Context::new().with_value(HeadSampled),
            None => Context::new(),
        };
        if let Err(e) = span.set_parent(parent) {
            tracing::debug!("hintaudit: span parent not set: {e}");
        }
        span
    }
}
