//! Cancellation: a client's `notifications/cancelled` reaches the upstream (the fixture's
//! tool records it), the request ends as it does against the bare server (neither answers a
//! cancelled request: the client stopped waiting), the client is served on, and the proxy's
//! audit goes on (the cancelled call is no longer in flight: a later call's commit is that
//! call's own, not ambiguous).

use std::path::Path;

use rmcp::RoleClient;
use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
use rmcp::service::{Peer, PeerRequestOptions};
use serde_json::json;

use crate::clients::*;
use crate::support::*;

/// Calls `slow(label)`, waits until the tool runs, cancels it, and waits until the tool saw
/// the cancellation; then checks the client is still served.
async fn cancel_slow(peer: &Peer<RoleClient>, dir: &Path, label: &str) {
    let params = CallToolRequestParams::new("slow").with_arguments(
        json!({"label": label, "seconds": 600})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let handle = peer
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("sent");
    let started = dir.join(format!("started-{label}"));
    assert!(
        eventually(|| started.exists()).await,
        "{label}: slow started"
    );
    handle
        .cancel(Some("the user changed their mind".into()))
        .await
        .expect("cancelled");
    let cancelled = dir.join(format!("cancelled-{label}"));
    assert!(
        eventually(|| cancelled.exists()).await,
        "{label}: the upstream tool saw the cancellation"
    );
    let after = call_on(peer, "pid", json!({})).await;
    assert!(after.get("error").is_none(), "{label}: served on: {after}");
}

/// After a cancelled call, get_item's commit is get_item's alone: the cancelled call is no
/// longer in flight (`/metrics` at `addr`).
async fn the_audit_goes_on(peer: &Peer<RoleClient>, addr: std::net::SocketAddr) {
    call_on(peer, "get_item", json!({"id": 1})).await;
    let s = metrics(addr).await;
    assert_eq!(
        violations(&s, "get_item", "read_only_write"),
        1.0,
        "{}",
        s.text
    );
    assert_eq!(commits(&s, "ambiguous"), 0.0, "{}", s.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_is_cancelled_upstream_over_stdio_and_the_audit_goes_on() {
    let Some((admin, py)) = parts().await else {
        return;
    };
    let name = "hintaudit_proxy_cancel";
    let db = fresh_db(&admin, name).await;
    let dir = scratch("cancel-stdio");
    let marks = dir.display().to_string();
    let server = sql_server();
    let server = server.to_str().expect("utf-8 path");

    let bare = stdio_with(
        (),
        Path::new(py),
        &[server, "--db", &db],
        &[("FIXTURE_RELAY", &marks)],
    )
    .await;
    cancel_slow(bare.peer(), &dir, "bare").await;
    bare.cancel().await.ok();

    let metrics_addr = std::net::SocketAddr::from(([127, 0, 0, 1], free_port()));
    let m = metrics_addr.to_string();
    let upstream = fixture(py, &db, &format!("FIXTURE_RELAY={marks}"));
    let args = [
        "proxy",
        "--stdio",
        &upstream,
        "--database",
        &db,
        "--metrics",
        &m,
    ];
    let proxied = stdio_with((), &hintaudit(), &args, &[]).await;
    cancel_slow(proxied.peer(), &dir, "proxied").await;
    the_audit_goes_on(proxied.peer(), metrics_addr).await;
    proxied.cancel().await.ok();
    drop_db(&admin, name).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_is_cancelled_upstream_over_streamable_http_and_the_audit_goes_on() {
    let Some((admin, py)) = parts().await else {
        return;
    };
    let name = "hintaudit_proxy_cancel_http";
    let db = fresh_db(&admin, name).await;
    let dir = scratch("cancel-http");
    let marks = dir.display().to_string();
    let env = [("FIXTURE_RELAY", marks.as_str())];

    let (_bare_server, bare_url) = fixture_http(py, &db, &env).await;
    let bare = http_with((), &bare_url).await;
    cancel_slow(bare.peer(), &dir, "bare").await;
    bare.cancel().await.ok();

    let (_upstream, upstream) = fixture_http(py, &db, &env).await;
    let (proxy, addr) = proxy_http(&["--upstream", &upstream, "--database", &db]).await;
    let proxied = http_with((), &format!("http://{addr}/mcp")).await;
    cancel_slow(proxied.peer(), &dir, "proxied").await;
    the_audit_goes_on(proxied.peer(), addr).await;
    proxied.cancel().await.ok();
    drop(proxy);
    drop_db(&admin, name).await;
    let _ = std::fs::remove_dir_all(&dir);
}
