//! hintaudit-core: declared hints, observed effects, the judge and its policy.
//!
//! No I/O and no async: the rmcp layer, the audited sqlx pool and the offline verifier feed
//! [`Effect`]s in and take [`Finding`]s out. The one piece of runtime here is the task-local
//! [`CallScope`], shared by the crates that open it (hintaudit-rmcp) and read it
//! (hintaudit-sqlx).
//!
//! ```
//! use hintaudit_core::*;
//! let judge = Judge::new(Policy::default());
//! // A "create" that declares itself idempotent but inserts a row each time.
//! let hints = DeclaredHints { read_only: Some(false), destructive: Some(false), idempotent: Some(true), open_world: Some(false) };
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

mod effect;
mod facts;
mod finding;
mod hints;
mod history;
mod judge;
mod policy;
mod record;
mod scope;
pub mod semconv;
mod stats;

pub use effect::{
    Effect, ExplicitChange, ExplicitEffect, Operation, OutboundReach, RowChange, RowImage,
    RowOperation, StatementEffect, StatementOutcome, TableWrites, TransactionObservation,
};
pub use facts::{Evidence, Facts, summarize};
pub use finding::{Advice, Confidence, Finding, Rule, Severity};
pub use hints::{DeclaredHints, EffectiveHints, Hint, tri_label};
pub use history::{ArgsHasher, ArgsKey, History, Repeat};
pub use judge::{Judge, MAX_TRACKED_TABLES, MAX_TRACKED_TOOLS, ToolCall, Verdict, lint_hints};
pub use policy::{DEFAULT_ADVICE_AFTER_CALLS, DEFAULT_HISTORY_CAPACITY, Policy, normalize_table};
pub use record::{AuditEvent, CallReport, CallStatus, LogRecorder, Recorder};
pub use scope::{CallEffects, CallScope};
pub use stats::{AuditStage, AuditStats, stats};

#[cfg(test)]
mod tests;
