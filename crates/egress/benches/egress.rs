//! The egress proxy's cost (docs/performance.md#the-egress-proxy), on loopback: a client
//! sends HTTPS requests to test-support's fake API directly and through an egress listener
//! (a CONNECT tunnel, TLS terminated, the request recorded, forwarded over a pooled upstream
//! connection), on one keep-alive connection each, in rounds taken in turn so that drift
//! falls on both alike. Two requests: a GET, and a POST of a GraphQL mutation (its body read
//! and parsed). Per request: p50 and p99 wall-clock of each path, the added p50 and the ratio
//! of the p50s, and the CPU the proxy spent (its runtime runs on a thread of its own, whose
//! CPU the kernel counts: `/proc/self/task/<tid>/stat`). Then the cost of opening a tunnel:
//! CONNECT and TLS handshake to a new host (a leaf certificate made) and to a known one.
//!
//! `cargo bench -p hintaudit-egress --bench egress` (`HINTAUDIT_BENCH_REQUESTS`, default
//! 2000 per round, 5 rounds). Figures from a loaded machine are read as ratios; the load
//! average is printed before and after.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hintaudit_egress::{Egress, Forwarding};
use hintaudit_test_support::fake_api::FakeApi;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

const ROUNDS: usize = 5;
const HOSTS: usize = 200;
const MUTATION: &str = r#"{"query":"mutation AddComment($b: String!) { addComment(body: $b) { id } }","variables":{"b":"a comment of some length, as a tool would post it"}}"#;

fn requests_per_round() -> usize {
    std::env::var("HINTAUDIT_BENCH_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// CPU seconds of thread `tid` of this process so far (the kernel's count, in ticks).
fn thread_cpu(tid: i32) -> f64 {
    let ticks = procfs::ticks_per_second() as f64;
    procfs::process::Process::myself()
        .and_then(|p| p.task_from_tid(tid))
        .and_then(|t| t.stat())
        .map_or(0.0, |s| (s.utime + s.stime) as f64 / ticks)
}

/// A TLS client trusting `pem`'s certificates.
fn connector(pem: &[u8]) -> TlsConnector {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem) {
        roots.add(cert.expect("PEM")).expect("a root");
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    TlsConnector::from(Arc::new(config))
}

/// `stream` after a `CONNECT host:443` answered 200 by the proxy at `proxy`.
async fn tunnel(proxy: SocketAddr, host: &str) -> TcpStream {
    let mut stream = TcpStream::connect(proxy).await.expect("the proxy");
    let _ = stream.set_nodelay(true);
    let head = format!("CONNECT {host}:443 HTTP/1.1\r\nHost: {host}:443\r\n\r\n");
    stream.write_all(head.as_bytes()).await.expect("CONNECT");
    let mut answer = Vec::new();
    while !answer.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        assert_eq!(
            stream.read(&mut byte).await.expect("answer"),
            1,
            "the proxy hung up"
        );
        answer.push(byte[0]);
    }
    assert!(
        answer.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    stream
}

/// An HTTP/1.1 connection over TLS to `name` on `stream`.
async fn http(stream: TcpStream, tls: &TlsConnector, name: &str) -> SendRequest<Full<Bytes>> {
    let name = ServerName::try_from(name.to_owned()).expect("a name");
    let tls = tls.connect(name, stream).await.expect("TLS");
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .expect("HTTP/1.1");
    tokio::spawn(conn);
    sender
}

/// A request measured: `(label, method, path, body)`.
type Variant = (&'static str, &'static str, &'static str, &'static str);

/// The requests measured.
const VARIANTS: [Variant; 3] = [
    ("GET /v1/items/42", "GET", "/v1/items/42?page=2", ""),
    (
        "POST /v1/comments (JSON, 160 B, not GraphQL)",
        "POST",
        "/v1/comments",
        COMMENT,
    ),
    (
        "POST /graphql (a mutation, 160 B)",
        "POST",
        "/graphql",
        MUTATION,
    ),
];
const COMMENT: &str = r#"{"issue":"ENG-1234","body":"a comment of some length, as a tool would post it, with a little more text to match the size"}"#;

/// Sends one request of `variant` and reads its answer whole; the wall-clock it took.
async fn send(sender: &mut SendRequest<Full<Bytes>>, host: &str, variant: &Variant) -> Duration {
    let (_, method, path, body) = *variant;
    let req = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", host)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .expect("a request");
    let start = Instant::now();
    sender.ready().await.expect("ready");
    let resp = sender.send_request(req).await.expect("an answer");
    resp.into_body().collect().await.expect("a body");
    start.elapsed()
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

/// Starts the egress proxy on a thread of its own; its listener's address, its CA and the
/// thread's id.
fn start_egress(fake: &FakeApi) -> (SocketAddr, String, i32) {
    let route = format!("api.fake.test={}", fake.https_url());
    let extra = fake.ca_file().to_owned();
    let hosts: Vec<String> = (0..HOSTS)
        .map(|i| format!("h{i}.fake.test={}", fake.https_url()))
        .collect();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("egress".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let builder = hosts
                    .iter()
                    .fold(Egress::builder(Forwarding::Listed), |b, r| {
                        b.with_route(r.as_str())
                    });
                let egress = builder
                    .with_route(route)
                    .with_extra_ca(extra)
                    .build()
                    .expect("egress");
                let listener = egress.listen().await.expect("listener");
                let tid = gettid();
                tx.send((listener.addr(), egress.ca_pem().to_owned(), tid))
                    .unwrap();
                // No call in flight: every request is unattributed, kept (the last 1,000)
                // as a call's would be.
                std::future::pending::<()>().await;
            });
        })
        .expect("the egress thread");
    rx.recv().expect("the egress proxy started")
}

/// This thread's id, from `/proc/thread-self`.
fn gettid() -> i32 {
    std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name()?.to_str()?.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run());
}

async fn run() {
    println!("load average before: {}", load());
    let fake = FakeApi::start().await;
    let (proxy, ca_pem, tid) = start_egress(&fake);
    let direct_tls = connector(&std::fs::read(fake.ca_file()).unwrap());
    let proxied_tls = connector(ca_pem.as_bytes());
    let n = requests_per_round();
    println!(
        "{ROUNDS} rounds of {n} requests per variant and path, one keep-alive connection each\n"
    );
    println!(
        "| request | direct p50 / p99 (µs) | through egress p50 / p99 (µs) | added p50 (µs) | p50 ratio | egress CPU per request (µs) |"
    );
    println!("|---|---|---|---|---|---|");
    for variant in &VARIANTS {
        let direct_stream = TcpStream::connect(
            fake.https_url()
                .trim_start_matches("https://")
                .replace("localhost", "127.0.0.1"),
        )
        .await
        .unwrap();
        let mut direct = http(direct_stream, &direct_tls, "localhost").await;
        let mut proxied = http(
            tunnel(proxy, "api.fake.test").await,
            &proxied_tls,
            "api.fake.test",
        )
        .await;
        // Warm both paths (the upstream pool's connection, the leaf certificate).
        send(&mut direct, "localhost", variant).await;
        send(&mut proxied, "api.fake.test", variant).await;
        let (mut d, mut p, mut cpu) = (Vec::new(), Vec::new(), 0.0);
        for _ in 0..ROUNDS {
            for _ in 0..n {
                d.push(send(&mut direct, "localhost", variant).await);
            }
            let before = thread_cpu(tid);
            for _ in 0..n {
                p.push(send(&mut proxied, "api.fake.test", variant).await);
            }
            cpu += thread_cpu(tid) - before;
        }
        d.sort();
        p.sort();
        let (d50, p50) = (percentile(&d, 0.5), percentile(&p, 0.5));
        println!(
            "| {} | {d50:.0} / {:.0} | {p50:.0} / {:.0} | {:.0} | {:.2} | {:.0} |",
            variant.0,
            percentile(&d, 0.99),
            percentile(&p, 0.99),
            p50 - d50,
            p50 / d50,
            cpu / (ROUNDS * n) as f64 * 1e6,
        );
    }
    tunnels(proxy, &proxied_tls, tid).await;
    println!("\nload average after: {}", load());
}

/// Opening a tunnel: CONNECT and the TLS handshake, to `HOSTS` new hosts (a leaf certificate
/// made for each) and `HOSTS` times to a known one.
async fn tunnels(proxy: SocketAddr, tls: &TlsConnector, tid: i32) {
    println!(
        "\n| tunnel (CONNECT, TLS handshake; then one GET) | p50 of the opening (µs) | egress CPU per tunnel and GET (µs) |"
    );
    println!("|---|---|---|");
    for (label, fresh) in [
        ("to a new host (leaf certificate made)", true),
        ("to a known host (leaf cached)", false),
    ] {
        let mut times = Vec::new();
        let before = thread_cpu(tid);
        for i in 0..HOSTS {
            let host = if fresh {
                format!("h{i}.fake.test")
            } else {
                "api.fake.test".to_owned()
            };
            let start = Instant::now();
            let mut sender = http(tunnel(proxy, &host).await, tls, &host).await;
            times.push(start.elapsed());
            send(&mut sender, &host, &VARIANTS[0]).await;
        }
        let cpu = thread_cpu(tid) - before;
        times.sort();
        println!(
            "| {label} | {:.0} | {:.0} |",
            percentile(&times, 0.5),
            cpu / HOSTS as f64 * 1e6
        );
    }
}
