//! The recording proxy: the server under test gets `HTTP_PROXY`, `HTTPS_PROXY` and
//! `ALL_PROXY` (both cases) pointing at it, and `NO_PROXY` cleared. It records the method,
//! host and port of each request and answers `502 Bad Gateway` without forwarding anything:
//! nothing leaves the machine.
//!
//! Plain HTTP: the method and the destination of the absolute-form request line (the `Host`
//! header when the target is not absolute). HTTPS: the `CONNECT host:port` that opens the
//! tunnel, recorded with the method `CONNECT`, since what would have gone through the tunnel
//! is never seen. The tunnel is refused, so the client never sends the inner request.
//!
//! Attribution: verify calls tools one at a time and marks the call in flight
//! ([`Recording::begin`], [`Recording::end`]); a request that arrives while no call is in
//! flight (at start-up, between calls, after the last) is kept as unattributed with the tool
//! whose call came last. A request is recorded before it is answered, so a tool that waits
//! for its answer has its request recorded before its result comes back. A request a tool
//! leaves running in the background and that arrives during a later call is that later
//! call's: the proxy cannot tell them apart.
//!
//! HTTP parsing and serving are hyper's (HTTP/1.1, the form proxies are spoken to in).

use parking_lot::Mutex;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use hintaudit_core::OutboundReach;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// The text every refused request gets.
const REFUSAL: &str =
    "hintaudit verify: outbound request recorded and not forwarded (recording proxy)\n";

/// The proxy variables set for the server, both cases; `NO_PROXY` and `no_proxy` are removed.
pub(crate) const PROXY_VARIABLES: [&str; 6] = [
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
];

/// A request no tool call was in flight for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnattributedRequest {
    /// The request (method `CONNECT` for HTTPS).
    pub request: OutboundReach,
    /// The tool whose call came last before the request arrived; `None` before the first call.
    pub after: Option<String>,
}

#[derive(Debug, Default)]
struct State {
    /// The tool whose call is in flight, and what it sent so far.
    current: Option<(String, Vec<OutboundReach>)>,
    /// The tool whose call came last.
    last: Option<String>,
    unattributed: Vec<UnattributedRequest>,
}

/// What the proxy has seen; shared by the proxy task and the run. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct Recording(Arc<Mutex<State>>);

impl Recording {
    fn state(&self) -> parking_lot::MutexGuard<'_, State> {
        self.0.lock()
    }

    /// A call of `tool` is now in flight.
    pub fn begin(&self, tool: &str) {
        let mut s = self.state();
        s.current = Some((tool.to_owned(), Vec::new()));
        s.last = Some(tool.to_owned());
    }

    /// The call in flight has ended: the requests it sent, in arrival order.
    pub fn end(&self) -> Vec<OutboundReach> {
        self.state()
            .current
            .take()
            .map(|(_, r)| r)
            .unwrap_or_default()
    }

    /// Requests that arrived while no call was in flight, in arrival order.
    pub fn unattributed(&self) -> Vec<UnattributedRequest> {
        self.state().unattributed.clone()
    }

    fn record(&self, reach: OutboundReach) {
        let mut s = self.state();
        let after = s.last.clone();
        match &mut s.current {
            Some((_, sent)) => sent.push(reach),
            None => s.unattributed.push(UnattributedRequest {
                request: reach,
                after,
            }),
        }
    }
}

/// The proxy on loopback; it stops when dropped.
pub(crate) struct RecordingProxy {
    addr: SocketAddr,
    recording: Recording,
    task: JoinHandle<()>,
}

impl RecordingProxy {
    /// Listens on `127.0.0.1` on a free port.
    ///
    /// # Errors
    /// The listener cannot be bound.
    pub async fn start() -> std::io::Result<RecordingProxy> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let recording = Recording::default();
        let rec = recording.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let rec = rec.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let rec = rec.clone();
                        async move { Ok::<_, std::convert::Infallible>(answer(&rec, &req)) }
                    });
                    // A client that hangs up mid-request has nothing more to record.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(RecordingProxy {
            addr,
            recording,
            task,
        })
    }

    /// `http://127.0.0.1:PORT`: the value of the proxy variables.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What the proxy has seen.
    pub fn recording(&self) -> &Recording {
        &self.recording
    }
}

impl Drop for RecordingProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Records `req` (when it names a destination) and refuses it.
fn answer(rec: &Recording, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    if let Some(reach) = destination(req) {
        rec.record(reach);
    }
    let mut resp = Response::new(Full::new(Bytes::from_static(REFUSAL.as_bytes())));
    *resp.status_mut() = StatusCode::BAD_GATEWAY;
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain"),
    );
    resp.headers_mut().insert(
        hyper::header::CONNECTION,
        hyper::header::HeaderValue::from_static("close"),
    );
    resp
}

/// The method, host and port of a proxied request: a CONNECT's authority, an absolute
/// target's host and port (or its scheme's default), else the `Host` header (port 80 when it
/// names none). Path and query are never kept. `None` when nothing names a host.
fn destination<B>(req: &Request<B>) -> Option<OutboundReach> {
    let uri = req.uri();
    let method = req.method();
    if let Some(host) = uri.host() {
        let port = uri.port_u16().or(match uri.scheme_str() {
            Some("https") | Some("wss") => Some(443),
            Some("http") | Some("ws") => Some(80),
            _ if *method == Method::CONNECT => None,
            _ => Some(80),
        });
        return Some(OutboundReach::new(method.as_str(), host, port));
    }
    let host = req.headers().get(hyper::header::HOST)?.to_str().ok()?;
    let authority: hyper::http::uri::Authority = host.parse().ok()?;
    Some(OutboundReach::new(
        method.as_str(),
        authority.host(),
        authority.port_u16().or(Some(80)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row per request head: what is recorded.
    #[test]
    fn destinations() {
        for (method, target, host, want) in [
            (
                "POST",
                "http://Notify.Example/reminders?token=x",
                None,
                Some(("POST", "notify.example", Some(80))),
            ),
            (
                "GET",
                "http://127.0.0.1:8080/",
                None,
                Some(("GET", "127.0.0.1", Some(8080))),
            ),
            (
                "CONNECT",
                "api.example.com:443",
                None,
                Some(("CONNECT", "api.example.com", Some(443))),
            ),
            (
                "DELETE",
                "/items/1",
                Some("svc.example:81"),
                Some(("DELETE", "svc.example", Some(81))),
            ),
            ("GET", "/", Some("[::1]"), Some(("GET", "::1", Some(80)))),
            ("GET", "/", None, None),
        ] {
            let mut b = Request::builder()
                .method(Method::from_bytes(method.as_bytes()).unwrap())
                .uri(target);
            if let Some(h) = host {
                b = b.header("host", h);
            }
            let req = b.body(()).unwrap();
            let want = want.map(|(m, h, p)| OutboundReach::new(m, h, p));
            assert_eq!(destination(&req), want, "{method} {target}");
        }
    }

    #[test]
    fn requests_between_calls_are_unattributed() {
        let rec = Recording::default();
        let r = |m: &str| OutboundReach::new(m, "x.example", Some(80));
        rec.record(r("GET"));
        rec.begin("a");
        rec.record(r("POST"));
        assert_eq!(rec.end(), vec![r("POST")]);
        rec.record(r("PUT"));
        assert_eq!(rec.end(), Vec::new());
        assert_eq!(
            rec.unattributed(),
            vec![
                UnattributedRequest {
                    request: r("GET"),
                    after: None
                },
                UnattributedRequest {
                    request: r("PUT"),
                    after: Some("a".into())
                },
            ]
        );
    }
}
