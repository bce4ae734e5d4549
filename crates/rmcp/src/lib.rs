//! hintaudit-rmcp: a `tower::Layer` for [rmcp] servers that checks every tool call against the
//! hints its tool declares (MCP `ToolAnnotations`: `readOnlyHint`, `destructiveHint`,
//! `idempotentHint`, `openWorldHint`).
//!
//! Wrap the server's `ServerHandler` in [`HintAudit`] with [`HintAuditLayer`] and serve the
//! wrapper as you served the server: over stdio, a child process, any async stream, or rmcp's
//! streamable HTTP service (which accepts only `ServerHandler` implementors, as `HintAudit` is).
//!
//! ```
//! use hintaudit_rmcp::{AuditEvent, CallStatus, HintAuditLayer};
//! use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
//! use rmcp::model::CallToolRequestParams;
//! use rmcp::{tool, tool_handler, tool_router, ServerHandler, ServiceExt};
//! use std::sync::{Arc, Mutex};
//! use tower::Layer;
//!
//! #[derive(Clone)]
//! struct Clinic { tool_router: ToolRouter<Clinic> }
//!
//! #[tool_router]
//! impl Clinic {
//!     #[tool(description = "Look up an appointment", annotations(read_only_hint = true, open_world_hint = false))]
//!     async fn get_appointment(&self) -> String {
//!         // A tool body runs inside the call's scope: audited pools record into it.
//!         let scope = hintaudit_rmcp::CallScope::current().expect("inside a call");
//!         format!("appointment for {}", scope.effects().tool())
//!     }
//! }
//!
//! #[tool_handler]
//! impl ServerHandler for Clinic {}
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let log = seen.clone();
//! let layer = HintAuditLayer::new().with_recorder(move |event: &AuditEvent<'_>| {
//!     if let AuditEvent::Call(report) = event {
//!         log.lock().unwrap().push((report.tool.to_owned(), report.status, report.verdict.label()));
//!     }
//! });
//! let server = layer.layer(Clinic { tool_router: Clinic::tool_router() });
//!
//! // Serve it (stdio would be `rmcp::transport::stdio()`); here over an in-memory pipe.
//! let (server_io, client_io) = tokio::io::duplex(64 * 1024);
//! tokio::spawn(async move {
//!     if let Ok(running) = server.serve(server_io).await {
//!         let _ = running.waiting().await;
//!     }
//! });
//! let client = ().serve(client_io).await?;
//! let answer = client.call_tool(CallToolRequestParams::new("get_appointment")).await?;
//! assert_eq!(answer.content[0].as_text().unwrap().text, "appointment for get_appointment");
//! client.cancel().await?;
//!
//! assert_eq!(
//!     *seen.lock().unwrap(),
//!     [("get_appointment".to_owned(), CallStatus::Ok, "clean")]
//! );
//! # Ok(()) }
//! ```
//!
//! # What the layer does
//!
//! - **tools/call**: looks up the tool's declared hints, opens a [`CallScope`] for the tool and
//!   runs the inner `call_tool` inside it and inside a tracing span ([`MakeSpan`],
//!   [`DefaultMakeSpan`]); then takes the effects the call recorded (statements and row
//!   changes from hintaudit-sqlx's audited pool, outbound requests, effects the server reports
//!   itself through [`CallScope::current`]), judges them with the [`Judge`] and hands a
//!   [`CallReport`] to the [`Recorder`]. The answer, `Ok` or `Err`, goes back to the client
//!   unchanged. Status: `ok`, `tool_error` (`isError: true`) or `protocol_error` (a JSON-RPC
//!   error: unknown tool, invalid params, internal error). A tool the server does not declare
//!   is judged under the name the client sent and reported with `known_tool: false`.
//! - **tools/list**: returns the inner answer unchanged and, per tool, caches its hints and
//!   sends [`AuditEvent::Listing`] with `hint_missing`, `hint_contradiction` and
//!   `hints_changed` findings ([`Judge::judge_listing`]).
//! - **every other method** is delegated to the inner handler unchanged, including `get_info`,
//!   `initialize`, notifications, tasks, skills and subscriptions.
//!
//! Auditing never fails a call: a panic in the judge, the recorder, the span maker or the
//! inner `get_tool` is caught and counted in `hintaudit_audit_errors_total{stage}`
//! ([`stats`]).
//!
//! # Where hints come from
//!
//! No client call is needed: when a tool is called for the first time its hints are asked of
//! the inner handler's synchronous `get_tool` (for `#[tool_handler]` servers it answers from
//! the router), and every tools/list answer passing through refreshes them. Hints are read from
//! the tool's serialized `annotations`, so unset stays unset (never folded into `false`). A
//! hand-written handler that does not implement `get_tool` has its tools reported as unknown
//! until a client has listed them; [`HintAudit::learn_tools`] seeds the registry at start-up.
//! Up to [`MAX_REGISTERED_TOOLS`] tools are cached per handler.
//!
//! # Tools that spawn tasks
//!
//! The call scope is a `tokio::task_local!`: code the tool body awaits sees it, a task the tool
//! spawns with `tokio::spawn` does not, and statements run there are counted as unattributed
//! (`hintaudit_unattributed_statements_total`). Spawn with [`CallScope::spawn`], or wrap the
//! future in [`CallScope::carry`] before handing it to another task, and its effects count for
//! the call, as long as they happen before the call answers: the layer takes the effects when
//! the inner `call_tool` returns.
//!
//! # Tools that answer with a task (MCP tasks extension, SEP-2663)
//!
//! A tool that answers `CallToolResponse::Task` has, by then, only started its work: rmcp's
//! `TaskManager::spawn` calls the `make_future` closure synchronously inside `call_tool` (so
//! inside the scope), but runs the future it returns in a plain `tokio::spawn`, re-entering
//! only rmcp's own originating-request task-local. So:
//!
//! - the layer judges and reports the call when the `CreateTaskResult` is returned, with status
//!   `ok` and the effects recorded until then (usually none);
//! - statements the task's future runs afterwards have no scope and are counted as
//!   unattributed;
//! - a future wrapped in [`CallScope::carry`] inside `make_future` does run in the call's
//!   scope, but what it records after the call answered is not judged (the layer has already
//!   taken the effects): it is attributed, not audited. Auditing task results is not
//!   supported yet.
//!
//! The same holds for `CallToolResponse::InputRequired` (multi-round-trip requests): each
//! round is judged as a call of its own.
//!
//! Cancellation: rmcp 3.11 does not drop a handler's future on `notifications/cancelled`; it
//! cancels `RequestContext::ct`, and a tool that stops early still answers and is judged. A
//! call whose future is dropped before it answers (runtime shutdown) is not reported.
//!
//! [rmcp]: https://docs.rs/rmcp

mod config;
mod delegate;
mod guard;
mod layer;
mod listing;
mod make_span;
mod registry;
mod service;

pub use layer::HintAuditLayer;
pub use make_span::{CallInfo, DefaultMakeSpan, MakeSpan};
pub use registry::MAX_REGISTERED_TOOLS;
pub use service::HintAudit;

pub use hintaudit_core::{
    Advice, AuditEvent, AuditStage, CallEffects, CallReport, CallScope, CallStatus, DeclaredHints,
    Finding, Hint, Judge, LogRecorder, Policy, Recorder, Rule, Severity, Verdict, stats,
};
