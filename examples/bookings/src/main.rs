//! `bookings`: serve the clinic example over stdio or streamable HTTP.
//!
//! ```text
//! DATABASE_URL=sqlite:clinic.db bookings --stdio
//! DATABASE_URL=postgres://postgres@127.0.0.1/test bookings --http 127.0.0.1:8080   # /mcp
//! bookings --http 127.0.0.1:8080 --audit     # wrapped by hintaudit, findings logged
//! bookings --migrate                          # create the schema and seed data, then exit
//! ```

use std::net::SocketAddr;

use bookings::{BOOKKEEPING_TABLES, Bookings, Db};
use clap::Parser;
use hintaudit_core::Policy;
use hintaudit_rmcp::HintAuditLayer;
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use tower::Layer;

#[derive(Debug, Parser)]
#[command(about = "A clinic appointments MCP server with honest and dishonest tool hints")]
struct Args {
    /// Serve over stdio (the default).
    #[arg(long, conflicts_with = "http")]
    stdio: bool,
    /// Serve streamable HTTP on this address, at /mcp.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Database URL: sqlite:… or postgres://…
    #[arg(long, env = "DATABASE_URL", default_value = "sqlite:bookings.db")]
    database_url: String,
    /// Wrap the server in hintaudit's layer and log findings to stderr.
    #[arg(long)]
    audit: bool,
    /// Create the schema and seed data, then exit without serving.
    #[arg(long, conflicts_with_all = ["stdio", "http", "audit"])]
    migrate: bool,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bookings: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,sqlx=warn".into()),
        )
        .init();
    let args = Args::parse();
    let db = Db::connect(&args.database_url).await?;
    if args.migrate {
        db.close().await;
        return Ok(());
    }
    let policy = BOOKKEEPING_TABLES
        .iter()
        .fold(Policy::default(), |p, t| p.with_ignored_table(t));
    let layer = HintAuditLayer::new().with_policy(policy);

    match args.http {
        None => {
            let transport = rmcp::transport::stdio();
            if args.audit {
                layer
                    .layer(Bookings::new(db))
                    .serve(transport)
                    .await?
                    .waiting()
                    .await?;
            } else {
                Bookings::new(db).serve(transport).await?.waiting().await?;
            }
        }
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            eprintln!("bookings: serving http://{}/mcp", listener.local_addr()?);
            let config = StreamableHttpServerConfig::default();
            let sessions = std::sync::Arc::new(LocalSessionManager::default());
            let router = if args.audit {
                let audited = layer.layer(Bookings::new(db));
                axum::Router::new().nest_service(
                    "/mcp",
                    StreamableHttpService::new(move || Ok(audited.clone()), sessions, config),
                )
            } else {
                let server = Bookings::new(db);
                axum::Router::new().nest_service(
                    "/mcp",
                    StreamableHttpService::new(move || Ok(server.clone()), sessions, config),
                )
            };
            axum::serve(listener, router)
                .with_graceful_shutdown(async {
                    let _ = tokio::signal::ctrl_c().await;
                })
                .await?;
        }
    }
    Ok(())
}
