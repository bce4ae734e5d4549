//! The run: list and lint the tools, then call each one between snapshots and let the core
//! judge compare the diffs with the declared hints.

use std::path::Path;
use std::time::{Duration, Instant};

use hintaudit_core::{
    Advice, Confidence, Finding, Hint, Judge, Policy, Rule, ToolCall, lint_hints,
};
use serde_json::{Map, Value};

use crate::arguments::{self, Plan};
use crate::cases::Cases;
use crate::client::{CallOutcome, McpClient, ServerSpec, ToolInfo};
use crate::db::{Database, Snapshotter, redact};
use crate::effect::effect_of;
use crate::error::VerifyError;
use crate::ids::id_sources;
use crate::report::{CallRecord, CaseReport, Report, ToolReport, ToolStatus, is_behaviour_rule};
use crate::snapshot::Diff;

/// How many database values an id-like field is tried with before a tool whose calls all
/// fail is reported as not exercised.
pub const ID_CANDIDATES: usize = 3;

/// One case to run: label, from the cases file, setup SQL, arguments.
type Run = (String, bool, Vec<String>, Value);

/// Default time one tool call may take, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;

/// Verifies one MCP server against its test database.
///
/// The tools are listed before and after the calls; hints that changed in between are a
/// `hints_changed` finding.
///
/// Build with [`Verifier::new`] and the `with_*` setters, then [`Verifier::run`]. Tools run
/// in a stable order: tools declaring readOnlyHint true first, then those declaring
/// destructiveHint false, then the rest, each group by name; a tool's cases in file order.
#[derive(Debug, Clone)]
pub struct Verifier {
    server: ServerSpec,
    database: String,
    cases: Cases,
    policy: Policy,
    timeout: Duration,
    progress: bool,
    only: Vec<String>,
}

impl Verifier {
    /// A verifier for `server`, whose test database is at `database` (a sqlx URL).
    pub fn new(server: ServerSpec, database: impl Into<String>) -> Self {
        Verifier {
            server,
            database: database.into(),
            cases: Cases::default(),
            policy: Policy::default(),
            timeout: Duration::from_secs(DEFAULT_TIMEOUT_SECS),
            progress: false,
            only: Vec::new(),
        }
    }

    /// Argument sets and setup SQL per tool.
    pub fn with_cases(mut self, cases: Cases) -> Self {
        self.cases = cases;
        self
    }

    /// Reads the cases from a TOML or JSON file.
    pub fn with_cases_file(self, path: &Path) -> Result<Self, VerifyError> {
        Ok(self.with_cases(Cases::load(path)?))
    }

    /// Judges under `policy` (from `hintaudit.toml`); later `with_ignored_*` calls add to it.
    pub fn with_policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Ignores a bookkeeping table: it is not snapshotted.
    pub fn with_ignored_table(mut self, table: impl AsRef<str>) -> Self {
        self.policy = self.policy.with_ignored_table(table);
        self
    }

    /// Ignores a bookkeeping column (`column` in every table, or `table.column`).
    pub fn with_ignored_column(mut self, column: impl AsRef<str>) -> Self {
        self.policy = self.policy.with_ignored_column(column);
        self
    }

    /// How long one call (and the handshake) may take (default 30 s).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Verifies only this tool (repeatable; default: every listed tool). A name the server
    /// does not list ends the run with a usage error.
    pub fn with_tool(mut self, tool: impl Into<String>) -> Self {
        self.only.push(tool.into());
        self
    }

    /// Prints progress lines on stderr once the run has taken more than 2 s.
    pub fn with_progress(mut self, progress: bool) -> Self {
        self.progress = progress;
        self
    }

    /// Runs the verification. Errors end the run: the server failed, exited or did not
    /// answer in time, or the database could not be used.
    pub async fn run(&self) -> Result<Report, VerifyError> {
        let started = Instant::now();
        let client = McpClient::connect(&self.server, self.timeout).await?;
        let result = self.run_with(&client, started).await;
        client.close().await;
        result
    }

    async fn run_with(&self, client: &McpClient, started: Instant) -> Result<Report, VerifyError> {
        let mut tools = client.list_tools().await?;
        if let Some(unknown) = self
            .cases
            .tools()
            .find(|t| !tools.iter().any(|x| x.name == *t))
        {
            return Err(VerifyError::Usage(format!(
                "the cases file names tool {unknown:?}, which the server does not list"
            )));
        }
        if let Some(unknown) = self
            .only
            .iter()
            .find(|t| !tools.iter().any(|x| x.name == **t))
        {
            return Err(VerifyError::Usage(format!(
                "--tool {unknown:?}: the server does not list it"
            )));
        }
        if !self.only.is_empty() {
            tools.retain(|t| self.only.contains(&t.name));
        }
        tools.sort_by(|a, b| group(a).cmp(&group(b)).then(a.name.cmp(&b.name)));
        let db = Database::connect(&self.database).await?;
        let mut snaps = Snapshotter::new(db, self.policy.clone());
        let total = tools.len();
        let mut reports = Vec::with_capacity(total);
        for (i, tool) in tools.iter().enumerate() {
            if self.progress && started.elapsed() > Duration::from_secs(2) {
                eprintln!(
                    "hintaudit verify: [{}/{total}] {} ({:.1} s)",
                    i + 1,
                    tool.name,
                    started.elapsed().as_secs_f64()
                );
            }
            reports.push(self.verify_tool(client, &mut snaps, tool).await?);
        }
        // tools/list again: hints that changed during the run are `hints_changed`.
        let relisted = client.list_tools().await?;
        for report in &mut reports {
            if let Some(now) = relisted.iter().find(|t| t.name == report.name)
                && now.hints != report.hints
            {
                let hint = Hint::ALL
                    .into_iter()
                    .find(|h| now.hints.get(*h) != report.hints.get(*h))
                    .unwrap_or(Hint::ReadOnly);
                report.findings.push(Finding::new(
                    report.name.clone(),
                    Rule::HintsChanged,
                    hint,
                    Confidence::Confirmed,
                    format!(
                        "tools/list changed the hints during the run from {} to {}",
                        report.hints.compact(),
                        now.hints.compact()
                    ),
                ));
                report
                    .findings
                    .sort_by(|a, b| b.severity.cmp(&a.severity).then(a.rule.cmp(&b.rule)));
            }
        }
        Ok(Report {
            server: redact(match &self.server {
                ServerSpec::Stdio(c) => c,
                ServerSpec::Url(u) => u,
            }),
            database: redact(&self.database),
            tools: reports,
            stats: snaps.stats(),
            elapsed_seconds: started.elapsed().as_secs_f64(),
        })
    }

    async fn verify_tool(
        &self,
        client: &McpClient,
        snaps: &mut Snapshotter,
        tool: &ToolInfo,
    ) -> Result<ToolReport, VerifyError> {
        let mut findings = lint_hints(&tool.name, tool.hints);
        for f in &mut findings {
            if tool.null_hints.contains(&f.hint) {
                f.evidence = format!("{} is null (treated as unset); {}", f.hint, f.evidence);
            }
        }
        let file_runs: Vec<Run> = self
            .cases
            .for_tool(&tool.name)
            .enumerate()
            .map(|(i, c)| {
                let label = c.name.clone().unwrap_or_else(|| format!("case {}", i + 1));
                (label, true, c.setup.clone(), c.arguments.clone())
            })
            .collect();
        // Attempts run in order until one exercises the tool (a call succeeds or writes):
        // the cases file is one attempt; generated arguments are one attempt per database
        // value drawn for the id-like fields (the smallest first).
        let mut attempts: Vec<Vec<Run>> = Vec::new();
        let mut not_exercised: Option<String> = None;
        if !file_runs.is_empty() {
            attempts.push(file_runs);
        } else {
            match arguments::plan(&tool.input_schema) {
                Ok(plan) => {
                    let candidates = self.fill_ids(snaps.db(), &plan, &tool.name).await?;
                    if candidates.is_empty() {
                        not_exercised = Some(format!(
                            "no value in the database for {}",
                            plan.ids
                                .iter()
                                .map(|f| f.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                    for (k, ids) in candidates.iter().enumerate() {
                        attempts.push(
                            plan.expand(ids)
                                .into_iter()
                                .map(|(label, args)| {
                                    let label = if k == 0 {
                                        label
                                    } else {
                                        format!("{label} (database value #{})", k + 1)
                                    };
                                    (label, false, Vec::new(), args)
                                })
                                .collect(),
                        );
                    }
                }
                Err(why) => not_exercised = Some(why),
            }
        }

        let mut cases: Vec<CaseReport> = Vec::new();
        let mut behaviour: Vec<Finding> = Vec::new();
        for attempt in attempts {
            let first = cases.len();
            for run in attempt {
                cases.push(
                    self.run_case(client, snaps, tool, run, &mut behaviour)
                        .await?,
                );
            }
            let exercised = cases[first..]
                .iter()
                .flat_map(|c| c.calls.iter())
                .any(|c| c.error.is_none() || !c.changes.is_empty());
            if exercised {
                break;
            }
        }

        let all_calls = || cases.iter().flat_map(|c| c.calls.iter());
        let wrote = all_calls().any(|c| !c.changes.is_empty());
        let any_ok = all_calls().any(|c| c.error.is_none());
        if not_exercised.is_none() && !wrote && !any_ok {
            not_exercised = Some(match all_calls().find_map(|c| c.error.clone()) {
                Some(e) => format!("every call failed without a change (first error: {e})"),
                None => "no case to run".to_owned(),
            });
        }
        for f in behaviour {
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
        let advice = if status == ToolStatus::Passed {
            advice(tool, &cases)
        } else {
            Vec::new()
        };
        Ok(ToolReport {
            name: tool.name.clone(),
            hints: tool.hints,
            status,
            findings,
            advice,
            cases,
        })
    }

    /// Runs one case: its setup SQL, then one call (two for tools declaring idempotentHint
    /// true), each between snapshots, each judged by a judge fresh for the case (setup SQL
    /// between cases is no write its history sees).
    async fn run_case(
        &self,
        client: &McpClient,
        snaps: &mut Snapshotter,
        tool: &ToolInfo,
        (label, from_file, setup, args): Run,
        behaviour: &mut Vec<Finding>,
    ) -> Result<CaseReport, VerifyError> {
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
        for _ in 0..if repeat { 2 } else { 1 } {
            let outcome = client.call(&tool.name, &args).await?;
            let after = snaps.take().await?;
            let diff = Diff::between(&before, &after);
            let effect = effect_of(&diff);
            let verdict = judge.judge(&ToolCall {
                tool: &tool.name,
                hints: tool.hints,
                arguments: Some(&args),
                effect: &effect,
            });
            behaviour.extend(
                verdict
                    .findings
                    .into_iter()
                    .filter(|f| is_behaviour_rule(f.rule)),
            );
            calls.push(CallRecord {
                error: match outcome {
                    CallOutcome::Ok => None,
                    CallOutcome::Error(e) => Some(e),
                },
                changes: diff.tables,
            });
            before = after;
        }
        Ok(CaseReport {
            label,
            from_file,
            calls,
        })
    }

    /// Candidate values for the plan's id-like fields, drawn from the database: the k-th
    /// candidate takes each field's k-th smallest value (up to [`ID_CANDIDATES`]). One empty
    /// map when the plan has no id-like field; none when a field has no value at all.
    async fn fill_ids(
        &self,
        db: &mut Database,
        plan: &Plan,
        tool: &str,
    ) -> Result<Vec<Map<String, Value>>, VerifyError> {
        if plan.ids.is_empty() {
            return Ok(vec![Map::new()]);
        }
        let tables = db
            .tables(&Policy::default())
            .await
            .map_err(|e| VerifyError::db("listing tables", e))?;
        let mut per_field: Vec<Vec<Value>> = Vec::new();
        for field in &plan.ids {
            let mut values = Vec::new();
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
}

/// Run order group: read-only first, then non-destructive, then the rest.
fn group(t: &ToolInfo) -> u8 {
    match (t.hints.read_only, t.hints.destructive) {
        (Some(true), _) => 0,
        (_, Some(false)) => 1,
        _ => 2,
    }
}

/// Advice from the calls of a passed tool: no change across all cases, or changes none of
/// which removed or overwrote rows.
fn advice(tool: &ToolInfo, cases: &[CaseReport]) -> Vec<Advice> {
    let e = tool.hints.effective();
    let changes = || {
        cases
            .iter()
            .flat_map(|c| c.calls.iter())
            .flat_map(|c| c.changes.iter())
    };
    let wrote = changes().next().is_some();
    let destroyed = changes().any(|d| d.removed > 0 || d.changed > 0 || d.dropped || d.altered);
    let mut out = Vec::new();
    if !e.read_only && !wrote {
        out.push(Advice::CouldBeReadOnly);
    }
    if !e.read_only && e.destructive && wrote && !destroyed {
        out.push(Advice::CouldBeNonDestructive);
    }
    out
}

/// The hint an advice is about, spelled for reports.
pub(crate) fn advice_text(a: Advice) -> String {
    let value = match a.hint() {
        Hint::ReadOnly => "true",
        _ => "false",
    };
    format!("{}: {} could be {value}", a.as_str(), a.hint())
}
