//! Reading a request's GraphQL operation from its body on the way through: a POST of JSON or
//! of `application/graphql`, or one to a `/graphql` path, is read into memory up to the body
//! limit, then forwarded byte for byte (a longer body is forwarded as it comes, and its
//! operation is unknown). Nothing read is kept but the operation's type and name.

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use hintaudit_core::{GraphqlKind, GraphqlOperation};
use http::request::Parts;
use http::{HeaderMap, Method, header};
use http_body_util::{BodyExt, BodyStream, Full, StreamBody};
use hyper::body::Frame;

use crate::graphql;
use crate::upstream::{Body, BoxError};

/// How a body is read for GraphQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// JSON: `{query, operationName, extensions}` or a batch of them.
    Json,
    /// `application/graphql`: the document itself.
    Document,
    /// Anything else (a multipart upload, a form).
    Other,
}

fn form(headers: &HeaderMap, at_endpoint: bool) -> Form {
    let Some(ct) = headers.get(header::CONTENT_TYPE) else {
        return if at_endpoint { Form::Json } else { Form::Other };
    };
    let ct = ct.to_str().unwrap_or_default().to_ascii_lowercase();
    let essence = ct.split(';').next().unwrap_or_default().trim();
    if essence == "application/json" || essence.ends_with("+json") {
        Form::Json
    } else if essence == "application/graphql" {
        Form::Document
    } else {
        Form::Other
    }
}

/// Whether the body is sent encoded (`Content-Encoding` other than `identity`): unreadable.
fn encoded(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_ENCODING)
        .is_some_and(|v| !v.as_bytes().eq_ignore_ascii_case(b"identity"))
}

/// The declared length, where `Content-Length` gives one.
fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// The body to forward and the GraphQL operation of the request `parts`: from a GET's query
/// string, or from a POST's body read up to `limit` bytes.
pub(crate) async fn inspect(
    parts: &Parts,
    body: Body,
    limit: usize,
) -> (Body, Option<GraphqlOperation>) {
    let at_endpoint = graphql::is_endpoint(parts.uri.path());
    let unknown = || at_endpoint.then(|| GraphqlOperation::new(GraphqlKind::Unknown, None));
    if parts.method == Method::GET {
        let op = parts
            .uri
            .query()
            .and_then(|q| graphql::of_query_string(q, at_endpoint));
        return (body, op);
    }
    if parts.method != Method::POST {
        return (body, None);
    }
    let form = form(&parts.headers, at_endpoint);
    let too_long = declared_length(&parts.headers).is_some_and(|n| n > limit as u64);
    if form == Form::Other || encoded(&parts.headers) || too_long {
        return (body, unknown());
    }
    match read(body, limit).await {
        Read::Whole(bytes, body) => {
            let op = match form {
                Form::Json => graphql::of_json(&bytes, at_endpoint),
                _ => std::str::from_utf8(&bytes).ok().and_then(|document| {
                    let name = operation_name(parts.uri.query());
                    graphql::operation(document, name.as_deref(), at_endpoint)
                }),
            };
            (body, op.or_else(unknown))
        }
        Read::Partly(body) => (body, unknown()),
    }
}

/// `operationName` from a query string.
fn operation_name(query: Option<&str>) -> Option<String> {
    form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == "operationName")
        .map(|(_, v)| v.into_owned())
}

/// A body read into memory: whole (its data, and the body to forward), or only partly (past
/// the limit, or broken off), with the body to forward made of what was read and the rest.
enum Read {
    Whole(Bytes, Body),
    Partly(Body),
}

/// Reads `body` into memory up to `limit` bytes of data.
async fn read(mut body: Body, limit: usize) -> Read {
    let mut frames: Vec<Frame<Bytes>> = Vec::new();
    let mut data = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = match frame {
            Ok(frame) => frame,
            Err(e) => return Read::Partly(replay(frames, Some(e), None)),
        };
        if let Some(chunk) = frame.data_ref() {
            data.extend_from_slice(chunk);
        }
        frames.push(frame);
        if data.len() > limit {
            return Read::Partly(replay(frames, None, Some(body)));
        }
    }
    let data = data.freeze();
    let whole = if frames.iter().all(Frame::is_data) {
        Full::new(data.clone())
            .map_err(|never| match never {})
            .boxed()
    } else {
        replay(frames, None, None)
    };
    Read::Whole(data, whole)
}

/// A body that gives `frames` again, then `error` or the `rest` of the original body.
fn replay(frames: Vec<Frame<Bytes>>, error: Option<BoxError>, rest: Option<Body>) -> Body {
    let mut head: Vec<Result<Frame<Bytes>, BoxError>> = frames.into_iter().map(Ok).collect();
    head.extend(error.map(Err));
    let head = futures_util::stream::iter(head);
    match rest {
        Some(rest) => BodyExt::boxed(StreamBody::new(head.chain(BodyStream::new(rest)))),
        None => BodyExt::boxed(StreamBody::new(head)),
    }
}

#[cfg(test)]
mod tests;
