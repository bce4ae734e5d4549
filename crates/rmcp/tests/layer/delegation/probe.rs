//! `Probe`: a `ServerHandler` that implements every method of rmcp's `ServerHandler`,
//! counts each call by method name and answers distinctively.

#![allow(deprecated)] // set_level, subscribe, unsubscribe: legacy, still implemented

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rmcp::model::*;
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::json;

pub(super) const SKILL_URI: &str = "skill://inner-skill/SKILL.md";

#[derive(Clone, Default)]
pub(super) struct Probe {
    counts: Arc<Mutex<BTreeMap<&'static str, usize>>>,
}

impl Probe {
    fn hit(&self, method: &'static str) {
        *self.counts.lock().unwrap().entry(method).or_default() += 1;
    }

    pub(super) fn count(&self, method: &str) -> usize {
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

    pub(super) fn versions() -> Vec<ProtocolVersion> {
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
    pub(super) fn tool() -> Tool {
        Tool::new(
            "inner-tool",
            "the inner server's tool",
            Arc::new(JsonObject::new()),
        )
        .with_annotations(ToolAnnotations::new().read_only(true))
    }
}
