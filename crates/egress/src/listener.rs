//! One listener per child: a proxy on `127.0.0.1`, HTTP/1.1 (hyper), that takes plain requests
//! (absolute-form, as proxies are spoken to) and `CONNECT` tunnels. A tunnel whose first bytes
//! are a TLS handshake is terminated with a certificate for its host signed by the run's test
//! CA; one that speaks plain HTTP is read as it is; anything else is closed, and a gap of the
//! calls in flight. Every request inside goes through [`crate::exchange`].

use parking_lot::Mutex;
use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use http::uri::{Authority, Scheme};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::LazyConfigAcceptor;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::Shared;
use crate::context::{Context, Opening};
use crate::destination::Destination;
use crate::environment::ChildEnvironment;
use crate::exchange::exchange;
use crate::ledger::{CallToken, EgressGap, EgressShare, UnattributedRequest};
use crate::prefixed::Prefixed;
use crate::upstream::Body;

/// A child's egress listener: the proxy it is told to use, and the record of what it sent,
/// by call. Stops (with every connection it holds) when dropped.
pub struct EgressListener {
    addr: SocketAddr,
    ctx: Arc<Context>,
    _stop: DropGuard,
}

impl std::fmt::Debug for EgressListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EgressListener")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl EgressListener {
    /// Listens on `127.0.0.1` on a free port.
    pub(crate) async fn bind(shared: Arc<Shared>) -> std::io::Result<EgressListener> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let stop = CancellationToken::new();
        let ctx = Arc::new(Context {
            shared,
            ledger: Mutex::default(),
            stop: stop.clone(),
            opening: watch::Sender::new(0),
        });
        ctx.spawn(accept(listener, ctx.clone()));
        Ok(EgressListener {
            addr,
            ctx,
            _stop: stop.drop_guard(),
        })
    }

    /// The listener's address (`127.0.0.1`, a free port).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`: the value of the child's proxy variables.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The environment the child is started with: its proxy variables naming this listener,
    /// and the run's CA files ([`ChildEnvironment`]).
    pub fn environment(&self) -> ChildEnvironment {
        ChildEnvironment::new(&self.url(), &self.ctx.shared.files)
    }

    /// A call of `tool` begins: requests from now on may be its, until [`EgressListener::end`].
    pub fn begin(&self, tool: &str) -> CallToken {
        self.ctx.ledger().begin(tool)
    }

    /// The call has ended: its share of the child's requests (see [`EgressShare`]).
    pub fn end(&self, call: CallToken) -> EgressShare {
        self.ctx.ledger().end(call)
    }

    /// Resolves once every tunnel opened so far has been told apart (TLS, HTTP, neither) and
    /// its TLS handshake has ended, so that a handshake the client refused is already a gap
    /// of the calls in flight. A client that opens a tunnel and sends nothing keeps it
    /// waiting: bound it with a timeout. Requests need no such wait: each is recorded when it
    /// arrives and its answer before the client gets it.
    pub async fn settled(&self) {
        let mut opening = self.ctx.opening.subscribe();
        // The sender lives as long as the context this listener holds.
        let _ = opening.wait_for(|n| *n == 0).await;
    }

    /// The requests sent while no call was in flight since the last time asked (at most
    /// 1,000 kept), in the order they were settled.
    pub fn take_unattributed(&self) -> Vec<UnattributedRequest> {
        self.ctx.ledger().take_unattributed()
    }
}

/// Accepts connections until the listener is dropped; a failed accept (out of file
/// descriptors) is logged and retried.
async fn accept(listener: TcpListener, ctx: Arc<Context>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                ctx.spawn(serve(TokioIo::new(stream), ctx.clone(), None));
            }
            Err(e) => {
                tracing::warn!(target: "hintaudit::egress", "egress: accepting a connection failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}

/// Serves HTTP/1.1 on `io`: requests to the proxy itself (`tunnel` `None`: plain requests and
/// `CONNECT`), or the requests inside a tunnel.
async fn serve<I>(io: I, ctx: Arc<Context>, tunnel: Option<Destination>)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let service = service_fn(move |req: Request<Incoming>| {
        let ctx = ctx.clone();
        let tunnel = tunnel.clone();
        async move {
            let resp = match (&tunnel, req.method() == http::Method::CONNECT) {
                (None, true) => connect(&ctx, req),
                _ => exchange(&ctx, tunnel.as_ref(), req).await,
            };
            Ok::<_, Infallible>(resp)
        }
    });
    // A client that hangs up mid-request has nothing more to send on.
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(io, service)
        .with_upgrades()
        .await;
}

/// Answers a `CONNECT` with `200` and takes the tunnel over once the client has it.
fn connect(ctx: &Arc<Context>, mut req: Request<Incoming>) -> Response<Body> {
    let Some(authority) = req.uri().authority().cloned() else {
        let mut resp = Response::new(Empty::new().map_err(|never| match never {}).boxed());
        *resp.status_mut() = StatusCode::BAD_REQUEST;
        return resp;
    };
    let task_ctx = ctx.clone();
    let opening = Opening::new(ctx);
    ctx.spawn(async move {
        match hyper::upgrade::on(&mut req).await {
            Ok(upgraded) => tunnel(TokioIo::new(upgraded), task_ctx, authority, opening).await,
            Err(e) => {
                tracing::debug!(target: "hintaudit::egress", "egress: a tunnel was not opened: {e}")
            }
        }
    });
    Response::new(Empty::new().map_err(|never| match never {}).boxed())
}

/// A tunnel to `authority`: TLS is terminated, plain HTTP read as it is, anything else closed.
async fn tunnel<S>(mut stream: S, ctx: Arc<Context>, authority: Authority, opening: Opening)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut head = vec![0u8; 8];
    let n = match stream.read(&mut head).await {
        Ok(0) | Err(_) => return,
        Ok(n) => n,
    };
    head.truncate(n);
    let tls = head[0] == 0x16;
    // A request line: an upper-case method, then a space (or more of it than was read).
    let http = head[0].is_ascii_uppercase()
        && head
            .iter()
            .take_while(|b| **b != b' ')
            .all(u8::is_ascii_uppercase);
    let stream = Prefixed::new(head, stream);
    if tls {
        terminate(
            stream,
            ctx,
            Destination::new(Scheme::HTTPS, &authority),
            opening,
        )
        .await;
    } else if http {
        drop(opening);
        let dest = Destination::new(Scheme::HTTP, &authority);
        serve(TokioIo::new(stream), ctx, Some(dest)).await;
    } else {
        ctx.gap(EgressGap::NotHttp {
            destination: authority.to_string(),
        });
    }
}

/// Terminates the tunnel's TLS with a certificate for the name the client asked for (SNI,
/// else the tunnel's host), then serves the requests inside. A handshake the client gives up
/// (it does not trust the test CA) is a gap of the calls in flight.
async fn terminate<S>(stream: S, ctx: Arc<Context>, dest: Destination, opening: Opening)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let refused = |ctx: &Context, why: String| {
        tracing::info!(target: "hintaudit::egress", host = %dest.host, "egress: TLS to {} not established: {why}", dest.host);
        ctx.gap(EgressGap::TlsRefused {
            host: dest.host.clone(),
        });
    };
    let start = match LazyConfigAcceptor::new(rustls::server::Acceptor::default(), stream).await {
        Ok(start) => start,
        Err(e) => return refused(&ctx, e.to_string()),
    };
    let name = start
        .client_hello()
        .server_name()
        .map_or_else(|| dest.host.clone(), str::to_owned);
    let config = match ctx.shared.ca.server_config(&name) {
        Ok(config) => config,
        Err(e) => return refused(&ctx, e.to_string()),
    };
    match start.into_stream(config).await {
        Ok(tls) => {
            drop(opening);
            serve(TokioIo::new(tls), ctx, Some(dest)).await;
        }
        Err(e) => refused(&ctx, e.to_string()),
    }
}
