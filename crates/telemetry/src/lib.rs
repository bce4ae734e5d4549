#![doc = include_str!("../README.md")]
#![warn(unreachable_pub)]
#![cfg_attr(test, allow(clippy::too_many_lines))]

/// The Prometheus collector of hintaudit-core's process-wide audit counters.
mod collector;
/// The pipeline's trace export settings, read from the `OTEL_*` environment variables.
mod config;
/// Errors, one enum per family of operations.
mod error;
/// The bounded span queue and exporter wrapper that count spans that never reach the collector.
mod export;
/// Serving the registry over HTTP: the `/metrics` route and a standalone listener.
mod http;
/// The global tracing subscriber: [`init_tracing`] and its guard.
mod init;
/// Bounded `table` label values.
mod labels;
/// The tools/call span with the client's remote parent, and head sampling.
mod make_span;
/// The name, kind, help and labels of every metric, in one enum.
mod metric_name;
/// The span pipeline: OTLP exporter, bounded batch queue and tracer provider.
mod pipeline;
/// Trace context in MCP's `params._meta`: reading and writing `traceparent`.
mod propagation;
/// The Prometheus recorder: audit events mapped onto metric families.
mod recorder;
/// The head-sampling decision and the sampler that honours it.
mod sampling;

/// Span and event attribute names
/// ([design: telemetry names](../../../docs/design.md#5-telemetry-names)): hintaudit-core's
/// `semconv`, re-exported so that metric names and attribute names are found in one crate.
pub use hintaudit_core::semconv as attributes;

pub use config::{
    DEFAULT_MAX_EXPORT_BATCH_SIZE, DEFAULT_MAX_QUEUE_SIZE, DEFAULT_SCHEDULED_DELAY, OtlpProtocol,
    TracingConfig,
};
pub use error::{RegisterError, ServeError, TracingError};
pub use export::ExportStats;
pub use http::{
    METRICS_PATH, MetricsServer, encode_text, metrics_excerpt, metrics_router, serve_metrics,
};
pub use init::{TracingGuard, init_tracing, otel_filter};
pub use make_span::OtelMakeSpan;
pub use metric_name::{MetricKind, MetricName, OTHER_TABLE, UNKNOWN_TOOL};
pub use pipeline::OtelPipeline;
pub use propagation::{TRACEPARENT, TRACESTATE, inject_meta, remote_parent};
pub use recorder::{
    DEFAULT_DURATION_BUCKETS, DEFAULT_MAX_TABLES, DEFAULT_MAX_TOOLS, PrometheusRecorder,
    PrometheusRecorderBuilder,
};
