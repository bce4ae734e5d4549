//! Nothing waits for the capture: the proxy in this process (`hintaudit_proxy::start`), served
//! to an rmcp client over a loopback TCP socket, in front of the Python fixture over stdio, on
//! PostgreSQL. The capture is held from reading (`Capture::hold`), so a call's judgement
//! cannot happen until it is released: the answer comes back all the same, and the findings
//! appear after. A call held past `--capture-wait-ms` is judged late and still reaches the
//! metrics; shutdown settles the calls still pending. No assertion on time: each waits on
//! `hintaudit_capture_pending_calls`.

use std::time::Duration;

use clap::Parser;
use hintaudit_proxy::{Proxy, ProxyArgs};
use hintaudit_telemetry::MetricName;
use hintaudit_test_support::scrape::Scraped;
use rmcp::ServiceExt;
use serde_json::json;

use crate::support::*;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    proxy: ProxyArgs,
}

/// The proxy in this process in front of the fixture on `db`, and a client of it over a
/// loopback TCP socket.
async fn proxy_and_client(py: &str, db: &str, wait_ms: &str) -> (Proxy, Client) {
    let upstream = fixture(py, db, "");
    let cli = Cli::parse_from([
        "hintaudit-proxy",
        "--stdio",
        &upstream,
        "--database",
        db,
        "--capture-wait-ms",
        wait_ms,
    ]);
    let proxy = hintaudit_proxy::start(&cli.proxy)
        .await
        .expect("the proxy starts");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("its address");
    let session = proxy.session();
    tokio::spawn(async move {
        let (socket, _) = listener.accept().await.expect("the client connects");
        if let Ok(running) = session.serve(socket).await {
            let _ = running.waiting().await;
        }
    });
    let socket = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let client = ().serve(socket).await.expect("MCP handshake over TCP");
    client.list_all_tools().await.expect("tools/list");
    (proxy, client)
}

/// The proxy's metrics, as `/metrics` would serve them now.
fn scraped(proxy: &Proxy) -> Scraped {
    let text = prometheus::TextEncoder::new()
        .encode_to_string(&proxy.metrics.registry().gather())
        .expect("exposition");
    Scraped::parse(&text)
}

/// The proxy's metrics once no call is pending (at most 60 s).
async fn settled(proxy: &Proxy) -> Scraped {
    for _ in 0..600 {
        let s = scraped(proxy);
        if pending(&s) == 0.0 {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    scraped(proxy)
}

fn calls(s: &Scraped, tool: &str) -> f64 {
    s.samples(MetricName::ToolCalls.as_str())
        .filter(|x| x.labels.get("tool") == Some(tool))
        .map(|x| s.number(x))
        .sum()
}

fn latency_count(s: &Scraped) -> f64 {
    let count = format!("{}_count", MetricName::CaptureFindingLatency.as_str());
    s.samples(&count).map(|x| s.number(x)).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_goes_back_before_the_judgement_and_the_findings_follow() {
    let Some((admin, py)) = parts().await else {
        return;
    };
    let db = fresh_db(&admin, "hintaudit_proxy_nowait").await;
    let (proxy, client) = proxy_and_client(py, &db, "60000").await;
    let capture = proxy.capture.clone().expect("a capture");

    let hold = capture.hold();
    // get_item is read-only and writes: its answer comes back while the capture cannot
    // read, so while its judgement cannot have happened.
    let answer = call(&client, "get_item", args(json!({"id": 1}))).await;
    assert!(answer.get("error").is_none(), "{answer}");
    let s = scraped(&proxy);
    assert_eq!(
        pending(&s),
        1.0,
        "judged before the capture read: {}",
        s.text
    );
    assert_eq!(violations(&s, "get_item", "read_only_write"), 0.0);
    assert_eq!(calls(&s, "get_item"), 0.0, "reported before it was judged");

    drop(hold);
    let s = settled(&proxy).await;
    assert_eq!(
        violations(&s, "get_item", "read_only_write"),
        1.0,
        "{}",
        s.text
    );
    assert_eq!(calls(&s, "get_item"), 1.0);
    assert!(commits(&s, "attributed") >= 1.0, "{}", s.text);
    assert!(
        latency_count(&s) >= 1.0,
        "commit-to-finding observed: {}",
        s.text
    );
    assert_eq!(capture.stats().late, 0);

    client.cancel().await.ok();
    proxy.audit.inner().close_all().await;
    capture.shutdown().await;
    drop_db(&admin, "hintaudit_proxy_nowait").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_judged_late_still_reaches_the_metrics() {
    let Some((admin, py)) = parts().await else {
        return;
    };
    let db = fresh_db(&admin, "hintaudit_proxy_late").await;
    // The capture stays held past the wait: the call is judged with what was read (nothing).
    let (proxy, client) = proxy_and_client(py, &db, "300").await;
    let capture = proxy.capture.clone().expect("a capture");
    // The fixture's seed (two INSERTs at start-up, outside calls) read first.
    let mut outside = 0.0;
    for _ in 0..600 {
        let s = scraped(&proxy);
        outside = commits(&s, "unattributed") + commits(&s, "foreign");
        if outside >= 2.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let hold = capture.hold();
    let answer = call(&client, "archive_item", args(json!({"id": 2}))).await;
    assert!(answer.get("error").is_none(), "{answer}");
    let s = settled(&proxy).await;
    assert_eq!(calls(&s, "archive_item"), 1.0, "{}", s.text);
    assert_eq!(capture.stats().late, 1, "counted late");
    drop(hold);
    // Its commit, read after the call was judged inside its interval: dropped, counted, never
    // taken for a write outside calls.
    let mut dropped = 0.0;
    for _ in 0..600 {
        dropped = commits(&scraped(&proxy), "dropped");
        if dropped >= 1.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(dropped, 1.0);
    let s = scraped(&proxy);
    assert_eq!(
        commits(&s, "unattributed") + commits(&s, "foreign"),
        outside,
        "{}",
        s.text
    );

    client.cancel().await.ok();
    proxy.audit.inner().close_all().await;
    capture.shutdown().await;
    drop_db(&admin, "hintaudit_proxy_late").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_settles_the_calls_still_pending() {
    let Some((admin, py)) = parts().await else {
        return;
    };
    let db = fresh_db(&admin, "hintaudit_proxy_drain").await;
    let (proxy, client) = proxy_and_client(py, &db, "60000").await;
    let capture = proxy.capture.clone().expect("a capture");

    let hold = capture.hold();
    call(&client, "archive_item", args(json!({"id": 2}))).await;
    assert_eq!(pending(&scraped(&proxy)), 1.0);
    client.cancel().await.ok();
    let stopping = tokio::spawn({
        let capture = capture.clone();
        async move { capture.shutdown().await }
    });
    drop(hold);
    stopping.await.expect("shutdown");
    let s = scraped(&proxy);
    assert_eq!(pending(&s), 0.0);
    assert_eq!(
        violations(&s, "archive_item", "undeclared_destructive"),
        1.0,
        "{}",
        s.text
    );
    assert_eq!(capture.stats().late, 0);
    proxy.audit.inner().close_all().await;
    drop_db(&admin, "hintaudit_proxy_drain").await;
}
