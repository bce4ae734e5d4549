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

use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use crate::effect::Effect;
use crate::finding::Finding;
use crate::hints::{AnnotationsForm, DeclaredHints};
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
    /// Corrected annotations (`correct_hints`): a finding at warning or above made the layer
    /// serve this tool's hints tightened to what the evidence shows, in every tools/list, until
    /// the correction is lifted. Sent when a correction starts or tightens further. Metrics
    /// recorders count it (`hintaudit_tool_hints_corrected_total{tool}`); [`LogRecorder`]
    /// logs it at WARN.
    Corrected {
        /// The tool.
        tool: &'a str,
        /// Its hints as the server declares them.
        hints: DeclaredHints,
        /// The hints served instead.
        corrected: DeclaredHints,
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

/// Logs findings through `tracing`: critical as ERROR, warning as WARN, info as INFO. The
/// listing lints of a tools/list (`hint_missing`, `hint_contradiction`) are logged at INFO the
/// first time this recorder (and its clones) sees the tool listed with those hints, and at
/// DEBUG when a listing repeats them (every session lists the tools; at most
/// [`LogRecorder::MAX_LISTED`] tool and hint sets are remembered, later ones go to DEBUG). After
/// a call's findings, the annotations the evidence supports ([`CallReport::suggestion`]), in
/// the recorder's [`AnnotationsForm`]: INFO when the call had findings, DEBUG when they rest
/// on advice alone. The default recorder.
///
/// ```
/// use hintaudit_core::{AnnotationsForm, LogRecorder};
/// // A Rust server the layer wraps: rmcp's attribute text (the default).
/// let rust = LogRecorder::default();
/// // A server in any language, behind `hintaudit proxy`: MCP's JSON annotations.
/// let any = LogRecorder::default().with_annotations_form(AnnotationsForm::McpJson);
/// assert_eq!(any.annotations_form(), AnnotationsForm::McpJson);
/// assert_eq!(rust.annotations_form(), AnnotationsForm::RmcpAttribute);
/// ```
#[derive(Debug, Clone, Default)]
pub struct LogRecorder {
    form: AnnotationsForm,
    listed: Arc<Mutex<HashSet<(String, DeclaredHints)>>>,
}

impl LogRecorder {
    /// Most (tool, hints) pairs whose listing lints a recorder remembers as logged at INFO.
    pub const MAX_LISTED: usize = 10_000;

    /// The recorder with suggestions written in `form`.
    pub fn with_annotations_form(mut self, form: AnnotationsForm) -> Self {
        self.form = form;
        self
    }

    /// The form suggestions are written in.
    pub fn annotations_form(&self) -> AnnotationsForm {
        self.form
    }

    /// Whether `tool` is listed with `hints` for the first time (then remembered).
    fn first_listing(&self, tool: &str, hints: DeclaredHints) -> bool {
        let mut listed = self.listed.lock();
        let key = (tool.to_owned(), hints);
        if listed.contains(&key) || listed.len() >= Self::MAX_LISTED {
            return false;
        }
        listed.insert(key)
    }
}

impl Recorder for LogRecorder {
    fn record(&self, event: &AuditEvent<'_>) {
        let (findings, lint_level) = match event {
            AuditEvent::Call(r) => (r.verdict.findings.as_slice(), None),
            AuditEvent::Listing {
                tool,
                hints,
                findings,
            } => {
                let first = !findings.is_empty() && self.first_listing(tool, *hints);
                let level = if first {
                    tracing::Level::INFO
                } else {
                    tracing::Level::DEBUG
                };
                (*findings, Some(level))
            }
            AuditEvent::Settled { findings, .. } => (*findings, None),
            AuditEvent::Declared { .. } => return,
            AuditEvent::Corrected {
                tool,
                hints,
                corrected,
            } => {
                let (declared, served) = (hints.compact(), corrected.compact());
                tracing::warn!(
                    tool,
                    declared,
                    served,
                    "serving corrected annotations: the tool's findings contradict its hints"
                );
                return;
            }
        };
        for f in findings {
            log_finding(f, lint_level);
        }
        if let AuditEvent::Call(r) = event {
            log_suggestion(r, self.form);
        }
    }
}

/// Logs one finding at its severity's level; an info finding of a listing (a lint) at
/// `lint_level`.
fn log_finding(f: &Finding, lint_level: Option<tracing::Level>) {
    use crate::finding::Severity::*;
    let (tool, rule, hint, conf, ev) = (
        f.tool.as_str(),
        f.rule.as_str(),
        f.hint.spec_name(),
        f.confidence.as_str(),
        f.evidence.as_str(),
    );
    match (f.severity, lint_level) {
        (Critical, _) => {
            tracing::error!(tool, rule, hint, confidence = conf, "hint violation: {ev}")
        }
        (Warning, _) => {
            tracing::warn!(tool, rule, hint, confidence = conf, "hint violation: {ev}")
        }
        (Info, Some(tracing::Level::INFO)) => tracing::info!(tool, rule, hint, "hint lint: {ev}"),
        (Info, Some(_)) => tracing::debug!(tool, rule, hint, "hint lint: {ev}"),
        (Info, None) => tracing::info!(tool, rule, hint, confidence = conf, "{ev}"),
    }
}

/// Logs a call's suggestion, if any, in `form` (see [`LogRecorder`]).
fn log_suggestion(r: &CallReport<'_>, form: AnnotationsForm) {
    let Some(s) = r.suggestion() else { return };
    let (tool, because) = (r.tool, s.evidence.join("; "));
    let annotations = s.annotations(form);
    if r.verdict.findings.is_empty() {
        tracing::debug!(tool, annotations = %annotations, "suggested annotations: {because}");
    } else {
        tracing::info!(tool, annotations = %annotations, "suggested annotations: {because}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool's listing lints are said at INFO once per hint set, however often it is listed.
    #[test]
    fn a_listing_is_first_once_per_tool_and_hints() {
        let log = LogRecorder::default();
        let clone = log.clone();
        let unset = DeclaredHints::default();
        let read_only = DeclaredHints::new(Some(true), None, None, None);
        let rows = [
            ("lookup", unset, true),
            ("lookup", unset, false),
            ("other", unset, true),
            ("lookup", read_only, true),
            ("lookup", unset, false),
        ];
        for (i, (tool, hints, first)) in rows.into_iter().enumerate() {
            // Clones share what was said: every session's audit holds a clone.
            let r = if i % 2 == 0 { &log } else { &clone };
            assert_eq!(r.first_listing(tool, hints), first, "row {i}");
        }
    }
}
