//! The telemetry side of the bench: which tracing layer is on for a variant, the sample
//! ratio, and an OTLP receiver on loopback that the exporting variants send to.

use super::*;

pub(crate) fn telemetry_mode(mode: u8) {
    TELEMETRY_MODE.store(mode, Ordering::SeqCst);
    let level = if mode == 0 {
        LevelFilter::OFF
    } else {
        LevelFilter::INFO
    };
    if let Some(handle) = LEVEL.get() {
        handle.modify(|l| *l = level).unwrap();
    }
}

/// A filter for INFO and above while [`TELEMETRY_MODE`] is `mode`; dynamic: evaluated per
/// span, never cached per callsite.
fn when<S>(mode: u8) -> impl tracing_subscriber::layer::Filter<S> {
    tracing_subscriber::filter::dynamic_filter_fn(move |meta, _| {
        TELEMETRY_MODE.load(Ordering::Relaxed) == mode && *meta.level() <= tracing::Level::INFO
    })
}

/// The fraction of traces the sampled rounds keep (HINTAUDIT_BENCH_SAMPLE, default 0.1).
fn sample_ratio() -> f64 {
    std::env::var("HINTAUDIT_BENCH_SAMPLE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.1)
}

/// An OTLP/gRPC receiver on loopback that decodes and discards spans, counting them.
#[derive(Clone, Default)]
struct Receiver(Arc<AtomicUsize>);

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let spans: usize = request
            .get_ref()
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .map(|s| s.spans.len())
            .sum();
        self.0.fetch_add(spans, Ordering::Relaxed);
        Ok(tonic::Response::new(Default::default()))
    }
}

/// Starts a receiver on loopback and installs the global tracing subscriber: the OTLP
/// pipelines' layers (every trace; a sample), each enabled only while [`telemetry_mode`] says. `HINTAUDIT_BENCH_OTLP=grpc`
/// exports over OTLP/gRPC to a receiver that decodes every span (its cost lands on the same
/// two cores); the default exports over OTLP/HTTP (protobuf) to a receiver that reads and
/// discards the bodies, standing in for a collector on another machine.
pub(crate) async fn start_telemetry() -> (OtelPipeline, OtelPipeline, &'static str) {
    use tracing_subscriber::{Layer, layer::SubscriberExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let grpc = std::env::var("HINTAUDIT_BENCH_OTLP").is_ok_and(|v| v == "grpc");
    let (protocol, what) = if grpc {
        let service = TraceServiceServer::new(Receiver::default());
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
        );
        (
            OtlpProtocol::Grpc,
            "OTLP/gRPC to a decoding loopback receiver",
        )
    } else {
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(|body: axum::body::Bytes| async move {
                std::hint::black_box(body.len());
                [(axum::http::header::CONTENT_TYPE, "application/x-protobuf")]
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
        (
            OtlpProtocol::HttpProtobuf,
            "OTLP/HTTP to a discarding loopback receiver",
        )
    };
    let config = TracingConfig::disabled()
        .with_endpoint(format!("http://{addr}"))
        .with_protocol(protocol);
    let full = OtelPipeline::new(&config).unwrap().expect("export on");
    let sampled = OtelPipeline::new(&config.with_sample_ratio(sample_ratio()))
        .unwrap()
        .expect("export on");
    let (level, handle) = reload::Layer::new(LevelFilter::OFF);
    LEVEL.set(handle).ok();
    let subscriber = tracing_subscriber::registry()
        .with(level)
        .with(full.layer().with_filter(when(1)))
        .with(sampled.layer().with_filter(when(2)));
    tracing::subscriber::set_global_default(subscriber).unwrap();
    (full, sampled, what)
}
