//! Head sampling: [`crate::OtelMakeSpan`] decides whether a tools/call is traced before its
//! span exists, and the pipeline's sampler keeps the root spans it decided to trace.
//!
//! The decision follows OpenTelemetry's `parentbased_traceidratio` sampler: a call whose
//! client sent a `traceparent` is traced when that parent is sampled; a root call with
//! probability `ratio`. Taking it early saves an untraced call its spans (the call span and
//! one per statement), which tracing-opentelemetry would otherwise build and the SDK drop.
//! The SDK's sampler must then not draw again for those roots, or they would be kept with
//! probability `ratio²`: [`HeadAwareSampler`](crate::sampling::HeadAwareSampler) keeps a root
//! whose (empty) parent context carries the [`HeadSampled`](crate::sampling::HeadSampled) mark,
//! and samples everything else as `parentbased_traceidratio` does.

use opentelemetry::trace::{Link, SpanKind, TraceContextExt, TraceId, TraceState};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{
    IdGenerator, RandomIdGenerator, Sampler, SamplingDecision, SamplingResult, ShouldSample,
};

/// The mark on the empty parent context of a root call span that [`crate::OtelMakeSpan`] has
/// decided to trace.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HeadSampled;

/// Whether to trace a root call: a uniform draw from the SDK's random id generator, compared
/// with `ratio` as the SDK's `TraceIdRatioBased` compares a trace id.
pub(crate) fn head_sample(ratio: f64) -> bool {
    if ratio >= 1.0 {
        return true;
    }
    let draw = u64::from_be_bytes(RandomIdGenerator::default().new_span_id().to_bytes()) >> 1;
    draw < (ratio.max(0.0) * (1u64 << 63) as f64) as u64
}

/// `parentbased_traceidratio`, except that roots marked [`HeadSampled`] are kept.
#[derive(Debug, Clone)]
pub(crate) struct HeadAwareSampler {
    parent_based: Sampler,
}

impl HeadAwareSampler {
    pub(crate) fn new(ratio: f64) -> Self {
        HeadAwareSampler {
            parent_based: Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(ratio))),
        }
    }
}

impl ShouldSample for HeadAwareSampler {
    fn should_sample(
        &self,
        parent_context: Option<&Context>,
        trace_id: TraceId,
        name: &str,
        span_kind: &SpanKind,
        attributes: &[KeyValue],
        links: &[Link],
    ) -> SamplingResult {
        let head_sampled = parent_context
            .is_some_and(|cx| !cx.has_active_span() && cx.get::<HeadSampled>().is_some());
        if head_sampled {
            return SamplingResult {
                decision: SamplingDecision::RecordAndSample,
                attributes: Vec::new(),
                trace_state: TraceState::default(),
            };
        }
        self.parent_based.should_sample(
            parent_context,
            trace_id,
            name,
            span_kind,
            attributes,
            links,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(sampler: &HeadAwareSampler, cx: Option<&Context>) -> SamplingDecision {
        let trace_id = RandomIdGenerator::default().new_trace_id();
        sampler
            .should_sample(cx, trace_id, "s", &SpanKind::Server, &[], &[])
            .decision
    }

    #[test]
    fn marked_roots_are_kept_and_others_follow_the_ratio() {
        let never = HeadAwareSampler::new(0.0);
        let marked = Context::new().with_value(HeadSampled);
        assert_eq!(
            decide(&never, Some(&marked)),
            SamplingDecision::RecordAndSample
        );
        assert_eq!(
            decide(&never, Some(&Context::new())),
            SamplingDecision::Drop
        );
        assert_eq!(decide(&never, None), SamplingDecision::Drop);
        let always = HeadAwareSampler::new(1.0);
        assert_eq!(decide(&always, None), SamplingDecision::RecordAndSample);
    }

    #[test]
    fn head_sampling_draws_at_the_ratio() {
        assert!((0..1000).all(|_| head_sample(1.0)));
        assert!((0..1000).all(|_| !head_sample(0.0)));
        // 10,000 draws at 0.3: mean 3,000, standard deviation about 46.
        let kept = (0..10_000).filter(|_| head_sample(0.3)).count();
        assert!((2_700..3_300).contains(&kept), "{kept}");
    }
}
