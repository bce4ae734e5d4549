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
/// Exit codes: 0 clean; 1 findings at or above `--fail-on`; 2 usage, connection or server
/// failure, with one line on stderr and no report.
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
    /// mysql://... (MariaDB too).
    #[arg(long, value_name = "URL")]
    pub database: String,
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
    /// Seconds one tool call (and the handshake) may take before the run ends with exit 2.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_TIMEOUT_SECS as f64)]
    pub timeout: f64,
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
        let mut v = Verifier::new(server, &self.database)
            .with_policy(config.policy())
            .with_timeout(timeout)
            .with_progress(true);
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

/// Runs `hintaudit verify`: verifies, writes the report, and returns the exit code (0 clean,
/// 1 findings at or above `--fail-on`, 2 failure with one line on stderr and no report).
pub async fn run(args: VerifyArgs) -> ExitCode {
    match run_inner(&args).await {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("hintaudit verify: {e}");
            ExitCode::from(2)
        }
    }
}

async fn run_inner(args: &VerifyArgs) -> Result<u8, VerifyError> {
    let report = args.verifier()?.run().await?;
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
    Ok(if report.fails(fail_on) { 1 } else { 0 })
}
