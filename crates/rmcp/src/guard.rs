//! [`guarded`]: how the layer runs each of its own steps (hints lookup, span maker, judge,
//! recorder) so that none of them can fail the audited call.
//!
//! A panic in a step is caught and counted in `hintaudit_audit_errors_total{stage}`
//! ([`hintaudit_core::stats`]); the call goes on and its answer reaches the client unchanged.
//!
//! [`guarded`]: crate::guard::guarded

use std::panic::{AssertUnwindSafe, catch_unwind};

use hintaudit_core::{AuditStage, stats};

/// Runs `f`, counting a panic at `stage` with `what` as the reason. `None` when it panicked.
pub(crate) fn guarded<T>(
    stage: AuditStage,
    what: &'static str,
    f: impl FnOnce() -> T,
) -> Option<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => Some(value),
        Err(_) => {
            stats().audit_error(stage, &what);
            None
        }
    }
}
