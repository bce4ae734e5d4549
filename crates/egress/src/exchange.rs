//! One request through the proxy: where it is bound, what is recorded of it (method, host,
//! port, path template, GraphQL operation, then its answer), and its forwarding (or its
//! refusal, `502`). Headers and bodies pass unchanged but for hop-by-hop headers; nothing of
//! them is recorded or logged.

use hintaudit_core::{OutboundAnswer, OutboundReach};
use http::{HeaderMap, HeaderName, HeaderValue, Request, Response, StatusCode, Uri, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;

use crate::context::Context;
use crate::destination::Destination;
use crate::ledger::EgressGap;
use crate::policy::Target;
use crate::upstream::{Body, BoxError};

/// A text answer of the proxy's own.
fn answer(status: StatusCode, text: String) -> Response<Body> {
    let mut resp = Response::new(
        Full::new(text.into())
            .map_err(|never| match never {})
            .boxed(),
    );
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

/// Handles one request: `tunnel` is the destination of the tunnel it came through, `None` for
/// a request sent to the proxy itself.
pub(crate) async fn exchange(
    ctx: &Context,
    tunnel: Option<&Destination>,
    req: Request<Incoming>,
) -> Response<Body> {
    let Some(dest) = tunnel.cloned().or_else(|| Destination::of_request(&req)) else {
        return answer(
            StatusCode::BAD_REQUEST,
            "hintaudit egress: a request to a proxy names its destination (an absolute URL or a Host header)\n".to_owned(),
        );
    };
    let (parts, body) = req.into_parts();
    let body: Body = body.map_err(|e| Box::new(e) as BoxError).boxed();
    let (body, graphql) = crate::body::inspect(&parts, body, ctx.body_limit()).await;
    let mut reach = OutboundReach::new(parts.method.as_str(), &dest.host, Some(dest.port))
        .with_path(parts.uri.path())
        .with_answer(OutboundAnswer::Unanswered);
    if let Some(g) = graphql {
        reach = reach.with_graphql(g);
    }
    let id = ctx.arrive(reach);
    if parts.headers.contains_key(header::UPGRADE) {
        ctx.gap(EgressGap::Upgrade {
            host: dest.host.clone(),
        });
        return refuse(
            ctx,
            id,
            format!("protocol upgrades are not forwarded ({})", dest.host),
        );
    }
    let Some(target) = ctx.target(&dest) else {
        let why = format!(
            "not forwarded: {} is neither routed (--egress-route) nor allowed (--egress-allow)",
            dest.host
        );
        return refuse(ctx, id, why);
    };
    forward(ctx, id, parts, body, &dest, &target).await
}

/// Answers request `id` with `502` and `why`, as not forwarded.
fn refuse(ctx: &Context, id: Option<u64>, why: String) -> Response<Body> {
    ctx.answer(id, OutboundAnswer::NotForwarded);
    answer(
        StatusCode::BAD_GATEWAY,
        format!("hintaudit egress: {why}\n"),
    )
}

/// Sends request `id` to `target` and records its answer: the status, or not delivered (no
/// connection), or unanswered (the exchange broke after the request went out).
async fn forward(
    ctx: &Context,
    id: Option<u64>,
    parts: http::request::Parts,
    body: Body,
    dest: &Destination,
    target: &Target,
) -> Response<Body> {
    let Some(request) = upstream_request(parts, body, dest, target) else {
        ctx.answer(id, OutboundAnswer::Failed);
        let why = "hintaudit egress: a target that cannot be forwarded\n".to_owned();
        return answer(StatusCode::BAD_REQUEST, why);
    };
    match ctx.send(request).await {
        Ok(resp) => {
            ctx.answer(id, OutboundAnswer::Status(resp.status().as_u16()));
            let (mut parts, body) = resp.into_parts();
            strip_hop_by_hop(&mut parts.headers);
            Response::from_parts(parts, body.map_err(|e| Box::new(e) as BoxError).boxed())
        }
        Err(e) => {
            let (what, answered) = if e.is_connect() {
                ("connecting upstream", OutboundAnswer::Failed)
            } else {
                ("the upstream exchange", OutboundAnswer::Unanswered)
            };
            let why = innermost(&e);
            tracing::warn!(target: "hintaudit::egress", host = %dest.host, port = dest.port, "egress: {what} failed: {why}");
            ctx.answer(id, answered);
            let text = format!(
                "hintaudit egress: {} could not be reached: {why}\n",
                dest.host
            );
            answer(StatusCode::BAD_GATEWAY, text)
        }
    }
}

/// The request sent upstream: `target`'s scheme and authority with the request's own path and
/// query, its headers less the hop-by-hop ones, a `Host` header naming `dest` when it had
/// none; `None` when the target does not make a URI.
fn upstream_request(
    parts: http::request::Parts,
    body: Body,
    dest: &Destination,
    target: &Target,
) -> Option<Request<Body>> {
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let uri = Uri::builder()
        .scheme(target.scheme.clone())
        .authority(target.authority.clone())
        .path_and_query(path)
        .build()
        .ok()?;
    let mut headers = parts.headers;
    strip_hop_by_hop(&mut headers);
    if !headers.contains_key(header::HOST) {
        headers.insert(header::HOST, dest.host_header()?);
    }
    let mut request = Request::new(body);
    *request.method_mut() = parts.method;
    *request.uri_mut() = uri;
    *request.headers_mut() = headers;
    Some(request)
}

/// Removes the hop-by-hop headers (RFC 9110, section 7.6.1): those `Connection` names, and
/// `Connection`, `Proxy-Connection`, `Keep-Alive`, `Proxy-Authenticate`,
/// `Proxy-Authorization`, `TE`, `Trailer`, `Transfer-Encoding`, `Upgrade`.
pub(crate) fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|n| HeaderName::from_bytes(n.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        header::CONNECTION,
        HeaderName::from_static("proxy-connection"),
        HeaderName::from_static("keep-alive"),
        header::PROXY_AUTHENTICATE,
        header::PROXY_AUTHORIZATION,
        header::TE,
        header::TRAILER,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
    ] {
        headers.remove(name);
    }
}

/// The innermost cause of an error, as text (a refused connection, an untrusted certificate):
/// errors of the client and the connector name no path or query.
fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests;
