//! Trace export settings: [`TracingConfig`], read from the OpenTelemetry `OTEL_*`
//! environment variables and overridden in code.

use std::time::Duration;

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
/// Export never blocks or fails a call; how spans that do not make it are counted is told
/// in [`OtelPipeline`](crate::OtelPipeline)'s docs.
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
    pub(crate) enabled: bool,
    pub(crate) endpoint: Option<String>,
    pub(crate) protocol: Option<OtlpProtocol>,
    pub(crate) default_service_name: Option<String>,
    pub(crate) max_queue_size: usize,
    pub(crate) max_export_batch_size: usize,
    pub(crate) scheduled_delay: Duration,
    pub(crate) export_timeout: Option<Duration>,
    pub(crate) log_filter: String,
    pub(crate) sample_ratio: Option<f64>,
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
    /// Unsampled spans are still built in memory (about 1 µs each) but never exported,
    /// unless the layer takes its span maker from the guard (or the pipeline): that one decides
    /// before a call's span exists, so untraced calls build neither their span nor their
    /// statement spans.
    ///
    /// ```no_run
    /// # #[derive(Clone)] struct MyServer;
    /// # impl rmcp::ServerHandler for MyServer {}
    /// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use hintaudit_telemetry::{TracingConfig, init_tracing};
    /// use tower::Layer;
    /// let guard = init_tracing(TracingConfig::from_env().with_sample_ratio(0.1))?;
    /// let audited = hintaudit_rmcp::HintAuditLayer::new()
    ///     .with_make_span(guard.make_span())
    ///     .layer(MyServer);
    /// # let _ = audited; Ok(()) }
    /// ```
    pub fn with_sample_ratio(mut self, ratio: f64) -> Self {
        self.sample_ratio = Some(ratio.clamp(0.0, 1.0));
        self
    }

    /// Directives for the log lines [`init_tracing`](crate::init_tracing) writes to stderr
    /// when `RUST_LOG` is unset (default `info`), e.g. `warn,sqlx=warn`. They filter the log
    /// output only: the trace export takes every span and event at INFO and above, whatever
    /// the log shows.
    pub fn with_log_filter(mut self, directives: impl Into<String>) -> Self {
        self.log_filter = directives.into();
        self
    }

    /// Whether traces will be exported.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols() {
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
}
