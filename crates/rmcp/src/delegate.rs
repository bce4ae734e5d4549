//! The MCP methods [`HintAudit`](crate::HintAudit) only forwards: every `ServerHandler` method
//! but `call_tool`, `list_tools`, `get_tool`, `initialize`, `get_info`, `discover`,
//! `accepted_subscription_filter` and `listen` (service.rs: the last four only change with
//! `correct_hints`), passed to the inner handler unchanged, so a wrapped server answers
//! notifications, prompts, resources, subscriptions, tasks and skills exactly as it would
//! unwrapped.
//!
//! A trait's methods are implemented in one `impl` block, so the forwarding methods are a macro
//! that service.rs expands inside `impl ServerHandler for HintAudit<H>`. The list follows rmcp's
//! own `impl_server_handler_for_wrapper!` ([rmcp's `handler/server.rs`][server.rs]), which
//! names every `ServerHandler` method; when rmcp adds one, add it here too (the delegation test,
//! tests/layer/delegation, counts them). The deprecated methods (logging, legacy
//! subscribe/unsubscribe) are forwarded as well. Paths are absolute because a macro's names
//! resolve where it expands.
//!
//! [server.rs]: https://github.com/modelcontextprotocol/rust-sdk/blob/main/crates/rmcp/src/handler/server.rs

/// Expands, inside `impl ServerHandler for HintAudit<H>`, to every `ServerHandler` method but
/// those service.rs implements, each calling the same method of `self.inner`.
macro_rules! delegate_to_inner {
    () => {
        fn ping(
            &self,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> impl ::std::future::Future<Output = Result<(), ::rmcp::ErrorData>>
        + ::rmcp::service::MaybeSendFuture
        + '_ {
            self.inner.ping(context)
        }

        fn negotiate_initialize(
            &self,
            request: &::rmcp::model::InitializeRequestParams,
        ) -> Result<::rmcp::model::InitializeResult, ::rmcp::ErrorData> {
            self.inner.negotiate_initialize(request)
        }

        fn supported_protocol_versions(
            &self,
        ) -> ::std::borrow::Cow<'static, [::rmcp::model::ProtocolVersion]> {
            self.inner.supported_protocol_versions()
        }

        fn complete(
            &self,
            request: ::rmcp::model::CompleteRequestParams,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> impl ::std::future::Future<
            Output = Result<::rmcp::model::CompleteResult, ::rmcp::ErrorData>,
        > + ::rmcp::service::MaybeSendFuture
        + '_ {
            self.inner.complete(request, context)
        }

        #[allow(deprecated)] // logging is deprecated (SEP-2577), still forwarded
        fn set_level(
            &self,
            request: ::rmcp::model::SetLevelRequestParams,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> impl ::std::future::Future<Output = Result<(), ::rmcp::ErrorData>>
        + ::rmcp::service::MaybeSendFuture
        + '_ {
            self.inner.set_level(request, context)
        }

        fn get_prompt(
            &self,
            request: ::rmcp::model::GetPromptRequestParams,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> impl ::std::future::Future<
            Output = Result<::rmcp::model::GetPromptResponse, ::rmcp::ErrorData>,
        > + ::rmcp::service::MaybeSendFuture
        + '_ {
            self.inner.get_prompt(request, context)
        }

        fn list_prompts(
            &self,
            request: Option<::rmcp::model::PaginatedRequestParams>,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> impl ::std::future::Future<
            Output = Result<::rmcp::model::ListPromptsResult, ::rmcp::ErrorData>,
        > + ::rmcp::service::MaybeSendFuture
        + '_ {
            self.inner.list_prompts(request, context)
        }

        fn list_resources(
            &self,
            request: Option<::rmcp::model::PaginatedRequestParams>,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> impl ::std::future::Future<
            Output = Result<::rmcp::model::ListResourcesResult, ::rmcp::ErrorData>,
        > + ::rmcp::service::MaybeSendFuture
        + '_ {
            self.inner.list_resources(request, context)
        }

        fn list_resource_templates(
            &self,
            request: Option<::rmcp::model::PaginatedRequestParams>,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> impl ::std::future::Future<
            Output = Result<::rmcp::model::ListResourceTemplatesResult, ::rmcp::ErrorData>,
        > + ::rmcp::service::MaybeSendFuture
        + '_ {
            self.inner.list_resource_templates(request, context)
        }

        fn read_resource(
            &self,
            request: ::rmcp::model::ReadResourceRequestParams,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> impl ::std::future::Future<
            Output = Result<::rmcp::model::ReadResourceResponse, ::rmcp::ErrorData>,
        > + ::rmcp::service::MaybeSendFuture
        + '_ {
            self.inner.read_resource(request, context)
        }

        #[allow(deprecated)] // legacy resources/subscribe, still forwarded
        fn subscribe(
            &self,
            request: ::rmcp::model::SubscribeRequestParams,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> impl ::std::future::Future<Output = Result<(), ::rmcp::ErrorData>>
        + ::rmcp::service::MaybeSendFuture
        + '_ {
            self.inner.subscribe(request, context)
        }

        #[allow(deprecated)] // legacy resources/unsubscribe, still forwarded
        fn unsubscribe(
            &self,
            request: ::rmcp::model::UnsubscribeRequestParams,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> impl ::std::future::Future<Output = Result<(), ::rmcp::ErrorData>>
        + ::rmcp::service::MaybeSendFuture
        + '_ {
            self.inner.unsubscribe(request, context)
        }

        fn on_custom_request(
            &self,
            request: ::rmcp::model::CustomRequest,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> impl ::std::future::Future<
            Output = Result<::rmcp::model::CustomResult, ::rmcp::ErrorData>,
        > + ::rmcp::service::MaybeSendFuture
        + '_ {
            self.inner.on_custom_request(request, context)
        }

        fn on_cancelled(
            &self,
            notification: ::rmcp::model::CancelledNotificationParam,
            context: ::rmcp::service::NotificationContext<::rmcp::RoleServer>,
        ) -> impl ::std::future::Future<Output = ()> + ::rmcp::service::MaybeSendFuture + '_ {
            self.inner.on_cancelled(notification, context)
        }

        fn on_progress(
            &self,
            notification: ::rmcp::model::ProgressNotificationParam,
            context: ::rmcp::service::NotificationContext<::rmcp::RoleServer>,
        ) -> impl ::std::future::Future<Output = ()> + ::rmcp::service::MaybeSendFuture + '_ {
            self.inner.on_progress(notification, context)
        }

        fn on_initialized(
            &self,
            context: ::rmcp::service::NotificationContext<::rmcp::RoleServer>,
        ) -> impl ::std::future::Future<Output = ()> + ::rmcp::service::MaybeSendFuture + '_ {
            self.inner.on_initialized(context)
        }

        fn on_roots_list_changed(
            &self,
            context: ::rmcp::service::NotificationContext<::rmcp::RoleServer>,
        ) -> impl ::std::future::Future<Output = ()> + ::rmcp::service::MaybeSendFuture + '_ {
            self.inner.on_roots_list_changed(context)
        }

        fn on_custom_notification(
            &self,
            notification: ::rmcp::model::CustomNotification,
            context: ::rmcp::service::NotificationContext<::rmcp::RoleServer>,
        ) -> impl ::std::future::Future<Output = ()> + ::rmcp::service::MaybeSendFuture + '_ {
            self.inner.on_custom_notification(notification, context)
        }

        fn get_task(
            &self,
            request: ::rmcp::model::GetTaskParams,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> impl ::std::future::Future<
            Output = Result<::rmcp::model::GetTaskResult, ::rmcp::ErrorData>,
        > + ::rmcp::service::MaybeSendFuture
        + '_ {
            self.inner.get_task(request, context)
        }

        fn update_task(
            &self,
            request: ::rmcp::model::UpdateTaskParams,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> impl ::std::future::Future<Output = Result<(), ::rmcp::ErrorData>>
        + ::rmcp::service::MaybeSendFuture
        + '_ {
            self.inner.update_task(request, context)
        }

        fn cancel_task(
            &self,
            request: ::rmcp::model::CancelTaskParams,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> impl ::std::future::Future<Output = Result<(), ::rmcp::ErrorData>>
        + ::rmcp::service::MaybeSendFuture
        + '_ {
            self.inner.cancel_task(request, context)
        }

        fn list_skills(
            &self,
            request: Option<::rmcp::model::PaginatedRequestParams>,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> impl ::std::future::Future<
            Output = Result<::rmcp::model::ListSkillsResult, ::rmcp::ErrorData>,
        > + ::rmcp::service::MaybeSendFuture
        + '_ {
            self.inner.list_skills(request, context)
        }

        fn get_skill(
            &self,
            request: ::rmcp::model::GetSkillRequestParams,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> impl ::std::future::Future<
            Output = Result<::rmcp::model::GetSkillResult, ::rmcp::ErrorData>,
        > + ::rmcp::service::MaybeSendFuture
        + '_ {
            self.inner.get_skill(request, context)
        }

        fn read_resource_directory(
            &self,
            request: ::rmcp::model::ReadResourceDirectoryRequestParams,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> impl ::std::future::Future<
            Output = Result<::rmcp::model::ReadResourceDirectoryResult, ::rmcp::ErrorData>,
        > + ::rmcp::service::MaybeSendFuture
        + '_ {
            self.inner.read_resource_directory(request, context)
        }
    };
}

pub(crate) use delegate_to_inner;
