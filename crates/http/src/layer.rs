//! [`OutboundAuditLayer`] and [`OutboundAudit`]: a tower layer for hyper-based HTTP clients
//! (any `Service<http::Request<B>>`), recording every request a tool sends through it.

use std::task::{Context, Poll};

use crate::reach::OutboundRecorder;

/// Wraps an HTTP client service in [`OutboundAudit`].
///
/// ```
/// use hintaudit_http::OutboundAuditLayer;
/// use tower::Layer;
/// let svc = tower::service_fn(|_req: http::Request<String>| async {
///     Ok::<_, std::convert::Infallible>(http::Response::new(String::new()))
/// });
/// let audited = OutboundAuditLayer::default().layer(svc);
/// # let _ = audited;
/// ```
#[derive(Debug, Clone, Default)]
pub struct OutboundAuditLayer {
    recorder: OutboundRecorder,
}

impl OutboundAuditLayer {
    /// A layer recording through `recorder`.
    pub fn new(recorder: OutboundRecorder) -> Self {
        OutboundAuditLayer { recorder }
    }
}

impl<S> tower::Layer<S> for OutboundAuditLayer {
    type Service = OutboundAudit<S>;

    fn layer(&self, inner: S) -> Self::Service {
        OutboundAudit {
            inner,
            recorder: self.recorder.clone(),
        }
    }
}

/// An HTTP client service that records each request's host, port and method in the call
/// scope of the tool that calls it, then calls the inner service with the request
/// unchanged. The request URI must be absolute (hyper-util's legacy `Client` wants that
/// too); a relative one is passed on unrecorded.
#[derive(Debug, Clone)]
pub struct OutboundAudit<S> {
    inner: S,
    recorder: OutboundRecorder,
}

impl<S, B> tower::Service<http::Request<B>> for OutboundAudit<S>
where
    S: tower::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        // `call` runs in the caller's task, where the call scope is visible.
        self.recorder.record(req.method(), req.uri());
        self.inner.call(req)
    }
}
