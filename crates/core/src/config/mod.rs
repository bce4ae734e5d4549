//! `hintaudit.toml`: every setting of the layer, `demo` and `verify` in one file, and
//! [`Config`], the builder that takes the same settings in code.
//!
//! Bad input is refused with an error naming the key and its line and column
//! ([`ConfigError`]): unknown keys, values of the wrong type or out of range, closed-world
//! entries that are not hosts, suffixes or CIDR blocks. Nothing is silently ignored. A
//! per-tool override for a tool the server does not list is a warning once tools/list is
//! known ([`Config::unknown_tools`]).
//!
//! ```
//! use hintaudit_core::{Config, Mode};
//! let config = Config::parse(r#"
//! ignored_tables = ["audit_log"]
//! open_world_alert = "state_change"
//! [closed_world]
//! hosts = [".internal", "10.0.0.0/8"]
//! [tools.get_appointment]
//! mode = "observe"
//! "#, "hintaudit.toml").unwrap();
//! assert!(config.policy().is_ignored_table("audit_log"));
//! assert!(config.policy().closed_world().contains("db.internal", None));
//! assert_eq!(config.mode_for("get_appointment"), Mode::Observe);
//!
//! let err = Config::parse("[closed_world]\nhosts = [\"10.0.0.0/40\"]\n", "h.toml").unwrap_err();
//! assert_eq!((err.key.as_str(), err.line, err.column), ("closed_world.hosts", 2, 10));
//! ```

/// The file's shape (serde) and its checks.
mod file;
/// The settings' keys, defaults and meanings.
mod settings;

pub use settings::SETTINGS;

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::path::Path;
use std::time::Duration;

use crate::closed_world::{ClosedWorld, OpenWorldReading};
use crate::outbound::ReadOnlyRequests;
use crate::policy::{DEFAULT_ADVICE_AFTER_CALLS, DEFAULT_HISTORY_CAPACITY, Policy};

/// The environment variable naming the config file when `--config` is not given.
pub const CONFIG_ENV: &str = "HINTAUDIT_CONFIG";

/// The environment variable holding the secret the replicas of a fleet share to hash
/// arguments alike ([`crate::ArgsHasher::from_secret`]): needed with `history_url`.
pub const HISTORY_KEY_ENV: &str = "HINTAUDIT_HISTORY_KEY";

/// The shortest [`HISTORY_KEY_ENV`] secret taken, in bytes.
pub const MIN_HISTORY_KEY_LEN: usize = 16;

/// Default of `history_ttl_seconds`: a day.
pub const DEFAULT_HISTORY_TTL: Duration = Duration::from_secs(86_400);

/// URL schemes `history_url` takes: Redis and Valkey, over TCP, TLS or a Unix socket.
pub const HISTORY_URL_SCHEMES: &[&str] = &[
    "redis",
    "rediss",
    "valkey",
    "valkeys",
    "redis+unix",
    "valkey+unix",
    "unix",
];

/// Default cap on distinct `tool` label values (as hintaudit-telemetry's recorder).
pub const DEFAULT_LABEL_MAX_TOOLS: usize = 1000;
/// Default cap on distinct `table` label values (as hintaudit-telemetry's recorder).
pub const DEFAULT_LABEL_MAX_TABLES: usize = 200;

/// Whether a declared hint is only judged, or also enforced ([`crate::Enforcement`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mode {
    /// Judge and report (default).
    #[default]
    Observe,
    /// Make the database and the HTTP middleware refuse what the hints rule out.
    Enforce,
}

impl Mode {
    /// `observe` or `enforce`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Observe => "observe",
            Mode::Enforce => "enforce",
        }
    }
}

/// A config error: the file, the key, the position (1-based; 0 when unknown) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}:{line}:{column}: {key}: {message}")]
#[non_exhaustive]
pub struct ConfigError {
    /// The file name (or `<builder>` for settings given in code).
    pub source_name: String,
    /// The key, dotted (`closed_world.hosts`); empty when the file is not TOML at all.
    pub key: String,
    /// 1-based line, 0 when unknown.
    pub line: usize,
    /// 1-based column, 0 when unknown.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl ConfigError {
    /// An error of a setting given in code or resolved beside the file (an environment
    /// variable, a server the setting names): source `<settings>`, no position.
    pub fn setting(key: &str, message: impl Into<String>) -> Self {
        ConfigError {
            source_name: "<settings>".to_owned(),
            key: key.to_owned(),
            line: 0,
            column: 0,
            message: message.into(),
        }
    }
}

/// Every hintaudit setting. [`Config::default`] is the documented defaults ([`SETTINGS`]);
/// the `with_*` setters are the builder; [`Config::parse`] and [`Config::load`] read
/// `hintaudit.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    mode: Mode,
    ignored_tables: Vec<String>,
    ignored_columns: Vec<String>,
    watch: Vec<std::path::PathBuf>,
    ignored_paths: Vec<String>,
    closed_world: ClosedWorld,
    open_world_alert: OpenWorldReading,
    read_only_requests: ReadOnlyRequests,
    advice_after_calls: u64,
    history_size: NonZeroUsize,
    history_url: Option<String>,
    history_ttl: Duration,
    history_secret: Option<HistorySecret>,
    correct_hints: bool,
    correct_hints_for: Option<Duration>,
    disclose_effects: bool,
    label_max_tools: usize,
    label_max_tables: usize,
    tools: BTreeMap<String, Mode>,
}

/// The fleet's shared history, as [`Config::shared_history`] resolves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedHistorySettings {
    /// The server's URL (`redis://…`, `rediss://…`).
    pub url: String,
    /// How long an entry is kept.
    pub ttl: Duration,
    /// Most (tool, arguments) entries kept fleet-wide: `history_size`.
    pub entries: NonZeroUsize,
    /// The shared secret arguments are hashed with.
    pub secret: HistorySecret,
}

/// The secret the replicas share to hash arguments alike (never printed).
#[derive(Clone, PartialEq, Eq)]
pub struct HistorySecret(String);

impl HistorySecret {
    /// The secret's text.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for HistorySecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HistorySecret(<secret>)")
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mode: Mode::Observe,
            ignored_tables: Vec::new(),
            ignored_columns: Vec::new(),
            watch: Vec::new(),
            ignored_paths: Vec::new(),
            closed_world: ClosedWorld::default(),
            open_world_alert: OpenWorldReading::Interaction,
            read_only_requests: ReadOnlyRequests::default(),
            advice_after_calls: DEFAULT_ADVICE_AFTER_CALLS,
            history_size: NonZeroUsize::new(DEFAULT_HISTORY_CAPACITY).expect("non-zero"),
            history_url: None,
            history_ttl: DEFAULT_HISTORY_TTL,
            history_secret: None,
            correct_hints: false,
            correct_hints_for: None,
            disclose_effects: false,
            label_max_tools: DEFAULT_LABEL_MAX_TOOLS,
            label_max_tables: DEFAULT_LABEL_MAX_TABLES,
            tools: BTreeMap::new(),
        }
    }
}

impl Config {
    /// Parses `hintaudit.toml` text; `source_name` names it in errors.
    ///
    /// # Errors
    /// [`ConfigError`] for TOML syntax errors, unknown keys, bad values and bad closed-world
    /// entries, with the key and its position.
    pub fn parse(text: &str, source_name: &str) -> Result<Config, ConfigError> {
        file::parse(text, source_name)
    }

    /// Reads and parses the file at `path` (the one piece of I/O in hintaudit-core).
    ///
    /// # Errors
    /// As [`Config::parse`]; a file that cannot be read is an error with an empty key.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            source_name: name.clone(),
            key: String::new(),
            line: 0,
            column: 0,
            message: format!("cannot read: {e}"),
        })?;
        Config::parse(&text, &name)
    }

    /// The file named by `path`, else by [`CONFIG_ENV`], else the defaults.
    ///
    /// # Errors
    /// As [`Config::load`].
    pub fn load_or_default(path: Option<&Path>) -> Result<Config, ConfigError> {
        match path.map(Path::to_path_buf).or_else(|| {
            std::env::var_os(CONFIG_ENV)
                .filter(|v| !v.is_empty())
                .map(Into::into)
        }) {
            Some(p) => Config::load(&p),
            None => Ok(Config::default()),
        }
    }

    /// Sets the mode of every tool without an override.
    pub fn with_mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Adds a bookkeeping table.
    pub fn with_ignored_table(mut self, table: impl Into<String>) -> Self {
        self.ignored_tables.push(table.into());
        self
    }

    /// Adds a bookkeeping column (`column` or `table.column`).
    pub fn with_ignored_column(mut self, column: impl Into<String>) -> Self {
        self.ignored_columns.push(column.into());
        self
    }

    /// Adds a directory `hintaudit verify` watches (its files are the server's state).
    pub fn with_watch(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.watch.push(dir.into());
        self
    }

    /// Adds a bookkeeping path glob under the watched directories (`cache/**`).
    pub fn with_ignored_path(mut self, glob: impl Into<String>) -> Self {
        self.ignored_paths.push(glob.into());
        self
    }

    /// The directories `watch` names, in file order.
    pub fn watch(&self) -> &[std::path::PathBuf] {
        &self.watch
    }

    /// The `ignored_paths` globs, in file order (checked by `hintaudit verify`, which
    /// matches them).
    pub fn ignored_paths(&self) -> &[String] {
        &self.ignored_paths
    }

    /// Replaces the closed world.
    pub fn with_closed_world(mut self, world: ClosedWorld) -> Self {
        self.closed_world = world;
        self
    }

    /// Which reading of `openWorldHint: false` alerts.
    pub fn with_open_world_alert(mut self, reading: OpenWorldReading) -> Self {
        self.open_world_alert = reading;
        self
    }

    /// The read-only requests (`read_only_requests`): build them from
    /// [`ReadOnlyRequests::default`] (the built-in ones) with
    /// [`ReadOnlyRequests::with_pattern`].
    pub fn with_read_only_requests(mut self, reads: ReadOnlyRequests) -> Self {
        self.read_only_requests = reads;
        self
    }

    /// The read-only requests: the built-in ones and those `read_only_requests` adds.
    pub fn read_only_requests(&self) -> &ReadOnlyRequests {
        &self.read_only_requests
    }

    /// Calls before advice (0 is taken as 1, as [`Policy::with_advice_after_calls`]).
    pub fn with_advice_after_calls(mut self, calls: u64) -> Self {
        self.advice_after_calls = calls.max(1);
        self
    }

    /// Idempotency history entries.
    pub fn with_history_size(mut self, entries: NonZeroUsize) -> Self {
        self.history_size = entries;
        self
    }

    /// Shares the idempotency history on the Redis or Valkey server at `url` (`history_url`).
    /// Checked by [`Config::validate`] and [`Config::shared_history`].
    pub fn with_history_url(mut self, url: impl Into<String>) -> Self {
        self.history_url = Some(url.into()).filter(|u| !u.is_empty());
        self
    }

    /// How long the shared history keeps a call (`history_ttl_seconds`; at least a second).
    pub fn with_history_ttl(mut self, ttl: Duration) -> Self {
        self.history_ttl = ttl.max(Duration::from_secs(1));
        self
    }

    /// The secret the replicas share to hash arguments alike, instead of
    /// [`HISTORY_KEY_ENV`]. At least [`MIN_HISTORY_KEY_LEN`] bytes (checked by
    /// [`Config::shared_history`]).
    pub fn with_history_secret(mut self, secret: impl Into<String>) -> Self {
        self.history_secret = Some(HistorySecret(secret.into()));
        self
    }

    /// The fleet's shared history: `None` when `history_url` is empty (each process keeps its
    /// own). The secret is the one given in code, else [`HISTORY_KEY_ENV`]'s.
    ///
    /// # Errors
    /// [`ConfigError`] at key `history_url` when the URL's scheme is not one of
    /// [`HISTORY_URL_SCHEMES`], or when no secret of at least [`MIN_HISTORY_KEY_LEN`] bytes
    /// is given: without it, replicas would hash the same arguments differently and no
    /// repeat across them would be seen.
    pub fn shared_history(&self) -> Result<Option<SharedHistorySettings>, ConfigError> {
        let Some(url) = &self.history_url else {
            return Ok(None);
        };
        let fail = |message: String| ConfigError::setting("history_url", message);
        check_history_url(url).map_err(fail)?;
        let secret = match &self.history_secret {
            Some(s) => s.clone(),
            None => HistorySecret(std::env::var(HISTORY_KEY_ENV).unwrap_or_default()),
        };
        if secret.0.len() < MIN_HISTORY_KEY_LEN {
            return Err(fail(format!(
                "a shared history needs the secret the replicas hash arguments with: set \
                 {HISTORY_KEY_ENV} to the same random text of at least {MIN_HISTORY_KEY_LEN} \
                 characters on every replica (`openssl rand -hex 16`)"
            )));
        }
        Ok(Some(SharedHistorySettings {
            url: url.clone(),
            ttl: self.history_ttl,
            entries: self.history_size,
            secret,
        }))
    }

    /// Serves corrected annotations (`correct_hints`): see
    /// [design: corrected annotations](../../../docs/design.md#corrected-annotations).
    pub fn with_correct_hints(mut self, on: bool) -> Self {
        self.correct_hints = on;
        self
    }

    /// How long a correction is served (`correct_hints_seconds`); `None` (or zero): until
    /// the process restarts, or the server's own hints are at least as cautious.
    pub fn with_correct_hints_for(mut self, lasts: Option<Duration>) -> Self {
        self.correct_hints_for = lasts.filter(|d| !d.is_zero());
        self
    }

    /// Whether corrected annotations are served (`correct_hints`).
    pub fn correct_hints(&self) -> bool {
        self.correct_hints
    }

    /// How long a correction is served (`correct_hints_seconds`); `None`: until restart.
    pub fn correct_hints_for(&self) -> Option<Duration> {
        self.correct_hints_for
    }

    /// Discloses each call's observed effects in its result's `_meta` (`disclose_effects`):
    /// see [design: observed effects disclosed](../../../docs/design.md#observed-effects-disclosed).
    pub fn with_disclose_effects(mut self, on: bool) -> Self {
        self.disclose_effects = on;
        self
    }

    /// Whether each call's observed effects are disclosed in its result (`disclose_effects`).
    pub fn disclose_effects(&self) -> bool {
        self.disclose_effects
    }

    /// Label caps: distinct `tool` and `table` values.
    pub fn with_label_caps(mut self, max_tools: usize, max_tables: usize) -> Self {
        self.label_max_tools = max_tools;
        self.label_max_tables = max_tables;
        self
    }

    /// A per-tool mode override.
    pub fn with_tool_mode(mut self, tool: impl Into<String>, mode: Mode) -> Self {
        self.tools.insert(tool.into(), mode);
        self
    }

    /// Checks the settings as a whole: today, the shared history ([`Config::shared_history`]).
    ///
    /// # Errors
    /// [`ConfigError`] naming the key, with no position.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.shared_history().map(drop)
    }

    /// Whether any tool runs in enforce mode (the server's mode or an override).
    pub fn enforces_any(&self) -> bool {
        self.mode == Mode::Enforce || self.tools.values().any(|m| *m == Mode::Enforce)
    }

    /// The judge's policy: ignored tables and columns, closed world, alerting reading,
    /// read-only requests, advice threshold, history size.
    pub fn policy(&self) -> Policy {
        let p = self
            .ignored_tables
            .iter()
            .fold(Policy::default(), |p, t| p.with_ignored_table(t));
        self.ignored_columns
            .iter()
            .fold(p, |p, c| p.with_ignored_column(c))
            .with_closed_world(self.closed_world.clone())
            .with_open_world_reading(self.open_world_alert)
            .with_read_only_requests(self.read_only_requests.clone())
            .with_advice_after_calls(self.advice_after_calls)
            .with_history_capacity(self.history_size)
    }

    /// The closed world.
    pub fn closed_world(&self) -> &ClosedWorld {
        &self.closed_world
    }

    /// The mode of `tool`: its override, else the server's.
    pub fn mode_for(&self, tool: &str) -> Mode {
        self.tools.get(tool).copied().unwrap_or(self.mode)
    }

    /// The per-tool override of `tool`'s mode, if the settings have one.
    pub fn tool_override(&self, tool: &str) -> Option<Mode> {
        self.tools.get(tool).copied()
    }

    /// The label caps: `(max tools, max tables)`.
    pub fn label_caps(&self) -> (usize, usize) {
        (self.label_max_tools, self.label_max_tables)
    }

    /// Tools with an override that `listed` (the names tools/list answered) does not hold:
    /// warn about each once tools/list is known.
    pub fn unknown_tools<'a>(&'a self, listed: &'a [&str]) -> impl Iterator<Item = &'a str> + 'a {
        self.tools
            .keys()
            .map(String::as_str)
            .filter(|t| !listed.contains(t))
    }
}

/// Why `url` is no `history_url`: its scheme is not one of [`HISTORY_URL_SCHEMES`].
pub(crate) fn check_history_url(url: &str) -> Result<(), String> {
    let scheme = url.split_once("://").map(|(s, _)| s);
    match scheme {
        Some(s) if HISTORY_URL_SCHEMES.contains(&s) => Ok(()),
        _ => Err(format!(
            "`{url}` is not a Redis or Valkey URL: expected {}://host:port/db",
            HISTORY_URL_SCHEMES.join("://, ")
        )),
    }
}

#[cfg(test)]
mod tests;
