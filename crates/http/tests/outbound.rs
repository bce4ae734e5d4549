//! Both ways in, against a real HTTP server on loopback: requests a tool sends through the
//! reqwest middleware or the tower layer land in its call scope, and the judge reads them
//! against the closed world (the loopback server configured as outside stands in for an
//! outside service).
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

use std::net::SocketAddr;

use hintaudit_core::{
    CallScope, ClosedWorld, DeclaredHints, Effect, Judge, OutboundReach, Policy, Rule, ToolCall,
};
use hintaudit_http::{OutboundAuditLayer, OutboundAuditMiddleware, OutboundRecorder};
use http_body_util::{BodyExt, Full};
use tower::{Layer, ServiceExt};

/// An HTTP server on loopback answering every request with 204; its address.
async fn outside_service() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().fallback(|| async { http::StatusCode::NO_CONTENT });
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// The default closed world with `addr` configured as outside.
fn world(addr: SocketAddr) -> ClosedWorld {
    ClosedWorld::default()
        .with_outside(&addr.to_string())
        .unwrap()
}

/// The rules the judge finds for a tool with `hints` that had `effect`.
fn rules(world: ClosedWorld, hints: DeclaredHints, effect: &Effect) -> Vec<Rule> {
    let judge = Judge::new(Policy::default().with_closed_world(world));
    let call = ToolCall {
        tool: "notify",
        hints,
        arguments: None,
        effect,
    };
    judge.judge(&call).findings.iter().map(|f| f.rule).collect()
}

#[tokio::test]
async fn reqwest_middleware_records_and_the_judge_finds_the_open_world() {
    let addr = outside_service().await;
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(OutboundAuditMiddleware::new(OutboundRecorder::new(world(
            addr,
        ))))
        .build();
    let scope = CallScope::new("notify");
    let effects = scope.effects_handle();
    let status = scope
        .run(
            client
                .post(format!("http://{addr}/notify"))
                .body("hi")
                .send(),
        )
        .await
        .unwrap()
        .status();
    assert_eq!(status, 204);
    let effect = effects.snapshot();
    assert_eq!(
        effect.outbound,
        [OutboundReach::new("POST", "127.0.0.1", Some(addr.port()))]
    );

    let read_only_closed = DeclaredHints::new(Some(true), None, None, Some(false));
    assert_eq!(
        rules(world(addr), read_only_closed, &effect),
        [Rule::ReadOnlyWrite, Rule::UndeclaredOpenWorld]
    );
    // Under the default closed world the same loopback server is inside: nothing to find.
    assert!(rules(ClosedWorld::default(), read_only_closed, &effect).is_empty());
    // A request outside any call scope is recorded nowhere.
    client.get(format!("http://{addr}/")).send().await.unwrap();
    assert_eq!(effects.snapshot().outbound.len(), 1);
}

#[tokio::test]
async fn tower_layer_records_requests_of_a_hyper_client() {
    let addr = outside_service().await;
    let hyper = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Full<bytes::Bytes>>();
    let client = OutboundAuditLayer::new(OutboundRecorder::new(world(addr))).layer(hyper);
    let scope = CallScope::new("notify");
    let effects = scope.effects_handle();
    let req = http::Request::get(format!("http://{addr}/status"))
        .body(Full::new(bytes::Bytes::new()))
        .unwrap();
    let resp = scope.run(client.oneshot(req)).await.unwrap();
    assert_eq!(resp.status(), 204);
    let _ = resp.into_body().collect().await.unwrap();
    let effect = effects.snapshot();
    assert_eq!(
        effect.outbound,
        [OutboundReach::new("GET", "127.0.0.1", Some(addr.port()))]
    );

    // A GET outside: the spec's reading alerts; the directory reading does not, and a read
    // is no write.
    let closed = DeclaredHints::new(Some(true), None, None, Some(false));
    assert_eq!(
        rules(world(addr), closed, &effect),
        [Rule::UndeclaredOpenWorld]
    );
    let directory = Judge::new(
        Policy::default()
            .with_closed_world(world(addr))
            .with_open_world_reading(hintaudit_core::OpenWorldReading::StateChange),
    );
    let call = ToolCall {
        tool: "notify",
        hints: closed,
        arguments: None,
        effect: &effect,
    };
    assert!(directory.judge(&call).findings.is_empty());
}
