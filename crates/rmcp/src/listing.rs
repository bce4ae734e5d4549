//! tools/list auditing: what [`HintAudit`](crate::HintAudit) does with the tools the inner
//! handler lists (`list_tools`) or the server declares at start-up (`learn_tools`).
//!
//! Both cache each tool's hints in the [`Registry`]; a listing also lints them
//! ([`Judge::judge_listing`](hintaudit_core::Judge::judge_listing)) and sends one
//! [`AuditEvent::Listing`] per tool, a declaration one [`AuditEvent::Declared`].
//!
//! [`Registry`]: crate::registry::Registry

use hintaudit_core::{AuditEvent, AuditStage, DeclaredHints, Finding, Recorder, lint_action};
#[cfg(feature = "shared-history")]
use hintaudit_core::{Rule, fleet_hints_changed};
use rmcp::model::Tool;

use crate::config::Config;
use crate::guard::guarded;
use crate::registry::{Registry, action_of};

/// Lints every tool of a tools/list answer, caches its hints and sends one
/// [`AuditEvent::Listing`] per tool with the `hint_missing`, `hint_contradiction` and
/// `hints_changed` findings, and for a tool with action metadata `action_metadata_missing`
/// and `action_metadata_contradiction`. With a shared history, the events go once the store has said
/// which hints are new to the fleet ([`settle_listing`]).
pub(crate) fn audit_listing(tools: &[Tool], registry: &Registry, config: &Config) {
    let mut listed = Vec::new();
    for tool in tools {
        let Some(hints) = guarded(AuditStage::Registry, "reading hints panicked", || {
            registry.learn(tool)
        }) else {
            continue;
        };
        let findings: Vec<Finding> = guarded(AuditStage::Judge, "listing judge panicked", || {
            let mut findings = config.judge.judge_listing(&tool.name, hints);
            if let Some(action) = action_of(tool) {
                findings.extend(lint_action(&tool.name, hints, action));
            }
            findings
        })
        .unwrap_or_default();
        listed.push(Listed {
            tool: tool.name.to_string(),
            hints,
            findings,
        });
    }
    #[cfg(feature = "shared-history")]
    if let Some(shared) = &config.shared {
        let hints = listed.iter().map(|l| (l.tool.clone(), l.hints)).collect();
        let recorder = config.recorder.clone();
        return shared.submit_hints(hints, move |answer| {
            settle_listing(listed, answer, &*recorder)
        });
    }
    for l in &listed {
        record_listing(l, &*config.recorder);
    }
}

/// A tool of a tools/list answer, linted.
struct Listed {
    tool: String,
    hints: DeclaredHints,
    findings: Vec<Finding>,
}

/// The listing events of a tools/list answer once the shared history answered: per tool,
/// `hints_changed` when these hints are new to the fleet (as [`AuditEvent::Settled`], so
/// that it counts once across the fleet) instead of this process's own; when the store
/// failed (`None`), this process's own reading, as without a shared history.
#[cfg(feature = "shared-history")]
fn settle_listing(
    listed: Vec<Listed>,
    answer: Option<Vec<Option<DeclaredHints>>>,
    recorder: &dyn Recorder,
) {
    for (i, mut l) in listed.into_iter().enumerate() {
        let Some(changes) = &answer else {
            record_listing(&l, recorder);
            continue;
        };
        l.findings.retain(|f| f.rule != Rule::HintsChanged);
        record_listing(&l, recorder);
        if let Some(from) = changes.get(i).copied().flatten() {
            let finding = fleet_hints_changed(&l.tool, &from, &l.hints);
            guarded(AuditStage::Record, "recorder panicked", || {
                recorder.record(&AuditEvent::Settled {
                    tool: &l.tool,
                    known_tool: true,
                    hints: l.hints,
                    findings: std::slice::from_ref(&finding),
                })
            });
        }
    }
}

fn record_listing(l: &Listed, recorder: &dyn Recorder) {
    guarded(AuditStage::Record, "recorder panicked", || {
        recorder.record(&AuditEvent::Listing {
            tool: &l.tool,
            hints: l.hints,
            findings: &l.findings,
        })
    });
}

/// Caches the hints of `tools` without linting them and sends one [`AuditEvent::Declared`] per
/// tool. Returns how many tools were declared.
pub(crate) fn declare_tools<'a>(
    tools: impl IntoIterator<Item = &'a Tool>,
    registry: &Registry,
    config: &Config,
) -> usize {
    let mut declared = 0;
    for tool in tools {
        let hints = registry.learn(tool);
        let event = AuditEvent::Declared {
            tool: &tool.name,
            hints,
        };
        guarded(AuditStage::Record, "recorder panicked", || {
            config.recorder.record(&event)
        });
        declared += 1;
    }
    declared
}
