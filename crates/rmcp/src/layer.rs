//! [`HintAuditLayer`]: the `tower::Layer` that wraps an rmcp `ServerHandler` in
//! [`HintAudit`].

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hintaudit_core::{CONFIG_ENV, ConfigError, Judge, Policy, Recorder};
use rmcp::ServerHandler;

use crate::config::Config;
use crate::correct::Corrections;
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
///
/// # Settings
///
/// [`HintAuditLayer::new`] reads no file. [`HintAuditLayer::from_env`] reads `hintaudit.toml`
/// from the file `HINTAUDIT_CONFIG` names ([`CONFIG_ENV`]), as `hintaudit demo` does;
/// [`HintAuditLayer::with_config`] takes settings loaded or built in code. A layer that took
/// no settings, in a process where `HINTAUDIT_CONFIG` is set, warns once when it first wraps a
/// handler (a `tracing` WARN, or a line on stderr when no subscriber is set): the file's
/// settings, `mode = "enforce"` among them, do not apply.
#[derive(Clone, Default)]
pub struct HintAuditLayer {
    config: Config,
    /// Whether settings were given ([`HintAuditLayer::with_config`], `with_modes`, `from_env`).
    configured: bool,
}

/// Whether the unread-`HINTAUDIT_CONFIG` warning was given (once per process).
static WARNED_UNREAD: AtomicBool = AtomicBool::new(false);

impl HintAuditLayer {
    /// A layer with a [`Judge`] under the default [`Policy`], the
    /// [`LogRecorder`](crate::LogRecorder) and the [`DefaultMakeSpan`](crate::DefaultMakeSpan).
    /// It reads no settings file: see [`HintAuditLayer::from_env`].
    pub fn new() -> Self {
        HintAuditLayer::default()
    }

    /// A layer under the settings of the file `HINTAUDIT_CONFIG` names (its policy and
    /// modes, as [`HintAuditLayer::with_config`]), or the defaults when the variable is unset
    /// or empty.
    ///
    /// # Errors
    /// A file that cannot be read or holds a bad setting: [`ConfigError`], whose message
    /// names the file, line, column and key (`hintaudit.toml:1:8: mode: …`).
    ///
    /// ```no_run
    /// # #[derive(Clone)] struct MyServer;
    /// # impl rmcp::ServerHandler for MyServer {}
    /// use tower::Layer;
    /// # fn main() -> Result<(), hintaudit_core::ConfigError> {
    /// let audited = hintaudit_rmcp::HintAuditLayer::from_env()?.layer(MyServer);
    /// # let _ = audited; Ok(()) }
    /// ```
    ///
    /// With `history_url` set, a shared history that cannot be used is an error too: no
    /// `HINTAUDIT_HISTORY_KEY`, a URL the Redis client cannot read, or a build without the
    /// `shared-history` feature.
    pub fn from_env() -> Result<Self, ConfigError> {
        let config = hintaudit_core::Config::load_or_default(None)?;
        HintAuditLayer::new()
            .with_policy(config.policy())
            .with_modes(&config)
            .with_corrections_of(&config)
            .with_disclosure_of(&config)
            .with_history_of(&config)
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
    ///
    /// With `history_url` set, the replicas share the idempotency history there
    /// ([`SharedHistory`](crate::SharedHistory)). A shared history that cannot be used (see
    /// [`HintAuditLayer::from_env`], which returns it as an error) is logged at ERROR and
    /// counted at stage `history`; the history then stays in this process.
    pub fn with_config(self, config: &hintaudit_core::Config) -> Self {
        let layer = self
            .with_policy(config.policy())
            .with_modes(config)
            .with_corrections_of(config)
            .with_disclosure_of(config);
        match layer.clone().with_history_of(config) {
            Ok(layer) => layer,
            Err(e) => {
                tracing::error!("hintaudit: {e}; the idempotency history stays in this process");
                hintaudit_core::stats().audit_error(hintaudit_core::AuditStage::History, &e);
                layer
            }
        }
    }

    /// Takes the shared history `config` asks for (`history_url`, `history_ttl_seconds`,
    /// `history_size`, the `HINTAUDIT_HISTORY_KEY` secret), and nothing else: for a layer
    /// built with [`HintAuditLayer::with_policy`] or [`HintAuditLayer::with_judge`] and
    /// [`HintAuditLayer::with_modes`]. Without `history_url`, the layer as it was.
    ///
    /// # Errors
    /// [`ConfigError`] at key `history_url`: no secret, a URL the Redis client cannot read,
    /// or a build without the `shared-history` feature.
    pub fn with_history_of(self, config: &hintaudit_core::Config) -> Result<Self, ConfigError> {
        match shared_history_of(config)? {
            #[cfg(feature = "shared-history")]
            Some(shared) => Ok(self.with_shared_history(shared)),
            _ => Ok(self),
        }
    }

    /// Shares the idempotency history with the fleet's other replicas on `shared` (a Redis or
    /// Valkey server). Calls that may repeat are sent there after they answered; see
    /// [`SharedHistory`](crate::SharedHistory).
    #[cfg(feature = "shared-history")]
    pub fn with_shared_history(mut self, shared: crate::SharedHistory) -> Self {
        // Corrections made on one replica are served by all.
        if let Some(c) = &self.config.corrections {
            self.config.corrections = Some(Corrections::new(c.lasts(), Some(shared.clone())));
        }
        self.config.shared = Some(shared);
        self
    }

    /// The shared history, when the layer has one.
    #[cfg(feature = "shared-history")]
    pub fn shared_history(&self) -> Option<&crate::SharedHistory> {
        self.config.shared.as_ref()
    }

    /// Takes the modes of `config` (`mode`, `tools.<name>.mode`) and nothing else: for a layer
    /// whose judge is set with [`HintAuditLayer::with_judge`]. [`HintAuditLayer::with_config`]
    /// takes them too.
    pub fn with_modes(mut self, config: &hintaudit_core::Config) -> Self {
        self.config.modes = Some(Arc::new(config.clone()));
        self.configured = true;
        self
    }

    /// Takes `correct_hints` and `correct_hints_seconds` of `config` and nothing else (the
    /// proxy's `--correct-hints`; [`HintAuditLayer::with_config`] and
    /// [`HintAuditLayer::from_env`] take them too). With `correct_hints = true`, once a tool
    /// has a finding at warning or above, every tools/list the handlers serve carries its
    /// hints tightened to what the evidence shows, every open session is sent
    /// `notifications/tools/list_changed`, and the initialize answer advertises
    /// `tools.listChanged`. Off, nothing changes. See
    /// [design: corrected annotations](../../../docs/design.md#corrected-annotations).
    pub fn with_corrections_of(mut self, config: &hintaudit_core::Config) -> Self {
        self.config.corrections = config.correct_hints().then(|| {
            Corrections::new(
                config.correct_hints_for(),
                #[cfg(feature = "shared-history")]
                self.config.shared.clone(),
            )
        });
        self
    }

    /// Takes `disclose_effects` of `config` and nothing else (the proxy's
    /// `--disclose-effects`; [`HintAuditLayer::with_config`] and [`HintAuditLayer::from_env`]
    /// take it too). On, each tools/call result (`CallToolResult`, tool errors included)
    /// carries in its `_meta` under `io.hintaudit/effects` what the call was seen to do:
    /// tables with rows inserted, updated and deleted, files, outbound hosts and the call's
    /// findings ([`Disclosure`](hintaudit_core::Disclosure)); no row data, no argument
    /// values. Every other part of the result is as the server gave it. See
    /// [design: observed effects disclosed](../../../docs/design.md#observed-effects-disclosed).
    pub fn with_disclosure_of(mut self, config: &hintaudit_core::Config) -> Self {
        self.config.disclose = config.disclose_effects();
        self
    }

    /// Sends audit events to `recorder` instead of the [`LogRecorder`](crate::LogRecorder). To
    /// keep logging as well, pass a pair: `(LogRecorder::default(), other)`.
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
        if !self.configured {
            warn_if_config_unread();
        }
        HintAudit::with_config(inner, self.config.clone())
    }
}

/// The shared history `config` asks for (`None` without `history_url`).
#[cfg(feature = "shared-history")]
fn shared_history_of(
    config: &hintaudit_core::Config,
) -> Result<Option<crate::SharedHistory>, ConfigError> {
    let Some(settings) = config.shared_history()? else {
        return Ok(None);
    };
    crate::SharedHistory::open(&settings)
        .map(Some)
        .map_err(|e| history_error(e.to_string()))
}

/// Without the `shared-history` feature, `history_url` is refused rather than ignored.
#[cfg(not(feature = "shared-history"))]
fn shared_history_of(config: &hintaudit_core::Config) -> Result<Option<()>, ConfigError> {
    match config.shared_history()? {
        None => Ok(None),
        Some(_) => Err(history_error(
            "history_url is set but hintaudit-rmcp was built without its `shared-history` \
             feature"
                .to_owned(),
        )),
    }
}

fn history_error(message: String) -> ConfigError {
    ConfigError::setting("history_url", message)
}

/// Warns, once per process, that `HINTAUDIT_CONFIG` names a file no layer read.
fn warn_if_config_unread() {
    let Some(path) = std::env::var_os(CONFIG_ENV).filter(|v| !v.is_empty()) else {
        return;
    };
    if WARNED_UNREAD.swap(true, Ordering::Relaxed) {
        return;
    }
    let text = unread_warning(&path.to_string_lossy());
    if tracing::dispatcher::has_been_set() {
        tracing::warn!(config = %path.to_string_lossy(), "{text}");
    } else {
        eprintln!("WARN hintaudit: {text}");
    }
}

/// The warning for a `HINTAUDIT_CONFIG` that names `path` while the layer took no settings.
fn unread_warning(path: &str) -> String {
    format!(
        "{CONFIG_ENV} is set ({path}) but this HintAuditLayer was built without settings, so \
         the file's settings (mode, ignored tables, closed world, ...) do not apply; build it \
         with HintAuditLayer::from_env()? or .with_config(&Config::load(path)?)"
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_warning_names_the_variable_the_file_and_the_fix() {
        let text = super::unread_warning("/etc/app/hintaudit.toml");
        for part in ["HINTAUDIT_CONFIG", "/etc/app/hintaudit.toml", "from_env()"] {
            assert!(text.contains(part), "{text}");
        }
    }
}
