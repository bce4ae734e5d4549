//! The server's state as verify watches it: the database's snapshots and the watched
//! trees, and putting them back between tools (`--reset`).

use super::Verifier;
use super::reset::DatabaseCopy;
use super::session::Session;
use crate::db::Snapshotter;
use crate::error::VerifyError;
use crate::files::FileWatch;
use crate::report::ToolReport;

/// What verify snapshots around each call.
pub(super) struct State<'f> {
    /// The database's snapshots (an empty in-memory database when none is given).
    pub db: Snapshotter,
    /// The watched trees, when `--watch` names any.
    pub files: Option<&'f mut FileWatch>,
}

impl Verifier {
    /// Before the next tool, with `--reset`, after `last` (the tool before it): the watched
    /// trees put back when they differ from their pristine snapshot, and the database copy
    /// made again when `last` changed it (`reset`). Returns whether the database was.
    pub(super) async fn reset_between(
        &self,
        session: &mut Session,
        state: &mut State<'_>,
        reset: Option<&DatabaseCopy>,
        last: Option<&ToolReport>,
    ) -> Result<bool, VerifyError> {
        let Some(last) = last.filter(|_| self.reset) else {
            return Ok(false);
        };
        if let Some(files) = state.files.as_deref_mut()
            && files.changed_since_start()
        {
            files.restore()?;
        }
        match reset.filter(|_| self.changed_database(last)) {
            Some(copy) => {
                self.reset_copy(session, &mut state.db, copy).await?;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}
