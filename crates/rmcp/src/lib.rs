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
//! # What it audits
//!
//! - **tools/call**: the tool body runs inside a [`CallScope`] and a tracing span
//!   ([`MakeSpan`]); the effects it records (statements and row changes from hintaudit-sqlx's
//!   audited pool, outbound requests, effects the server reports through
//!   [`CallScope::current`]) are judged by the [`Judge`] against the tool's declared hints and
//!   a [`CallReport`] goes to the [`Recorder`]. Tools that spawn tasks, answer with a task, or
//!   are cancelled: see [`HintAudit`].
//! - **tools/list**: each tool's hints are cached and linted ([`AuditEvent::Listing`]).
//! - **a fleet** (feature `shared-history`, on by default): replicas share the idempotency
//!   history on a Redis or Valkey server ([`SharedHistory`], `history_url`); a repeat is
//!   judged when the store answers, after the call ([`AuditEvent::Settled`]).
//! - **every other method** is forwarded to the inner handler unchanged.
//!
//! Hints come from the inner handler (`get_tool`, tools/list answers) with no client call
//! needed; [`HintAudit::learn_tools`] declares them at start-up. Auditing never changes an
//! answer or fails a call: a panic in the judge, the recorder, the span maker or the inner
//! `get_tool` is caught and counted in `hintaudit_audit_errors_total{stage}` ([`stats`]).
//!
//! [rmcp]: https://docs.rs/rmcp
#![cfg_attr(test, allow(clippy::too_many_lines))]

/// What every handler one layer makes shares: judge, recorder, span maker.
mod config;
/// Corrected annotations (`correct_hints`).
mod correct;
/// The `ServerHandler` methods that only forward to the inner handler.
mod delegate;
/// Observed effects disclosed in each result's `_meta` (`disclose_effects`).
mod disclose;
/// The end of a call's path: judged, recorded, disclosed, reported.
mod finish;
/// Runs the layer's own steps so a panic in one is counted, never felt by the call.
mod guard;
/// [`HintAuditLayer`], the `tower::Layer`.
mod layer;
/// tools/list auditing: cache and lint the listed tools' hints.
mod listing;
/// The call's span: [`MakeSpan`], [`DefaultMakeSpan`], [`CallInfo`], and what is recorded on it.
mod make_span;
/// The hints registry: the declared hints of every tool the inner server serves.
mod registry;
/// [`HintAudit`], the service, and the tools/call path from `call_tool` to the recorder.
mod service;
/// The fleet's shared idempotency history on Redis or Valkey.
#[cfg(feature = "shared-history")]
mod shared;

pub use layer::HintAuditLayer;
pub use make_span::{CallInfo, DefaultMakeSpan, MakeSpan};
pub use registry::MAX_REGISTERED_TOOLS;
pub use service::HintAudit;
#[cfg(feature = "shared-history")]
pub use shared::{DEFAULT_TIMEOUT, MAX_IN_FLIGHT, REPLICA_ENV, SharedHistory, SharedHistoryError};

pub use hintaudit_core::{
    Advice, AuditEvent, AuditStage, CONFIG_ENV, CallEffects, CallReport, CallScope, CallStatus,
    Config, ConfigError, DISCLOSURE_META_KEY, DeclaredHints, Disclosure, Enforcement, Finding,
    HISTORY_KEY_ENV, Hint, Judge, LogRecorder, Mode, Policy, Recorder, Rule, Severity, Verdict,
    stats,
};
