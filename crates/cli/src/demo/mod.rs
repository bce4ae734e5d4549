//! `hintaudit demo`: the bookings example, audited live, driven by a real client.
//!
//! It starts the bookings server wrapped by [`HintAuditLayer`] over streamable HTTP on
//! loopback, on a SQLite database in a temporary directory; lists its tools and calls every
//! one (idempotent ones twice) with an rmcp client over HTTP; prints a findings table and a
//! summary line. `--serve` then keeps the server up for other MCP clients.

mod collect;
mod drive;
mod outside;
mod server;
mod table;

use std::net::SocketAddr;

use bookings::{BOOKKEEPING_TABLES, Bookings, Db, Notifier};
use hintaudit_core::{Config, Judge, LogRecorder, Mode, Policy};
use hintaudit_http::OutboundRecorder;
use hintaudit_rmcp::HintAuditLayer;
use hintaudit_telemetry::{
    MetricName, OtelMakeSpan, PrometheusRecorder, metrics_excerpt, metrics_router,
};

pub use collect::{CallRecord, Collected, Collector};
pub use drive::{Called, Step, bookings_plan, connect, drive};
pub use outside::OutsideService;
pub use server::{RunningServer, serve_http};
pub use table::{Tally, distinct_findings, render, summary_line, tally};

/// Options of `hintaudit demo`.
#[derive(Debug, Clone, clap::Args)]
pub struct DemoArgs {
    /// Keep the audited server up after the demo run, for other MCP clients, until Ctrl-C or
    /// SIGTERM.
    #[arg(long)]
    pub serve: bool,
    /// Address to serve on (loopback; port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub addr: SocketAddr,
    /// Database URL for the bookings server: `sqlite:…`, `postgres://…` or `mysql://…`
    /// (MariaDB 10.5 or later); default: a SQLite file in a temporary directory.
    #[arg(long, value_name = "URL")]
    pub database_url: Option<String>,
    /// hintaudit.toml to read (see the README's settings table).
    #[arg(long, value_name = "FILE", env = hintaudit_core::CONFIG_ENV)]
    pub config: Option<std::path::PathBuf>,
    /// `observe` or `enforce`: the server's mode, over the config file's `mode`. In enforce
    /// mode the planted tools are refused (`enforced`) instead of violating their hints;
    /// search_patients, whose bookkeeping write the database would refuse too, stays observed
    /// unless the config file sets its mode.
    #[arg(long, value_name = "MODE", value_parser = parse_mode)]
    pub mode: Option<Mode>,
}

/// `observe` or `enforce`, for `--mode`.
fn parse_mode(s: &str) -> Result<Mode, String> {
    match s {
        "observe" => Ok(Mode::Observe),
        "enforce" => Ok(Mode::Enforce),
        _ => Err(format!("{s:?}: expected observe or enforce")),
    }
}

/// The tool of the bookings example that declares readOnlyHint true and writes only its
/// bookkeeping table: in enforce mode the database would refuse that write too, so `--mode
/// enforce` keeps it observed.
const BOOKKEEPING_WRITER: &str = "search_patients";

/// The demo's policy: the bookings example's bookkeeping tables are ignored.
pub fn demo_policy() -> Policy {
    demo_policy_from(&Config::default())
}

/// The policy of `config`, with the bookings example's bookkeeping tables ignored too.
pub fn demo_policy_from(config: &Config) -> Policy {
    BOOKKEEPING_TABLES
        .iter()
        .fold(config.policy(), |p, t| p.with_ignored_table(t))
}

/// What a demo run produced.
#[derive(Debug)]
pub struct DemoRun {
    /// Everything the recorder collected.
    pub collected: Collected,
    /// The counts behind the summary line.
    pub tally: Tally,
    /// The server, still running.
    pub server: RunningServer<Bookings>,
    /// The Prometheus recorder of the run; the server serves it at `/metrics` beside `/mcp`.
    pub metrics: PrometheusRecorder,
    /// The temporary directory holding the SQLite file, if the demo made one.
    pub tempdir: Option<tempfile::TempDir>,
    /// The notification service standing in for an outside system.
    pub outside: OutsideService,
}

/// The audited bookings server of the demo, started and not yet driven.
#[derive(Debug)]
pub struct DemoServer {
    /// The server (every tool already declared to the recorders).
    pub server: RunningServer<Bookings>,
    /// What the demo's collector has recorded so far.
    pub collector: Collector,
    /// The Prometheus recorder; the server serves it at `/metrics` beside `/mcp`.
    pub metrics: PrometheusRecorder,
    /// The temporary directory holding the SQLite file, if the demo made one.
    pub tempdir: Option<tempfile::TempDir>,
    /// The notification service standing in for an outside system: notify_patient's
    /// requests to it are outside the closed world.
    pub outside: OutsideService,
}

/// Starts the audited bookings server as the demo does: on its database (a SQLite file in a
/// temporary directory unless `args` names one), with `/metrics` beside `/mcp`, and every
/// tool declared at start-up ([`HintAudit::learn_tools`](hintaudit_rmcp::HintAudit::learn_tools)),
/// so each tool's violation series are on `/metrics` at 0 before any client.
///
/// # Errors
/// When the config file (`--config`, `HINTAUDIT_CONFIG`) is bad, the database cannot be
/// opened or the address cannot be bound.
pub async fn start(args: &DemoArgs) -> anyhow::Result<DemoServer> {
    let mut config = Config::load_or_default(args.config.as_deref())?;
    config.validate()?;
    if let Some(mode) = args.mode {
        config = config.with_mode(mode);
        if mode == Mode::Enforce && config.tool_override(BOOKKEEPING_WRITER).is_none() {
            config = config.with_tool_mode(BOOKKEEPING_WRITER, Mode::Observe);
        }
    }
    let (url, tempdir) = match &args.database_url {
        Some(url) => (url.clone(), None),
        None => {
            let dir = tempfile::tempdir()?;
            let url = format!(
                "sqlite://{}?mode=rwc",
                dir.path().join("bookings.db").display()
            );
            (url, Some(dir))
        }
    };
    let db = Db::connect(&url).await?;
    let outside = OutsideService::start().await?;
    let world = outside.outside_of(config.closed_world().clone().with_database_url(&url))?;
    let notifier = Notifier::new(outside.url(), OutboundRecorder::new(world.clone()));
    let collector = Collector::default();
    let (max_tools, max_tables) = config.label_caps();
    let metrics = PrometheusRecorder::builder()
        .with_max_tools(max_tools)
        .with_max_tables(max_tables)
        .build()?;
    let layer = HintAuditLayer::new()
        .with_judge(std::sync::Arc::new(Judge::new(
            demo_policy_from(&config).with_closed_world(world),
        )))
        .with_recorder((
            collector.clone(),
            (metrics.clone(), args.serve.then(LogRecorder::default)),
        ))
        .with_make_span(OtelMakeSpan::new())
        .with_modes(&config)
        .with_history_of(&config)?;
    let metrics_route = metrics_router(metrics.registry().clone());
    let bookings = Bookings::new(db).with_notifier(notifier);
    let server = serve_http(bookings, layer, args.addr, Some(metrics_route)).await?;
    let tools = Bookings::tools();
    server.audit.learn_tools(&tools);
    let listed: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for tool in config.unknown_tools(&listed) {
        eprintln!(
            "hintaudit: warning: config overrides tool {tool:?}, which the server does not list"
        );
    }
    Ok(DemoServer {
        server,
        collector,
        metrics,
        tempdir,
        outside,
    })
}

/// Starts the audited bookings server ([`start`]) and drives it once; the server keeps
/// running.
///
/// # Errors
/// When the database cannot be opened, the address cannot be bound, or tools/list fails.
pub async fn run_once(args: &DemoArgs) -> anyhow::Result<DemoRun> {
    let DemoServer {
        server,
        collector,
        metrics,
        tempdir,
        outside,
    } = start(args).await?;
    let client = connect(&server.url).await?;
    drive(&client, &bookings_plan()).await?;
    client.cancel().await.ok();
    let collected = collector.snapshot();
    let tally = tally(&collected);
    Ok(DemoRun {
        collected,
        tally,
        server,
        metrics,
        tempdir,
        outside,
    })
}

/// Runs `hintaudit demo`: prints the table and the summary line; with `--serve`, keeps
/// serving until Ctrl-C or SIGTERM.
///
/// # Errors
/// As [`run_once`].
pub async fn run(args: DemoArgs) -> anyhow::Result<()> {
    let run = run_once(&args).await?;
    println!("{}", render(&run.collected));
    if !args.serve {
        let shown = [MetricName::HintViolations, MetricName::AuditErrors];
        let excerpt = metrics_excerpt(run.metrics.registry(), &shown);
        println!("metrics (excerpt of /metrics):\n{}\n", excerpt.trim_end());
    }
    println!("{}", summary_line(&run.tally));
    if args.serve {
        println!(
            "hintaudit: Prometheus metrics at http://{}/metrics",
            run.server.addr
        );
        println!(
            "hintaudit: serving the audited bookings server at {}",
            run.server.url
        );
        println!("hintaudit: findings are logged to stderr; Ctrl-C stops");
        crate::shutdown_signal().await;
    }
    run.server.shutdown().await;
    drop(run.tempdir);
    Ok(())
}
