//! hintaudit-proxy: `hintaudit proxy`, the live audit of an MCP server in any language with
//! no change to its code.
//!
//! The proxy is an rmcp server ([`Forward`]) that sends every request to an upstream MCP
//! server (a child process over stdio, or streamable HTTP) and returns its answers unchanged,
//! wrapped by the same [`HintAuditLayer`](hintaudit_rmcp::HintAuditLayer) as an in-process
//! server: same findings, metric names, span names and attributes. The database writes are
//! read from the database's own log ([`Capture`]: PostgreSQL logical decoding, the MySQL/MariaDB
//! ROW binary log) and
//! attributed to the calls in flight by the log's positions, never by clocks
//! ([design: the proxy's evidence](../../../docs/design.md#the-proxys-evidence)).
//!
//! Each downstream session has an upstream connection of its own ([`Forward::for_session`]),
//! opened with the client's own `initialize` params; its [`Relay`] sends the upstream's
//! requests to the client (sampling, elicitation, roots) and its notifications to that
//! session only. With a `--stdio` upstream that is one child per session.
//!
//! ```no_run
//! # async fn run() -> anyhow::Result<()> {
//! use clap::Parser;
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     proxy: hintaudit_proxy::ProxyArgs,
//! }
//! let cli = Cli::parse_from([
//!     "hintaudit-proxy",
//!     "--stdio", "python3 server.py",
//!     "--database", "postgres://postgres@127.0.0.1/app",
//!     "--http", "127.0.0.1:8080",
//! ]);
//! hintaudit_proxy::run(cli.proxy).await
//! # }
//! ```
#![cfg_attr(test, allow(clippy::too_many_lines))]

/// Change capture from the database's log, and attribution by log position.
mod capture;
/// What passing a request on shares in both directions: `_meta`, cancellation.
mod exchange;
/// `--watch`: the server's file writes, live, judged on content.
mod files;
/// The forwarding `ServerHandler`.
mod forward;
/// The capture's Prometheus metrics.
mod metrics;
/// The client side of an upstream connection: what the upstream asks or notifies, sent to
/// the session it serves.
mod relay;
/// The command: arguments, start-up, serving downstream.
mod serve;
/// A downstream session's own upstream connection.
mod session;
/// An upstream connection, made again when lost.
mod upstream;

pub use capture::{
    CallShare, Capture, CaptureError, CaptureOptions, CaptureStats, Commit, Hold, Lsn, Origin,
    Settled, Settling, Ticket, UpstreamHost, UpstreamLink, Writer,
};
pub use files::{FileShare, FileTicket, FileWatch, FileWatchStats};
pub use forward::Forward;
pub use metrics::CaptureMetrics;
pub use relay::Relay;
pub use serve::{Proxy, ProxyArgs, run, start};
pub use upstream::{Upstream, UpstreamError, UpstreamSpec};
