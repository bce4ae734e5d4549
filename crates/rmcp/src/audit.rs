//! The auditing half of [`HintAudit`]: what happens around the inner `call_tool` and after the
//! inner `list_tools`.
//!
//! Nothing here can change what the client gets: the inner result is returned as it came, and
//! every step after the call (judge, advice, span recording, recorder) runs under
//! `catch_unwind`; a failure is counted in `hintaudit_audit_errors_total{stage}`
//! ([`hintaudit_core::stats`]) and the call goes on.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hintaudit_core::{
    Advice, ArgsKey, AuditEvent, AuditStage, CallReport, CallScope, CallStatus, DeclaredHints,
    Effect, Finding, Severity, ToolCall, Verdict, semconv, stats,
};
use rmcp::model::{CallToolRequestParams, CallToolResponse, Extensions, JsonObject, Tool};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tracing::{Instrument, Span};

use crate::handler::HintAudit;
use crate::make_span::CallInfo;

/// How a finished call ended, for the span and the report.
fn classify(result: &Result<CallToolResponse, ErrorData>) -> (CallStatus, Option<String>) {
    match result {
        Ok(CallToolResponse::Complete(r)) if r.is_error == Some(true) => {
            (CallStatus::ToolError, Some("tool_error".to_owned()))
        }
        // InputRequired (MRTR) and Task answers: the request was served; see the crate docs.
        Ok(_) => (CallStatus::Ok, None),
        Err(e) => (CallStatus::ProtocolError, Some(e.code.0.to_string())),
    }
}

/// The `Mcp-Session-Id` header of the HTTP request, when rmcp's streamable HTTP server put the
/// request's `http::request::Parts` into the extensions.
pub(crate) fn session_id(extensions: &Extensions) -> Option<&str> {
    extensions
        .get::<http::request::Parts>()?
        .headers
        .get("mcp-session-id")?
        .to_str()
        .ok()
}

/// The request's `_meta`: rmcp moves it from the params into `RequestContext::meta` when it
/// decodes a request; a request built in-process may still carry it in the params.
fn request_meta<'a>(
    params: &'a CallToolRequestParams,
    context: &'a RequestContext<RoleServer>,
) -> &'a JsonObject {
    let from_context = &context.meta.0.0;
    match params.meta.as_ref() {
        Some(meta) if from_context.is_empty() => &meta.0.0,
        _ => from_context,
    }
}

/// Runs `f`, counting a panic at `stage`. `None` when it panicked.
fn guarded<T>(stage: AuditStage, what: &'static str, f: impl FnOnce() -> T) -> Option<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => Some(value),
        Err(_) => {
            stats().audit_error(stage, &what);
            None
        }
    }
}

impl<H: ServerHandler> HintAudit<H> {
    /// The declared hints of `tool`: cached, or asked of the inner `get_tool` and cached.
    /// `None` for a tool the server does not declare.
    pub(crate) fn hints_for_call(&self, tool: &str) -> Option<DeclaredHints> {
        if let Some(hints) = self.registry.get(tool) {
            return Some(hints);
        }
        let found = guarded(AuditStage::Registry, "get_tool panicked", || {
            self.inner.get_tool(tool)
        })
        .flatten()?;
        Some(self.registry.learn(&found))
    }

    /// tools/call with auditing around the inner handler's `call_tool`.
    pub(crate) async fn audited_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool: Arc<str> = Arc::from(request.name.as_ref());
        let declared = self.hints_for_call(&tool);
        let hints = declared.unwrap_or_default();
        // The judge's idempotency history needs the arguments' hash; taken now, before the
        // request moves into the inner handler.
        let args_key = self.config.judge.args_key(request.arguments.as_ref());

        let span = {
            let info = CallInfo {
                tool: &tool,
                hints,
                known_tool: declared.is_some(),
                request_id: &context.id,
                meta: request_meta(&request, &context),
                session_id: session_id(&context.extensions),
                extensions: &context.extensions,
            };
            guarded(AuditStage::Record, "make_span panicked", || {
                self.config.make_span.make_span(&info)
            })
            .unwrap_or_else(Span::none)
        };

        // A call without a span (not sampled, tracing off) gets no statement spans either.
        let scope = CallScope::new(tool.clone()).with_spans(!span.is_disabled());
        let effects = scope.effects_handle();
        let started = Instant::now();
        // Boxed: a tool's future can be kilobytes, and ours would otherwise carry it by value
        // through every move until it is pinned.
        let result = scope
            .run(Box::pin(self.inner.call_tool(request, context)))
            .instrument(span.clone())
            .await;
        let duration = started.elapsed();

        let finished = Finished {
            tool: &tool,
            known_tool: declared.is_some(),
            hints,
            args_key,
            duration,
        };
        self.finish_call(finished, &result, effects.take(), &span);
        result
    }

    /// Judges a finished call, records it on its span and hands it to the recorder.
    fn finish_call(
        &self,
        call: Finished<'_>,
        result: &Result<CallToolResponse, ErrorData>,
        effect: Effect,
        span: &Span,
    ) {
        let (status, error_type) = classify(result);
        let judge = &self.config.judge;
        let verdict = guarded(AuditStage::Judge, "judge panicked", || {
            judge.judge_keyed(
                &ToolCall {
                    tool: call.tool,
                    hints: call.hints,
                    arguments: None,
                    effect: &effect,
                },
                call.args_key,
            )
        });
        let advice: Vec<Advice> = guarded(AuditStage::Judge, "advice panicked", || {
            judge.advice(call.tool, call.hints)
        })
        .unwrap_or_default();

        if let Some(verdict) = &verdict {
            guarded(AuditStage::Record, "span recording panicked", || {
                record_on_span(span, verdict, error_type.as_deref())
            });
        }
        // A call the judge failed on is still reported (status and duration feed the metrics),
        // with an empty verdict.
        let verdict = verdict.unwrap_or_default();
        let report = CallReport {
            tool: call.tool,
            known_tool: call.known_tool,
            hints: call.hints,
            status,
            duration: call.duration,
            effect: &effect,
            verdict: &verdict,
            advice: &advice,
        };
        guarded(AuditStage::Record, "recorder panicked", || {
            self.config.recorder.record(&AuditEvent::Call(&report))
        });
    }

    /// Lints every tool of a tools/list answer and caches its hints.
    pub(crate) fn audit_listing(&self, tools: &[Tool]) {
        for tool in tools {
            guarded(AuditStage::Registry, "reading hints panicked", || {
                self.registry.learn(tool)
            })
            .map(|hints| {
                let findings: Vec<Finding> =
                    guarded(AuditStage::Judge, "listing judge panicked", || {
                        self.config.judge.judge_listing(&tool.name, hints)
                    })
                    .unwrap_or_default();
                guarded(AuditStage::Record, "recorder panicked", || {
                    self.config.recorder.record(&AuditEvent::Listing {
                        tool: &tool.name,
                        hints,
                        findings: &findings,
                    })
                })
            });
        }
    }
}

/// What the layer knows of a call once it has finished, besides its result.
struct Finished<'a> {
    tool: &'a str,
    known_tool: bool,
    hints: DeclaredHints,
    args_key: ArgsKey,
    duration: Duration,
}

/// Records the verdict, error type and status on the call's span, and one event per finding.
fn record_on_span(span: &Span, verdict: &Verdict, error_type: Option<&str>) {
    if span.is_none() {
        return;
    }
    span.record(semconv::VERDICT, verdict.label());
    if let Some(error_type) = error_type {
        span.record(semconv::ERROR_TYPE, error_type);
        span.record(semconv::OTEL_STATUS_CODE, "error");
    }
    for finding in &verdict.findings {
        finding_event(span, finding);
    }
}

/// One `hintaudit.finding` event inside `span`. Critical and warning findings are WARN events,
/// info findings INFO: never ERROR, which tracing-opentelemetry would turn into an error status
/// of a call that did not fail.
fn finding_event(span: &Span, f: &Finding) {
    macro_rules! finding {
        ($level:expr) => {
            tracing::event!(
                parent: span,
                $level,
                { semconv::FINDING_RULE } = f.rule.as_str(),
                { semconv::FINDING_HINT } = f.hint.spec_name(),
                { semconv::FINDING_SEVERITY } = f.severity.as_str(),
                { semconv::FINDING_CONFIDENCE } = f.confidence.as_str(),
                { semconv::FINDING_EVIDENCE } = f.evidence.as_str(),
                "hintaudit.finding"
            )
        };
    }
    match f.severity {
        Severity::Critical | Severity::Warning => finding!(tracing::Level::WARN),
        Severity::Info => finding!(tracing::Level::INFO),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{CallToolResult, ErrorCode};

    #[test]
    fn status_and_error_type() {
        let rows: [(
            Result<CallToolResponse, ErrorData>,
            CallStatus,
            Option<&str>,
        ); 4] = [
            (
                Ok(CallToolResult::success(vec![]).into()),
                CallStatus::Ok,
                None,
            ),
            (
                Ok(CallToolResult::error(vec![]).into()),
                CallStatus::ToolError,
                Some("tool_error"),
            ),
            (
                Err(ErrorData::invalid_params("bad", None)),
                CallStatus::ProtocolError,
                Some("-32602"),
            ),
            (
                Err(ErrorData::new(ErrorCode(-32000), "custom", None)),
                CallStatus::ProtocolError,
                Some("-32000"),
            ),
        ];
        for (result, status, error_type) in rows {
            let (s, e) = classify(&result);
            assert_eq!((s, e.as_deref()), (status, error_type), "{result:?}");
        }
    }

    #[test]
    fn session_id_comes_from_the_http_parts() {
        let mut extensions = Extensions::new();
        assert_eq!(session_id(&extensions), None);
        let (parts, ()) = http::Request::builder()
            .header("Mcp-Session-Id", "session-1")
            .body(())
            .unwrap()
            .into_parts();
        extensions.insert(parts);
        assert_eq!(session_id(&extensions), Some("session-1"));
    }

    #[test]
    fn finding_message_matches_semconv() {
        // The event message is spelled in the macro; keep it equal to the semconv name.
        assert_eq!(semconv::FINDING_EVENT, "hintaudit.finding");
    }
}
