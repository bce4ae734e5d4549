//! The child's TCP connections that bypass the proxy, read from `/proc`: one to a
//! non-loopback address is listed, one to loopback and one to an allowed address are not.

use std::net::{IpAddr, SocketAddr, TcpListener, UdpSocket};
use std::process::Stdio;

use hintaudit_egress::direct_connections;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::support::python3;

/// This machine's address on its default route (no packet is sent), or `None`.
fn outside_address() -> Option<IpAddr> {
    let socket = UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("203.0.113.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[tokio::test]
async fn connections_that_bypass_the_proxy_are_listed() {
    let Some(python) = python3() else { return };
    if !std::path::Path::new("/proc/self/net/tcp").exists() {
        eprintln!("skipped: no /proc");
        return;
    }
    let Some(ip) = outside_address() else {
        eprintln!("skipped: this machine has no address but loopback");
        return;
    };
    let outside = TcpListener::bind((ip, 0)).unwrap();
    let local = TcpListener::bind("127.0.0.1:0").unwrap();
    let remote = outside.local_addr().unwrap();
    // The child connects to both and holds them until its stdin closes.
    let code = "import socket, sys\n\
        a = socket.create_connection((sys.argv[1], int(sys.argv[2])))\n\
        b = socket.create_connection(('127.0.0.1', int(sys.argv[3])))\n\
        print('connected', flush=True)\n\
        sys.stdin.read()\n";
    let mut child = tokio::process::Command::new(python)
        .args(["-c", code, &ip.to_string(), &remote.port().to_string()])
        .arg(local.local_addr().unwrap().port().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(
        lines.next_line().await.unwrap().as_deref(),
        Some("connected")
    );
    let pid = child.id().unwrap();
    let found = direct_connections(pid, &[]).expect("/proc readable");
    let remotes: Vec<SocketAddr> = found.iter().map(|c| c.remote).collect();
    assert_eq!(remotes, [remote], "{found:?}");
    assert_eq!(found[0].pid, pid);
    let any_port = SocketAddr::new(ip, 0);
    assert_eq!(
        direct_connections(pid, &[any_port]),
        Some(vec![]),
        "an allowed address"
    );
    assert_eq!(
        direct_connections(pid, &[remote]),
        Some(vec![]),
        "an allowed address and port"
    );
    drop(child.stdin.take());
    child.wait().await.unwrap();
    assert_eq!(direct_connections(pid, &[]), None, "the child is gone");
}
