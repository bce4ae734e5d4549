//! `hintaudit proxy`: its arguments, and serving the audited proxy downstream over stdio or
//! streamable HTTP with `/metrics` beside `/mcp`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use hintaudit_core::{AnnotationsForm, Config, Judge, LogRecorder};
use hintaudit_rmcp::{HintAudit, HintAuditLayer};
use hintaudit_telemetry::{OtelMakeSpan, PrometheusRecorder, metrics_router, serve_metrics};
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use tokio_util::sync::CancellationToken;
use tower::Layer;

use crate::capture::{Capture, CaptureOptions, UpstreamHost};
use crate::files::FileWatch;
use crate::forward::Forward;
use crate::metrics::CaptureMetrics;
use crate::relay::Relay;
use crate::upstream::{Upstream, UpstreamSpec};

/// Arguments of `hintaudit proxy`.
#[derive(Debug, Clone, clap::Args)]
pub struct ProxyArgs {
    /// The upstream server as a command line, started as a child process speaking MCP over
    /// stdio (leading `NAME=value` words set its environment).
    #[arg(
        long,
        value_name = "COMMAND",
        conflicts_with = "upstream",
        required_unless_present = "upstream"
    )]
    pub stdio: Option<String>,
    /// The upstream server's streamable HTTP endpoint, e.g. `http://127.0.0.1:8080/mcp`.
    #[arg(long, value_name = "URL")]
    pub upstream: Option<String>,
    /// With `--upstream`: the address the database sees the upstream server's connections
    /// come from (its pod's IP). Commits from other addresses are never this proxy's calls'.
    /// Without it, the processes listening on the upstream's port are the upstream when this
    /// host shows them (same host, or a shared PID namespace).
    #[arg(long, value_name = "IP", conflicts_with = "stdio")]
    pub upstream_addr: Option<std::net::IpAddr>,
    /// Serve streamable HTTP on this address (`/mcp`, and `/metrics` beside it) instead of
    /// stdio.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Host names HTTP clients may use besides loopback (a service name in compose or
    /// Kubernetes); repeat for several.
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// With stdio downstream: serve `/metrics` on this address.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// The database whose changes are captured from its own log (`postgres://…`: logical
    /// decoding; `mysql://…/DB`: the ROW binary log). Without it, calls are forwarded and
    /// listings linted, and no write is seen.
    #[arg(long, value_name = "URL", env = "HINTAUDIT_PROXY_DATABASE_URL")]
    pub database: Option<String>,
    /// A directory whose files are the server's state (repeatable; added to hintaudit.toml's
    /// `watch`): its writes are seen live through inotify and judged on content, as
    /// `hintaudit verify --watch` judges them (docs/design.md, *File effects*).
    #[arg(long = "watch", value_name = "DIR")]
    pub watch: Vec<PathBuf>,
    /// A bookkeeping path glob under the watched directories (repeatable; added to
    /// hintaudit.toml's `ignored_paths`): its changes are no effect.
    #[arg(long = "ignore-path", value_name = "GLOB")]
    pub ignore_paths: Vec<String>,
    /// hintaudit.toml (ignored tables and columns, closed world, label caps).
    #[arg(long, value_name = "FILE", env = "HINTAUDIT_CONFIG")]
    pub config: Option<PathBuf>,
    /// Send tool calls upstream one at a time, so that every commit is attributed to the
    /// one call in flight.
    #[arg(long)]
    pub serialize: bool,
    /// Seconds to wait for the upstream's MCP handshake.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub handshake_timeout: u64,
    /// Milliseconds a call's judgement waits, at most, after its answer went back, for the
    /// capture to read past the call's end; a call judged before that is judged with what
    /// was read and counted late. The answer itself never waits.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    pub capture_wait_ms: u64,
    /// Serve corrected annotations (as `correct_hints = true` in hintaudit.toml): once a tool
    /// has a finding at warning or above, every tools/list carries its hints tightened to
    /// what the database log showed, and every open session gets
    /// `notifications/tools/list_changed` (docs/design.md, *Corrected annotations*).
    #[arg(long)]
    pub correct_hints: bool,
    /// Disclose each call's observed effects (as `disclose_effects = true` in hintaudit.toml):
    /// every tools/call result carries in `_meta["io.hintaudit/effects"]` the tables the
    /// database log showed it writing, with their row counts, and its findings; `"pending"`
    /// when the capture had not read that far within `--capture-wait-ms`
    /// (docs/design.md, *Observed effects disclosed*).
    #[arg(long)]
    pub disclose_effects: bool,
}

/// A running proxy.
pub struct Proxy {
    /// The audited handler on the start-up connection (requests without a session). A
    /// downstream session is served by [`Proxy::session`].
    pub audit: HintAudit<Forward>,
    /// The start-up connection: it checked the upstream works and learnt its tools; it
    /// serves requests that arrive without a session, and is closed when the first session
    /// opens its own (it connects again when needed).
    pub upstream: Arc<Upstream>,
    /// The capture, with `--database`.
    pub capture: Option<Capture>,
    /// The file watch, with `--watch` (or `watch` in hintaudit.toml).
    pub files: Option<FileWatch>,
    /// The Prometheus recorder (its registry serves `/metrics`).
    pub metrics: PrometheusRecorder,
}

impl Proxy {
    /// The audited handler of a new downstream session: the same audit (judge, recorders,
    /// learned hints) around a [`Forward::for_session`], which opens its own upstream
    /// connection at the session's `initialize` and closes it when dropped.
    pub fn session(&self) -> HintAudit<Forward> {
        self.audit.rewrap(self.audit.inner().for_session())
    }
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy").finish_non_exhaustive()
    }
}

/// How the capture tells the upstream's database connections from others': its children
/// (`--stdio`), the address given (`--upstream-addr`), else whoever listens on the
/// `--upstream` URL's port.
fn upstream_host(args: &ProxyArgs) -> UpstreamHost {
    if let Some(ip) = args.upstream_addr {
        return UpstreamHost::Address(ip);
    }
    let Some(url) = &args.upstream else {
        return UpstreamHost::Children;
    };
    let uri: Option<axum::http::Uri> = url.parse().ok();
    let port = uri.as_ref().and_then(|u| {
        u.port_u16().or_else(|| match u.scheme_str() {
            Some("https") => Some(443),
            Some("http") => Some(80),
            _ => None,
        })
    });
    port.map_or(UpstreamHost::Children, UpstreamHost::Listening)
}

/// hintaudit.toml (`--config`), checked, with the options that turn its switches on
/// (`--correct-hints`, `--disclose-effects`).
fn settings(args: &ProxyArgs) -> anyhow::Result<Config> {
    let mut config = Config::load_or_default(args.config.as_deref())?;
    config.validate()?;
    if args.correct_hints {
        config = config.with_correct_hints(true);
    }
    if args.disclose_effects {
        config = config.with_disclose_effects(true);
    }
    Ok(config)
}

/// Starts the capture (when `--database` is given), connects upstream, audits its tools/list
/// (as a listing) and builds the audited handler.
///
/// # Errors
/// A bad config file, a capture that cannot start (the message says why: wal_level, the
/// REPLICATION attribute, an unsupported backend), or an upstream that cannot be reached.
pub async fn start(args: &ProxyArgs) -> anyhow::Result<Proxy> {
    let config = settings(args)?;
    let capture = start_capture(args, &config).await?;
    let files = start_files(args, &config)?;
    let upstream = connect_upstream(args).await?;
    let forward = Forward::new(
        upstream.clone(),
        capture.clone(),
        files.clone(),
        args.serialize,
    )
    .await;
    let tools = upstream
        .peer()
        .await?
        .list_all_tools()
        .await
        .unwrap_or_default();
    forward.learn(&tools);
    let (max_tools, max_tables) = config.label_caps();
    let metrics = PrometheusRecorder::builder()
        .with_max_tools(max_tools)
        .with_max_tables(max_tables)
        .build()?;
    if capture.is_some() || files.is_some() {
        CaptureMetrics::register(metrics.registry(), capture.clone(), files.clone())?;
    }
    if config.enforces_any() {
        eprintln!(
            "hintaudit proxy: warning: enforce mode needs the audited pool in the server's \
             process; the proxy observes only"
        );
    }
    if capture.is_none() && files.is_none() {
        eprintln!(
            "hintaudit proxy: warning: no --database and no --watch: tools/list is linted, \
             but no write is seen, so no call is judged for writes"
        );
    }
    // Suggestions in MCP's JSON form: the upstream is a server in any language.
    let log = LogRecorder::default().with_annotations_form(AnnotationsForm::McpJson);
    let judge = proxy_judge(&config, capture.as_ref(), files.as_ref());
    let layer = HintAuditLayer::new()
        .with_judge(judge)
        .with_recorder((metrics.clone(), log))
        .with_make_span(OtelMakeSpan::new())
        .with_corrections_of(&config)
        .with_disclosure_of(&config)
        // Proxies in front of a server's replicas share the idempotency history too.
        .with_history_of(&config)?;
    let audit = layer.layer(forward);
    // The upstream's tools/list, as the proxy asked it: every listing rule applies to it now,
    // before (and whether or not) a client lists the tools.
    audit.audit_listing(&tools);
    Ok(Proxy {
        audit,
        upstream,
        capture,
        files,
        metrics,
    })
}

/// Connects to the upstream `--stdio` or `--upstream` names.
///
/// # Errors
/// Neither is given, or the upstream cannot be reached within `--handshake-timeout`.
async fn connect_upstream(args: &ProxyArgs) -> anyhow::Result<Arc<Upstream>> {
    let spec = match (&args.stdio, &args.upstream) {
        (Some(cmd), _) => UpstreamSpec::Stdio(cmd.clone()),
        (None, Some(url)) => UpstreamSpec::Http(url.clone()),
        (None, None) => anyhow::bail!("one of --stdio or --upstream is required"),
    };
    let timeout = Duration::from_secs(args.handshake_timeout);
    let upstream = Upstream::connect(spec, Relay::default(), timeout)
        .await
        .context("upstream")?;
    Ok(Arc::new(upstream))
}

/// The proxy's judge: the config's policy without advice, told of the writes the capture and
/// the watch give to no call, so that they still disturb the repeats of the calls touching
/// them.
fn proxy_judge(
    config: &Config,
    capture: Option<&Capture>,
    files: Option<&FileWatch>,
) -> Arc<Judge> {
    // No advice through the proxy: it cannot see the server's outbound requests (every tool
    // would look closed-world), and a call whose commits were ambiguous would count as one
    // without writes. A call without contrary evidence is no evidence here.
    let policy = config.policy().with_advice_after_calls(u64::MAX);
    let judge = Arc::new(Judge::new(policy));
    if let Some(capture) = capture {
        capture.disturb(judge.clone());
    }
    if let Some(files) = files {
        files.disturb(judge.clone());
    }
    judge
}

/// Starts the capture when `--database` is given. Disclosed effects put the call's share
/// of the log in its answer, so the answer waits for the slot read: calls then wake it at
/// once, with no gap since the last read.
async fn start_capture(args: &ProxyArgs, config: &Config) -> anyhow::Result<Option<Capture>> {
    let Some(url) = &args.database else {
        return Ok(None);
    };
    let defaults = CaptureOptions::default();
    let options = CaptureOptions {
        wait: Duration::from_millis(args.capture_wait_ms),
        upstream: upstream_host(args),
        read_gap: if config.disclose_effects() {
            Duration::ZERO
        } else {
            defaults.read_gap
        },
        ..defaults
    };
    Ok(Some(Capture::start(url, options).await?))
}

/// Starts the file watch when `--watch` or hintaudit.toml's `watch` names a directory.
fn start_files(args: &ProxyArgs, config: &Config) -> anyhow::Result<Option<FileWatch>> {
    let mut roots = args.watch.clone();
    roots.extend(config.watch().iter().cloned());
    if roots.is_empty() {
        return Ok(None);
    }
    let mut ignored = config.ignored_paths().to_vec();
    ignored.extend(args.ignore_paths.iter().cloned());
    let wait = Duration::from_millis(args.capture_wait_ms);
    Ok(Some(FileWatch::start(&roots, &ignored, wait)?))
}

/// Serves the proxy until the downstream stdio closes or, over HTTP, until Ctrl-C or
/// SIGTERM; then closes the upstream connections (every session's and the start-up one) and
/// the capture (which first settles the calls still pending, then drops the slot).
///
/// # Errors
/// When the proxy cannot start ([`start`]) or the address cannot be bound.
pub async fn run(args: ProxyArgs) -> anyhow::Result<()> {
    let proxy = start(&args).await?;
    let result = match args.http {
        Some(addr) => serve_http(&proxy, addr, &args.allowed_hosts).await,
        None => serve_stdio(&proxy, args.metrics).await,
    };
    proxy.audit.inner().close_all().await;
    if let Some(c) = &proxy.capture {
        c.shutdown().await;
    }
    if let Some(f) = &proxy.files {
        f.shutdown().await;
    }
    result
}

async fn serve_stdio(proxy: &Proxy, metrics: Option<SocketAddr>) -> anyhow::Result<()> {
    let _metrics = match metrics {
        Some(addr) => Some(serve_metrics(addr, proxy.metrics.registry().clone()).await?),
        None => None,
    };
    // Stdio downstream is one session: one upstream connection of its own (closed by `run`,
    // with every session's).
    let running = proxy.session().serve(rmcp::transport::stdio()).await?;
    tokio::select! {
        r = running.waiting() => { r?; }
        () = shutdown_signal() => {}
    }
    Ok(())
}

async fn serve_http(proxy: &Proxy, addr: SocketAddr, hosts: &[String]) -> anyhow::Result<()> {
    let cancel = CancellationToken::new();
    let mut config =
        StreamableHttpServerConfig::default().with_cancellation_token(cancel.child_token());
    if !hosts.is_empty() {
        let mut allowed: Vec<String> = ["localhost", "127.0.0.1", "::1"]
            .into_iter()
            .map(String::from)
            .collect();
        allowed.extend(hosts.iter().cloned());
        config = config.with_allowed_hosts(allowed);
    }
    // One handler per session, each with its own upstream connection (a stateless request
    // gets a handler without one, and goes on the start-up connection).
    let audit = proxy.audit.clone();
    let service = StreamableHttpService::new(
        move || Ok(audit.rewrap(audit.inner().for_session())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .merge(metrics_router(proxy.metrics.registry().clone()));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    eprintln!(
        "hintaudit proxy: serving http://{}/mcp and /metrics",
        listener.local_addr()?
    );
    let stop = cancel.clone();
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown_signal().await;
            stop.cancel();
        })
        .await?;
    Ok(())
}

/// Ctrl-C, or SIGTERM (what container runtimes send).
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        proxy: ProxyArgs,
    }

    #[test]
    fn the_upstream_is_told_apart_as_the_deployment_allows() {
        let rows: [(&[&str], UpstreamHost); 5] = [
            (&["--stdio", "python3 s.py"], UpstreamHost::Children),
            (
                &["--upstream", "http://127.0.0.1:8000/mcp"],
                UpstreamHost::Listening(8000),
            ),
            (
                &["--upstream", "http://server/mcp"],
                UpstreamHost::Listening(80),
            ),
            (
                &["--upstream", "https://server/mcp"],
                UpstreamHost::Listening(443),
            ),
            (
                &[
                    "--upstream",
                    "http://server:8000/mcp",
                    "--upstream-addr",
                    "10.1.2.3",
                ],
                UpstreamHost::Address("10.1.2.3".parse().expect("ip")),
            ),
        ];
        for (words, want) in rows {
            let cli = Cli::parse_from(std::iter::once("proxy").chain(words.iter().copied()));
            assert_eq!(upstream_host(&cli.proxy), want, "{words:?}");
        }
        let stdio_with_addr =
            Cli::try_parse_from(["proxy", "--stdio", "x", "--upstream-addr", "10.1.2.3"]);
        assert!(
            stdio_with_addr.is_err(),
            "--upstream-addr is for --upstream: {:?}",
            stdio_with_addr.as_ref().map(|c| upstream_host(&c.proxy))
        );
    }
}
