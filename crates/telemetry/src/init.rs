//! The global subscriber: [`init_tracing`] installs log lines and, when export is on, an
//! [`OtelPipeline`]'s layer; the [`TracingGuard`] it returns keeps the pipeline alive.

use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::config::TracingConfig;
use crate::error::TracingError;
use crate::export::ExportStats;
use crate::make_span::OtelMakeSpan;
use crate::pipeline::OtelPipeline;

/// The filter of the span-exporting layer: INFO and above, and the TRACE-level
/// `hintaudit.finding` events (target `hintaudit::finding`, [`attributes::FINDING_EVENT_TARGET`]),
/// which become span events and are no log line. [`init_tracing`] uses it; a subscriber you
/// build yourself puts it on its OpenTelemetry layer (`.with_filter(otel_filter())`).
///
/// [`attributes::FINDING_EVENT_TARGET`]: crate::attributes::FINDING_EVENT_TARGET
pub fn otel_filter() -> Targets {
    Targets::new().with_default(LevelFilter::INFO).with_target(
        hintaudit_core::semconv::FINDING_EVENT_TARGET,
        LevelFilter::TRACE,
    )
}

/// Keeps tracing export alive; dropping it flushes queued spans (up to 5 s) and stops the
/// exporter. Hold it in `main`. Drop it outside a single-threaded async runtime: with gRPC,
/// flushing needs the runtime's worker threads.
#[derive(Debug)]
#[must_use = "dropping the guard stops trace export"]
pub struct TracingGuard {
    pipeline: Option<OtelPipeline>,
}

impl TracingGuard {
    /// Whether traces are being exported.
    pub fn is_exporting(&self) -> bool {
        self.pipeline.is_some()
    }

    /// Spans exported, dropped and in flight so far (all zero when not exporting).
    pub fn export_stats(&self) -> ExportStats {
        self.pipeline
            .as_ref()
            .map(OtelPipeline::export_stats)
            .unwrap_or_default()
    }

    /// The pipeline, when exporting.
    pub fn pipeline(&self) -> Option<&OtelPipeline> {
        self.pipeline.as_ref()
    }

    /// The span maker that goes with the pipeline ([`OtelPipeline::make_span`]), or
    /// [`OtelMakeSpan::new`] when not exporting.
    pub fn make_span(&self) -> OtelMakeSpan {
        self.pipeline
            .as_ref()
            .map_or_else(OtelMakeSpan::new, OtelPipeline::make_span)
    }
}

/// Installs the global tracing subscriber: log lines on stderr (stdout belongs to stdio MCP
/// transports) filtered by `RUST_LOG` (else [`TracingConfig::with_log_filter`], default
/// `info`), and, when `config` has export on, the OpenTelemetry layer of a new
/// [`OtelPipeline`], which takes spans and events at INFO and above on its own filter. Also
/// installs the W3C trace context propagator and the pipeline's tracer provider as
/// OpenTelemetry's globals. Call it inside a Tokio runtime when the protocol is gRPC.
///
/// # Errors
/// [`TracingError`] when the pipeline cannot be built or a subscriber is already installed.
pub fn init_tracing(config: TracingConfig) -> Result<TracingGuard, TracingError> {
    let pipeline = OtelPipeline::new(&config)?;
    let log_filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&config.log_filter));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(log_filter);
    let otel = pipeline
        .as_ref()
        .map(|p| p.layer().with_filter(otel_filter()));
    tracing_subscriber::registry()
        .with(fmt)
        .with(otel)
        .try_init()?;
    for warning in config.warnings() {
        tracing::warn!("hintaudit: {warning}");
    }
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    if let Some(p) = &pipeline {
        // For libraries instrumented with OpenTelemetry directly rather than through tracing.
        opentelemetry::global::set_tracer_provider(p.tracer_provider().clone());
    }
    Ok(TracingGuard { pipeline })
}
