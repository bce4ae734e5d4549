#![doc = include_str!("../README.md")]

mod collector;
mod error;
mod export;
mod http;
mod init;
mod labels;
mod make_span;
mod metric_name;
mod otel;
mod propagation;
mod recorder;
mod sampling;

/// Span and event attribute names (design §5): hintaudit-core's `semconv`, re-exported so that
/// metric names and attribute names are found in one crate.
pub use hintaudit_core::semconv as attributes;

pub use error::{RegisterError, ServeError, TracingError};
pub use export::ExportStats;
pub use http::{
    METRICS_PATH, MetricsServer, encode_text, metrics_excerpt, metrics_router, serve_metrics,
};
pub use init::{TracingGuard, init_tracing};
pub use make_span::OtelMakeSpan;
pub use metric_name::{MetricKind, MetricName, OTHER_TABLE, UNKNOWN_TOOL};
pub use otel::{
    DEFAULT_MAX_EXPORT_BATCH_SIZE, DEFAULT_MAX_QUEUE_SIZE, DEFAULT_SCHEDULED_DELAY, OtelPipeline,
    OtlpProtocol, TracingConfig,
};
pub use propagation::{TRACEPARENT, TRACESTATE, inject_meta, remote_parent};
pub use recorder::{
    DEFAULT_DURATION_BUCKETS, DEFAULT_MAX_TABLES, DEFAULT_MAX_TOOLS, PrometheusRecorder,
    PrometheusRecorderBuilder,
};
