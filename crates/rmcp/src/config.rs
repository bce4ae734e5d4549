//! [`Config`]: what every [`HintAudit`](crate::HintAudit) made by one
//! [`HintAuditLayer`](crate::HintAuditLayer) shares.
//!
//! [`Config`]: crate::config::Config

use std::sync::Arc;

use hintaudit_core::{
    ActionMetadata, ArgsKey, AuditEvent, AuditStage, DeclaredHints, Judge, LogRecorder, Mode,
    PendingRepeat, Policy, Recorder, SharedAnswer, ToolCall, Verdict,
};
use serde_json::{Map, Value};

use crate::correct::Corrections;
use crate::guard::guarded;
#[cfg(feature = "shared-history")]
use crate::shared::SharedHistory;

use crate::make_span::{DefaultMakeSpan, MakeSpan};

/// What every [`HintAudit`](crate::HintAudit) made by one layer shares: the judge, the recorder,
/// the span maker and the modes.
#[derive(Clone)]
pub(crate) struct Config {
    pub(crate) judge: Arc<Judge>,
    pub(crate) recorder: Arc<dyn Recorder>,
    pub(crate) make_span: Arc<dyn MakeSpan>,
    /// The settings file's modes (`mode`, `tools.<name>.mode`); `None`: every tool observed.
    pub(crate) modes: Option<Arc<hintaudit_core::Config>>,
    /// The fleet's shared idempotency history; `None`: this process's own only.
    #[cfg(feature = "shared-history")]
    pub(crate) shared: Option<SharedHistory>,
    /// Corrected annotations (`correct_hints`); `None`: tools/list answers pass as they are.
    pub(crate) corrections: Option<Arc<Corrections>>,
    /// Observed effects disclosed in each result's `_meta` (`disclose_effects`).
    pub(crate) disclose: bool,
}

impl Config {
    /// The mode of `tool`: observe unless the settings say enforce.
    pub(crate) fn mode_for(&self, tool: &str) -> Mode {
        self.modes
            .as_ref()
            .map_or(Mode::Observe, |c| c.mode_for(tool))
    }

    /// The key of a call's arguments: under the fleet's shared secret with a shared history
    /// (equal on every replica), else under the judge's own key.
    pub(crate) fn args_key(&self, arguments: Option<&Map<String, Value>>) -> ArgsKey {
        #[cfg(feature = "shared-history")]
        if let Some(shared) = &self.shared {
            return shared.args_key(arguments);
        }
        self.judge.args_key(arguments)
    }

    /// The judge's verdict on a finished call, with the findings of the tool's `action`
    /// metadata ([`Judge::judge_action`]) when it declares some; with a shared history, a
    /// call that may repeat comes back with its repeat pending (settle it with
    /// [`Config::settle_later`]).
    pub(crate) fn judge_call(
        &self,
        call: &ToolCall<'_>,
        key: ArgsKey,
        action: Option<ActionMetadata>,
    ) -> (Verdict, Option<PendingRepeat>) {
        let (verdict, pending) = self.judge_hints(call, key);
        let more = action.map(|a| self.judge.judge_action(call.tool, a, call.effect));
        (verdict.with_findings(more.unwrap_or_default()), pending)
    }

    fn judge_hints(&self, call: &ToolCall<'_>, key: ArgsKey) -> (Verdict, Option<PendingRepeat>) {
        #[cfg(feature = "shared-history")]
        if self.shared.is_some() {
            return self.judge.judge_shared(call, key);
        }
        (self.judge.judge_keyed(call, key), None)
    }

    /// Sends a pending repeat to the shared history; when it answers (or fails), the judge
    /// settles the repeat and the recorder gets its findings as [`AuditEvent::Settled`].
    /// Without a shared history (none is pending then), settles it at once by this process's
    /// own history.
    pub(crate) fn settle_later(
        &self,
        pending: PendingRepeat,
        tool: &str,
        known_tool: bool,
        hints: DeclaredHints,
    ) {
        let (judge, recorder, tool) = (self.judge.clone(), self.recorder.clone(), tool.to_owned());
        let call = pending.shared_call().clone();
        let settle = move |answer: Option<SharedAnswer>| {
            let findings = guarded(AuditStage::Judge, "judge panicked", || {
                judge.settle(&pending, answer.as_ref())
            })
            .unwrap_or_default();
            if !findings.is_empty() {
                guarded(AuditStage::Record, "recorder panicked", || {
                    recorder.record(&AuditEvent::Settled {
                        tool: &tool,
                        known_tool,
                        hints,
                        findings: &findings,
                    })
                });
            }
        };
        #[cfg(feature = "shared-history")]
        if let Some(shared) = &self.shared {
            return shared.submit_call(call, settle);
        }
        drop(call);
        settle(None)
    }
}

impl Default for Config {
    /// A [`Judge`] under the default [`Policy`], the [`LogRecorder`] and the
    /// [`DefaultMakeSpan`].
    fn default() -> Self {
        Config {
            judge: Arc::new(Judge::new(Policy::default())),
            recorder: Arc::new(LogRecorder::default()),
            make_span: Arc::new(DefaultMakeSpan::new()),
            modes: None,
            #[cfg(feature = "shared-history")]
            shared: None,
            corrections: None,
            disclose: false,
        }
    }
}
