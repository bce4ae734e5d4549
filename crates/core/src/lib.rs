//! hintaudit-core: declared hints, observed effects, the judge and its policy.
//!
//! Hand the [`Judge`] a finished [`ToolCall`] (the tool's [`DeclaredHints`] and the
//! [`Effect`] it had) and read the [`Finding`]s of its [`Verdict`]. No I/O and no async:
//! hintaudit-rmcp, hintaudit-sqlx and the offline verifier observe calls and feed them in.
//!
//! ```
//! use hintaudit_core::*;
//! let judge = Judge::new(Policy::default());
//! // A "create" that declares itself idempotent but inserts a row each time.
//! let hints = DeclaredHints::new(Some(false), Some(false), Some(true), Some(false));
//! let mut effect = Effect::default();
//! effect.statements.push(StatementEffect::new(Operation::Insert, vec!["appointments".into()]));
//! effect.row_changes.push(RowChange {
//!     table: "appointments".into(), operation: RowOperation::Insert, statement: Some(0),
//!     committed: true, image: RowImage::Unknown, nested: None, row_id: None,
//! });
//! let args = serde_json::json!({"patient": 7});
//! let call = ToolCall { tool: "create_appointment", hints, arguments: Some(&args), effect: &effect };
//! assert!(judge.judge(&call).findings.is_empty()); // the first call is fine
//! let second = judge.judge(&call);                 // the repeat inserts again
//! assert_eq!(second.findings[0].rule, Rule::IdempotencyBroken);
//! ```
#![cfg_attr(test, allow(clippy::too_many_lines))]

/// Action metadata: the draft `io.modelcontextprotocol/action-metadata` a tool may declare.
mod action;
/// The closed world of `openWorldHint: false`, and the readings of that hint.
mod closed_world;
/// How complete a call's evidence is: pending and incomplete sources.
mod completeness;
/// `hintaudit.toml` and the builder that takes the same settings.
mod config;
/// The kinds of database audited, parsed from a URL's scheme.
mod database;
/// Observed effects disclosed in a tools/call result's `_meta` (`disclose_effects`).
mod disclose;
/// What one tool call did: statements, row changes, oracle observations, outbound, reported.
mod effect;
/// Enforce mode: what a call may not do, and the record of a refusal.
mod enforce;
/// An effect read through the policy, by evidence source, before any hint is consulted.
mod facts;
/// File effects: how a watched path changed, judged on content (verify and the proxy).
pub mod files;
/// Findings: rules, severities, confidence, advice.
mod finding;
/// The four tri-state hints a tool declares, and what a client assumes of them.
mod hints;
/// The idempotency history: which (tool, arguments) pairs ran, and which tables changed since.
mod history;
/// The judge: the facts of a call against its declared hints.
mod judge;
/// Outbound requests: path templates, GraphQL operations, what a request asks, read-only
/// requests.
mod outbound;
/// Policy: what the judge watches and when it gives advice.
mod policy;
/// Recorders: where finished calls and listings go.
mod record;
/// What the judge makes of enforce mode's refusals: `enforced`, and the hint's own rule.
mod refusals;
/// The task-local call scope that attributes effects to the tool call running.
mod scope;
/// Span and event attribute names, in one place.
pub mod semconv;
/// Process-wide audit counters: unattributed statements and audit failures.
mod stats;
/// Suggested annotations: the hints the evidence supports.
mod suggest;
mod touched;

pub use action::{
    ACTION_METADATA_KEY, ActionMetadata, ActionOutcome, InputDestination, NOT_BENIGN_OUTCOME,
    OUTBOUND_DESTINATION,
};
pub use closed_world::{ClosedWorld, ClosedWorldError, DEFAULT_CLOSED_WORLD, OpenWorldReading};
pub use completeness::{Completeness, EvidenceSource, EvidenceStatus};
pub use config::{
    CONFIG_ENV, Config, ConfigError, DEFAULT_HISTORY_TTL, DEFAULT_LABEL_MAX_TABLES,
    DEFAULT_LABEL_MAX_TOOLS, HISTORY_KEY_ENV, HISTORY_URL_SCHEMES, HistorySecret,
    MIN_HISTORY_KEY_LEN, Mode, SETTINGS, SharedHistorySettings,
};
pub use database::{DatabaseKind, DatabaseUrl, DatabaseUrlError};
pub use disclose::{
    DISCLOSURE_META_KEY, Disclosure, FindingDisclosure, HostDisclosure, TableDisclosure,
    TargetDisclosure,
};
pub use effect::{
    Effect, ExplicitChange, ExplicitEffect, ImagedUpdates, ObservationSource, Operation, RowChange,
    RowImage, RowOperation, StatementEffect, StatementOutcome, TableWrites, TransactionObservation,
};
pub use enforce::{Enforcement, Refusal, RefusedBy};
pub use facts::{Evidence, Facts, summarize};
pub use facts::{StateTouched, state_touched};
pub use finding::{Advice, Confidence, Finding, Rule, Severity};
pub use hints::{AnnotationsForm, DeclaredHints, EffectiveHints, Hint, tri_label};
pub use history::{
    ArgsHasher, ArgsKey, History, MAX_SUMMARY_BYTES, PendingRepeat, Previous, Repeat, SharedAnswer,
    SharedCall,
};
pub use judge::{
    Judge, MAX_TRACKED_TABLES, MAX_TRACKED_TOOLS, ToolCall, Verdict, fleet_hints_changed,
    lint_action, lint_hints,
};
pub use outbound::{
    BUILTIN_READ_ONLY_REQUESTS, GraphqlKind, GraphqlOperation, OutboundAnswer, OutboundReach,
    ReadOnlyRequests, RequestChange, RequestPattern, RequestPatternError, path_template,
};
pub use policy::{DEFAULT_ADVICE_AFTER_CALLS, DEFAULT_HISTORY_CAPACITY, Policy, normalize_table};
pub use record::{AuditEvent, CallReport, CallStatus, LogRecorder, Recorder};
pub use scope::{CallEffects, CallScope, Deferred};
pub use stats::{AuditStage, AuditStats, stats};
pub use suggest::{SuggestedHints, SuggestionEvidence};
pub use touched::StateKey;

/// Table-driven tests of the judge, one row per (hints, effect) case.
#[cfg(test)]
mod tests;
