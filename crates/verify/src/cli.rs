//! `hintaudit verify`: the flags and the run that writes the report and sets the exit code.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use hintaudit_core::Severity;

use crate::client::ServerSpec;
use crate::error::VerifyError;
use crate::format::Format;
use crate::verifier::{DEFAULT_TIMEOUT_SECS, Verifier};

/// The `--fail-on` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum FailOn {
    /// Any finding fails the run.
    Info,
    /// Warnings and critical findings fail the run (default).
    #[default]
    Warning,
    /// Only critical findings fail the run.
    Critical,
}

impl FailOn {
    /// The lowest severity that fails the run.
    pub fn severity(self) -> Severity {
        match self {
            FailOn::Info => Severity::Info,
            FailOn::Warning => Severity::Warning,
            FailOn::Critical => Severity::Critical,
        }
    }
}

/// Flags of `hintaudit verify`.
///
/// Exit codes: 0 clean (every tool exercised, or `--allow-unexercised`); 1 findings at or
/// above `--fail-on`, or a tool no call exercised; 2 usage, connection, database-check or
/// server failure, with one line on stderr (then the server's last stderr lines) and no
/// report, or a run that ended early, whose report is still written.
#[derive(Debug, Clone, clap::Args)]
#[command(group(clap::ArgGroup::new("server").required(true).args(["stdio", "url"])))]
pub struct VerifyArgs {
    /// The server as a command line, started as a child process speaking MCP over stdio
    /// (split like a POSIX shell: quote arguments with spaces; leading NAME=value words set
    /// its environment).
    #[arg(long, value_name = "COMMAND")]
    pub stdio: Option<String>,
    /// The server's streamable HTTP endpoint, e.g. http://127.0.0.1:8080/mcp.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// The test database the server uses, as a sqlx URL: sqlite://path, postgres://...,
    /// mysql://... (MariaDB too). Optional when a directory is watched (`--watch`, or
    /// `watch` in hintaudit.toml).
    #[arg(long, value_name = "URL")]
    pub database: Option<String>,
    /// A directory whose files are the server's state (repeatable): snapshotted before and
    /// after every call and judged on content, restored when the run ends (and between
    /// tools with --reset). Point the server at a test tree.
    #[arg(long = "watch", value_name = "DIR")]
    pub watch: Vec<PathBuf>,
    /// A bookkeeping path under the watched directories, as a glob relative to each
    /// (`cache/**`; repeatable): its changes are no effect.
    #[arg(long = "ignore-path", value_name = "GLOB")]
    pub ignore_path: Vec<String>,
    /// Argument sets and setup SQL per tool (TOML, or JSON by the .json extension).
    #[arg(long, value_name = "FILE")]
    pub cases: Option<PathBuf>,
    /// Verify only this tool (repeatable; default: every tool the server lists).
    #[arg(long = "tool", value_name = "NAME")]
    pub tool: Vec<String>,
    /// hintaudit.toml to read (also `HINTAUDIT_CONFIG`): its policy (ignored tables and
    /// columns, closed world, openWorld reading) is the base the flags add to.
    #[arg(long, value_name = "FILE", env = "HINTAUDIT_CONFIG")]
    pub config: Option<PathBuf>,
    /// A bookkeeping table to leave out of the snapshots (repeatable).
    #[arg(long = "ignore-table", value_name = "TABLE")]
    pub ignore_table: Vec<String>,
    /// A bookkeeping column to leave out of the snapshots, `column` or `table.column`
    /// (repeatable).
    #[arg(long = "ignore-column", value_name = "COLUMN")]
    pub ignore_column: Vec<String>,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the report here instead of stdout.
    #[arg(long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Lowest finding severity that makes the exit code 1.
    #[arg(long = "fail-on", value_enum, default_value_t = FailOn::Warning)]
    pub fail_on: FailOn,
    /// Seconds one tool call may take (the handshake: at least 30). A call past it is
    /// recorded on its tool, the server is restarted, and the run goes on.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_TIMEOUT_SECS as f64)]
    pub timeout: f64,
    /// Watch only this PostgreSQL schema (repeatable; default: every non-system schema).
    #[arg(long = "schema", value_name = "SCHEMA")]
    pub schema: Vec<String>,
    /// Exit 0 even when some tools were not exercised (they stay "not exercised" in the
    /// report, never "passed").
    #[arg(long = "allow-unexercised")]
    pub allow_unexercised: bool,
    /// Run against a pristine copy of --database (SQLite file copy, PostgreSQL
    /// CREATE DATABASE ... TEMPLATE, MySQL/MariaDB dump and restore) when the --stdio
    /// command names the database as --database does; otherwise (a server configured by
    /// parts) reset --database itself in place from a pristine copy, only when its name says
    /// it is a test database. After a tool that changed it, the server is stopped and the
    /// database made pristine again.
    #[arg(long)]
    pub reset: bool,
    /// Add the annotations the evidence supports to the report: rmcp attribute text, a JSON
    /// patch over the tools/list answer, SARIF fixes.
    #[arg(long)]
    pub suggest: bool,
}

impl VerifyArgs {
    /// The verifier these flags describe.
    pub fn verifier(&self) -> Result<Verifier, VerifyError> {
        let server = match (&self.stdio, &self.url) {
            (Some(cmd), None) => ServerSpec::Stdio(cmd.clone()),
            (None, Some(url)) => ServerSpec::Url(url.clone()),
            _ => {
                return Err(VerifyError::Usage(
                    "give exactly one of --stdio and --url".into(),
                ));
            }
        };
        // Finite, positive and within what a Duration holds (about 5.8e11 years).
        let timeout = Duration::try_from_secs_f64(self.timeout)
            .ok()
            .filter(|t| !t.is_zero())
            .ok_or_else(|| {
                VerifyError::Usage("--timeout must be a positive number of seconds".into())
            })?;
        let config = hintaudit_core::Config::load_or_default(self.config.as_deref())
            .and_then(|c| c.validate().map(|()| c))
            .map_err(|e| VerifyError::Usage(e.to_string()))?;
        if config.enforces_any() {
            return Err(VerifyError::Usage(
                "mode = \"enforce\" takes effect in the layer of a live server; verify observes a server from outside and cannot enforce: use mode = \"observe\"".into(),
            ));
        }
        let watch: Vec<&PathBuf> = config.watch().iter().chain(&self.watch).collect();
        let mut v = match (&self.database, watch.is_empty()) {
            (Some(db), _) => Verifier::new(server, db),
            (None, false) => Verifier::without_database(server),
            (None, true) => {
                return Err(VerifyError::Usage(
                    "give --database URL, --watch DIR (or `watch` in hintaudit.toml), or both"
                        .into(),
                ));
            }
        };
        for dir in watch {
            v = v.with_watch(dir);
        }
        for glob in config.ignored_paths().iter().chain(&self.ignore_path) {
            v = v.with_ignored_path(glob);
        }
        let mut v = v
            .with_policy(config.policy())
            .with_timeout(timeout)
            .with_reset(self.reset)
            .with_suggest(self.suggest)
            .with_progress(true);
        for s in &self.schema {
            v = v.with_schema(s);
        }
        if let Some(path) = &self.cases {
            v = v.with_cases_file(path)?;
        }
        for t in &self.tool {
            v = v.with_tool(t);
        }
        for t in &self.ignore_table {
            v = v.with_ignored_table(t);
        }
        for c in &self.ignore_column {
            v = v.with_ignored_column(c);
        }
        Ok(v)
    }
}

/// Runs `hintaudit verify`: verifies, writes the report, and returns the exit code (see
/// [`VerifyArgs`]).
pub async fn run(args: VerifyArgs) -> ExitCode {
    let verifier = match args.verifier() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("hintaudit verify: {e}");
            return ExitCode::from(2);
        }
    };
    match run_inner(&args, &verifier).await {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("hintaudit verify: {e}");
            let tail = verifier.server_stderr();
            if !tail.is_empty() {
                eprintln!("server stderr (last {} lines):", tail.len());
                for line in tail {
                    eprintln!("  | {line}");
                }
            }
            ExitCode::from(2)
        }
    }
}

async fn run_inner(args: &VerifyArgs, verifier: &Verifier) -> Result<u8, VerifyError> {
    let report = verifier.run().await?;
    let fail_on = args.fail_on.severity();
    let text = args.format.render(&report, fail_on);
    match &args.output {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| VerifyError::Report(format!("{}: {e}", path.display())))?,
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|_| out.flush())
                .map_err(|e| VerifyError::Report(format!("stdout: {e}")))?;
        }
    }
    if let Some(why) = &report.incomplete {
        eprintln!("hintaudit verify: the run ended early (the report holds what it had): {why}");
        return Ok(2);
    }
    let unexercised: Vec<&str> = report.unexercised().map(|t| t.name.as_str()).collect();
    if !unexercised.is_empty() && !args.allow_unexercised {
        eprintln!(
            "hintaudit verify: not exercised (unchecked, not passed): {}; add cases for them \
             or pass --allow-unexercised",
            unexercised.join(", ")
        );
        return Ok(1);
    }
    Ok(if report.fails(fail_on) { 1 } else { 0 })
}
