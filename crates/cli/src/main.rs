//! The `hintaudit` command.

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
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn,sqlx=warn,hintaudit_rmcp::audit=off".into()),
        )
        .init();
    match cli.command {
        Command::Demo(args) => match runtime.block_on(hintaudit_cli::demo::run(args)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("hintaudit demo: {e:#}");
                ExitCode::from(2)
            }
        },
    }
}
