//! [`OutboundAuditMiddleware`]: a `reqwest-middleware` middleware that records every request
//! a tool sends through a `reqwest_middleware::ClientWithMiddleware`.

use http::Extensions;
use reqwest::{Request, Response};
use reqwest_middleware::{Middleware, Next, Result};

use crate::reach::OutboundRecorder;

/// Records each request (host, port, method) in the call scope of the tool that sends it,
/// then sends it on unchanged. In enforce mode, for a tool declaring `openWorldHint: false`,
/// a request outside the closed world is not sent: the tool gets
/// `reqwest_middleware::Error::Middleware` holding an
/// [`OpenWorldRefused`](crate::OpenWorldRefused) whose message names the hint
/// ([`OutboundRecorder::admit`]). Redirects that reqwest follows itself are not seen (only the
/// first hop is): build the client with `redirect::Policy::none()` to see every hop.
///
/// ```
/// use hintaudit_http::OutboundAuditMiddleware;
/// let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
///     .with(OutboundAuditMiddleware::default())
///     .build();
/// # let _ = client;
/// ```
#[derive(Debug, Clone, Default)]
pub struct OutboundAuditMiddleware {
    recorder: OutboundRecorder,
}

impl OutboundAuditMiddleware {
    /// A middleware recording through `recorder`.
    pub fn new(recorder: OutboundRecorder) -> Self {
        OutboundAuditMiddleware { recorder }
    }
}

#[async_trait::async_trait]
impl Middleware for OutboundAuditMiddleware {
    async fn handle(
        &self,
        req: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> Result<Response> {
        if let Ok(uri) = req.url().as_str().parse::<http::Uri>()
            && let Err(refused) = self.recorder.admit(req.method(), &uri)
        {
            return Err(reqwest_middleware::Error::Middleware(anyhow::Error::new(
                refused,
            )));
        }
        next.run(req, extensions).await
    }
}
