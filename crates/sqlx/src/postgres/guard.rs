//! What finishes a wrapped statement's attribution when its stream is dropped and cannot
//! be finished (unwrapped statements: [`crate::execute::FinishOnDrop`]).

use crate::execute::{Attribution, StatementEnd};

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
