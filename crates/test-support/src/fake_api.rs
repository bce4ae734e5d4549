//! A fake HTTP API on loopback, over HTTPS (axum behind rustls, a certificate for `localhost`
//! and `127.0.0.1` signed by a CA the fake makes and writes to a file) and over plain HTTP,
//! that keeps every request it gets whole (method, target, headers, body), so a test can see
//! what a proxy forwarded. Tests reach it through a route under a non-loopback name (Go never
//! proxies loopback addresses).
//!
//! Answers: `/status/NNN` answers NNN; a path ending `/graphql` answers 200 with
//! `{"data":{}}`; otherwise DELETE answers 204, POST 201, anything else 200 with
//! `{"ok":true}`.

use parking_lot::Mutex;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, SanType};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// A request the fake got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The method.
    pub method: String,
    /// The path and query, as sent.
    pub target: String,
    /// The `Host` header.
    pub host: Option<String>,
    /// Every header, names lower-case, in order.
    pub headers: Vec<(String, String)>,
    /// The body, as sent.
    pub body: Vec<u8>,
}

type Requests = Arc<Mutex<Vec<Seen>>>;

/// The fake, over HTTPS and plain HTTP; stops when dropped.
#[derive(Debug)]
pub struct FakeApi {
    https: SocketAddr,
    http: SocketAddr,
    ca_file: PathBuf,
    seen: Requests,
    _dir: tempfile::TempDir,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        self.tasks.iter().for_each(JoinHandle::abort);
    }
}

impl FakeApi {
    /// Starts the fake on two free ports of `127.0.0.1`. Panics when it cannot.
    pub async fn start() -> FakeApi {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (acceptor, ca_pem) = tls();
        let ca_file = dir.path().join("fake-ca.pem");
        std::fs::write(&ca_file, ca_pem).expect("the fake's CA file");
        let seen = Requests::default();
        let router = Router::new().fallback(answer).with_state(seen.clone());
        let tls_listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .expect("bind");
        let plain = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .expect("bind");
        let https = tls_listener.local_addr().expect("addr");
        let http = plain.local_addr().expect("addr");
        let tls_listener = TlsListener {
            tcp: tls_listener,
            acceptor,
        };
        let tasks = vec![
            tokio::spawn({
                let router = router.clone();
                async move {
                    let _ = axum::serve(tls_listener, router).await;
                }
            }),
            tokio::spawn(async move {
                let _ = axum::serve(plain, router).await;
            }),
        ];
        FakeApi {
            https,
            http,
            ca_file,
            seen,
            _dir: dir,
            tasks,
        }
    }

    /// `https://localhost:PORT`.
    pub fn https_url(&self) -> String {
        format!("https://localhost:{}", self.https.port())
    }

    /// `http://127.0.0.1:PORT`.
    pub fn http_url(&self) -> String {
        format!("http://{}", self.http)
    }

    /// The PEM file of the CA that signed the fake's certificate.
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// Every request the fake got, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().clone()
    }
}

/// Keeps the request whole and answers by its path and method.
async fn answer(State(seen): State<Requests>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let body: Bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let path = parts.uri.path().to_owned();
    seen.lock().push(Seen {
        method: parts.method.to_string(),
        target: parts
            .uri
            .path_and_query()
            .map_or_else(|| path.clone(), |p| p.to_string()),
        host: parts
            .headers
            .get("host")
            .and_then(|h| h.to_str().ok())
            .map(str::to_owned),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: body.to_vec(),
    });
    let json = [("content-type", "application/json")];
    if let Some(code) = path
        .strip_prefix("/status/")
        .and_then(|c| c.parse::<u16>().ok())
    {
        let status = StatusCode::from_u16(code).unwrap_or(StatusCode::IM_A_TEAPOT);
        return (status, json, r#"{"ok":false}"#).into_response();
    }
    if path.trim_end_matches('/').ends_with("/graphql") {
        return (StatusCode::OK, json, r#"{"data":{}}"#).into_response();
    }
    match parts.method.as_str() {
        "DELETE" => StatusCode::NO_CONTENT.into_response(),
        "POST" => (StatusCode::CREATED, json, r#"{"ok":true}"#).into_response(),
        _ => (StatusCode::OK, json, r#"{"ok":true}"#).into_response(),
    }
}

/// A CA of the fake's own, and the acceptor presenting a certificate it signed for
/// `localhost` and `127.0.0.1`; the CA's certificate, PEM.
fn tls() -> (TlsAcceptor, String) {
    let mut ca = CertificateParams::default();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().expect("a key");
    let ca_pem = ca.self_signed(&ca_key).expect("the fake's CA").pem();
    let issuer = Issuer::new(ca, ca_key);
    let mut leaf = CertificateParams::new(vec!["localhost".to_owned()]).expect("a name");
    leaf.subject_alt_names
        .push(SanType::IpAddress(Ipv4Addr::LOCALHOST.into()));
    let key = KeyPair::generate().expect("a key");
    let cert = leaf
        .signed_by(&key, &issuer)
        .expect("the fake's certificate");
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_no_client_auth()
    .with_single_cert(vec![cert.der().clone()], key)
    .expect("the fake's TLS");
    (TlsAcceptor::from(Arc::new(config)), ca_pem)
}

/// TCP connections of which the TLS handshake succeeded (a failed one is dropped).
struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((stream, addr)) = self.tcp.accept().await else {
                continue;
            };
            if let Ok(tls) = self.acceptor.accept(stream).await {
                return (tls, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}
