//! Corrected action metadata (`correct_hints`, [design: action
//! metadata](../../../../docs/design.md#action-metadata)): once a call of a tool has
//! `undeclared_outcome` or `undeclared_destination`, every tools/list the layer serves carries
//! the tool's `_meta` action metadata tightened: `outcome` benign → `consequential`,
//! `inputMetadata.destination` internal → `external`, every other member as listed. Never
//! looser than listed: a value that is no longer benign or internal is served as listed.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use hintaudit_core::{ACTION_METADATA_KEY, ActionMetadata, CallReport, Rule};
use rmcp::model::Tool;

use super::MAX_CORRECTED_TOOLS;

/// Which fields of a tool's action metadata the evidence contradicted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Contradicted {
    outcome: bool,
    destination: bool,
}

impl Contradicted {
    fn of(report: &CallReport<'_>) -> Self {
        let found = |rule: Rule| report.verdict.findings.iter().any(|f| f.rule == rule);
        Contradicted {
            outcome: found(Rule::UndeclaredOutcome),
            destination: found(Rule::UndeclaredDestination),
        }
    }

    fn merged(self, other: Contradicted) -> Contradicted {
        Contradicted {
            outcome: self.outcome || other.outcome,
            destination: self.destination || other.destination,
        }
    }
}

/// The action-metadata corrections in force, by tool, each since when.
#[derive(Debug, Default)]
pub(crate) struct ActionCorrections {
    tools: Mutex<HashMap<String, (Contradicted, Instant)>>,
}

impl ActionCorrections {
    /// Takes a judged call's contradicted action metadata: whether it corrects the tool
    /// further (then the sessions are to be told). A correction older than `lasts` is
    /// replaced.
    pub(crate) fn after_call(&self, report: &CallReport<'_>, lasts: Option<Duration>) -> bool {
        let found = Contradicted::of(report);
        if found == Contradicted::default() {
            return false;
        }
        let mut tools = self.tools.lock();
        let old = match tools.get(report.tool) {
            Some(&(c, since)) if !expired(since, lasts) => c,
            _ => Contradicted::default(),
        };
        let merged = old.merged(found);
        let full = tools.len() >= MAX_CORRECTED_TOOLS && !tools.contains_key(report.tool);
        if merged == old || full {
            return false;
        }
        tools.insert(report.tool.to_owned(), (merged, Instant::now()));
        true
    }

    /// Serves a tools/list answer's tools: each corrected tool's `_meta` action metadata
    /// tightened ([`ActionMetadata::tightened`]); every other tool as it is. A correction
    /// older than `lasts` is lifted.
    pub(crate) fn serve(&self, tools: &mut [Tool], lasts: Option<Duration>) {
        let mut in_force = self.tools.lock();
        in_force.retain(|_, (_, since)| !expired(*since, lasts));
        if in_force.is_empty() {
            return;
        }
        for tool in tools {
            let Some(&(c, _)) = in_force.get(tool.name.as_ref()) else {
                continue;
            };
            let listed = tool.meta.as_mut().map(|m| &mut m.0);
            if let Some(object) = listed.and_then(|m| m.get_mut(ACTION_METADATA_KEY)) {
                ActionMetadata::tightened(object, c.outcome, c.destination);
            }
        }
    }
}

fn expired(since: Instant, lasts: Option<Duration>) -> bool {
    lasts.is_some_and(|d| since.elapsed() >= d)
}
