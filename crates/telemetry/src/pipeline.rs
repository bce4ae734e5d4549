//! The span pipeline a [`TracingConfig`] describes: tracing spans → tracing-opentelemetry →
//! the bounded queue of [`crate::export`] → the OTLP exporter (gRPC or HTTP/protobuf), under
//! one tracer provider.

use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing::Subscriber;
use tracing_opentelemetry::OpenTelemetryLayer;
use tracing_subscriber::registry::LookupSpan;

use crate::config::{OtlpProtocol, TracingConfig};
use crate::error::TracingError;
use crate::export::{BoundedProcessor, ExportHandle, ExportStats, QueueLimits};
use crate::make_span::OtelMakeSpan;
use crate::sampling::HeadAwareSampler;

/// A built span pipeline: tracer provider, bounded queue and OTLP exporter. Make a
/// tracing layer with [`OtelPipeline::layer`]; drop it (or call [`OtelPipeline::shutdown`])
/// to flush. Use this when the application installs its own subscriber;
/// [`init_tracing`](crate::init_tracing) does it all.
///
/// Exporting never blocks or fails a call: a finished span is handed to a bounded queue
/// without waiting, a background thread exports batches, and spans that do not make it
/// (queue full, collector down) are counted in `hintaudit_audit_errors_total{stage="export"}`,
/// one per span ([`ExportStats`] tells how).
#[derive(Debug)]
pub struct OtelPipeline {
    provider: SdkTracerProvider,
    handle: ExportHandle,
    sample_ratio: Option<f64>,
}

impl OtelPipeline {
    /// Builds the pipeline, or `None` when `config` has export off.
    ///
    /// # Errors
    /// [`TracingError::Exporter`] for a bad endpoint or client; [`TracingError::NoRuntime`]
    /// for gRPC outside a Tokio runtime.
    pub fn new(config: &TracingConfig) -> Result<Option<OtelPipeline>, TracingError> {
        if !config.enabled {
            return Ok(None);
        }
        Ok(Some(Self::with_exporter(config, exporter(config)?)))
    }

    /// Builds the pipeline around any span exporter (other backends, tests), with `config`'s
    /// queue limits, sampling and resource; `config`'s endpoint, protocol and on/off switch
    /// are not used.
    pub fn with_exporter<E>(config: &TracingConfig, exporter: E) -> OtelPipeline
    where
        E: opentelemetry_sdk::trace::SpanExporter + 'static,
    {
        let limits = QueueLimits {
            max_queue_size: config.max_queue_size,
            max_export_batch_size: config.max_export_batch_size,
            scheduled_delay: config.scheduled_delay,
        };
        let (processor, handle) = BoundedProcessor::new(exporter, limits);
        let mut provider = SdkTracerProvider::builder()
            .with_resource(resource(config))
            .with_span_processor(processor);
        if let Some(ratio) = config.sample_ratio {
            // `parentbased_traceidratio`, keeping the roots `make_span` sampled already.
            provider = provider.with_sampler(HeadAwareSampler::new(ratio));
        }
        let provider = provider.build();
        OtelPipeline {
            provider,
            handle,
            sample_ratio: config.sample_ratio,
        }
    }

    /// The span maker for [`hintaudit_rmcp::HintAuditLayer::with_make_span`] that goes with
    /// this pipeline: [`OtelMakeSpan::new`], with head sampling at the pipeline's ratio when
    /// [`TracingConfig::with_sample_ratio`] set one, so that calls the sampler would drop are
    /// never built.
    pub fn make_span(&self) -> OtelMakeSpan {
        match self.sample_ratio {
            Some(ratio) => OtelMakeSpan::new().with_sample_ratio(ratio),
            None => OtelMakeSpan::new(),
        }
    }

    /// A tracing layer that turns spans into OpenTelemetry spans of this pipeline. Thread
    /// ids and source locations are left out; `otel.name`, `otel.kind` and
    /// `otel.status_code` fields set the span's name, kind and status.
    pub fn layer<S>(&self) -> OpenTelemetryLayer<S, SdkTracer>
    where
        S: Subscriber + for<'span> LookupSpan<'span>,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("hintaudit"))
            .with_threads(false)
            .with_location(false)
            .with_tracked_inactivity(false)
    }

    /// The tracer provider.
    pub fn tracer_provider(&self) -> &SdkTracerProvider {
        &self.provider
    }

    /// Spans exported, dropped and in flight so far.
    pub fn export_stats(&self) -> ExportStats {
        self.handle.stats()
    }

    /// Exports what is queued now; waits up to 5 s. Blocks: call it off the async runtime's
    /// threads (`spawn_blocking`) or on a multi-threaded runtime.
    pub fn force_flush(&self) {
        if let Err(e) = self.provider.force_flush() {
            tracing::debug!("hintaudit: flushing spans: {e}");
        }
    }

    /// Flushes and stops the pipeline; waits up to 5 s. Later spans are dropped and counted.
    pub fn shutdown(&self) {
        if let Err(e) = self.provider.shutdown_with_timeout(Duration::from_secs(5)) {
            tracing::debug!("hintaudit: shutting down tracing: {e}");
        }
    }
}

impl Drop for OtelPipeline {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The resource: what the SDK detects (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`), or
/// the config's default service name when neither names the service.
fn resource(config: &TracingConfig) -> Resource {
    let detected = Resource::builder().build();
    let unnamed = detected
        .get(&opentelemetry::Key::new("service.name"))
        .is_none_or(|v| v.as_str().starts_with("unknown_service"));
    match (&config.default_service_name, unnamed) {
        (Some(name), true) => Resource::builder()
            .with_attribute(KeyValue::new("service.name", name.clone()))
            .build(),
        _ => detected,
    }
}

/// The OTLP span exporter of the config's protocol, endpoint and timeout.
fn exporter(config: &TracingConfig) -> Result<opentelemetry_otlp::SpanExporter, TracingError> {
    let protocol = config.protocol.unwrap_or(OtlpProtocol::HttpProtobuf);
    let builder = opentelemetry_otlp::SpanExporter::builder();
    let exporter = match protocol {
        OtlpProtocol::Grpc => {
            if tokio::runtime::Handle::try_current().is_err() {
                return Err(TracingError::NoRuntime);
            }
            let mut b = builder.with_tonic();
            if let Some(endpoint) = &config.endpoint {
                b = b.with_endpoint(endpoint.clone());
            }
            if let Some(t) = config.export_timeout {
                b = b.with_timeout(t);
            }
            b.build()?
        }
        OtlpProtocol::HttpProtobuf => {
            let mut b = builder
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
            if let Some(endpoint) = &config.endpoint {
                b = b.with_endpoint(http_traces_url(endpoint));
            }
            if let Some(t) = config.export_timeout {
                b = b.with_timeout(t);
            }
            b.build()?
        }
    };
    Ok(exporter)
}

fn http_traces_url(endpoint: &str) -> String {
    let trimmed = endpoint.trim_end_matches('/');
    if trimmed.ends_with("/v1/traces") {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/v1/traces")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn http_urls_end_in_v1_traces() {
        assert_eq!(http_traces_url("http://h:4318"), "http://h:4318/v1/traces");
        assert_eq!(http_traces_url("http://h:4318/"), "http://h:4318/v1/traces");
        assert_eq!(
            http_traces_url("http://h:4318/v1/traces"),
            "http://h:4318/v1/traces"
        );
    }
    /// Keeps the names of exported spans.
    #[derive(Debug, Clone, Default)]
    struct Names(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

    impl opentelemetry_sdk::trace::SpanExporter for Names {
        async fn export(
            &self,
            batch: Vec<opentelemetry_sdk::trace::SpanData>,
        ) -> opentelemetry_sdk::error::OTelSdkResult {
            let mut names = self.0.lock().unwrap();
            names.extend(batch.into_iter().map(|s| s.name.into_owned()));
            Ok(())
        }
    }

    #[test]
    fn sample_ratio_zero_keeps_only_traces_the_client_sampled() {
        use tracing_opentelemetry::OpenTelemetrySpanExt;
        let names = Names::default();
        let config = TracingConfig::disabled().with_sample_ratio(0.0);
        let pipeline = OtelPipeline::with_exporter(&config, names.clone());
        let subscriber = tracing_subscriber::registry().with(pipeline.layer());
        tracing::subscriber::with_default(subscriber, || {
            tracing::info_span!("new_trace").in_scope(|| {});
            for (name, flags) in [("client_sampled", "01"), ("client_unsampled", "00")] {
                let tp = format!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-{flags}");
                let meta = serde_json::json!({ "traceparent": tp });
                let span = tracing::info_span!("call", otel.name = name);
                let cx = crate::propagation::remote_parent(meta.as_object().unwrap()).unwrap();
                span.set_parent(cx).unwrap();
                span.in_scope(|| tracing::info_span!("statement").in_scope(|| {}));
            }
        });
        pipeline.force_flush();
        let mut got = names.0.lock().unwrap().clone();
        got.sort();
        assert_eq!(got, ["client_sampled", "statement"]);
    }

    #[test]
    fn disabled_builds_nothing() {
        assert!(
            OtelPipeline::new(&TracingConfig::disabled())
                .unwrap()
                .is_none()
        );
        assert!(
            TracingConfig::disabled()
                .with_endpoint("http://127.0.0.1:1")
                .is_enabled()
        );
    }
}
