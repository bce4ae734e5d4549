//! What finishes a statement's attribution when its stream or future is dropped before the
//! statement ended.

use hintaudit_core::StatementOutcome;

use crate::classify::is_dml;
use crate::execute::{Attribution, StatementEnd};

/// Finishes an unwrapped statement whose stream or future was dropped before it ended: the
/// caller stopped reading, which is no failure of the statement.
pub(super) struct Guard<'a> {
    pub(super) att: &'a Attribution,
    /// Rows affected so far.
    pub(super) rows: u64,
    pub(super) armed: bool,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        if self.armed {
            let att = self.att;
            att.finish(StatementEnd {
                outcome: StatementOutcome::Ok,
                rows_affected: is_dml(att.class.effect.operation).then_some(self.rows),
                observed: false,
            });
        }
    }
}

/// Finishes a wrapped statement as failed when its stream was dropped and could not be
/// finished (no tokio runtime to finish it on): sqlx rolls back the oracle's transaction.
pub(super) struct RolledBack<'a> {
    pub(super) att: &'a Attribution,
    pub(super) armed: bool,
}

impl Drop for RolledBack<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.att.finish(StatementEnd::FAILED);
        }
    }
}
