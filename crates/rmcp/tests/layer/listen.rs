//! `subscriptions/listen` through the layer (docs/design.md#corrected-annotations): with
//! `correct_hints` the layer accepts `toolsListChanged` in addition to the inner server's own
//! subscriptions, whose notifications still reach the client; without it the inner server's
//! filter is answered unchanged.

use std::time::Duration;

use hintaudit_core::Config;
use hintaudit_rmcp::HintAuditLayer;
use rmcp::model::*;
use rmcp::service::{RunningService, Subscription, SubscriptionContext};
use rmcp::{ClientLifecycleMode, ClientServiceExt, ErrorData, RoleClient, ServerHandler};
use tower::Layer;

/// An inner server that accepts `promptsListChanged` subscriptions only, and announces a
/// prompt list change on each stream as soon as it opens.
#[derive(Clone)]
struct Announcer;

impl ServerHandler for Announcer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_prompts_list_changed()
                .build(),
        )
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let prompts = SubscriptionFilter::builder().prompts_list_changed().build();
        Some(requested.intersection(&prompts))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        context
            .sink()
            .notify_prompt_list_changed()
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        context.cancelled().await;
        Ok(())
    }
}

/// A 2026-07-28 client (server/discover, no initialize) of `server` over a duplex stream.
async fn modern_client<S: ServerHandler>(server: S) -> RunningService<RoleClient, ClientConfig> {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        use rmcp::ServiceExt;
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    ClientConfig::default()
        .serve_with_lifecycle(
            client_io,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("server/discover")
}

/// The next notification on `stream` is the inner server's prompt list change.
async fn inner_server_announced(stream: &mut Subscription) {
    let first = tokio::time::timeout(Duration::from_secs(30), stream.next())
        .await
        .expect("the inner server's notification")
        .expect("the stream is sound");
    assert!(
        matches!(
            first,
            Some(ServerNotification::PromptListChangedNotification(_))
        ),
        "{first:?}"
    );
}

fn tools_and_prompts() -> SubscriptionFilter {
    SubscriptionFilter::builder()
        .tools_list_changed()
        .prompts_list_changed()
        .build()
}

#[tokio::test]
async fn with_the_option_the_inner_servers_subscriptions_are_kept_and_tools_added() {
    let config = Config::default().with_correct_hints(true);
    let layer = HintAuditLayer::new()
        .with_recorder(())
        .with_corrections_of(&config);
    let client = modern_client(layer.layer(Announcer)).await;
    let mut stream = client.listen(tools_and_prompts()).await.expect("listen");
    assert_eq!(stream.acknowledged(), &tools_and_prompts());
    inner_server_announced(&mut stream).await;
    stream.cancel().await.ok();
    client.cancel().await.ok();
}

#[tokio::test]
async fn without_the_option_the_inner_servers_filter_is_answered_unchanged() {
    let layer = HintAuditLayer::new().with_recorder(());
    let client = modern_client(layer.layer(Announcer)).await;
    let mut stream = client.listen(tools_and_prompts()).await.expect("listen");
    let prompts = SubscriptionFilter::builder().prompts_list_changed().build();
    assert_eq!(stream.acknowledged(), &prompts);
    inner_server_announced(&mut stream).await;
    stream.cancel().await.ok();
    client.cancel().await.ok();
}
