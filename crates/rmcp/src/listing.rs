//! tools/list auditing: what [`HintAudit`](crate::HintAudit) does with the tools the inner
//! handler lists (`list_tools`) or the server declares at start-up (`learn_tools`).
//!
//! Both cache each tool's hints in the [`Registry`]; a listing also lints them
//! ([`Judge::judge_listing`](hintaudit_core::Judge::judge_listing)) and sends one
//! [`AuditEvent::Listing`] per tool, a declaration one [`AuditEvent::Declared`].
//!
//! [`Registry`]: crate::registry::Registry

use hintaudit_core::{AuditEvent, AuditStage, Finding};
use rmcp::model::Tool;

use crate::config::Config;
use crate::guard::guarded;
use crate::registry::Registry;

/// Lints every tool of a tools/list answer, caches its hints and sends one
/// [`AuditEvent::Listing`] per tool with the `hint_missing`, `hint_contradiction` and
/// `hints_changed` findings.
pub(crate) fn audit_listing(tools: &[Tool], registry: &Registry, config: &Config) {
    for tool in tools {
        guarded(AuditStage::Registry, "reading hints panicked", || {
            registry.learn(tool)
        })
        .map(|hints| {
            let findings: Vec<Finding> =
                guarded(AuditStage::Judge, "listing judge panicked", || {
                    config.judge.judge_listing(&tool.name, hints)
                })
                .unwrap_or_default();
            guarded(AuditStage::Record, "recorder panicked", || {
                config.recorder.record(&AuditEvent::Listing {
                    tool: &tool.name,
                    hints,
                    findings: &findings,
                })
            })
        });
    }
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
