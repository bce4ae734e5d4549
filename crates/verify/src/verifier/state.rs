//! The server's state as verify watches it: the database's snapshots and the watched
//! trees, how they are opened, putting them back between tools (`--reset`), and the advice
//! withheld when no state was found.

use super::Verifier;
use super::advice;
use super::reset::DatabaseCopy;
use super::session::Session;
use super::watch::Watch;
use crate::client::ToolInfo;
use crate::db::{Database, Snapshotter};
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
    /// The watched trees' pristine snapshot, when something is watched; a usage error when
    /// neither a database nor a directory is given.
    pub(super) fn start_watching(&self) -> Result<Option<FileWatch>, VerifyError> {
        match (&self.database, self.watch.is_empty()) {
            (_, false) => {
                FileWatch::start(&self.watch, &self.ignored_paths, &self.policy).map(Some)
            }
            (Some(_), true) => Ok(None),
            (None, true) => Err(VerifyError::Usage(
                "give --database URL, --watch DIR, or both".into(),
            )),
        }
    }

    /// Connects to the database, takes the first snapshot (an error when it watches no
    /// table) and starts the database check. Without a database (files only), an empty
    /// in-memory SQLite database stands in, so that the tool loop has one shape: it has no
    /// table to change, no value to draw, and the check looks at nothing.
    pub(super) async fn open_database(
        &self,
        session: &Session,
        database: Option<&str>,
        shown_db: Option<&str>,
    ) -> Result<(Snapshotter, Watch), VerifyError> {
        let Some(database) = database else {
            let db = Database::connect("sqlite::memory:").await?;
            return Ok((Snapshotter::new(db, self.policy.clone()), Watch::default()));
        };
        let db = Database::connect(database).await?;
        let mut snaps =
            Snapshotter::new(db, self.policy.clone()).with_schemas(self.schemas.clone());
        let first = snaps.take().await?;
        Watch::require_tables(first.tables.len(), shown_db.unwrap_or(database))?;
        let mut watch = Watch::new(session.spec(), snaps.db()).await;
        watch.poll(snaps.db(), session.server_pid()).await;
        Ok((snaps, watch))
    }

    /// No advice loosening readOnlyHint or destructiveHint when the server's state was not
    /// found: the database check did not confirm the database, and nothing is watched
    /// (`docs/design.md#file-effects`). Suggestions are made again without it.
    pub(super) fn withhold_unseen(
        &self,
        reports: &mut [ToolReport],
        tools: &[ToolInfo],
        check: &str,
    ) {
        if !self.watch.is_empty() || check.starts_with("confirmed") {
            return;
        }
        let verdict = check.split(':').next().unwrap_or(check);
        let why = format!(
            "the database check is {verdict} and no directory is watched (--watch): the \
             server's writes may go where verify does not look"
        );
        advice::withhold_unseen(reports, &why);
        if self.suggest {
            for (r, t) in reports.iter_mut().filter_map(|r| {
                let t = tools.iter().find(|t| t.name == r.name)?;
                Some((r, t))
            }) {
                r.suggestion = crate::suggest::suggest(t, r);
            }
        }
    }

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
