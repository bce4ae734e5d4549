//! The span pipeline between tracing-opentelemetry and the OTLP exporter: a bounded queue in
//! front of the SDK's batch processor, and an exporter wrapper, which together count every
//! span that never reaches the collector in `hintaudit_audit_errors_total{stage="export"}`.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use hintaudit_core::{AuditStage, stats};
use opentelemetry::Context;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Span, SpanData, SpanExporter, SpanProcessor,
};

/// Counters shared by the processor and the exporter wrapper.
#[derive(Debug, Default)]
pub(crate) struct ExportCounters {
    in_flight: AtomicUsize,
    dropped: AtomicU64,
    /// Spans dropped on the thread that ended them, not yet counted in the audit stats: that
    /// thread is inside a tracing callback, where logging (the first audit error of a stage is
    /// logged) could re-enter the subscriber. The exporter thread reports them.
    unreported: AtomicU64,
    exported: AtomicU64,
    max_in_flight: AtomicUsize,
}

impl ExportCounters {
    /// Counts dropped spans now: for threads that are not inside a tracing callback.
    fn drop_now(&self, n: usize, why: &str) {
        if n == 0 {
            return;
        }
        self.dropped.fetch_add(n as u64, Ordering::Relaxed);
        for _ in 0..n {
            stats().audit_error(AuditStage::Export, &why);
        }
    }

    /// Counts dropped spans with atomics only; [`ExportCounters::report`] adds them to the
    /// audit stats later.
    fn drop_later(&self, n: u64) {
        self.dropped.fetch_add(n, Ordering::Relaxed);
        self.unreported.fetch_add(n, Ordering::Relaxed);
    }

    /// Adds the spans dropped by [`ExportCounters::drop_later`] to the audit stats.
    fn report(&self) {
        let n = self.unreported.swap(0, Ordering::AcqRel);
        if n == 0 {
            return;
        }
        let why = format!(
            "trace export queue full ({} spans in flight), or tracing shut down: spans dropped",
            self.max_in_flight.load(Ordering::Relaxed)
        );
        for _ in 0..n {
            stats().audit_error(AuditStage::Export, &why);
        }
    }
}

/// What the span pipeline has done so far: spans exported and spans dropped (queue full,
/// failed export, or offered after shutdown). Dropped spans are also counted in
/// `hintaudit_audit_errors_total{stage="export"}`, one per span.
///
/// Accounting: a span is *in flight* from the moment the span processor accepts it
/// until the exporter's `export` call carrying it returns. The processor refuses (drops and
/// counts) a span when `max_queue_size` spans are already in flight, so the SDK's own queue,
/// which has the same capacity and holds a subset of the spans in flight, never overflows and
/// never drops anything uncounted. A batch whose export fails (collector down, timeout,
/// refused) is counted span by span when the export returns. Spans offered after shutdown are
/// counted too. `on_end` never blocks: it is one atomic and one non-blocking channel send.
///
/// A span refused in `on_end` is counted there with atomics only, and added to the audit
/// stats from the exporter thread when its current export returns (or at a flush, shutdown or
/// [`crate::OtelPipeline::export_stats`]): `on_end` runs inside a tracing callback, where the
/// log line of a stage's first audit error could re-enter the subscriber. A queue is only full
/// while an export is under way, so the lag is one export at most.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// Spans the collector accepted.
    pub exported: u64,
    /// Spans that never reached it.
    pub dropped: u64,
    /// Spans queued or being exported right now.
    pub in_flight: usize,
}

/// Wraps the real exporter: counts the spans of every batch as exported or dropped, and
/// releases their in-flight slots, when the export returns.
#[derive(Debug)]
pub(crate) struct CountingExporter<E> {
    inner: E,
    counters: Arc<ExportCounters>,
}

impl<E: SpanExporter> SpanExporter for CountingExporter<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len();
        let result = self.inner.export(batch).await;
        self.counters.in_flight.fetch_sub(n, Ordering::AcqRel);
        match &result {
            Ok(()) => {
                self.counters
                    .exported
                    .fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) => self
                .counters
                .drop_now(n, &format!("trace export failed, spans dropped: {e}")),
        }
        self.counters.report();
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource)
    }
}

/// Limits of the span pipeline: queues are bounded
/// ([design: behaviour under trouble](../../../docs/design.md#6-behaviour-under-trouble)).
#[derive(Debug, Clone, Copy)]
pub(crate) struct QueueLimits {
    pub(crate) max_queue_size: usize,
    pub(crate) max_export_batch_size: usize,
    pub(crate) scheduled_delay: Duration,
}

/// A span processor with a hard bound on spans in flight, feeding the SDK's
/// [`BatchSpanProcessor`] (which exports from its own thread).
pub(crate) struct BoundedProcessor {
    inner: BatchSpanProcessor,
    counters: Arc<ExportCounters>,
    max_in_flight: usize,
    shut_down: AtomicBool,
}

impl fmt::Debug for BoundedProcessor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoundedProcessor")
            .field("max_in_flight", &self.max_in_flight)
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

impl BoundedProcessor {
    /// A processor exporting through `exporter` within `limits`.
    pub(crate) fn new<E>(exporter: E, limits: QueueLimits) -> (Self, ExportHandle)
    where
        E: SpanExporter + 'static,
    {
        let counters = Arc::new(ExportCounters::default());
        let max = limits.max_queue_size.max(1);
        counters.max_in_flight.store(max, Ordering::Relaxed);
        let config = BatchConfigBuilder::default()
            .with_max_queue_size(max)
            .with_max_export_batch_size(limits.max_export_batch_size.clamp(1, max))
            .with_scheduled_delay(limits.scheduled_delay)
            .build();
        let exporter = CountingExporter {
            inner: exporter,
            counters: counters.clone(),
        };
        let processor = BoundedProcessor {
            inner: BatchSpanProcessor::new(exporter, config),
            counters: counters.clone(),
            max_in_flight: max,
            shut_down: AtomicBool::new(false),
        };
        (processor, ExportHandle { counters })
    }
}

impl SpanProcessor for BoundedProcessor {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx)
    }

    fn on_end(&self, span: SpanData) {
        if self.shut_down.load(Ordering::Relaxed) {
            self.counters.drop_later(1);
            return;
        }
        let admitted = self
            .counters
            .in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max_in_flight).then_some(n + 1)
            })
            .is_ok();
        if admitted {
            self.inner.on_end(span);
        } else {
            self.counters.drop_later(1);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        let result = self.inner.force_flush();
        self.counters.report();
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.shut_down.store(true, Ordering::Relaxed);
        let result = self.inner.shutdown_with_timeout(timeout);
        self.counters.report();
        result
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource)
    }
}

/// A read handle on the span pipeline's counters.
#[derive(Debug, Clone)]
pub(crate) struct ExportHandle {
    counters: Arc<ExportCounters>,
}

impl ExportHandle {
    pub(crate) fn stats(&self) -> ExportStats {
        self.counters.report();
        ExportStats {
            exported: self.counters.exported.load(Ordering::Relaxed),
            dropped: self.counters.dropped.load(Ordering::Relaxed),
            in_flight: self.counters.in_flight.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{Tracer, TracerProvider};
    use opentelemetry_sdk::error::OTelSdkError;
    use opentelemetry_sdk::trace::SdkTracerProvider;
    use parking_lot::Mutex;

    /// An exporter that fails while `fail` is set, and parks exports while `gate` is held.
    #[derive(Debug, Clone, Default)]
    struct TestExporter {
        fail: Arc<AtomicBool>,
        gate: Arc<Mutex<()>>,
        got: Arc<AtomicUsize>,
    }

    impl SpanExporter for TestExporter {
        async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
            drop(self.gate.lock());
            if self.fail.load(Ordering::Relaxed) {
                return Err(OTelSdkError::InternalFailure("collector down".into()));
            }
            self.got.fetch_add(batch.len(), Ordering::Relaxed);
            Ok(())
        }
    }

    fn provider(
        exporter: TestExporter,
        max_queue_size: usize,
    ) -> (SdkTracerProvider, ExportHandle) {
        let limits = QueueLimits {
            max_queue_size,
            max_export_batch_size: 512,
            scheduled_delay: Duration::from_millis(20),
        };
        let (processor, handle) = BoundedProcessor::new(exporter, limits);
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .build();
        (provider, handle)
    }

    #[test]
    fn successful_exports_are_counted_and_release_slots() {
        let exporter = TestExporter::default();
        let (provider, handle) = provider(exporter.clone(), 64);
        let tracer = provider.tracer("t");
        for _ in 0..10 {
            tracer.in_span("s", |_| {});
        }
        provider.force_flush().unwrap();
        let s = handle.stats();
        assert_eq!((s.exported, s.dropped, s.in_flight), (10, 0, 0));
        assert_eq!(exporter.got.load(Ordering::Relaxed), 10);
        provider.shutdown().unwrap();
    }

    #[test]
    fn a_full_queue_and_failed_exports_drop_and_count() {
        let exporter = TestExporter::default();
        let before = stats().audit_errors(AuditStage::Export);
        let (provider, handle) = provider(exporter.clone(), 8);
        let tracer = provider.tracer("t");
        // Hold the exporter: at most 8 spans can be in flight, the other 12 are refused.
        let gate = exporter.gate.lock();
        for _ in 0..20 {
            tracer.in_span("s", |_| {});
        }
        let s = handle.stats();
        assert_eq!(s.in_flight, 8);
        assert_eq!(s.dropped, 12);
        // The collector goes down: the 8 queued spans fail to export and are dropped too.
        exporter.fail.store(true, Ordering::Relaxed);
        drop(gate);
        let _ = provider.force_flush();
        let s = handle.stats();
        assert_eq!((s.exported, s.dropped, s.in_flight), (0, 20, 0));
        assert!(stats().audit_errors(AuditStage::Export) >= before + 20);
        provider.shutdown().unwrap();
    }
}
