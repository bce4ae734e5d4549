//! A real OTLP/gRPC receiver on loopback (tonic, opentelemetry-proto's service definitions)
//! that keeps every export request, and helpers to read what it got.

use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;

/// An OTLP trace service that accepts every export and keeps its request.
#[derive(Clone, Default)]
pub struct Receiver {
    /// Every export request received so far, in order.
    pub got: Arc<Mutex<Vec<ExportTraceServiceRequest>>>,
}

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.got.lock().unwrap().push(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

/// Starts a [`Receiver`] on 127.0.0.1:0, on a task of the current Tokio runtime; returns it
/// and the address it listens on (export to `http://{addr}`).
pub async fn start_receiver() -> (Receiver, std::net::SocketAddr) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (start_receiver_on(listener), addr)
}

/// Starts a [`Receiver`] on `listener` (a collector coming back on the address an exporter
/// already uses), on a task of the current Tokio runtime.
pub fn start_receiver_on(listener: tokio::net::TcpListener) -> Receiver {
    let receiver = Receiver::default();
    let service = TraceServiceServer::new(receiver.clone());
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
            .await
    });
    receiver
}

/// An attribute value as text: strings as they are, integers and booleans formatted, other
/// kinds in their debug form, nothing as the empty string.
pub fn text(v: &Option<AnyValue>) -> String {
    match v.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

/// The value of attribute `key` as [`text`], if present.
pub fn attr(attrs: &[KeyValue], key: &str) -> Option<String> {
    attrs
        .iter()
        .find(|kv| kv.key == key)
        .map(|kv| text(&kv.value))
}

/// Lower-case hex of a trace or span id.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Every span the receiver got so far.
pub fn spans(receiver: &Receiver) -> Vec<Span> {
    let requests = receiver.got.lock().unwrap().clone();
    requests
        .iter()
        .flat_map(|r| &r.resource_spans)
        .flat_map(|rs| &rs.scope_spans)
        .flat_map(|ss| ss.spans.clone())
        .collect()
}

/// Flushes `pipeline` off the async runtime's threads (flushing blocks) and hands it back.
pub async fn flushed(
    pipeline: hintaudit_telemetry::OtelPipeline,
) -> hintaudit_telemetry::OtelPipeline {
    tokio::task::spawn_blocking(move || {
        pipeline.force_flush();
        pipeline
    })
    .await
    .unwrap()
}
