//! The end of a tools/call's path through the layer (service.rs has the rest): the call
//! judged, recorded on its span, disclosed in its result when asked, and handed to the
//! recorder, when it answers or when its deferred evidence is in.

use std::sync::Arc;
use std::time::Duration;

use hintaudit_core::{
    ActionMetadata, ArgsKey, AuditEvent, AuditStage, CallReport, CallStatus, DeclaredHints, Effect,
    ToolCall,
};
use rmcp::ErrorData as McpError;
use rmcp::model::CallToolResponse;
use tracing::Span;

use crate::config::Config;
use crate::disclose::disclose;
use crate::guard::guarded;
use crate::make_span::record_on_span;

/// What the layer knows of a call once it has finished: its tool, hints, arguments' key,
/// duration and how it ended (`call_status`).
pub(crate) struct Finished {
    pub(crate) tool: Arc<str>,
    pub(crate) known_tool: bool,
    pub(crate) hints: DeclaredHints,
    pub(crate) args_key: ArgsKey,
    pub(crate) duration: Duration,
    pub(crate) status: (CallStatus, Option<String>),
    /// The tool's declared action metadata, judged beside its hints.
    pub(crate) action: Option<ActionMetadata>,
}

/// A result to disclose the call's effects in (`disclose_effects`); how complete the
/// evidence was by then is the effect's own (`Effect::completeness`).
pub(crate) type Disclosure<'a> = Option<&'a mut Result<CallToolResponse, McpError>>;

/// Judges a finished call, records it on its span and hands it to the recorder: when the
/// call answers, or when its deferred evidence is in ([`CallScope::defer`]); with
/// `disclose_effects`, discloses it in the result's `_meta` (disclose.rs).
pub(crate) fn finish_call(
    config: &Config,
    call: Finished,
    effect: Effect,
    span: &Span,
    disclosure: Disclosure<'_>,
) {
    let (status, error_type) = call.status;
    let judged = guarded(AuditStage::Judge, "judge panicked", || {
        config.judge_call(
            &ToolCall {
                tool: &call.tool,
                hints: call.hints,
                arguments: None,
                effect: &effect,
            },
            call.args_key,
            call.action,
        )
    });
    let (verdict, pending) = match judged {
        Some((verdict, pending)) => (Some(verdict), pending),
        None => (None, None),
    };
    if let Some(verdict) = verdict.as_ref().filter(|_| !span.is_disabled()) {
        guarded(AuditStage::Record, "span recording panicked", || {
            record_on_span(span, verdict, error_type.as_deref())
        });
    }
    // A call the judge failed on is still reported (status and duration feed the metrics),
    // with an empty verdict.
    let verdict = verdict.unwrap_or_default();
    if let Some(result) = disclosure {
        guarded(AuditStage::Record, "disclosing effects panicked", || {
            disclose(result, &effect, &verdict.findings)
        });
    }
    let report = CallReport {
        tool: &call.tool,
        known_tool: call.known_tool,
        hints: call.hints,
        status,
        duration: call.duration,
        effect: &effect,
        verdict: &verdict,
    };
    guarded(AuditStage::Record, "recorder panicked", || {
        config.recorder.record(&AuditEvent::Call(&report))
    });
    if let Some(corrections) = &config.corrections {
        guarded(AuditStage::Judge, "correcting hints panicked", || {
            corrections.after_call(&report, &config.recorder)
        });
    }
    // With a shared history: the repeat, judged when the store answers (never awaited).
    if let Some(pending) = pending {
        config.settle_later(pending, &call.tool, call.known_tool, call.hints);
    }
}

/// How a finished call ended, for the span and the report: its status, and the `error.type`
/// (`tool_error`, or the JSON-RPC error code) when it failed.
pub(crate) fn call_status(
    result: &Result<CallToolResponse, McpError>,
) -> (CallStatus, Option<String>) {
    match result {
        Ok(CallToolResponse::Complete(r)) if r.is_error == Some(true) => {
            (CallStatus::ToolError, Some("tool_error".to_owned()))
        }
        // InputRequired (MRTR) and Task answers: the request was served; see [`HintAudit`].
        Ok(_) => (CallStatus::Ok, None),
        Err(e) => (CallStatus::ProtocolError, Some(e.code.0.to_string())),
    }
}
