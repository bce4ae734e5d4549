//! [`OutboundAuditLayer`] and [`OutboundAudit`]: a tower layer for hyper-based HTTP clients
//! (any `Service<http::Request<B>>`), recording every request a tool sends through it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::reach::{OpenWorldRefused, OutboundRecorder};

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
/// unchanged. In enforce mode, for a tool declaring `openWorldHint: false`, a request outside
/// the closed world is not sent: the call answers an [`OpenWorldRefused`] error (boxed, as
/// every error of this service: `tower::BoxError`) whose message names the hint. The request URI must be absolute (hyper-util's legacy `Client` wants that
/// too); a relative one is passed on unrecorded.
#[derive(Debug, Clone)]
pub struct OutboundAudit<S> {
    inner: S,
    recorder: OutboundRecorder,
}

impl<S, B> tower::Service<http::Request<B>> for OutboundAudit<S>
where
    S: tower::Service<http::Request<B>>,
    S::Error: Into<tower::BoxError>,
{
    type Response = S::Response;
    type Error = tower::BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        // `call` runs in the caller's task, where the call scope is visible.
        match self.recorder.admit(req.method(), req.uri()) {
            Ok(_) => ResponseFuture {
                future: Some(self.inner.call(req)),
                refused: None,
            },
            Err(refused) => ResponseFuture {
                future: None,
                refused: Some(refused),
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// The future of [`OutboundAudit`]: the inner service's, or a refusal of enforce mode.
    pub struct ResponseFuture<F> {
        // The inner service's future; `None` when the request was refused.
        #[pin]
        future: Option<F>,
        // The refusal, until the future is polled.
        refused: Option<OpenWorldRefused>,
    }
}

impl<F, T, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: Into<tower::BoxError>,
{
    type Output = Result<T, tower::BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        match this.future.as_pin_mut() {
            Some(future) => future.poll(cx).map_err(Into::into),
            None => Poll::Ready(Err(this
                .refused
                .take()
                .map_or_else(|| "polled after completion".into(), |r| Box::new(r) as _))),
        }
    }
}
