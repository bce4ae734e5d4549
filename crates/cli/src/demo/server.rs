//! Serving an audited server over streamable HTTP on loopback, the way an operator would.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use hintaudit_rmcp::{HintAudit, HintAuditLayer};
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use tokio_util::sync::CancellationToken;
use tower::Layer;

/// A running audited MCP server.
#[derive(Debug)]
pub struct RunningServer<H: ServerHandler + Clone> {
    /// The MCP endpoint, e.g. `http://127.0.0.1:40123/mcp`.
    pub url: String,
    /// The bound address.
    pub addr: SocketAddr,
    /// The audited handler (shares the judge and the hint registry with every session).
    pub audit: HintAudit<H>,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

/// Serves `inner`, wrapped by `layer`, at `/mcp` on `addr` (use port 0 for any free port),
/// with `extra` routes (such as `/metrics`) merged beside it.
///
/// # Errors
/// When the address cannot be bound.
pub async fn serve_http<H>(
    inner: H,
    layer: HintAuditLayer,
    addr: SocketAddr,
    extra: Option<axum::Router>,
) -> anyhow::Result<RunningServer<H>>
where
    H: ServerHandler + Clone + Send + Sync + 'static,
{
    let audit = layer.layer(inner);
    let cancel = CancellationToken::new();
    let config =
        StreamableHttpServerConfig::default().with_cancellation_token(cancel.child_token());
    let factory = audit.clone();
    let service = StreamableHttpService::new(
        move || Ok(factory.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let mut router = axum::Router::new().nest_service("/mcp", service);
    if let Some(extra) = extra {
        router = router.merge(extra);
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let addr = listener.local_addr()?;
    let shutdown = cancel.clone();
    let task = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await
    });
    Ok(RunningServer {
        url: format!("http://{addr}/mcp"),
        addr,
        audit,
        cancel,
        task,
    })
}

impl<H: ServerHandler + Clone> RunningServer<H> {
    /// Stops accepting requests, ends open sessions and waits for the server task.
    pub async fn shutdown(self) {
        self.cancel.cancel();
        let _ = self.task.await;
    }

    /// Waits until the server stops (it stops on `shutdown` or when the listener fails).
    pub async fn wait(self) -> std::io::Result<()> {
        self.task
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e)))
    }
}
