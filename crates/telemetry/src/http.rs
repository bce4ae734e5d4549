//! Serving the registry: an axum route to mount beside the MCP route, and a standalone
//! listener for stdio servers, which have no HTTP server of their own.

use std::net::SocketAddr;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use hintaudit_core::{AuditStage, stats};
use prometheus::{Encoder, Registry, TextEncoder};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::error::ServeError;
use crate::metric_name::MetricName;

/// The path the routes serve: `/metrics`.
pub const METRICS_PATH: &str = "/metrics";

/// Renders `registry` in the Prometheus text exposition format 0.0.4. An encoding failure
/// (which the prometheus crate reports only for malformed metrics) is counted at stage
/// `export` and yields what was rendered before it.
pub fn encode_text(registry: &Registry) -> String {
    let mut buf = Vec::new();
    if let Err(e) = TextEncoder::new().encode(&registry.gather(), &mut buf) {
        stats().audit_error(AuditStage::Export, &format!("encoding metrics: {e}"));
    }
    String::from_utf8(buf).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The sample lines (no `# HELP`/`# TYPE`) of the given metrics in `registry`, skipping
/// zero-valued samples and histogram buckets: a short excerpt for terminals and reports.
///
/// ```
/// use hintaudit_telemetry::{MetricName, PrometheusRecorder, metrics_excerpt};
/// let recorder = PrometheusRecorder::new();
/// assert_eq!(metrics_excerpt(recorder.registry(), &[MetricName::HintViolations]), "");
/// ```
pub fn metrics_excerpt(registry: &Registry, metrics: &[MetricName]) -> String {
    let text = encode_text(registry);
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        let name = line.split(['{', ' ']).next().unwrap_or("");
        let wanted = metrics
            .iter()
            .any(|m| m.series_names().iter().any(|s| s == name) && !name.ends_with("_bucket"));
        let zero = line
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse::<f64>().ok())
            .is_some_and(|v| v == 0.0);
        if wanted && !zero {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

async fn scrape(registry: Registry) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, prometheus::TEXT_FORMAT)],
        encode_text(&registry),
    )
        .into_response()
}

/// An axum router serving `GET /metrics` from `registry`, in the text format 0.0.4
/// (`Content-Type: text/plain; version=0.0.4`). Merge it beside the MCP route:
/// `app.merge(metrics_router(registry))`.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use hintaudit_telemetry::{PrometheusRecorder, metrics_router, serve_metrics};
/// let recorder = PrometheusRecorder::new();
/// // Beside an MCP route served with axum:
/// let app = axum::Router::new() /* .nest_service("/mcp", mcp_service) */
///     .merge(metrics_router(recorder.registry().clone()));
/// # let _ = app;
/// // Or, for a stdio server, on a port of its own:
/// let server = serve_metrics("127.0.0.1:9464".parse()?, recorder.registry().clone()).await?;
/// println!("metrics on http://{}/metrics", server.local_addr());
/// # Ok(()) }
/// ```
pub fn metrics_router(registry: Registry) -> Router {
    Router::new().route(METRICS_PATH, get(move || scrape(registry.clone())))
}

/// A running standalone `/metrics` listener. Dropping it stops the listener.
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// The address it listens on (the real port when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting connections and waits for open ones to finish.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Serves `GET /metrics` from `registry` on `addr` (say `127.0.0.1:9464`, or port 0 for any),
/// on a task of the current Tokio runtime. For servers without an HTTP listener of their own,
/// such as stdio MCP servers.
///
/// # Errors
/// [`ServeError::Bind`] when the address cannot be bound.
pub async fn serve_metrics(
    addr: SocketAddr,
    registry: Registry,
) -> Result<MetricsServer, ServeError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    let local = listener
        .local_addr()
        .map_err(|source| ServeError::Bind { addr, source })?;
    let (stop, stopped) = oneshot::channel::<()>();
    let app = metrics_router(registry);
    let task = tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await;
        if let Err(e) = served {
            stats().audit_error(AuditStage::Export, &format!("metrics listener failed: {e}"));
        }
    });
    Ok(MetricsServer {
        addr: local,
        stop: Some(stop),
        task: Some(task),
    })
}
