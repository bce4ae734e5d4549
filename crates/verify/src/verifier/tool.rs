//! One tool: its argument sets (from the cases file or generated), each call between two
//! snapshots, the judge's verdict, and the tool's status.

use std::time::Duration;

use hintaudit_core::{Judge, Policy, ToolCall, lint_hints};
use serde_json::{Map, Value};

use super::Verifier;
use super::advice::advice;
use super::evidence::{Judged, merge};
use super::session::Session;
use super::watch::Watch;
use crate::arguments::{self, MAX_GENERATED_CASES, Plan};
use crate::client::{CallOutcome, ToolInfo};
use crate::db::{Database, Snapshotter};
use crate::effect::effect_of;
use crate::error::VerifyError;
use crate::ids::id_sources;
use crate::report::{CallRecord, CaseReport, ToolReport, ToolStatus, is_behaviour_rule};
use crate::snapshot::Diff;

/// How many database values an id-like field is tried with before a tool whose calls all
/// fail is reported as not exercised.
pub const ID_CANDIDATES: usize = 3;

/// How often the database check looks for the server's session while a call runs.
const POLL: Duration = Duration::from_millis(20);

/// One case to run.
struct Run {
    label: String,
    from_file: bool,
    setup: Vec<String>,
    arguments: Value,
    made_up: Vec<String>,
    generated: Vec<(String, String)>,
}

/// How a case ended, beyond its report.
enum Ended {
    /// Every call returned.
    Done,
    /// A call timed out or lost the server; the session was restarted.
    Lost(String),
    /// A call lost the server and the restart failed: the run stops.
    Stop(VerifyError),
}

impl Verifier {
    /// Verifies one tool. `Ok((report, Some(e)))` when the run must stop after it.
    pub(super) async fn verify_tool(
        &self,
        session: &mut Session,
        snaps: &mut Snapshotter,
        watch: &mut Watch,
        tool: &ToolInfo,
    ) -> Result<(ToolReport, Option<VerifyError>), VerifyError> {
        let mut findings = lint_hints(&tool.name, tool.hints);
        for f in &mut findings {
            if tool.null_hints.contains(&f.hint) {
                f.evidence = format!("{} is null (treated as unset); {}", f.hint, f.evidence);
            }
        }
        let mut notes = Vec::new();
        let (attempts, mut not_exercised) = self.attempts(snaps, tool, &mut notes).await?;

        let mut cases: Vec<CaseReport> = Vec::new();
        let mut behaviour: Vec<Judged> = Vec::new();
        let mut stop = None;
        'attempts: for attempt in attempts {
            let first = cases.len();
            for run in attempt {
                let (case, ended) = self
                    .run_case(session, snaps, watch, tool, run, &mut behaviour)
                    .await?;
                cases.push(case);
                match ended {
                    Ended::Done => {}
                    Ended::Lost(why) => {
                        notes.push(format!(
                            "a call got no result ({why}); the server was restarted and the \
                             tool's remaining cases skipped"
                        ));
                        break 'attempts;
                    }
                    Ended::Stop(e) => {
                        notes.push(format!("a call got no result and the run stopped: {e}"));
                        stop = Some(e);
                        break 'attempts;
                    }
                }
            }
            let exercised = cases[first..]
                .iter()
                .flat_map(|c| c.calls.iter())
                .any(exercised);
            if exercised {
                break;
            }
        }

        let all_calls = || cases.iter().flat_map(|c| c.calls.iter());
        if !all_calls().any(exercised) {
            not_exercised = not_exercised.or_else(|| {
                Some(match all_calls().find_map(|c| c.error.clone()) {
                    Some(e) => format!(
                        "no call ran: every call failed without a change or an outbound \
                         request (first error: {e})"
                    ),
                    None => "no case to run".to_owned(),
                })
            });
        } else {
            not_exercised = None;
        }
        for f in merge(tool, &self.policy, &behaviour) {
            if !findings
                .iter()
                .any(|x| x.rule == f.rule && x.hint == f.hint)
            {
                findings.push(f);
            }
        }
        findings.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.rule.cmp(&b.rule)));
        let failed = findings.iter().any(|f| is_behaviour_rule(f.rule));
        let status = match (failed, not_exercised) {
            (true, _) => ToolStatus::Failed,
            (false, Some(why)) => ToolStatus::NotExercised(why),
            (false, None) => ToolStatus::Passed,
        };
        let (advice, advice_basis) = if status == ToolStatus::Passed {
            let blind: Vec<&str> = snaps.blind_spots().collect();
            let (advice, basis, withheld) = advice(
                tool,
                &cases,
                &self.policy,
                session.watches_outbound(),
                &blind,
            );
            notes.extend(withheld);
            (advice, basis)
        } else {
            (Vec::new(), Vec::new())
        };
        let report = ToolReport {
            name: tool.name.clone(),
            hints: tool.hints,
            status,
            findings,
            advice,
            advice_basis,
            notes,
            cases,
            suggestion: None,
        };
        let report = if self.suggest {
            let suggestion = crate::suggest::suggest(tool, &report);
            ToolReport {
                suggestion,
                ..report
            }
        } else {
            report
        };
        Ok((report, stop))
    }

    /// The attempts for a tool, run in order until one exercises it (a call succeeds or
    /// writes): the cases file is one attempt; generated arguments are one attempt per
    /// database value drawn for the id-like fields (the smallest first). With no attempt,
    /// the reason.
    async fn attempts(
        &self,
        snaps: &mut Snapshotter,
        tool: &ToolInfo,
        notes: &mut Vec<String>,
    ) -> Result<(Vec<Vec<Run>>, Option<String>), VerifyError> {
        let file_runs: Vec<Run> = self
            .cases
            .for_tool(&tool.name)
            .enumerate()
            .map(|(i, c)| Run {
                label: c.name.clone().unwrap_or_else(|| format!("case {}", i + 1)),
                from_file: true,
                setup: c.setup.clone(),
                arguments: c.arguments.clone(),
                made_up: Vec::new(),
                generated: Vec::new(),
            })
            .collect();
        if !file_runs.is_empty() {
            return Ok((vec![file_runs], None));
        }
        let plan = match arguments::plan(&tool.input_schema) {
            Ok(plan) => plan,
            Err(why) => return Ok((Vec::new(), Some(why))),
        };
        let schemas = snaps.schemas().to_vec();
        let db = snaps.db();
        let candidates = fill_ids(db, &schemas, &plan, &tool.name).await?;
        if candidates.is_empty() {
            let fields: Vec<&str> = plan.ids.iter().map(|f| f.name.as_str()).collect();
            let why = format!("no value in the database for {}", fields.join(", "));
            return Ok((Vec::new(), Some(why)));
        }
        let probe_sql = probe_statement(db, &schemas).await?;
        let mut attempts = Vec::new();
        for (k, ids) in candidates.iter().enumerate() {
            let expansion = plan.expand(ids);
            if k == 0 && expansion.combinations > expansion.sets.len() {
                notes.push(format!(
                    "generated {} of {} combinations of mode values (limit {MAX_GENERATED_CASES})",
                    expansion.sets.len(),
                    expansion.combinations
                ));
            }
            attempts.push(
                expansion
                    .sets
                    .into_iter()
                    .map(|set| {
                        let mut args = set.arguments;
                        for field in &plan.sql {
                            if let (Some(sql), Some(v)) = (&probe_sql, args.get_mut(field.as_str()))
                            {
                                *v = Value::String(sql.clone());
                            }
                        }
                        let mut generated = set.sources;
                        generated.extend(plan.ids.iter().map(|f| {
                            let source = if fresh_id(&tool.name, &f.name, &f.ty) {
                                "one past the largest value in the database (a new row)"
                            } else {
                                "a value from the database"
                            };
                            (f.name.clone(), source.to_owned())
                        }));
                        generated.sort();
                        Run {
                            label: if k == 0 {
                                set.label
                            } else {
                                format!("{} (database value #{})", set.label, k + 1)
                            },
                            from_file: false,
                            setup: Vec::new(),
                            arguments: args,
                            made_up: set.made_up,
                            generated,
                        }
                    })
                    .collect(),
            );
        }
        Ok((attempts, None))
    }

    /// Runs one case: its setup SQL, then one call (two for tools declaring idempotentHint
    /// true), each between snapshots, each judged by a judge fresh for the case (setup SQL
    /// between cases is no write its history sees).
    async fn run_case(
        &self,
        session: &mut Session,
        snaps: &mut Snapshotter,
        watch: &mut Watch,
        tool: &ToolInfo,
        run: Run,
        behaviour: &mut Vec<Judged>,
    ) -> Result<(CaseReport, Ended), VerifyError> {
        let Run {
            label,
            from_file,
            setup,
            arguments: args,
            made_up,
            generated,
        } = run;
        for script in &setup {
            snaps.db().execute_script(script).await.map_err(|e| {
                VerifyError::db(&format!("setup SQL of {} / {label}", tool.name), e)
            })?;
        }
        if !setup.is_empty() {
            snaps.invalidate();
        }
        let repeat = tool.hints.read_only != Some(true) && tool.hints.idempotent == Some(true);
        let judge = Judge::new(self.policy.clone());
        let mut before = snaps.take().await?;
        let mut calls = Vec::new();
        let mut ended = Ended::Done;
        for _ in 0..if repeat { 2 } else { 1 } {
            let files = watch.before_call(tool);
            let pid = session.server_pid();
            let (sent, result) = {
                let call = session.call(&tool.name, &args);
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
                    ended = Ended::Stop(e);
                    o
                }
            };
            let after = snaps.take().await?;
            let diff = Diff::between(&before, &after);
            if let Some(t) = diff.tables.first() {
                watch.saw_change(&tool.name, &t.table);
            } else if outcome == CallOutcome::Ok {
                watch.changed_nothing_here(&tool.name, &files);
            }
            let mut effect = effect_of(&diff);
            effect.outbound = sent.clone();
            let verdict = judge.judge(&ToolCall {
                tool: &tool.name,
                hints: tool.hints,
                arguments: Some(&args),
                effect: &effect,
            });
            let moved = crate::sequences::moved(&diff.tables);
            behaviour.extend(Judged::call(tool, verdict.findings, effect, &moved));
            let error = match outcome {
                CallOutcome::Ok => None,
                CallOutcome::Error(e) => Some(e),
                CallOutcome::Lost(why) => {
                    if matches!(ended, Ended::Done) {
                        ended = Ended::Lost(why.clone());
                    }
                    Some(format!("no result: {why}"))
                }
            };
            calls.push(CallRecord {
                error,
                changes: diff.tables,
                outbound: sent,
                files: Vec::new(),
            });
            before = after;
            if !matches!(ended, Ended::Done) {
                break;
            }
        }
        let case = CaseReport {
            label,
            from_file,
            made_up,
            generated,
            calls,
        };
        Ok((case, ended))
    }
}

/// Whether a call shows something about its tool: it succeeded, or it failed after changing
/// the database or sending a request (a notification refused by the recording proxy is a
/// tool error, and still the tool's doing).
fn exercised(c: &CallRecord) -> bool {
    c.error.is_none() || !c.changes.is_empty() || !c.outbound.is_empty()
}

/// Whether an id-like field gets a fresh value (one past the largest): a non-string `id`
/// of a tool whose name says it creates rows.
fn fresh_id(tool: &str, field: &str, ty: &str) -> bool {
    creates(tool) && field.eq_ignore_ascii_case("id") && ty != "string"
}

/// Whether a tool's name says it creates rows (`create_*`, `add_*`, `insert_*`, `new_*`,
/// `register_*`): its own `id` argument gets a fresh value.
fn creates(tool: &str) -> bool {
    let first = tool
        .split(|c: char| c == '_' || c == '-' || c.is_ascii_uppercase())
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    matches!(
        first.as_str(),
        "create" | "add" | "insert" | "new" | "register"
    )
}

/// A harmless statement for SQL-taking fields: a one-row read of the first watched table.
async fn probe_statement(
    db: &mut Database,
    schemas: &[String],
) -> Result<Option<String>, VerifyError> {
    let tables = db
        .tables(&Policy::default(), schemas)
        .await
        .map_err(|e| VerifyError::db("listing tables", e))?;
    Ok(tables
        .first()
        .map(|t| format!("SELECT * FROM {} LIMIT 1", t.sql_name)))
}

/// Candidate values for the plan's id-like fields, drawn from the database: the k-th
/// candidate takes each field's k-th smallest value (up to [`ID_CANDIDATES`]). One empty
/// map when the plan has no id-like field; none when a field has no value at all.
async fn fill_ids(
    db: &mut Database,
    schemas: &[String],
    plan: &Plan,
    tool: &str,
) -> Result<Vec<Map<String, Value>>, VerifyError> {
    if plan.ids.is_empty() {
        return Ok(vec![Map::new()]);
    }
    let tables = db
        .tables(&Policy::default(), schemas)
        .await
        .map_err(|e| VerifyError::db("listing tables", e))?;
    let mut per_field: Vec<Vec<Value>> = Vec::new();
    for field in &plan.ids {
        let mut values = Vec::new();
        if fresh_id(tool, &field.name, &field.ty) {
            // The id of the row a create-style tool makes: one past the largest.
            if let Some((table, column)) = id_sources(&field.name, tool, &tables).first() {
                let max = db
                    .max_value(table, column)
                    .await
                    .map_err(|e| VerifyError::db(&format!("reading {}", table.name), e))?;
                let next = max
                    .and_then(|m| m.parse::<f64>().ok())
                    .unwrap_or(0.0)
                    .floor() as i64
                    + 1;
                per_field.push(vec![Value::from(next)]);
                continue;
            }
        }
        for (table, column) in id_sources(&field.name, tool, &tables) {
            let got = db
                .sample(table, &column, ID_CANDIDATES as u32)
                .await
                .map_err(|e| VerifyError::db(&format!("sampling {}", table.name), e))?;
            if !got.is_empty() {
                values = got.iter().map(|v| arguments::typed(v, &field.ty)).collect();
                break;
            }
        }
        if values.is_empty() {
            return Ok(Vec::new());
        }
        per_field.push(values);
    }
    let n = per_field.iter().map(Vec::len).max().unwrap_or(1);
    Ok((0..n)
        .map(|k| {
            plan.ids
                .iter()
                .zip(&per_field)
                .map(|(f, vals)| (f.name.clone(), vals[k.min(vals.len() - 1)].clone()))
                .collect()
        })
        .collect())
}
