//! Behaviour findings: each call's effect (its rows, statements, requests and changed files,
//! `Effect::files` seen by verify's snapshots) judged by the core judge, plus moved sequences
//! (which the core has no effect type for a snapshot to fill: `crate::sequences`), then one
//! finding per (rule, hint) for the tool whose evidence counts every call that gave it (two
//! cases that each deleted a row: `2 rows deleted from items`).

use hintaudit_core::files::FileSource;
use hintaudit_core::{Confidence, Effect, Finding, Hint, Judge, Policy, Rule, ToolCall, Verdict};

use crate::client::ToolInfo;
use crate::report::is_behaviour_rule;
use crate::sequences::{self, sequence_findings};

/// One call that gave behaviour findings, with what it did.
pub(super) struct Judged {
    /// Its behaviour findings, each (rule, hint) once.
    pub findings: Vec<Finding>,
    /// Its effect as the core judge read it, its changed files included.
    pub effect: Effect,
    /// The sequences it moved.
    pub moved: Vec<String>,
}

impl Judged {
    /// A call's behaviour findings: the judge's (its rows, requests and files) and that of
    /// the sequences it moved, merged per (rule, hint). `None` when there are none.
    pub fn call(
        tool: &ToolInfo,
        judge_findings: Vec<Finding>,
        effect: Effect,
        moved: &[&str],
    ) -> Option<Judged> {
        let mut findings: Vec<Finding> = judge_findings
            .into_iter()
            .filter(|f| is_behaviour_rule(f.rule))
            .collect();
        if let Some(s) = sequence_findings(&tool.name, tool.hints, moved) {
            match findings
                .iter_mut()
                .find(|f| f.rule == s.rule && f.hint == s.hint)
            {
                Some(f) => {
                    let text = sequences::evidence(moved).unwrap_or_default();
                    f.evidence = format!("{}; {text}", f.evidence);
                }
                None => findings.push(s),
            }
        }
        (!findings.is_empty()).then(|| Judged {
            findings,
            effect,
            moved: moved.iter().map(|s| (*s).to_owned()).collect(),
        })
    }
}

/// The judge's verdict on a call of `tool`, with the findings of its action metadata when it
/// declares some.
pub(super) fn verdict(judge: &Judge, tool: &ToolInfo, call: &ToolCall<'_>) -> Verdict {
    let more = tool
        .action
        .map(|a| judge.judge_action(&tool.name, a, call.effect));
    judge.judge(call).with_findings(more.unwrap_or_default())
}

/// One finding per (rule, hint), in the order first seen. A finding given by one call keeps
/// that call's evidence; one given by several is judged again over their effects together
/// (their row changes, statements, requests and file changes; for `idempotency_broken`, as a
/// clean repeat), so its counts are every call's, with the sequences they moved.
pub(super) fn merge(tool: &ToolInfo, policy: &Policy, judged: &[Judged]) -> Vec<Finding> {
    let mut keys: Vec<(Rule, Hint)> = Vec::new();
    for f in judged.iter().flat_map(|j| j.findings.iter()) {
        if !keys.contains(&(f.rule, f.hint)) {
            keys.push((f.rule, f.hint));
        }
    }
    keys.into_iter()
        .filter_map(|(rule, hint)| {
            let gave: Vec<(&Judged, &Finding)> = judged
                .iter()
                .filter_map(|j| {
                    let f = j
                        .findings
                        .iter()
                        .find(|f| f.rule == rule && f.hint == hint)?;
                    Some((j, f))
                })
                .collect();
            let (_, first) = gave.first()?;
            if gave.len() == 1 {
                return Some((*first).clone());
            }
            let calls: Vec<&Judged> = gave.iter().map(|(j, _)| *j).collect();
            let confidence = if gave
                .iter()
                .any(|(_, f)| f.confidence == Confidence::Confirmed)
            {
                Confidence::Confirmed
            } else {
                first.confidence
            };
            let text = merged_evidence(tool, policy, rule, hint, &calls)
                .unwrap_or_else(|| first.evidence.clone());
            Some(Finding::new(
                tool.name.clone(),
                rule,
                hint,
                confidence,
                text,
            ))
        })
        .collect()
}

/// The evidence of `rule` over several calls' effects together, and the sequences they
/// moved.
fn merged_evidence(
    tool: &ToolInfo,
    policy: &Policy,
    rule: Rule,
    hint: Hint,
    calls: &[&Judged],
) -> Option<String> {
    let mut effect = Effect {
        files_source: FileSource::Snapshot,
        ..Effect::default()
    };
    let mut moved: Vec<&str> = Vec::new();
    for j in calls {
        effect.files.extend(j.effect.files.iter().cloned());
        effect
            .statements
            .extend(j.effect.statements.iter().cloned());
        effect
            .row_changes
            .extend(j.effect.row_changes.iter().cloned());
        effect.outbound.extend(j.effect.outbound.iter().cloned());
        for m in &j.moved {
            if !moved.contains(&m.as_str()) {
                moved.push(m);
            }
        }
    }
    let judge = Judge::new(policy.clone());
    let call = ToolCall {
        tool: &tool.name,
        hints: tool.hints,
        arguments: None,
        effect: &effect,
    };
    let mut verdict = verdict(&judge, tool, &call);
    if rule == Rule::IdempotencyBroken {
        // The same effect again is a clean repeat: the judge's own repeat evidence.
        verdict = judge.judge(&call);
    }
    let judged = verdict
        .findings
        .into_iter()
        .find(|f| f.rule == rule && f.hint == hint)
        .map(|f| f.evidence);
    let seqs = sequence_findings(&tool.name, tool.hints, &moved)
        .filter(|f| f.rule == rule && f.hint == hint)
        .map(|f| f.evidence);
    let parts: Vec<String> = [judged, seqs].into_iter().flatten().collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}
