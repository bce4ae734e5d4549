//! Enforce mode, against a real HTTP server on loopback configured as outside: a call that
//! enforces `openWorldHint: false` never reaches it, through the reqwest middleware or the
//! tower layer; the tool gets an error naming the hint, and the call records a refusal (an
//! `enforced` finding), not an outbound request. Requests inside the closed world, and calls
//! that do not enforce, go through as before.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hintaudit_core::{
    CallScope, ClosedWorld, DeclaredHints, Enforcement, Hint, Judge, Policy, RefusedBy, Rule,
    ToolCall,
};
use hintaudit_http::{
    OpenWorldRefused, OutboundAuditLayer, OutboundAuditMiddleware, OutboundRecorder,
};
use http_body_util::Full;
use tower::{Layer, ServiceExt};

/// An HTTP server on loopback answering 204 and counting the requests it got.
async fn outside_service() -> (SocketAddr, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().fallback(move || {
        let counted = counted.clone();
        async move {
            counted.fetch_add(1, Ordering::SeqCst);
            http::StatusCode::NO_CONTENT
        }
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, hits)
}

fn world(addr: SocketAddr) -> ClosedWorld {
    ClosedWorld::default()
        .with_outside(&addr.to_string())
        .unwrap()
}

fn closed() -> CallScope {
    CallScope::new("notify_patient").with_enforcement(Enforcement {
        closed_world: true,
        ..Enforcement::NONE
    })
}

#[tokio::test]
async fn the_middleware_refuses_requests_outside_the_closed_world() {
    let (addr, hits) = outside_service().await;
    let inside = outside_service().await;
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(OutboundAuditMiddleware::new(OutboundRecorder::new(world(
            addr,
        ))))
        .build();
    let scope = closed();
    let effects = scope.effects_handle();
    let (outside, inside_status) = scope
        .run(async {
            let outside = client.post(format!("http://{addr}/notify")).send().await;
            let inside_status = client
                .get(format!("http://{}/ok", inside.0))
                .send()
                .await
                .expect("inside the closed world: sent")
                .status();
            (outside, inside_status)
        })
        .await;
    assert_eq!(inside_status, 204);
    let e = outside.expect_err("refused");
    assert!(e.to_string().contains("openWorldHint: false"), "{e}");
    let reqwest_middleware::Error::Middleware(inner) = &e else {
        panic!("a middleware error, got {e:?}")
    };
    let refused = inner
        .downcast_ref::<OpenWorldRefused>()
        .expect("OpenWorldRefused");
    assert_eq!(refused.reach.method, "POST");
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "nothing reached the outside service"
    );
    assert_eq!(inside.1.load(Ordering::SeqCst), 1);

    let effect = effects.snapshot();
    assert_eq!(effect.outbound.len(), 1, "only the request inside was sent");
    assert_eq!(effect.refusals.len(), 1);
    assert_eq!(effect.refusals[0].hint, Hint::OpenWorld);
    assert_eq!(effect.refusals[0].by, RefusedBy::Hintaudit);
    let judge = Judge::new(Policy::default().with_closed_world(world(addr)));
    let verdict = judge.judge(&ToolCall {
        tool: "notify_patient",
        hints: DeclaredHints::new(Some(false), Some(false), Some(false), Some(false)),
        arguments: None,
        effect: &effect,
    });
    // `undeclared_open_world` too: the tool's hint was false, though nothing was sent.
    let rules: Vec<Rule> = verdict.findings.iter().map(|f| f.rule).collect();
    assert_eq!(rules, [Rule::UndeclaredOpenWorld, Rule::Enforced]);
    assert!(
        verdict.findings[0]
            .evidence
            .contains("tried, refused by hintaudit in enforce mode"),
        "{}",
        verdict.findings[0].evidence
    );
    assert!(
        verdict.findings[1].evidence.contains(&format!(
            "POST to 127.0.0.1:{} refused by hintaudit",
            addr.port()
        )),
        "{}",
        verdict.findings[1].evidence
    );

    // Not enforced (observe mode): sent and recorded, as before.
    let observe = CallScope::new("notify_patient");
    let status = observe
        .run(client.post(format!("http://{addr}/notify")).send())
        .await
        .expect("sent")
        .status();
    assert_eq!(status, 204);
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_tower_layer_refuses_requests_outside_the_closed_world() {
    let (addr, hits) = outside_service().await;
    let hyper = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Full<bytes::Bytes>>();
    let client = OutboundAuditLayer::new(OutboundRecorder::new(world(addr))).layer(hyper);
    let scope = closed();
    let effects = scope.effects_handle();
    let req = http::Request::post(format!("http://{addr}/notify"))
        .body(Full::new(bytes::Bytes::new()))
        .unwrap();
    let e = scope
        .run(client.clone().oneshot(req))
        .await
        .expect_err("refused");
    assert!(e.to_string().contains("openWorldHint: false"), "{e}");
    assert!(e.downcast_ref::<OpenWorldRefused>().is_some(), "{e:?}");
    assert_eq!(hits.load(Ordering::SeqCst), 0);
    let effect = effects.snapshot();
    assert!(effect.outbound.is_empty());
    assert_eq!(effect.refusals.len(), 1);
}
