//! Whether a call's statements get spans (`CallScope::spans`) follows the call's own span: off
//! when the span maker's span is disabled (by a filter, or `Span::none()`), on when it is
//! enabled.
//!
//! Own test binary: it installs a global tracing subscriber.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

use hintaudit_core::CallScope;
use hintaudit_rmcp::{CallInfo, HintAuditLayer};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::CallToolRequestParams;
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use tower::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;

#[path = "layer/common.rs"]
#[allow(dead_code)] // shared with the layer tests; this binary uses part of it
mod common;

#[derive(Clone)]
#[allow(dead_code)] // `tool_router` is read by the code `#[tool_handler]` generates.
struct Probe {
    tool_router: ToolRouter<Probe>,
}

#[tool_router]
impl Probe {
    #[tool(description = "Says whether this call's statements get spans")]
    async fn probe(&self) -> String {
        CallScope::current().map_or_else(|| "no scope".to_owned(), |s| s.spans().to_string())
    }
}

#[tool_handler]
impl ServerHandler for Probe {}

/// Calls `probe` through `layer`.
async fn probe(layer: HintAuditLayer) -> String {
    let server = layer.layer(Probe {
        tool_router: Probe::tool_router(),
    });
    let client = common::connect(server).await;
    let answer = client
        .call_tool(CallToolRequestParams::new("probe"))
        .await
        .expect("call");
    client.cancel().await.ok();
    common::text_of(&answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_spans_follow_the_call_span() {
    // Spans of target `kept` are on; everything else (the default call span's) is filtered off.
    let filter = Targets::new()
        .with_target("kept", LevelFilter::INFO)
        .with_default(LevelFilter::OFF);
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(filter))
        .expect("the only global subscriber of this test binary");

    // The default span maker's span is filtered off. (Whether tracing then hands back
    // `Span::none()` or a disabled span with metadata depends on its `log` feature; the layer
    // asks `is_disabled`, true for both.)
    assert!(tracing::info_span!("probe").is_disabled());
    assert_eq!(
        probe(HintAuditLayer::new().with_recorder(())).await,
        "false"
    );

    // A span maker whose span is on.
    let kept = HintAuditLayer::new()
        .with_recorder(())
        .with_make_span(|_: &CallInfo<'_>| tracing::info_span!(target: "kept", "call"));
    assert_eq!(probe(kept).await, "true");

    // And one that returns no span at all.
    let none = HintAuditLayer::new()
        .with_recorder(())
        .with_make_span(|_: &CallInfo<'_>| tracing::Span::none());
    assert_eq!(probe(none).await, "false");
}
