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

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::path::Path;

use crate::closed_world::{ClosedWorld, OpenWorldReading};
use crate::policy::{DEFAULT_ADVICE_AFTER_CALLS, DEFAULT_HISTORY_CAPACITY, Policy};

/// The environment variable naming the config file when `--config` is not given.
pub const CONFIG_ENV: &str = "HINTAUDIT_CONFIG";

/// Default cap on distinct `tool` label values (as hintaudit-telemetry's recorder).
pub const DEFAULT_LABEL_MAX_TOOLS: usize = 1000;
/// Default cap on distinct `table` label values (as hintaudit-telemetry's recorder).
pub const DEFAULT_LABEL_MAX_TABLES: usize = 200;

/// Every setting as `(key, default as TOML, meaning)`: the README's table is checked against
/// it, and a file made of these lines parses to [`Config::default`].
pub const SETTINGS: &[(&str, &str, &str)] = &[
    (
        "mode",
        "\"observe\"",
        "`observe` judges and reports; `enforce` also makes the database and the HTTP middleware refuse what the declared hints rule out (see *Enforce mode*)",
    ),
    (
        "ignored_tables",
        "[]",
        "bookkeeping tables: changes to them are no effect",
    ),
    (
        "ignored_columns",
        "[]",
        "bookkeeping columns, `column` or `table.column`",
    ),
    (
        "closed_world.hosts",
        "[]",
        "hosts, `.suffixes` and CIDR blocks (optionally `:port`) added to the closed world, besides loopback",
    ),
    (
        "closed_world.outside",
        "[]",
        "entries outside the closed world even when loopback or listed (a local stand-in for an outside service)",
    ),
    (
        "open_world_alert",
        "\"interaction\"",
        "which reading of `openWorldHint: false` alerts: `interaction` (the spec's) or `state_change` (the directory reading)",
    ),
    (
        "advice_after_calls",
        "20",
        "calls without contrary evidence before advice",
    ),
    (
        "history_size",
        "10000",
        "(tool, arguments) entries the idempotency history keeps",
    ),
    (
        "labels.max_tools",
        "1000",
        "distinct `tool` label values; later tools count as `__unknown__`",
    ),
    (
        "labels.max_tables",
        "200",
        "distinct `table` label values; later tables count as `__other__`",
    ),
    (
        "tools.<name>.mode",
        "\"observe\"",
        "per-tool override of `mode`",
    ),
];

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

/// Every hintaudit setting. [`Config::default`] is the documented defaults ([`SETTINGS`]);
/// the `with_*` setters are the builder; [`Config::parse`] and [`Config::load`] read
/// `hintaudit.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    mode: Mode,
    ignored_tables: Vec<String>,
    ignored_columns: Vec<String>,
    closed_world: ClosedWorld,
    open_world_alert: OpenWorldReading,
    advice_after_calls: u64,
    history_size: NonZeroUsize,
    label_max_tools: usize,
    label_max_tables: usize,
    tools: BTreeMap<String, Mode>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mode: Mode::Observe,
            ignored_tables: Vec::new(),
            ignored_columns: Vec::new(),
            closed_world: ClosedWorld::default(),
            open_world_alert: OpenWorldReading::Interaction,
            advice_after_calls: DEFAULT_ADVICE_AFTER_CALLS,
            history_size: NonZeroUsize::new(DEFAULT_HISTORY_CAPACITY).expect("non-zero"),
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

    /// Checks the settings as a whole. Every setting a [`Config`] can hold takes effect in
    /// this build, so this succeeds; it stays so that callers check before starting.
    ///
    /// # Errors
    /// [`ConfigError`] naming the key, with source `<builder>` and no position (none today).
    pub fn validate(&self) -> Result<(), ConfigError> {
        Ok(())
    }

    /// Whether any tool runs in enforce mode (the server's mode or an override).
    pub fn enforces_any(&self) -> bool {
        self.mode == Mode::Enforce || self.tools.values().any(|m| *m == Mode::Enforce)
    }

    /// The judge's policy: ignored tables and columns, closed world, alerting reading,
    /// advice threshold, history size.
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

#[cfg(test)]
mod tests;
