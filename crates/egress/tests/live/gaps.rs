//! What the proxy cannot see is said: a client that refuses the test CA (a pinned
//! certificate), a tunnel of another protocol, a protocol upgrade. And plain HTTP inside a
//! tunnel is read like any other request.

use std::time::Duration;

use hintaudit_core::{OutboundAnswer, OutboundReach};
use hintaudit_egress::{EgressGap, EgressListener, Forwarding};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{python3, rig, run};

/// Writes `request` to the listener and reads the answer's head; the stream stays open.
async fn send(listener: &EgressListener, request: &str) -> (TcpStream, String) {
    let mut stream = TcpStream::connect(listener.addr()).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        if stream.read(&mut byte).await.unwrap() == 0 {
            break;
        }
        head.push(byte[0]);
    }
    (stream, String::from_utf8_lossy(&head).into_owned())
}

/// A client that trusts only another CA (as a pinned certificate would) refuses the test
/// CA's certificate: its call's evidence has a gap naming the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_refusing_the_test_ca_is_a_gap() {
    let Some(python) = python3() else { return };
    let rig = rig(Forwarding::Listed).await;
    let pinned = "import ssl, sys, urllib.request\n\
        ctx = ssl.create_default_context(cafile=sys.argv[1])\n\
        try:\n    urllib.request.urlopen('https://api.fake.test/v1/x', context=ctx, timeout=60)\n\
        except Exception as e:\n    print('refused', type(e).__name__)\n";
    let call = rig.listener.begin("pinned");
    let fake_ca = rig.fake.ca_file().to_str().unwrap().to_owned();
    let out = run(&rig.listener, python, &["-c", pinned, &fake_ca]).await;
    tokio::time::timeout(Duration::from_secs(60), rig.listener.settled())
        .await
        .expect("the refused handshake is told within 60 s");
    let share = rig.listener.end(call);
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("refused"),
        "{out:?}"
    );
    assert!(share.requests.is_empty());
    assert_eq!(
        share.gaps,
        [EgressGap::TlsRefused {
            host: "api.fake.test".into()
        }]
    );
    assert!(rig.fake.seen().is_empty());
}

/// A tunnel that carries neither TLS nor HTTP (a database protocol) is closed: a gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tunnel_of_another_protocol_is_a_gap() {
    let rig = rig(Forwarding::Listed).await;
    let call = rig.listener.begin("t");
    let (mut stream, head) = send(
        &rig.listener,
        "CONNECT db.fake.test:5432 HTTP/1.1\r\nHost: db.fake.test:5432\r\n\r\n",
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // PostgreSQL's SSLRequest.
    stream
        .write_all(&[0, 0, 0, 8, 4, 210, 22, 47])
        .await
        .unwrap();
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).await.unwrap();
    assert!(rest.is_empty(), "closed without a word");
    let share = rig.listener.end(call);
    assert_eq!(
        share.gaps,
        [EgressGap::NotHttp {
            destination: "db.fake.test:5432".into()
        }]
    );
}

/// A protocol upgrade (a WebSocket) is recorded and refused: what would pass through it
/// cannot be seen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_is_refused_and_a_gap() {
    let rig = rig(Forwarding::Listed).await;
    let call = rig.listener.begin("t");
    let (_stream, head) = send(
        &rig.listener,
        "GET http://hooks.fake.test/socket HTTP/1.1\r\nHost: hooks.fake.test\r\n\
         Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 502"), "{head}");
    let share = rig.listener.end(call);
    assert_eq!(
        share.requests,
        [OutboundReach::new("GET", "hooks.fake.test", Some(80))
            .with_path("/socket")
            .with_answer(OutboundAnswer::NotForwarded)]
    );
    assert_eq!(
        share.gaps,
        [EgressGap::Upgrade {
            host: "hooks.fake.test".into()
        }]
    );
}

/// Plain HTTP inside a tunnel is read and forwarded as any request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_inside_a_tunnel_is_read() {
    let rig = rig(Forwarding::Listed).await;
    let call = rig.listener.begin("t");
    let (mut stream, head) = send(
        &rig.listener,
        "CONNECT hooks.fake.test:80 HTTP/1.1\r\nHost: hooks.fake.test:80\r\n\r\n",
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    stream
        .write_all(b"POST /services/hook HTTP/1.1\r\nHost: hooks.fake.test\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
        .await
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    let share = rig.listener.end(call);
    assert_eq!(
        share.requests,
        [OutboundReach::new("POST", "hooks.fake.test", Some(80))
            .with_path("/services/hook")
            .with_answer(OutboundAnswer::Status(201))]
    );
    assert_eq!(rig.fake.seen()[0].target, "/services/hook");
}
