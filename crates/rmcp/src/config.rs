//! [`Config`]: what every [`HintAudit`](crate::HintAudit) made by one
//! [`HintAuditLayer`](crate::HintAuditLayer) shares.
//!
//! [`Config`]: crate::config::Config

use std::sync::Arc;

use hintaudit_core::{Judge, LogRecorder, Mode, Policy, Recorder};

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
}

impl Config {
    /// The mode of `tool`: observe unless the settings say enforce.
    pub(crate) fn mode_for(&self, tool: &str) -> Mode {
        self.modes
            .as_ref()
            .map_or(Mode::Observe, |c| c.mode_for(tool))
    }
}

impl Default for Config {
    /// A [`Judge`] under the default [`Policy`], the [`LogRecorder`] and the
    /// [`DefaultMakeSpan`].
    fn default() -> Self {
        Config {
            judge: Arc::new(Judge::new(Policy::default())),
            recorder: Arc::new(LogRecorder),
            make_span: Arc::new(DefaultMakeSpan::new()),
            modes: None,
        }
    }
}
