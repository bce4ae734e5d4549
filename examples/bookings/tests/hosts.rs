//! rmcp's Host check (DNS-rebinding protection) on `/mcp`: loopback names always pass, a
//! service name only when `--allowed-host` lists it, any name with `*`.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

mod support;

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// POSTs an MCP `initialize` to `/mcp` with this `Host` header; returns the status code.
async fn initialize_as(addr: SocketAddr, host: &str) -> u16 {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hosts-test","version":"0"}}}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut head = vec![0u8; 12];
    stream.read_exact(&mut head).await.expect("a status line");
    let line = String::from_utf8_lossy(&head);
    line[9..12]
        .parse()
        .unwrap_or_else(|_| panic!("status line {line:?}"))
}

async fn server(extra: &[&str], dir: &tempfile::TempDir) -> support::Process {
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("hosts.db").display()
    );
    let mut args = vec!["--http", "127.0.0.1:0", "--audit"];
    args.extend_from_slice(extra);
    support::start(&args, &url).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_name_is_refused_unless_allowed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let default = server(&[], &dir).await;
    let addr = default.http.expect("serves HTTP");
    assert_eq!(initialize_as(addr, &addr.to_string()).await, 200);
    assert_eq!(initialize_as(addr, "bookings-1:8080").await, 403);
    drop(default);

    let listed = server(&["--allowed-host", "bookings-1"], &dir).await;
    let addr = listed.http.expect("serves HTTP");
    assert_eq!(initialize_as(addr, "bookings-1:8080").await, 200);
    assert_eq!(
        initialize_as(addr, &format!("localhost:{}", addr.port())).await,
        200
    );
    assert_eq!(initialize_as(addr, "bookings-2:8080").await, 403);
    drop(listed);

    let any = server(&["--allowed-host", "*"], &dir).await;
    let addr = any.http.expect("serves HTTP");
    assert_eq!(
        initialize_as(addr, "bookings.hintaudit.svc:8080").await,
        200
    );
}

/// Over stdio there is no Host header to check: `--allowed-host` there is a usage error, not
/// an option silently ignored.
#[test]
fn allowed_host_without_http_is_a_usage_error() {
    for args in [
        &["--allowed-host", "x"][..],
        &["--stdio", "--allowed-host", "x"],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_bookings"))
            .args(args)
            .output()
            .expect("run bookings");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("--allowed-host"), "{args:?}: {stderr}");
    }
}
