//! Every `ServerHandler` method reaches the inner handler, and the client gets its answer.
//!
//! `Probe` implements all 32 methods of rmcp 3.11's `ServerHandler`, counts each call by
//! method name and answers distinctively. A method `HintAudit` left to its default would
//! not increment the count, and this test fails.
#![allow(deprecated)] // set_level, subscribe, unsubscribe: legacy, still delegated

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use hintaudit_rmcp::HintAudit;
use rmcp::model::*;
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ClientLifecycleMode, ClientServiceExt, ErrorData, RoleServer, ServerHandler};
use serde_json::json;

use crate::common::*;

/// Every method of rmcp 3.11's `ServerHandler` (its `impl_server_handler_for_wrapper!` list).
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

const SKILL_URI: &str = "skill://inner-skill/SKILL.md";

#[derive(Clone, Default)]
struct Probe {
    counts: Arc<Mutex<BTreeMap<&'static str, usize>>>,
}

impl Probe {
    fn hit(&self, method: &'static str) {
        *self.counts.lock().unwrap().entry(method).or_default() += 1;
    }

    fn count(&self, method: &str) -> usize {
        self.counts
            .lock()
            .unwrap()
            .get(method)
            .copied()
            .unwrap_or(0)
    }

    fn skill() -> Skill {
        Skill::new(
            SKILL_URI,
            SkillFrontmatter::new("inner-skill", "a skill only the inner server has"),
            SkillResources::Dynamic,
        )
    }

    fn versions() -> Vec<ProtocolVersion> {
        ProtocolVersion::KNOWN_VERSIONS
            .iter()
            .filter(|v| **v != ProtocolVersion::V_2024_11_05)
            .cloned()
            .collect()
    }
}

impl ServerHandler for Probe {
    async fn ping(&self, _: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.hit("ping");
        Ok(())
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.hit("initialize");
        context.peer.set_peer_info(request.clone());
        let mut info = self.get_info();
        info.protocol_version = request.protocol_version.clone();
        Ok(info.with_instructions("from inner initialize"))
    }

    fn negotiate_initialize(
        &self,
        request: &InitializeRequestParams,
    ) -> Result<InitializeResult, ErrorData> {
        self.hit("negotiate_initialize");
        let mut info = self.get_info();
        info.protocol_version = request.protocol_version.clone();
        Ok(info.with_instructions("from inner negotiate_initialize"))
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.hit("supported_protocol_versions");
        Cow::Owned(Self::versions())
    }

    async fn discover(&self, _: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData> {
        self.hit("discover");
        Ok(DiscoverResult::from_server_info(
            Self::versions(),
            self.get_info().with_instructions("from inner discover"),
        ))
    }

    async fn complete(
        &self,
        _: CompleteRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.hit("complete");
        Ok(CompleteResult::new(
            CompletionInfo::new(vec!["inner-completion".into()]).unwrap(),
        ))
    }

    async fn set_level(
        &self,
        _: SetLevelRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.hit("set_level");
        Ok(())
    }

    async fn get_prompt(
        &self,
        _: GetPromptRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.hit("get_prompt");
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(
            Role::User,
            "inner-prompt-text",
        )])
        .into())
    }

    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.hit("list_prompts");
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            "inner-prompt",
            None::<String>,
            None,
        )]))
    }

    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.hit("list_resources");
        Ok(ListResourcesResult::with_all_items(vec![Resource::new(
            "inner://resource",
            "inner-resource",
        )]))
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.hit("list_resource_templates");
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("inner://{id}", "inner-template"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.hit("read_resource");
        Ok(
            ReadResourceResult::new(vec![ResourceContents::text("inner-contents", request.uri)])
                .into(),
        )
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.hit("accepted_subscription_filter");
        Some(requested.clone())
    }

    async fn listen(&self, _: SubscriptionContext) -> Result<(), ErrorData> {
        self.hit("listen");
        Ok(())
    }

    async fn subscribe(
        &self,
        _: SubscribeRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.hit("subscribe");
        Ok(())
    }

    async fn unsubscribe(
        &self,
        _: UnsubscribeRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.hit("unsubscribe");
        Ok(())
    }

    async fn call_tool(
        &self,
        _: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.hit("call_tool");
        Ok(CallToolResult::success(vec![ContentBlock::text("inner-call")]).into())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.hit("list_tools");
        Ok(ListToolsResult::with_all_items(vec![Self::tool()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.hit("get_tool");
        (name == "inner-tool").then(Self::tool)
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        self.hit("on_custom_request");
        Ok(CustomResult::new(json!({ "inner": request.method })))
    }

    async fn on_cancelled(
        &self,
        _: CancelledNotificationParam,
        _: NotificationContext<RoleServer>,
    ) {
        self.hit("on_cancelled");
    }

    async fn on_progress(&self, _: ProgressNotificationParam, _: NotificationContext<RoleServer>) {
        self.hit("on_progress");
    }

    async fn on_initialized(&self, _: NotificationContext<RoleServer>) {
        self.hit("on_initialized");
    }

    async fn on_roots_list_changed(&self, _: NotificationContext<RoleServer>) {
        self.hit("on_roots_list_changed");
    }

    async fn on_custom_notification(
        &self,
        _: CustomNotification,
        _: NotificationContext<RoleServer>,
    ) {
        self.hit("on_custom_notification");
    }

    fn get_info(&self) -> ServerConfig {
        self.hit("get_info");
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_completions()
                .enable_prompts()
                .enable_resources()
                .enable_tools()
                .enable_tasks()
                .enable_skills_with_directory_read()
                .build(),
        )
        .with_server_info(Implementation::new("probe-inner", "9.9.9"))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.hit("get_task");
        let task = Task::new(
            request.task_id,
            TaskStatus::Working,
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:00:00Z",
        )
        .with_status_message("inner-task");
        Ok(GetTaskResult::new(DetailedTask::new(
            task,
            TaskPayload::Working,
        )))
    }

    async fn update_task(
        &self,
        _: UpdateTaskParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.hit("update_task");
        Ok(())
    }

    async fn cancel_task(
        &self,
        _: CancelTaskParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.hit("cancel_task");
        Ok(())
    }

    async fn list_skills(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        self.hit("list_skills");
        Ok(ListSkillsResult::with_all_items(vec![Self::skill()]))
    }

    async fn get_skill(
        &self,
        _: GetSkillRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        self.hit("get_skill");
        Ok(GetSkillResult::new(Self::skill()))
    }

    async fn read_resource_directory(
        &self,
        _: ReadResourceDirectoryRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        self.hit("read_resource_directory");
        Ok(ListResourcesResult::with_all_items(vec![Resource::new(
            "skill://inner-skill/notes.md",
            "inner-directory-entry",
        )]))
    }
}

impl Probe {
    fn tool() -> Tool {
        Tool::new(
            "inner-tool",
            "the inner server's tool",
            Arc::new(JsonObject::new()),
        )
        .with_annotations(ToolAnnotations::new().read_only(true))
    }
}

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
