//! Case 8, exposure: the demo listens on loopback unless told otherwise, and is unreachable
//! through the machine's other addresses. (`serve_metrics` and the bookings example listen
//! only on an address they are given; they have no default to test.)

use std::net::{IpAddr, SocketAddr};

use clap::Parser;
use hintaudit_cli::demo::{DemoArgs, start};

use crate::support::figure;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    demo: DemoArgs,
}

/// This machine's address on its default route, if it has one (no packet is sent: a UDP
/// socket is only connected, to read the address the kernel picks).
fn outward_ip() -> Option<IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_listens_on_loopback_by_default() {
    let args = Cli::parse_from(["demo"]).demo;
    assert!(args.addr.ip().is_loopback(), "default {}", args.addr);
    let demo = start(&args).await.expect("the demo starts");
    let bound = demo.server.addr;
    let from_outside = match outward_ip() {
        Some(ip) => tokio::net::TcpStream::connect(SocketAddr::new(ip, bound.port()))
            .await
            .is_ok(),
        None => false,
    };
    figure(
        "exposure",
        &[
            ("default_addr", args.addr.to_string()),
            ("bound_loopback", bound.ip().is_loopback().to_string()),
            ("outward_ip_tried", outward_ip().is_some().to_string()),
            ("reachable_from_outward_ip", from_outside.to_string()),
        ],
    );
    assert!(bound.ip().is_loopback(), "bound {bound}");
    assert!(!from_outside, "the demo answered on a non-loopback address");
    demo.server.shutdown().await;
}
