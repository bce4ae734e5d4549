//! One case of a tool: its setup SQL, then one call (two for tools declaring idempotentHint
//! true), each between two snapshots and judged.

use std::sync::Arc;
use std::time::Duration;

use hintaudit_core::files::FileSource;
use hintaudit_core::{Judge, OutboundReach, ToolCall};
use serde_json::Value;

use super::Verifier;
use super::attempts::Run;
use super::evidence::Judged;
use super::session::Session;
use super::state::State;
use super::watch::Watch;
use crate::client::{CallOutcome, ToolInfo};
use crate::db::Snapshotter;
use crate::effect::effect_of;
use crate::error::VerifyError;
use crate::files::FileChange;
use crate::report::{CallRecord, CaseReport};
use crate::snapshot::{Diff, Snapshot};

/// How often the database check looks for the server's session while a call runs.
const POLL: Duration = Duration::from_millis(20);

/// How a case ended, beyond its report.
pub(super) enum Ended {
    /// Every call returned.
    Done,
    /// A call timed out or lost the server; the session was restarted.
    Lost(String),
    /// A call lost the server and the restart failed: the run stops.
    Stop(VerifyError),
}

/// What one call did: the requests it sent, how it ended, the diff of its snapshots, what
/// it changed in the watched trees.
struct Observed {
    sent: Vec<OutboundReach>,
    outcome: CallOutcome,
    diff: Diff,
    files: Vec<FileChange>,
}

impl Verifier {
    /// Runs one case: its setup SQL, then one call (two for tools declaring idempotentHint
    /// true), each between snapshots, each judged by a judge fresh for the case (setup SQL
    /// between cases is no write its history sees): the second call is a repeat in the
    /// judge's own history, as in the proxy, for rows and files alike.
    pub(super) async fn run_case(
        &self,
        session: &mut Session,
        state: &mut State<'_>,
        watch: &mut Watch,
        tool: &ToolInfo,
        run: Run,
        behaviour: &mut Vec<Judged>,
    ) -> Result<(CaseReport, Ended), VerifyError> {
        run_setup(&mut state.db, tool, &run).await?;
        let repeat = tool.hints.read_only != Some(true) && tool.hints.idempotent == Some(true);
        let judge = Judge::new(self.policy.clone());
        let mut before = state.db.take().await?;
        let mut calls = Vec::new();
        let mut ended = Ended::Done;
        for _ in 0..if repeat { 2 } else { 1 } {
            if let Some(files) = state.files.as_deref_mut() {
                files.before_call().await?;
            }
            let (mut observed, after) = observe_call(
                session,
                &mut state.db,
                watch,
                tool,
                &run.arguments,
                &before,
                &mut ended,
            )
            .await?;
            if let Some(files) = state.files.as_deref_mut() {
                let (d, rows) = files.after_call().await?;
                observed.files = d.changes;
                observed.diff.tables.extend(rows);
            }
            let judged = judge_call(&judge, tool, &run.arguments, &observed);
            behaviour.extend(judged);
            calls.push(record(observed, &mut ended));
            before = after;
            if !matches!(ended, Ended::Done) {
                break;
            }
        }
        let case = CaseReport {
            label: run.label,
            from_file: run.from_file,
            made_up: run.made_up,
            generated: run.generated,
            calls,
        };
        Ok((case, ended))
    }
}

/// The case's setup SQL, before its calls; the next snapshot is taken afresh.
async fn run_setup(snaps: &mut Snapshotter, tool: &ToolInfo, run: &Run) -> Result<(), VerifyError> {
    for script in &run.setup {
        snaps.db().execute_script(script).await.map_err(|e| {
            VerifyError::db(&format!("setup SQL of {} / {}", tool.name, run.label), e)
        })?;
    }
    if !run.setup.is_empty() {
        snaps.invalidate();
    }
    Ok(())
}

/// One call between `before` and the snapshot after it (returned), with the database check
/// watching for the server's session while it runs. A call after which the run must stop
/// sets `ended`.
async fn observe_call(
    session: &mut Session,
    snaps: &mut Snapshotter,
    watch: &mut Watch,
    tool: &ToolInfo,
    args: &Value,
    before: &Snapshot,
    ended: &mut Ended,
) -> Result<(Observed, Arc<Snapshot>), VerifyError> {
    let files = watch.before_call(tool);
    let pid = session.server_pid();
    let (sent, result) = {
        let call = session.call(&tool.name, args);
        tokio::pin!(call);
        // At once (a session a server keeps is there between calls), then every POLL.
        let mut wait = Duration::ZERO;
        loop {
            tokio::select! {
                r = &mut call => break r,
                _ = tokio::time::sleep(wait), if !watch.settled() => {
                    watch.poll(snaps.db(), pid).await;
                    wait = POLL;
                }
            }
        }
    };
    let outcome = match result {
        Ok(o) => o,
        Err((o, e)) => {
            *ended = Ended::Stop(e);
            o
        }
    };
    let after = snaps.take().await?;
    let diff = Diff::between(before, &after);
    if let Some(t) = diff.tables.first() {
        watch.saw_change(&tool.name, &t.table);
    } else if outcome == CallOutcome::Ok {
        watch.changed_nothing_here(&tool.name, &files);
    }
    let observed = Observed {
        sent,
        outcome,
        diff,
        files: Vec::new(),
    };
    Ok((observed, after))
}

/// The judge's verdict on one call's effect: its diff, the requests it sent and the files it
/// changed (seen by snapshots: [`FileSource::Snapshot`]). The judge's history tells a
/// repeat of the call before it.
fn judge_call(judge: &Judge, tool: &ToolInfo, args: &Value, observed: &Observed) -> Option<Judged> {
    let mut effect = effect_of(&observed.diff);
    effect.outbound = observed.sent.clone();
    effect.files = observed.files.clone();
    effect.files_source = FileSource::Snapshot;
    let call = ToolCall {
        tool: &tool.name,
        hints: tool.hints,
        arguments: Some(args),
        effect: &effect,
    };
    let verdict = super::evidence::verdict(judge, tool, &call);
    let moved = crate::sequences::moved(&observed.diff.tables);
    Judged::call(tool, verdict.findings, effect, &moved)
}

/// The call's record in the report; a lost server ends the case (`ended`), unless the
/// run already stops.
fn record(observed: Observed, ended: &mut Ended) -> CallRecord {
    let error = match observed.outcome {
        CallOutcome::Ok => None,
        CallOutcome::Error(e) => Some(e),
        CallOutcome::Lost(why) => {
            if matches!(ended, Ended::Done) {
                *ended = Ended::Lost(why.clone());
            }
            Some(format!("no result: {why}"))
        }
    };
    CallRecord {
        error,
        changes: observed.diff.tables,
        outbound: observed.sent,
        files: observed.files,
    }
}
