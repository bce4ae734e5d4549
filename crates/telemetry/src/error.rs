//! Errors, one enum per family of operations.

use std::net::SocketAddr;

/// Building a [`crate::PrometheusRecorder`] failed: its metrics could not be registered
/// (another collector with the same names is already in the registry).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// The registry refused a metric.
    #[error("registering hintaudit metrics: {0}")]
    Prometheus(#[from] prometheus::Error),
}

/// The standalone `/metrics` listener could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// Binding the address failed (in use, not permitted).
    #[error("binding the metrics listener on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
}

/// Setting up OpenTelemetry tracing failed. The audited server can go on without traces.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TracingError {
    /// The OTLP span exporter could not be built (bad endpoint, TLS, HTTP client).
    #[error("building the OTLP span exporter: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    /// The gRPC exporter needs a Tokio runtime, and there is none on this thread.
    #[error("the OTLP gRPC exporter must be built inside a Tokio runtime")]
    NoRuntime,
    /// A global tracing subscriber is already installed.
    #[error("installing the tracing subscriber: {0}")]
    Subscriber(#[from] tracing_subscriber::util::TryInitError),
}
