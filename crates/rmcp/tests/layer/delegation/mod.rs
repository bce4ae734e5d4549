//! Every `ServerHandler` method reaches the inner handler, and the client gets its answer.
//!
//! `Probe` implements all 32 methods of rmcp's `ServerHandler` (the list of its
//! `impl_server_handler_for_wrapper!` in [handler/server.rs][server.rs], which src/delegate.rs
//! forwards), counts each call by method name and answers distinctively. A method `HintAudit`
//! left to its default would not increment the count, and this test fails.
//!
//! [server.rs]: https://github.com/modelcontextprotocol/rust-sdk/blob/main/crates/rmcp/src/handler/server.rs
#![allow(deprecated)] // set_level, subscribe, unsubscribe: legacy, still delegated

use hintaudit_rmcp::HintAudit;
use rmcp::model::*;
use rmcp::{ClientLifecycleMode, ClientServiceExt, ServerHandler};
use serde_json::json;

use crate::common::*;

mod probe;
use probe::{Probe, SKILL_URI};

/// Every method of rmcp's `ServerHandler` (its `impl_server_handler_for_wrapper!` list).
const ALL_METHODS: [&str; 32] = [
    "ping",
    "initialize",
    "negotiate_initialize",
    "supported_protocol_versions",
    "discover",
    "complete",
    "set_level",
    "get_prompt",
    "list_prompts",
    "list_resources",
    "list_resource_templates",
    "read_resource",
    "accepted_subscription_filter",
    "listen",
    "subscribe",
    "unsubscribe",
    "call_tool",
    "list_tools",
    "get_tool",
    "on_custom_request",
    "on_cancelled",
    "on_progress",
    "on_initialized",
    "on_roots_list_changed",
    "on_custom_notification",
    "get_info",
    "get_task",
    "update_task",
    "cancel_task",
    "list_skills",
    "get_skill",
    "read_resource_directory",
];

fn tasks_client() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::builder().enable_tasks().build(),
        Implementation::new("delegation-test", "0.0.0"),
    )
}

#[tokio::test]
async fn every_server_handler_method_is_delegated() {
    let probe = Probe::default();
    let audited = HintAudit::new(probe.clone());

    // Legacy (initialize) session: everything but discover and subscriptions/listen.
    let client = connect_with(audited.clone(), tasks_client()).await;
    let info = client.peer_info().expect("initialized");
    assert_eq!(info.server_info.as_ref().unwrap().name, "probe-inner");
    assert_eq!(info.instructions.as_deref(), Some("from inner initialize"));

    client
        .send_request(ClientRequest::PingRequest(PingRequest::default()))
        .await
        .expect("ping");
    assert_eq!(
        client
            .complete_prompt_simple("inner-prompt", "arg", "x")
            .await
            .unwrap(),
        vec!["inner-completion".to_owned()]
    );
    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Info))
        .await
        .unwrap();
    let prompt = client
        .get_prompt(GetPromptRequestParams::new("inner-prompt"))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&prompt.messages).unwrap()[0]["content"]["text"],
        "inner-prompt-text"
    );
    assert_eq!(
        client.list_prompts(None).await.unwrap().prompts[0].name,
        "inner-prompt"
    );
    assert_eq!(
        client.list_resources(None).await.unwrap().resources[0].uri,
        "inner://resource"
    );
    assert_eq!(
        client
            .list_resource_templates(None)
            .await
            .unwrap()
            .resource_templates[0]
            .uri_template,
        "inner://{id}"
    );
    let read = client
        .read_resource(ReadResourceRequestParams::new("inner://resource"))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&read.contents).unwrap()[0]["text"],
        "inner-contents"
    );
    client
        .subscribe(SubscribeRequestParams::new("inner://resource"))
        .await
        .unwrap();
    client
        .unsubscribe(UnsubscribeRequestParams::new("inner://resource"))
        .await
        .unwrap();
    let called = client
        .call_tool(CallToolRequestParams::new("inner-tool"))
        .await
        .unwrap();
    assert_eq!(text_of(&called), "inner-call");
    assert_eq!(list_tools_raw(&client).await.tools[0].name, "inner-tool");
    let custom = client
        .send_request(ClientRequest::CustomRequest(CustomRequest::new(
            "probe/custom",
            None,
        )))
        .await
        .unwrap();
    let ServerResult::CustomResult(custom) = custom else {
        panic!("{custom:?}")
    };
    assert_eq!(custom.0, json!({ "inner": "probe/custom" }));
    let task = client.get_task(GetTaskParams::new("t-1")).await.unwrap();
    assert_eq!(task.task.task.status_message.as_deref(), Some("inner-task"));
    client
        .update_task(UpdateTaskParams::new("t-1", Default::default()))
        .await
        .unwrap();
    client
        .cancel_task(CancelTaskParams::new("t-1"))
        .await
        .unwrap();
    assert_eq!(
        client.list_skills(None).await.unwrap().skills[0].uri,
        SKILL_URI
    );
    assert_eq!(
        client
            .get_skill(GetSkillRequestParams::new(SKILL_URI))
            .await
            .unwrap()
            .skill
            .uri,
        SKILL_URI
    );
    let directory = client
        .read_resource_directory(ReadResourceDirectoryRequestParams::new(
            "skill://inner-skill",
        ))
        .await
        .unwrap();
    assert_eq!(directory.resources[0].name, "inner-directory-entry");

    // Notifications a client can send.
    client
        .notify_cancelled(CancelledNotificationParam::new(
            Some(NumberOrString::Number(9_999)),
            None,
        ))
        .await
        .unwrap();
    client
        .notify_progress(ProgressNotificationParam::new(
            ProgressToken(NumberOrString::String("inner-progress".into())),
            0.5,
        ))
        .await
        .unwrap();
    client.notify_roots_list_changed().await.unwrap();
    client
        .send_notification(ClientNotification::CustomNotification(
            CustomNotification::new("notifications/probe", None),
        ))
        .await
        .unwrap();
    for method in [
        "on_initialized",
        "on_cancelled",
        "on_progress",
        "on_roots_list_changed",
        "on_custom_notification",
    ] {
        eventually(method, || probe.count(method) > 0).await;
    }

    // A 2026-07-28 session: server/discover, then subscriptions/listen.
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let server = audited.clone();
    tokio::spawn(async move {
        use rmcp::ServiceExt;
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let modern = tasks_client()
        .serve_with_lifecycle(
            client_io,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("discover lifecycle");
    assert!(probe.count("discover") > 0);
    let mut subscription = modern
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .expect("subscriptions/listen");
    eventually("listen", || probe.count("listen") > 0).await;
    let _ = subscription.cancel().await;

    // The synchronous methods, called on the wrapper directly.
    let negotiated = audited
        .negotiate_initialize(&InitializeRequestParams::new(
            ClientCapabilities::default(),
            Implementation::new("direct", "0"),
        ))
        .unwrap();
    assert_eq!(
        negotiated.instructions.as_deref(),
        Some("from inner negotiate_initialize")
    );
    assert_eq!(
        audited.supported_protocol_versions().into_owned(),
        Probe::versions()
    );
    assert_eq!(audited.get_tool("inner-tool").unwrap().name, "inner-tool");
    assert!(audited.get_tool("other").is_none());
    let filter = SubscriptionFilter::builder().prompts_list_changed().build();
    assert_eq!(audited.accepted_subscription_filter(&filter), Some(filter));
    assert_eq!(audited.get_info().server_info.name, "probe-inner");

    let missing: Vec<&str> = ALL_METHODS
        .into_iter()
        .filter(|m| probe.count(m) == 0)
        .collect();
    assert!(missing.is_empty(), "not delegated: {missing:?}");
}
