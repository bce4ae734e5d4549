//! [`HintAuditLayer`]: the `tower::Layer` that wraps an rmcp `ServerHandler` in
//! [`HintAudit`].

use std::fmt;
use std::sync::Arc;

use hintaudit_core::{Judge, Policy, Recorder};
use rmcp::ServerHandler;

use crate::config::Config;
use crate::make_span::MakeSpan;
use crate::service::HintAudit;

/// A `tower::Layer` that wraps an rmcp [`ServerHandler`] `H` in [`HintAudit<H>`], which audits
/// every tools/call and tools/list against the tools' declared hints.
///
/// Cheap to clone; every handler it makes shares its [`Judge`] (so idempotency history and
/// first-seen hints span sessions when a streamable HTTP server makes one handler per session),
/// its recorder and its span maker. Each handler keeps its own hints registry.
///
/// ```
/// use hintaudit_rmcp::{HintAuditLayer, Policy};
/// use tower::Layer;
///
/// # #[derive(Clone)] struct MyServer;
/// # impl rmcp::ServerHandler for MyServer {}
/// let layer = HintAuditLayer::new()
///     .with_policy(Policy::default().with_ignored_table("access_log"))
///     .with_recorder(|event: &hintaudit_rmcp::AuditEvent<'_>| { let _ = event; });
/// let server = layer.layer(MyServer);
/// # let _ = server;
/// ```
#[derive(Clone, Default)]
pub struct HintAuditLayer {
    config: Config,
}

impl HintAuditLayer {
    /// A layer with a [`Judge`] under the default [`Policy`], the
    /// [`LogRecorder`](crate::LogRecorder) and the [`DefaultMakeSpan`](crate::DefaultMakeSpan).
    pub fn new() -> Self {
        HintAuditLayer::default()
    }

    /// Uses this judge (share one judge between layers to share its history and advice).
    pub fn with_judge(mut self, judge: Arc<Judge>) -> Self {
        self.config.judge = judge;
        self
    }

    /// Uses a new judge under `policy`, replacing the current judge.
    pub fn with_policy(mut self, policy: Policy) -> Self {
        self.config.judge = Arc::new(Judge::new(policy));
        self
    }

    /// Uses a new judge under the policy of `config` (`hintaudit.toml`, see
    /// [`hintaudit_core::Config`]), replacing the current judge, and takes its modes
    /// (`mode`, `tools.<name>.mode`): a tool in enforce mode runs each call under the
    /// [`Enforcement`](hintaudit_core::Enforcement) its declared hints call for, which the
    /// audited pool and hintaudit-http read from the call scope. Label caps are the
    /// recorder's: pass [`hintaudit_core::Config::label_caps`] to it.
    pub fn with_config(self, config: &hintaudit_core::Config) -> Self {
        self.with_policy(config.policy()).with_modes(config)
    }

    /// Takes the modes of `config` (`mode`, `tools.<name>.mode`) and nothing else: for a layer
    /// whose judge is set with [`HintAuditLayer::with_judge`]. [`HintAuditLayer::with_config`]
    /// takes them too.
    pub fn with_modes(mut self, config: &hintaudit_core::Config) -> Self {
        self.config.modes = Some(Arc::new(config.clone()));
        self
    }

    /// Sends audit events to `recorder` instead of the [`LogRecorder`](crate::LogRecorder). To
    /// keep logging as well, pass a pair: `(LogRecorder, other)`.
    pub fn with_recorder(mut self, recorder: impl Recorder) -> Self {
        self.config.recorder = Arc::new(recorder);
        self
    }

    /// Makes each call's span with `make_span` instead of
    /// [`DefaultMakeSpan`](crate::DefaultMakeSpan).
    pub fn with_make_span(mut self, make_span: impl MakeSpan) -> Self {
        self.config.make_span = Arc::new(make_span);
        self
    }

    /// The judge handlers made by this layer use.
    pub fn judge(&self) -> &Arc<Judge> {
        &self.config.judge
    }
}

impl fmt::Debug for HintAuditLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HintAuditLayer")
            .field("judge", &self.config.judge)
            .finish_non_exhaustive()
    }
}

impl<H: ServerHandler> tower::Layer<H> for HintAuditLayer {
    type Service = HintAudit<H>;

    fn layer(&self, inner: H) -> HintAudit<H> {
        HintAudit::with_config(inner, self.config.clone())
    }
}
