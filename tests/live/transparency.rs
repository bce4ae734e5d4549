//! Transparency: the layer changes nothing a client sees.

use bookings::{Bookings, Db};
use hintaudit_cli::demo::connect;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use serde_json::json;

use crate::support;

/// The bare bookings server over streamable HTTP, for comparison.
async fn bare(db: Db) -> (String, tokio_util::sync::CancellationToken) {
    let cancel = tokio_util::sync::CancellationToken::new();
    let config =
        StreamableHttpServerConfig::default().with_cancellation_token(cancel.child_token());
    let server = Bookings::new(db);
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        std::sync::Arc::new(LocalSessionManager::default()),
        config,
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = cancel.clone();
    tokio::spawn(async move {
        axum::serve(listener, axum::Router::new().nest_service("/mcp", service))
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await
    });
    (format!("http://{addr}/mcp"), cancel)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_layer_is_transparent() {
    let db = support::sqlite();
    let (audited, _collector, pool) = support::audited(&db).await;
    let (bare_url, stop_bare) = bare(pool).await;
    let with = connect(&audited.url).await.unwrap();
    let without = connect(&bare_url).await.unwrap();

    // tools/list: the same JSON, tool by tool.
    let a = serde_json::to_value(with.list_all_tools().await.unwrap()).unwrap();
    let b = serde_json::to_value(without.list_all_tools().await.unwrap()).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.as_array().unwrap().len(), 11);
    assert_eq!(
        serde_json::to_value(with.peer_info().map(|i| i.server_info.clone())).unwrap(),
        serde_json::to_value(without.peer_info().map(|i| i.server_info.clone())).unwrap(),
        "initialize answers alike"
    );

    // A tool error (isError: true) passes through unchanged.
    let call = |name: &'static str, args: serde_json::Value| {
        CallToolRequestParams::new(name).with_arguments(args.as_object().unwrap().clone())
    };
    let a = with
        .call_tool(call("get_appointment", json!({"id": 9999})))
        .await
        .unwrap();
    let b = without
        .call_tool(call("get_appointment", json!({"id": 9999})))
        .await
        .unwrap();
    assert_eq!(a.is_error, Some(true));
    assert_eq!(
        serde_json::to_value(&a).unwrap(),
        serde_json::to_value(&b).unwrap()
    );

    // Protocol errors pass through unchanged (an unknown tool), and so do invalid params
    // (which rmcp answers as a tool error).
    let answer = |r: Result<rmcp::model::CallToolResult, rmcp::service::ServiceError>| match r {
        Ok(result) => serde_json::to_value(result).unwrap(),
        Err(e) => json!({ "protocol_error": e.to_string() }),
    };
    let a = answer(with.call_tool(call("no_such_tool", json!({}))).await);
    assert!(
        a.get("protocol_error").is_some(),
        "an unknown tool is a protocol error: {a}"
    );
    assert_eq!(
        a,
        answer(without.call_tool(call("no_such_tool", json!({}))).await)
    );
    let bad = json!({"id": "not a number"});
    let a = answer(with.call_tool(call("get_appointment", bad.clone())).await);
    assert_eq!(
        a,
        answer(without.call_tool(call("get_appointment", bad)).await)
    );

    // A successful read answers alike.
    let a = with
        .call_tool(call("list_appointments", json!({})))
        .await
        .unwrap();
    let b = without
        .call_tool(call("list_appointments", json!({})))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&a).unwrap(),
        serde_json::to_value(&b).unwrap()
    );

    with.cancel().await.ok();
    without.cancel().await.ok();
    stop_bare.cancel();
    audited.shutdown().await;
}
