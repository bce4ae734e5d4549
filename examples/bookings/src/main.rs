//! `bookings`: serve the clinic example over stdio or streamable HTTP.
//!
//! ```text
//! DATABASE_URL=sqlite:clinic.db bookings --stdio
//! DATABASE_URL=postgres://postgres@127.0.0.1/test bookings --http 127.0.0.1:8080   # /mcp
//! DATABASE_URL=mysql://root@127.0.0.1:3306/test bookings --http 127.0.0.1:8080      # MariaDB
//! bookings --http 127.0.0.1:8080 --audit     # audited: findings logged, /metrics beside /mcp
//! bookings --stdio --audit --metrics-addr 127.0.0.1:9464   # /metrics on a port of its own
//! bookings --migrate                          # create the schema and seed data, then exit
//! ```
//!
//! Traces go over OTLP when the standard `OTEL_*` variables say so
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_PROTOCOL`, `OTEL_SERVICE_NAME`, …; see
//! hintaudit-telemetry's `TracingConfig::from_env`). SIGTERM and Ctrl-C stop it gracefully.
#![cfg_attr(test, allow(clippy::too_many_lines))]

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use bookings::{BOOKKEEPING_TABLES, Bookings, Db, Notifier};
use clap::Parser;
use hintaudit_core::{Config, LogRecorder};
use hintaudit_http::OutboundRecorder;
use hintaudit_rmcp::{HintAudit, HintAuditLayer};
use hintaudit_telemetry::{
    OtelMakeSpan, PrometheusRecorder, TracingConfig, init_tracing, metrics_router, serve_metrics,
};
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use tokio_util::sync::CancellationToken;
use tower::Layer;

/// Log lines unless `RUST_LOG` says otherwise.
const LOG_FILTER: &str = "info,sqlx=warn";

#[derive(Debug, Parser)]
#[command(about = "A clinic appointments MCP server with honest and dishonest tool hints")]
struct Args {
    /// Serve over stdio (the default).
    #[arg(long, conflicts_with = "http")]
    stdio: bool,
    /// Serve streamable HTTP on this address, at /mcp (port 0 picks a free port; the bound
    /// address is printed on stderr).
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Database URL: sqlite:…, postgres://… or mysql://… (MariaDB 10.5 or later)
    #[arg(long, env = "DATABASE_URL", default_value = "sqlite:bookings.db")]
    database_url: String,
    /// Wrap the server in hintaudit's layer: findings logged to stderr, Prometheus metrics at
    /// /metrics beside /mcp (with --http), every tool declared at start-up.
    #[arg(long)]
    audit: bool,
    /// Also serve /metrics on this address: for --stdio, which has no HTTP listener.
    #[arg(long, value_name = "ADDR", requires = "audit")]
    metrics_addr: Option<SocketAddr>,
    /// A host name (or host:port) clients may address /mcp by, besides localhost, 127.0.0.1
    /// and ::1 (rmcp checks the `Host` header against DNS rebinding). Repeat it, or give a
    /// comma-separated list in BOOKINGS_ALLOWED_HOSTS; `*` accepts any host. Behind a service
    /// name it is needed: `--allowed-host bookings-1` in compose.
    #[arg(
        long = "allowed-host",
        value_name = "HOST",
        env = "BOOKINGS_ALLOWED_HOSTS",
        value_delimiter = ',',
        requires = "http",
        conflicts_with = "stdio"
    )]
    allowed_hosts: Vec<String>,
    /// The clinic's notification service, where notify_patient POSTs reminders (without
    /// it, notify_patient sends nothing).
    #[arg(long, env = "BOOKINGS_NOTIFY_URL", value_name = "URL")]
    notify_url: Option<String>,
    /// A host, `host:port` or CIDR block to treat as outside the closed world even when it
    /// is loopback (a local service standing in for an outside one). Repeat it.
    #[arg(long = "outside", value_name = "ENTRY", requires = "audit")]
    outside: Vec<String>,
    /// hintaudit.toml for the audit (the settings table is in hintaudit's README).
    #[arg(
        long,
        env = "HINTAUDIT_CONFIG",
        value_name = "FILE",
        requires = "audit"
    )]
    config: Option<std::path::PathBuf>,
    /// Create the schema and seed data, then exit without serving.
    #[arg(long, conflicts_with_all = ["stdio", "http", "audit"])]
    migrate: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bookings: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Declared after the runtime, so it is dropped (and flushes queued spans) while the
    // runtime's workers still run.
    let tracing = {
        let _in_runtime = runtime.enter();
        let config = TracingConfig::from_env()
            .with_default_service_name("bookings")
            .with_log_filter(LOG_FILTER);
        match init_tracing(config) {
            Ok(guard) => Some(guard),
            Err(e) => {
                let logs_only = TracingConfig::disabled().with_log_filter(LOG_FILTER);
                let _ = init_tracing(logs_only);
                eprintln!("bookings: traces are not exported: {e}");
                None
            }
        }
    };
    let make_span = tracing
        .as_ref()
        .map_or_else(OtelMakeSpan::new, |g| g.make_span());
    match runtime.block_on(run(args, make_span)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bookings: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args, make_span: OtelMakeSpan) -> anyhow::Result<()> {
    let db = Db::connect(&args.database_url).await?;
    if args.migrate {
        db.close().await;
        return Ok(());
    }
    let stop = CancellationToken::new();
    tokio::spawn(stop_on_signal(stop.clone()));

    let config = match args.audit {
        true => Config::load_or_default(args.config.as_deref())?,
        false => Config::default(),
    };
    config.validate()?;
    let world = args.outside.iter().try_fold(
        config
            .closed_world()
            .clone()
            .with_database_url(&args.database_url),
        |w, e| w.with_outside(e),
    )?;
    let mut server = Bookings::new(db.clone());
    if let Some(url) = &args.notify_url {
        server = server.with_notifier(Notifier::new(url, OutboundRecorder::new(world.clone())));
    }
    let audited = args
        .audit
        .then(|| audited(server.clone(), &config, world, make_span))
        .transpose()?;
    let metrics_server = match (&audited, args.metrics_addr) {
        (Some((_, recorder)), Some(addr)) => {
            let server = serve_metrics(addr, recorder.registry().clone())
                .await
                .with_context(|| format!("cannot serve metrics on {addr}"))?;
            eprintln!(
                "bookings: metrics at http://{}/metrics",
                server.local_addr()
            );
            Some(server)
        }
        _ => None,
    };
    // The shared history's last answers, judged before the process exits.
    let shared = audited
        .as_ref()
        .and_then(|(audited, _)| audited.shared_history().cloned());
    match args.http {
        Some(addr) => serve_http(addr, &args.allowed_hosts, server, audited, stop).await?,
        None => match audited {
            Some((audited, _)) => serve_stdio(audited, stop).await?,
            None => serve_stdio(server, stop).await?,
        },
    }
    if let Some(shared) = shared {
        shared.flush().await;
    }
    if let Some(metrics) = metrics_server {
        metrics.shutdown().await;
    }
    Ok(())
}

/// The bookings server wrapped by hintaudit's layer (the example's bookkeeping tables
/// ignored, `world` as the closed world), recording to the log and to a Prometheus recorder,
/// with every tool declared so that its metrics exist before the first call.
fn audited(
    server: Bookings,
    config: &Config,
    world: hintaudit_core::ClosedWorld,
    make_span: OtelMakeSpan,
) -> anyhow::Result<(HintAudit<Bookings>, PrometheusRecorder)> {
    let policy = BOOKKEEPING_TABLES
        .iter()
        .fold(config.policy(), |p, t| p.with_ignored_table(t))
        .with_closed_world(world);
    let (max_tools, max_tables) = config.label_caps();
    let recorder = PrometheusRecorder::builder()
        .with_max_tools(max_tools)
        .with_max_tables(max_tables)
        .build()?;
    let audited = HintAuditLayer::new()
        .with_policy(policy)
        .with_recorder((LogRecorder::default(), recorder.clone()))
        .with_make_span(make_span)
        .with_modes(config)
        .with_history_of(config)?
        .layer(server);
    let tools = Bookings::tools();
    audited.learn_tools(&tools);
    let listed: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for tool in config.unknown_tools(&listed) {
        tracing::warn!("config overrides tool {tool:?}, which the server does not list");
    }
    Ok((audited, recorder))
}

async fn serve_stdio<S: rmcp::ServerHandler>(
    server: S,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    // A stop before the client has initialized the session ends the handshake too. The
    // signal can also end the handshake's read of stdin first (the handshake then fails a
    // moment before `stop` is cancelled): a handshake error within a moment of a stop is
    // that stop, not a failure.
    let running = tokio::select! {
        biased;
        () = stop.cancelled() => return Ok(()),
        running = server.serve(rmcp::transport::stdio()) => match running {
            Ok(running) => running,
            Err(e) => {
                let stopped = tokio::time::timeout(std::time::Duration::from_millis(500), stop.cancelled());
                return match stopped.await {
                    Ok(()) => Ok(()),
                    Err(_) => Err(e.into()),
                };
            }
        },
    };
    let session = running.cancellation_token();
    let on_stop = tokio::spawn(async move {
        stop.cancelled().await;
        session.cancel();
    });
    let quit = running.waiting().await;
    on_stop.abort();
    quit?;
    Ok(())
}

async fn serve_http(
    addr: SocketAddr,
    allowed_hosts: &[String],
    server: Bookings,
    audited: Option<(HintAudit<Bookings>, PrometheusRecorder)>,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let bound = listener.local_addr()?;
    // Open sessions (SSE streams) end when the server stops, so the graceful shutdown does
    // not wait for clients to hang up.
    let config = http_config(allowed_hosts).with_cancellation_token(stop.child_token());
    let sessions = Arc::new(LocalSessionManager::default());
    let has_metrics = audited.is_some();
    let router = match audited {
        Some((server, recorder)) => {
            let mcp = StreamableHttpService::new(move || Ok(server.clone()), sessions, config);
            axum::Router::new()
                .nest_service("/mcp", mcp)
                .merge(metrics_router(recorder.registry().clone()))
        }
        None => {
            let mcp = StreamableHttpService::new(move || Ok(server.clone()), sessions, config);
            axum::Router::new().nest_service("/mcp", mcp)
        }
    };
    eprintln!("bookings: serving http://{bound}/mcp");
    if has_metrics {
        eprintln!("bookings: metrics at http://{bound}/metrics");
    }
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { stop.cancelled().await })
        .await?;
    Ok(())
}

/// Cancels `stop` on Ctrl-C (SIGINT) or SIGTERM, which container runtimes send.
async fn stop_on_signal(stop: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    tracing::info!("stopping");
    stop.cancel();
}

/// rmcp's streamable HTTP config with loopback names and `allowed` as the hosts it accepts;
/// `*` among them turns the host check off.
fn http_config(allowed: &[String]) -> StreamableHttpServerConfig {
    let config = StreamableHttpServerConfig::default();
    if allowed.iter().any(|h| h == "*") {
        return config.disable_allowed_hosts();
    }
    let hosts = config
        .allowed_hosts
        .iter()
        .chain(allowed)
        .cloned()
        .collect::<Vec<_>>();
    config.with_allowed_hosts(hosts)
}
