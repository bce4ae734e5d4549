//! [`Config`]: what every [`HintAudit`](crate::HintAudit) made by one
//! [`HintAuditLayer`](crate::HintAuditLayer) shares.
//!
//! [`Config`]: crate::config::Config

use std::sync::Arc;

use hintaudit_core::{Judge, LogRecorder, Policy, Recorder};

use crate::make_span::{DefaultMakeSpan, MakeSpan};

/// What every [`HintAudit`](crate::HintAudit) made by one layer shares: the judge, the recorder
/// and the span maker.
#[derive(Clone)]
pub(crate) struct Config {
    pub(crate) judge: Arc<Judge>,
    pub(crate) recorder: Arc<dyn Recorder>,
    pub(crate) make_span: Arc<dyn MakeSpan>,
}

impl Default for Config {
    /// A [`Judge`] under the default [`Policy`], the [`LogRecorder`] and the
    /// [`DefaultMakeSpan`].
    fn default() -> Self {
        Config {
            judge: Arc::new(Judge::new(Policy::default())),
            recorder: Arc::new(LogRecorder),
            make_span: Arc::new(DefaultMakeSpan::new()),
        }
    }
}
