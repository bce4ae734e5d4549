//! One tool: its argument sets (from the cases file or generated), each call between two
//! snapshots, the judge's verdict, and the tool's status.

use hintaudit_core::{Finding, lint_action, lint_hints};

use super::Verifier;
use super::advice::advice;
use super::attempts::Run;
use super::case::Ended;
use super::evidence::{Judged, merge};
use super::session::Session;
use super::state::State;
use super::watch::Watch;
use crate::client::ToolInfo;
use crate::error::VerifyError;
use crate::report::{CallRecord, CaseReport, ToolReport, ToolStatus, is_behaviour_rule};

/// What a tool's attempts ran: its cases, their judged calls, notes about them, and the
/// error that stops the run, if one does.
#[derive(Default)]
struct Ran {
    cases: Vec<CaseReport>,
    behaviour: Vec<Judged>,
    notes: Vec<String>,
    stop: Option<VerifyError>,
}

impl Verifier {
    /// Verifies one tool. `Ok((report, Some(e)))` when the run must stop after it.
    pub(super) async fn verify_tool(
        &self,
        session: &mut Session,
        state: &mut State<'_>,
        watch: &mut Watch,
        tool: &ToolInfo,
    ) -> Result<(ToolReport, Option<VerifyError>), VerifyError> {
        let mut notes = Vec::new();
        let files = state.files.as_deref();
        let (attempts, no_attempt) = self
            .attempts(&mut state.db, files, tool, &mut notes)
            .await?;
        let mut ran = self
            .run_attempts(session, state, watch, tool, attempts)
            .await?;
        notes.append(&mut ran.notes);
        let not_exercised = not_exercised(&ran.cases, no_attempt);
        let findings = findings(
            listing_findings(tool),
            merge(tool, &self.policy, &ran.behaviour),
        );
        let status = status(&findings, not_exercised);
        let (advice, advice_basis) = if status == ToolStatus::Passed {
            let blind: Vec<&str> = state.db.blind_spots().collect();
            let watches_outbound = session.watches_outbound();
            let (advice, basis, withheld) =
                advice(tool, &ran.cases, &self.policy, watches_outbound, &blind);
            notes.extend(withheld);
            (advice, basis)
        } else {
            (Vec::new(), Vec::new())
        };
        let mut report = ToolReport {
            name: tool.name.clone(),
            hints: tool.hints,
            action: tool.action,
            status,
            findings,
            advice,
            advice_basis,
            notes,
            cases: ran.cases,
            suggestion: None,
        };
        if self.suggest {
            report.suggestion = crate::suggest::suggest(tool, &report);
        }
        Ok((report, ran.stop))
    }

    /// Runs the attempts in order until one exercises the tool; a call that loses the
    /// server ends them (with a note saying so).
    async fn run_attempts(
        &self,
        session: &mut Session,
        state: &mut State<'_>,
        watch: &mut Watch,
        tool: &ToolInfo,
        attempts: Vec<Vec<Run>>,
    ) -> Result<Ran, VerifyError> {
        let mut ran = Ran::default();
        for attempt in attempts {
            let first = ran.cases.len();
            for run in attempt {
                let (case, ended) = self
                    .run_case(session, state, watch, tool, run, &mut ran.behaviour)
                    .await?;
                ran.cases.push(case);
                match ended {
                    Ended::Done => {}
                    Ended::Lost(why) => {
                        ran.notes.push(format!(
                            "a call got no result ({why}); the server was restarted and the \
                             tool's remaining cases skipped"
                        ));
                        return Ok(ran);
                    }
                    Ended::Stop(e) => {
                        ran.notes
                            .push(format!("a call got no result and the run stopped: {e}"));
                        ran.stop = Some(e);
                        return Ok(ran);
                    }
                }
            }
            let calls = ran.cases[first..].iter().flat_map(|c| c.calls.iter());
            if calls.clone().any(exercised) {
                break;
            }
        }
        Ok(ran)
    }
}

/// The listing's findings (hints missing or contradictory, a null hint said as such; action
/// metadata missing or contradictory).
fn listing_findings(tool: &ToolInfo) -> Vec<Finding> {
    let mut findings = lint_hints(&tool.name, tool.hints);
    for f in &mut findings {
        if tool.null_hints.contains(&f.hint) {
            f.evidence = format!("{} is null (treated as unset); {}", f.hint, f.evidence);
        }
    }
    if let Some(action) = tool.action {
        findings.extend(lint_action(&tool.name, tool.hints, action));
    }
    findings
}

/// The listing's findings and the calls' (one per rule and hint), most severe first.
fn findings(mut findings: Vec<Finding>, behaviour: Vec<Finding>) -> Vec<Finding> {
    for f in behaviour {
        if !findings
            .iter()
            .any(|x| x.rule == f.rule && x.hint == f.hint)
        {
            findings.push(f);
        }
    }
    findings.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.rule.cmp(&b.rule)));
    findings
}

/// Why no call exercised the tool (no attempt, every call failed), or `None` when one did.
fn not_exercised(cases: &[CaseReport], no_attempt: Option<String>) -> Option<String> {
    let all_calls = || cases.iter().flat_map(|c| c.calls.iter());
    if all_calls().any(exercised) {
        return None;
    }
    no_attempt.or_else(|| {
        Some(match all_calls().find_map(|c| c.error.clone()) {
            Some(e) => format!(
                "no call ran: every call failed without a change or an outbound \
                 request (first error: {e})"
            ),
            None => "no case to run".to_owned(),
        })
    })
}

/// Failed on a behaviour finding, else not exercised when no call was, else passed.
fn status(findings: &[Finding], not_exercised: Option<String>) -> ToolStatus {
    let failed = findings.iter().any(|f| is_behaviour_rule(f.rule));
    match (failed, not_exercised) {
        (true, _) => ToolStatus::Failed,
        (false, Some(why)) => ToolStatus::NotExercised(why),
        (false, None) => ToolStatus::Passed,
    }
}

/// Whether a call shows something about its tool: it succeeded, or it failed after changing
/// the database or a watched file or sending a request (a notification refused by the
/// recording proxy is a tool error, and still the tool's doing).
fn exercised(c: &CallRecord) -> bool {
    c.error.is_none() || c.changed() || !c.outbound.is_empty()
}
