//! OpenTelemetry tracing: tracing spans → tracing-opentelemetry → a bounded batch queue → the
//! OTLP exporter (gRPC or HTTP/protobuf).

use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing::Subscriber;
use tracing_opentelemetry::OpenTelemetryLayer;
use tracing_subscriber::registry::LookupSpan;

use crate::error::TracingError;
use crate::export::{BoundedProcessor, ExportHandle, ExportStats, QueueLimits};
use crate::make_span::OtelMakeSpan;
use crate::sampling::HeadAwareSampler;

/// The OTLP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OtlpProtocol {
    /// OTLP/gRPC (`grpc`), usually port 4317. Needs a Tokio runtime when built.
    Grpc,
    /// OTLP/HTTP with protobuf bodies (`http/protobuf`), usually port 4318.
    HttpProtobuf,
}

impl OtlpProtocol {
    /// Parses the values of `OTEL_EXPORTER_OTLP_PROTOCOL`: `grpc`, `http/protobuf`.
    /// `http/json` is not supported and gives `None`.
    pub fn parse(s: &str) -> Option<OtlpProtocol> {
        match s.trim().to_ascii_lowercase().as_str() {
            "grpc" => Some(OtlpProtocol::Grpc),
            "http/protobuf" => Some(OtlpProtocol::HttpProtobuf),
            _ => None,
        }
    }

    fn from_vars(
        var: &dyn Fn(&str) -> Option<String>,
        warnings: &mut Vec<String>,
    ) -> Option<OtlpProtocol> {
        let value = var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"))?;
        let parsed = OtlpProtocol::parse(&value);
        if parsed.is_none() {
            warnings.push(format!(
                "OTLP protocol {value:?} not supported; using http/protobuf"
            ));
        }
        parsed
    }
}

/// How to export traces. Start from [`TracingConfig::from_env`] (or
/// [`TracingConfig::disabled`]) and override in code with the `with_*` setters.
///
/// Configuration follows the OpenTelemetry environment variables unless set in code:
///
/// | variable | effect |
/// |---|---|
/// | `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_ENDPOINT` | where to send; tracing export is on when either is set |
/// | `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, `OTEL_EXPORTER_OTLP_PROTOCOL` | `grpc` or `http/protobuf` (the default) |
/// | `OTEL_EXPORTER_OTLP_TIMEOUT`, `_HEADERS`, `_COMPRESSION`, `_INSECURE` (and `_TRACES_` forms) | read by opentelemetry-otlp |
/// | `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES` | the resource; [`TracingConfig::with_default_service_name`] applies only when neither names the service |
/// | `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`, `OTEL_BSP_SCHEDULE_DELAY` | queue limits (defaults 2048 spans, 512 spans, 1000 ms) |
/// | `OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG` | sampling, read by the SDK (default `parentbased_always_on`; the client's sampled flag is followed) |
/// | `OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none` | export off |
///
/// Exporting never blocks or fails a call: a finished span is handed to a bounded queue
/// without waiting, a background thread exports batches, and spans that do not make it
/// (queue full, collector down) are counted in `hintaudit_audit_errors_total{stage="export"}`,
/// one per span.
///
/// ```no_run
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use hintaudit_telemetry::{TracingConfig, init_tracing};
/// // OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4317 OTEL_EXPORTER_OTLP_PROTOCOL=grpc
/// let _guard = init_tracing(TracingConfig::from_env().with_default_service_name("bookings"))?;
/// // ... serve; dropping the guard flushes what is queued.
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct TracingConfig {
    enabled: bool,
    endpoint: Option<String>,
    protocol: Option<OtlpProtocol>,
    default_service_name: Option<String>,
    max_queue_size: usize,
    max_export_batch_size: usize,
    scheduled_delay: Duration,
    export_timeout: Option<Duration>,
    pub(crate) log_filter: String,
    sample_ratio: Option<f64>,
    warnings: Vec<String>,
}

/// Default bound of the span queue, in spans (the OpenTelemetry default).
pub const DEFAULT_MAX_QUEUE_SIZE: usize = 2048;
/// Default largest batch per export, in spans (the OpenTelemetry default).
pub const DEFAULT_MAX_EXPORT_BATCH_SIZE: usize = 512;
/// Default delay between two scheduled exports.
pub const DEFAULT_SCHEDULED_DELAY: Duration = Duration::from_millis(1000);

impl TracingConfig {
    /// No export: [`init_tracing`](crate::init_tracing) installs only the log output.
    pub fn disabled() -> Self {
        TracingConfig {
            enabled: false,
            endpoint: None,
            protocol: None,
            default_service_name: None,
            max_queue_size: DEFAULT_MAX_QUEUE_SIZE,
            max_export_batch_size: DEFAULT_MAX_EXPORT_BATCH_SIZE,
            scheduled_delay: DEFAULT_SCHEDULED_DELAY,
            export_timeout: None,
            log_filter: "info".to_owned(),
            sample_ratio: None,
            warnings: Vec::new(),
        }
    }

    /// Reads the environment (see [`TracingConfig`]): export is on when an OTLP
    /// endpoint variable is set and the SDK is not disabled.
    pub fn from_env() -> Self {
        TracingConfig::from_vars(|name| std::env::var(name).ok())
    }

    /// Like [`TracingConfig::from_env`], with variables looked up by `var` (for tests, and for
    /// configuration read from elsewhere). Empty values count as unset.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let mut warnings = Vec::new();
        let mut number = |name: &str| {
            let value = var(name)?;
            let n = value.trim().parse::<usize>().ok();
            if n.is_none() {
                warnings.push(format!(
                    "{name}={value:?} is not a whole number; using the default"
                ));
            }
            n
        };
        let is = |name: &str, value: &str| {
            var(name).is_some_and(|v| v.trim().eq_ignore_ascii_case(value))
        };
        let mut c = TracingConfig::disabled();
        let endpoint_set = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
            || var("OTEL_EXPORTER_OTLP_ENDPOINT").is_some();
        c.enabled =
            endpoint_set && !is("OTEL_SDK_DISABLED", "true") && !is("OTEL_TRACES_EXPORTER", "none");
        if let Some(n) = number("OTEL_BSP_MAX_QUEUE_SIZE") {
            c.max_queue_size = n;
        }
        if let Some(n) = number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE") {
            c.max_export_batch_size = n;
        }
        if let Some(ms) = number("OTEL_BSP_SCHEDULE_DELAY") {
            c.scheduled_delay = Duration::from_millis(ms as u64);
        }
        c.protocol = OtlpProtocol::from_vars(&var, &mut warnings);
        c.warnings = warnings;
        c
    }

    /// What reading the environment found wrong, one sentence each: an unsupported
    /// `OTEL_EXPORTER_OTLP_PROTOCOL`, an `OTEL_BSP_*` value that is not a whole number. Each
    /// was ignored and the default used, as the OpenTelemetry specification asks.
    /// [`init_tracing`](crate::init_tracing) logs them at WARN once its subscriber is
    /// installed (logging them while reading, before any subscriber, would lose them); with a
    /// subscriber of your own, log them yourself.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Exports to `endpoint`, and turns export on. Like `OTEL_EXPORTER_OTLP_ENDPOINT`, a base
    /// URL (`http://127.0.0.1:4318`); for HTTP, `/v1/traces` is appended unless the URL
    /// already ends with it.
    pub fn with_endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = Some(endpoint.into());
        self.enabled = true;
        self
    }

    /// The transport (default: the environment's, else `http/protobuf`).
    pub fn with_protocol(mut self, protocol: OtlpProtocol) -> Self {
        self.protocol = Some(protocol);
        self
    }

    /// `service.name` when neither `OTEL_SERVICE_NAME` nor `OTEL_RESOURCE_ATTRIBUTES` names
    /// the service (the SDK would say `unknown_service`).
    pub fn with_default_service_name(mut self, name: impl Into<String>) -> Self {
        self.default_service_name = Some(name.into());
        self
    }

    /// At most `n` spans queued or being exported (default [`DEFAULT_MAX_QUEUE_SIZE`]);
    /// further spans are dropped and counted.
    pub fn with_max_queue_size(mut self, n: usize) -> Self {
        self.max_queue_size = n;
        self
    }

    /// At most `n` spans per export (default [`DEFAULT_MAX_EXPORT_BATCH_SIZE`]).
    pub fn with_max_export_batch_size(mut self, n: usize) -> Self {
        self.max_export_batch_size = n;
        self
    }

    /// Time between scheduled exports (default [`DEFAULT_SCHEDULED_DELAY`]).
    pub fn with_scheduled_delay(mut self, delay: Duration) -> Self {
        self.scheduled_delay = delay;
        self
    }

    /// Time limit of one export (default: `OTEL_EXPORTER_OTLP_TIMEOUT`, else 10 s).
    pub fn with_export_timeout(mut self, timeout: Duration) -> Self {
        self.export_timeout = Some(timeout);
        self
    }

    /// Samples this fraction of new traces (0.0 to 1.0), following the client's decision for
    /// calls that carry a trace context: `parentbased_traceidratio`. Overrides
    /// `OTEL_TRACES_SAMPLER`; without it the SDK reads that variable (default: every trace).
    /// Unsampled spans are still built in memory (about 1 µs each) but never exported.
    pub fn with_sample_ratio(mut self, ratio: f64) -> Self {
        self.sample_ratio = Some(ratio.clamp(0.0, 1.0));
        self
    }

    /// Directives for the log lines [`init_tracing`](crate::init_tracing) writes to stderr when `RUST_LOG` is
    /// unset (default `info`), e.g. `warn,sqlx=warn`. They filter the log output only: the
    /// trace export takes every span and event at INFO and above, whatever the log shows.
    pub fn with_log_filter(mut self, directives: impl Into<String>) -> Self {
        self.log_filter = directives.into();
        self
    }

    /// Whether traces will be exported.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    fn resource(&self) -> Resource {
        let detected = Resource::builder().build();
        let unnamed = detected
            .get(&opentelemetry::Key::new("service.name"))
            .is_none_or(|v| v.as_str().starts_with("unknown_service"));
        match (&self.default_service_name, unnamed) {
            (Some(name), true) => Resource::builder()
                .with_attribute(KeyValue::new("service.name", name.clone()))
                .build(),
            _ => detected,
        }
    }

    fn exporter(&self) -> Result<opentelemetry_otlp::SpanExporter, TracingError> {
        let protocol = self.protocol.unwrap_or(OtlpProtocol::HttpProtobuf);
        let builder = opentelemetry_otlp::SpanExporter::builder();
        let exporter = match protocol {
            OtlpProtocol::Grpc => {
                if tokio::runtime::Handle::try_current().is_err() {
                    return Err(TracingError::NoRuntime);
                }
                let mut b = builder.with_tonic();
                if let Some(endpoint) = &self.endpoint {
                    b = b.with_endpoint(endpoint.clone());
                }
                if let Some(t) = self.export_timeout {
                    b = b.with_timeout(t);
                }
                b.build()?
            }
            OtlpProtocol::HttpProtobuf => {
                let mut b = builder
                    .with_http()
                    .with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
                if let Some(endpoint) = &self.endpoint {
                    b = b.with_endpoint(http_traces_url(endpoint));
                }
                if let Some(t) = self.export_timeout {
                    b = b.with_timeout(t);
                }
                b.build()?
            }
        };
        Ok(exporter)
    }
}

fn http_traces_url(endpoint: &str) -> String {
    let trimmed = endpoint.trim_end_matches('/');
    if trimmed.ends_with("/v1/traces") {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/v1/traces")
    }
}

/// A built span pipeline: tracer provider, bounded queue and OTLP exporter. Make a
/// tracing layer with [`OtelPipeline::layer`]; drop it (or call [`OtelPipeline::shutdown`])
/// to flush. Use this when the application installs its own subscriber; [`init_tracing`](crate::init_tracing)
/// does it all.
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
        Ok(Some(Self::with_exporter(config, config.exporter()?)))
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
            .with_resource(config.resource())
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

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn protocols_and_urls() {
        let rows = [
            ("grpc", Some(OtlpProtocol::Grpc)),
            (" GRPC ", Some(OtlpProtocol::Grpc)),
            ("http/protobuf", Some(OtlpProtocol::HttpProtobuf)),
            ("http/json", None),
            ("", None),
        ];
        for (s, want) in rows {
            assert_eq!(OtlpProtocol::parse(s), want, "{s:?}");
        }
        assert_eq!(http_traces_url("http://h:4318"), "http://h:4318/v1/traces");
        assert_eq!(http_traces_url("http://h:4318/"), "http://h:4318/v1/traces");
        assert_eq!(
            http_traces_url("http://h:4318/v1/traces"),
            "http://h:4318/v1/traces"
        );
    }

    #[test]
    fn what_the_environment_gets_wrong_is_kept_as_warnings() {
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "lots"),
        ];
        let c = TracingConfig::from_vars(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        });
        assert_eq!(
            c.warnings(),
            [
                "OTEL_BSP_MAX_QUEUE_SIZE=\"lots\" is not a whole number; using the default",
                "OTLP protocol \"http/json\" not supported; using http/protobuf",
            ]
        );
        assert_eq!(
            (c.protocol, c.max_queue_size),
            (None, DEFAULT_MAX_QUEUE_SIZE)
        );
        assert!(TracingConfig::from_vars(|_| None).warnings().is_empty());
    }

    #[test]
    fn environment_variables() {
        type Row = (
            &'static [(&'static str, &'static str)],
            bool,
            Option<OtlpProtocol>,
            usize,
        );
        let rows: [Row; 7] = [
            (&[], false, None, DEFAULT_MAX_QUEUE_SIZE),
            (
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")],
                true,
                None,
                DEFAULT_MAX_QUEUE_SIZE,
            ),
            (
                &[(
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "http://c:4318/v1/traces",
                )],
                true,
                None,
                DEFAULT_MAX_QUEUE_SIZE,
            ),
            (
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")],
                false,
                None,
                DEFAULT_MAX_QUEUE_SIZE,
            ),
            (
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
                    ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                    ("OTEL_BSP_MAX_QUEUE_SIZE", "10"),
                ],
                true,
                Some(OtlpProtocol::Grpc),
                10,
            ),
            (
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
                    ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                    ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
                    ("OTEL_SDK_DISABLED", "TRUE"),
                ],
                false,
                Some(OtlpProtocol::HttpProtobuf),
                DEFAULT_MAX_QUEUE_SIZE,
            ),
            (
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                    ("OTEL_TRACES_EXPORTER", "none"),
                ],
                false,
                None,
                DEFAULT_MAX_QUEUE_SIZE,
            ),
        ];
        for (vars, enabled, protocol, queue) in rows {
            let c = TracingConfig::from_vars(|name| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            });
            assert_eq!(
                (c.enabled, c.protocol, c.max_queue_size),
                (enabled, protocol, queue),
                "{vars:?}"
            );
        }
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
                let cx = crate::remote_parent(meta.as_object().unwrap()).unwrap();
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
