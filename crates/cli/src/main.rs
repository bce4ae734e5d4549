//! The `hintaudit` command.
#![cfg_attr(test, allow(clippy::too_many_lines))]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Checks that MCP tool hints (readOnlyHint, destructiveHint, idempotentHint, openWorldHint)
/// match what the tools do.
#[derive(Debug, Parser)]
#[command(name = "hintaudit", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the bookings example server under audit, drive every tool, print the findings.
    Demo(hintaudit_cli::demo::DemoArgs),
    /// Check any MCP server's hints against a test database: read-only tools change nothing,
    /// idempotent tools change things once, tools that delete or overwrite declare it.
    /// Exit 0: clean; 1: findings at or above --fail-on; 2: usage, connection or server failure.
    Verify(hintaudit_verify::VerifyArgs),
    /// Drive running bookings servers in rounds, each to the next --url in turn, one line per
    /// round; a server not up yet is retried. Exit 0 after --rounds rounds, or on Ctrl-C or
    /// SIGTERM.
    Traffic(hintaudit_cli::traffic::TrafficArgs),
    /// Audit any MCP server live: forward every request to it (--stdio COMMAND or --upstream
    /// URL) unchanged, judge each tool call, and read the database's writes from its own log
    /// (--database postgres://… or mysql://…/DB). Findings go to stderr and /metrics.
    Proxy(hintaudit_proxy::ProxyArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("hintaudit: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    // Log lines on stderr; spans exported over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set.
    // Declared after the runtime, so it is dropped (and flushes) while the runtime still runs.
    let _tracing = {
        let _in_runtime = runtime.enter();
        // verify reports its own failures as one line on stderr; library log lines (rmcp's
        // transport errors, say) would only repeat them. RUST_LOG still overrides.
        let (logs, service) = match cli.command {
            Command::Demo(_) => ("warn,sqlx=warn,hintaudit_rmcp::audit=off", "hintaudit-demo"),
            Command::Verify(_) => ("off", "hintaudit-demo"),
            // traffic says what failed on its own lines; rmcp's client would repeat every
            // refused connection while a server comes up.
            Command::Traffic(_) => ("warn,rmcp=off", "hintaudit-traffic"),
            // Findings at their severity's level; rmcp's transport noise off (a lost
            // upstream is said once by the proxy).
            Command::Proxy(_) => ("info,rmcp=off,sqlx=warn", "hintaudit-proxy"),
        };
        let config = hintaudit_telemetry::TracingConfig::from_env()
            .with_default_service_name(service)
            .with_log_filter(logs);
        match hintaudit_telemetry::init_tracing(config) {
            Ok(guard) => Some(guard),
            Err(e) => {
                let logs_only =
                    hintaudit_telemetry::TracingConfig::disabled().with_log_filter(logs);
                let _ = hintaudit_telemetry::init_tracing(logs_only);
                eprintln!("hintaudit: traces are not exported: {e}");
                None
            }
        }
    };
    match cli.command {
        Command::Demo(args) => match runtime.block_on(hintaudit_cli::demo::run(args)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("hintaudit demo: {e:#}");
                ExitCode::from(2)
            }
        },
        Command::Verify(args) => runtime.block_on(hintaudit_verify::run(args)),
        Command::Proxy(args) => match runtime.block_on(hintaudit_proxy::run(args)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("hintaudit proxy: {e:#}");
                ExitCode::from(2)
            }
        },
        Command::Traffic(args) => match runtime.block_on(hintaudit_cli::traffic::run(args)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("hintaudit traffic: {e:#}");
                ExitCode::from(2)
            }
        },
    }
}
