//! Recorders: where finished calls and listings go (logs, metrics, traces, reports).
//!
//! A recorder is called synchronously at the end of every tool call and every tools/list,
//! on the task that served it, and once per tool the server learns at start-up. It must be
//! quick and must not fail: a recorder that ships data elsewhere queues it and counts what it
//! drops (`AuditStage::Export`).
//!
//! ```
//! use hintaudit_core::{AuditEvent, Recorder};
//! use std::sync::{Arc, atomic::{AtomicUsize, Ordering}};
//! let findings = Arc::new(AtomicUsize::new(0));
//! let seen = findings.clone();
//! let count = move |event: &AuditEvent<'_>| {
//!     if let AuditEvent::Call(report) = event {
//!         seen.fetch_add(report.verdict.findings.len(), Ordering::Relaxed);
//!     }
//! };
//! // closures are recorders; so is `()`, which records nothing.
//! fn takes(_: &impl Recorder) {}
//! takes(&count);
//! takes(&());
//! assert_eq!(findings.load(Ordering::Relaxed), 0);
//! ```

use std::time::Duration;

use crate::effect::Effect;
use crate::finding::Finding;
use crate::hints::DeclaredHints;
use crate::judge::Verdict;

/// How a tool call ended, as `hintaudit_tool_calls_total{status}` labels it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallStatus {
    /// The tool answered with a result that is not an error.
    Ok,
    /// The tool answered with `isError: true` (MCP: a tool execution error).
    ToolError,
    /// The request failed at the protocol level (unknown tool, invalid params, internal error).
    ProtocolError,
}

impl CallStatus {
    /// `ok`, `tool_error` or `protocol_error`.
    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Ok => "ok",
            CallStatus::ToolError => "tool_error",
            CallStatus::ProtocolError => "protocol_error",
        }
    }
}

/// One finished tool call with the judge's verdict.
#[derive(Debug, Clone, Copy)]
pub struct CallReport<'a> {
    /// The tool name as the client sent it.
    pub tool: &'a str,
    /// Whether the tool is one the server declares (label values use `__unknown__` otherwise).
    pub known_tool: bool,
    /// The hints declared for it (all unset for unknown tools).
    pub hints: DeclaredHints,
    /// How the call ended.
    pub status: CallStatus,
    /// Wall time of the call, from the start of `call_tool` to its answer.
    pub duration: Duration,
    /// What the call did.
    pub effect: &'a Effect,
    /// The judge's verdict, with the tool's current advice ([`Verdict::advice`]).
    pub verdict: &'a Verdict,
}

/// Something a recorder receives.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum AuditEvent<'a> {
    /// A tool call finished and was judged.
    Call(&'a CallReport<'a>),
    /// A tool was seen in a tools/list answer, with its listing findings (`hint_missing`,
    /// `hint_contradiction`, `hints_changed`).
    Listing {
        /// The tool.
        tool: &'a str,
        /// Its hints as listed.
        hints: DeclaredHints,
        /// Listing findings.
        findings: &'a [Finding],
    },
    /// Findings about a call settled after it answered: with a fleet's shared history, the
    /// repeat of a call is judged when the store answers (`idempotency_broken`), and a change
    /// of hints the fleet saw (`hints_changed`) when a listing's answer is back. The call
    /// itself was reported as [`AuditEvent::Call`] already (its counts, its other findings):
    /// recorders count these findings as they count a call's, and nothing else.
    Settled {
        /// The tool.
        tool: &'a str,
        /// Whether the server declares the tool.
        known_tool: bool,
        /// Its declared hints.
        hints: DeclaredHints,
        /// The findings, most severe first.
        findings: &'a [Finding],
    },
    /// A tool the server declares, learned at start-up from the server's own tool list
    /// (`HintAudit::learn_tools` in hintaudit-rmcp), before any client listed or called it.
    /// Not a listing: no findings, and a later listing with other hints is not a change from
    /// these. Metrics recorders declare the tool (its declared-hints gauge and its violation
    /// series at 0); the others ignore it.
    Declared {
        /// The tool.
        tool: &'a str,
        /// Its declared hints.
        hints: DeclaredHints,
    },
}

/// Receives audit events. Implemented by `()` (records nothing), by closures
/// `Fn(&AuditEvent)`, by [`LogRecorder`], by pairs `(A, B)` (both, in order), by `Option<R>`,
/// and by the
/// Prometheus and OpenTelemetry recorders of hintaudit-telemetry.
pub trait Recorder: Send + Sync + 'static {
    /// Records one event. Must not block for long and must not panic.
    fn record(&self, event: &AuditEvent<'_>);
}

impl Recorder for () {
    fn record(&self, _: &AuditEvent<'_>) {}
}

impl<F> Recorder for F
where
    F: Fn(&AuditEvent<'_>) + Send + Sync + 'static,
{
    fn record(&self, event: &AuditEvent<'_>) {
        self(event)
    }
}

impl<A: Recorder, B: Recorder> Recorder for (A, B) {
    fn record(&self, event: &AuditEvent<'_>) {
        self.0.record(event);
        self.1.record(event);
    }
}

/// `Some(r)` records as `r`; `None` records nothing.
impl<R: Recorder> Recorder for Option<R> {
    fn record(&self, event: &AuditEvent<'_>) {
        if let Some(r) = self {
            r.record(event)
        }
    }
}

impl<R: Recorder + ?Sized> Recorder for std::sync::Arc<R> {
    fn record(&self, event: &AuditEvent<'_>) {
        (**self).record(event)
    }
}

impl Recorder for Box<dyn Recorder> {
    fn record(&self, event: &AuditEvent<'_>) {
        (**self).record(event)
    }
}

/// Logs findings through `tracing`: critical as ERROR, warning as WARN, info as INFO (info
/// findings of listings at DEBUG, so a restart does not flood the log). After a call's
/// findings, the annotations the evidence supports ([`CallReport::suggestion`]): INFO when
/// the call had findings, DEBUG when they rest on advice alone. The default recorder.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogRecorder;

impl Recorder for LogRecorder {
    fn record(&self, event: &AuditEvent<'_>) {
        use crate::finding::Severity::*;
        let (findings, listing) = match event {
            AuditEvent::Call(r) => (r.verdict.findings.as_slice(), false),
            AuditEvent::Listing { findings, .. } => (*findings, true),
            AuditEvent::Settled { findings, .. } => (*findings, false),
            AuditEvent::Declared { .. } => return,
        };
        for f in findings {
            let (tool, rule, hint, conf, ev) = (
                f.tool.as_str(),
                f.rule.as_str(),
                f.hint.spec_name(),
                f.confidence.as_str(),
                f.evidence.as_str(),
            );
            match f.severity {
                Critical => {
                    tracing::error!(tool, rule, hint, confidence = conf, "hint violation: {ev}")
                }
                Warning => {
                    tracing::warn!(tool, rule, hint, confidence = conf, "hint violation: {ev}")
                }
                Info if listing => tracing::debug!(tool, rule, hint, "hint lint: {ev}"),
                Info => tracing::info!(tool, rule, hint, confidence = conf, "{ev}"),
            }
        }
        if let AuditEvent::Call(r) = event {
            crate::suggest::log_suggestion(r);
        }
    }
}
