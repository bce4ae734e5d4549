//! `hintaudit proxy`'s figures (docs/performance.md#hintaudit-proxy), on loopback:
//!
//! 1. added latency per call: the Python fixture server (streamable HTTP, PostgreSQL) called
//!    bare, through the proxy without `--database`, and through the proxy with it; p50 and p99
//!    of a read tool and of a write tool, with the ratios of the p50s (forwarding over the
//!    bare server, the capture over forwarding alone) and the commit-to-finding latency of
//!    the write tool's commits (p50, p99, from the proxy's own histogram);
//! 2. capture under a write storm: writers insert as fast as they can, outside calls, for
//!    `HINTAUDIT_BENCH_STORM_SECONDS` (default 10); the lag the capture reports, the commits
//!    it read and settled, and the proxy's peak resident memory.
//!
//! `cargo build --release -p hintaudit-cli && cargo bench -p hintaudit-proxy --bench proxy`
//! (PostgreSQL at HINTAUDIT_PG_URL with wal_level = logical, python3 with the fixture's
//! requirements). It prints the load average before and after: figures from a loaded machine
//! are read as ratios.
//!
//! This file measures item 1 and starts the servers; storm/ measures item 2; measures/
//! (shared with the decoders bench) reads CPU time and the capture's slots.

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::{Duration, Instant};

use hintaudit_test_support::scrape::{Scraped, http_get};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;

mod measures;
mod storm;
use measures::{backends_cpu, cpu_seconds, restart_distance};
use storm::write_storm;

type Client = RunningService<RoleClient, ()>;

fn pg_url() -> String {
    std::env::var("HINTAUDIT_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port")
}

async fn wait_port(addr: SocketAddr) {
    for _ in 0..300 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("nothing on {addr}");
}

fn spawn(program: &std::path::Path, args: &[&str]) -> tokio::process::Child {
    tokio::process::Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn")
}

async fn client(url: &str) -> Client {
    ().serve(StreamableHttpClientTransport::from_uri(url))
        .await
        .expect("handshake")
}

/// Each variant's calls are spread over this many rounds, the variants taking turns in each,
/// so that a drift in the machine's load falls on every variant alike; a variant's calls in
/// a round run back to back, so that the capture's work after a call falls on its own next
/// call, not on another variant's.
const ROUNDS: usize = 5;

/// The two tools measured: a read and a write.
const TOOLS: [&str; 2] = ["read_query", "add_note"];

/// `n` calls of `tool` (an entry of [`TOOLS`]), one after another: their latencies in ms.
async fn timed_calls(c: &Client, tool: &str, n: usize) -> Vec<f64> {
    let mut ms = Vec::with_capacity(n);
    for _ in 0..n {
        let arguments = match tool {
            "add_note" => json!({"id": 1_000_000 + rand_salt(), "text": "bench"}),
            _ => json!({"query": "SELECT id, name FROM public.items"}),
        };
        let arguments = arguments.as_object().cloned().unwrap_or_default();
        let t = Instant::now();
        c.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
            .await
            .expect("call");
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    ms
}

/// (p50, p99) of `ms`.
fn quantiles(mut ms: Vec<f64>) -> (f64, f64) {
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() as f64 * q) as usize).min(ms.len() - 1)];
    (at(0.50), at(0.99))
}

/// One way of reaching the server, and what its calls took.
struct Variant {
    label: &'static str,
    client: Client,
    /// The proxy's pid, when there is one.
    proxy: Option<i32>,
    /// Whether the proxy runs a capture (its PostgreSQL sessions' CPU is counted).
    captured: bool,
    /// Per tool: latencies (ms), then CPU seconds of the proxy and of the capture's sessions.
    ms: [Vec<f64>; 2],
    cpu: [(f64, f64); 2],
}

/// Runs `n` calls of each tool through each variant (after 20 warm-up calls each), in
/// [`ROUNDS`] rounds, counting the CPU of the proxy and of the capture's PostgreSQL
/// sessions (on database `db`) around each variant's calls.
async fn measure(variants: &mut [Variant], admin: &sqlx::PgPool, db: &str, n: usize) {
    for v in variants.iter() {
        for tool in TOOLS {
            timed_calls(&v.client, tool, 20).await;
        }
    }
    for round in 0..ROUNDS {
        let calls = n / ROUNDS + usize::from(round < n % ROUNDS);
        for v in variants.iter_mut() {
            let proxy: Vec<i32> = v.proxy.into_iter().collect();
            let captured = v.captured;
            let backends = async || {
                if captured {
                    backends_cpu(admin, db).await
                } else {
                    0.0
                }
            };
            for (t, tool) in TOOLS.into_iter().enumerate() {
                let before = (cpu_seconds(&proxy), backends().await);
                v.ms[t].extend(timed_calls(&v.client, tool, calls).await);
                let after = (cpu_seconds(&proxy), backends().await);
                v.cpu[t].0 += after.0 - before.0;
                v.cpu[t].1 += after.1 - before.1;
            }
        }
    }
}

/// Prints each variant's p50 and p99; returns the p50s by tool.
fn print_latencies(variants: &[Variant]) -> Vec<(f64, f64)> {
    println!("| variant | read_query p50 / p99 (ms) | add_note p50 / p99 (ms) |");
    println!("|---|---|---|");
    let mut p50s = Vec::new();
    for v in variants {
        let r = quantiles(v.ms[0].clone());
        let w = quantiles(v.ms[1].clone());
        println!(
            "| {} | {:.2} / {:.2} | {:.2} / {:.2} |",
            v.label, r.0, r.1, w.0, w.1
        );
        p50s.push((r.0, w.0));
    }
    p50s
}

/// Prints the CPU per call of each proxy, and of the capture's PostgreSQL sessions.
fn print_cpu(variants: &[Variant], n: usize) {
    println!();
    println!(
        "CPU per call, ms (the kernel's count over {n} calls of each tool): the proxy process \
         / the capture's PostgreSQL sessions (its slot's and its position reads')"
    );
    println!("| variant | read_query | add_note |");
    println!("|---|---|---|");
    let per_call = |s: f64| format!("{:.3}", s * 1000.0 / n as f64);
    for v in variants.iter().filter(|v| v.proxy.is_some()) {
        let cell = |(proxy, backends): (f64, f64)| {
            let backends = if v.captured {
                per_call(backends)
            } else {
                "-".into()
            };
            format!("{} / {backends}", per_call(proxy))
        };
        println!("| {} | {} | {} |", v.label, cell(v.cpu[0]), cell(v.cpu[1]));
    }
}

fn rand_salt() -> usize {
    static SALT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
    SALT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The p50 differences and ratios: forwarding over the bare server, the capture over
/// forwarding alone (targets: ≤ 1 ms and ≤ 0.3 ms at the median).
fn print_ratios(p50s: &[(f64, f64)]) {
    let [bare, plain, captured] = p50s else {
        return;
    };
    println!();
    for (tool, pick) in [
        (
            "read_query",
            (|p: &(f64, f64)| p.0) as fn(&(f64, f64)) -> f64,
        ),
        ("add_note", |p: &(f64, f64)| p.1),
    ] {
        let (b, f, c) = (pick(bare), pick(plain), pick(captured));
        println!(
            "{tool} p50: forwarding adds {:.2} ms over the bare server (x{:.2}); the capture \
             adds {:.2} ms over forwarding alone (x{:.2})",
            f - b,
            f / b,
            c - f,
            c / f
        );
    }
}

/// The commit-to-finding latency of the commits the capture judged, p50 and p99, from the
/// proxy's `hintaudit_capture_commit_to_finding_seconds` buckets (linear within a bucket,
/// as PromQL's `histogram_quantile`).
fn print_commit_to_finding(s: &Scraped) {
    let prefix = "hintaudit_capture_commit_to_finding_seconds_bucket{";
    let mut buckets: Vec<(f64, f64)> = s
        .text
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .filter_map(|l| {
            let le = l.split("le=\"").nth(1)?.split('"').next()?;
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            Some((le, l.rsplit(' ').next()?.parse().ok()?))
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total = buckets.last().map_or(0.0, |b| b.1);
    let quantile = |q: f64| {
        let rank = q * total;
        let mut lower = (0.0, 0.0);
        for &(le, count) in &buckets {
            if count >= rank {
                if le.is_infinite() {
                    return lower.0;
                }
                let share = (rank - lower.1) / (count - lower.1).max(f64::MIN_POSITIVE);
                return lower.0 + (le - lower.0) * share;
            }
            lower = (le, count);
        }
        f64::NAN
    };
    println!(
        "commit-to-finding latency of {total:.0} commits judged: p50 {:.1} ms, p99 {:.1} ms \
         (commit time from the WAL; histogram buckets, interpolated)",
        quantile(0.5) * 1000.0,
        quantile(0.99) * 1000.0
    );
}

/// `/proc/loadavg`'s three averages.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

async fn scrape(addr: SocketAddr) -> Scraped {
    Scraped::parse(&http_get(addr, "/metrics").await.2)
}

/// The bench's database on the PostgreSQL server, made afresh: its URL.
async fn fresh_database(admin: &sqlx::PgPool, name: &str) -> String {
    for sql in [
        format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        format!("CREATE DATABASE {name}"),
    ] {
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(admin)
            .await
            .expect("db");
    }
    let root = pg_url();
    format!(
        "{}/{name}",
        root.rsplit_once('/').map_or(root.as_str(), |(r, _)| r)
    )
}

/// The fixture server on the bench's database and two proxies in front of it.
struct Servers {
    _fixture: tokio::process::Child,
    /// The fixture's MCP URL.
    upstream: String,
    /// The proxy without `--database`, and its address.
    plain: (tokio::process::Child, SocketAddr),
    /// The proxy with `--database` (a PostgreSQL capture), and its address.
    captured: (tokio::process::Child, SocketAddr),
}

/// Starts the fixture on `db` and the two proxies, and waits for all three to listen.
async fn start_servers(db: &str) -> Servers {
    let server = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/verify/python_server/sql_server.py");
    let hintaudit = hintaudit_test_support::workspace_bin("hintaudit-cli", "hintaudit");
    let up_port = free_port();
    let fixture = spawn(
        std::path::Path::new("python3"),
        &[
            server.to_str().unwrap(),
            "--db",
            db,
            "--http",
            &up_port.to_string(),
        ],
    );
    let up_addr = SocketAddr::from(([127, 0, 0, 1], up_port));
    wait_port(up_addr).await;
    let upstream = format!("http://{up_addr}/mcp");
    let proxy = |extra: &[&str]| {
        let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let http = addr.to_string();
        let mut args = vec!["proxy", "--upstream", &upstream];
        args.extend(extra);
        args.extend(["--http", &http]);
        (spawn(&hintaudit, &args), addr)
    };
    let plain = proxy(&[]);
    let captured = proxy(&["--database", db]);
    wait_port(plain.1).await;
    wait_port(captured.1).await;
    Servers {
        _fixture: fixture,
        upstream,
        plain,
        captured,
    }
}

/// The three ways of reaching the server: bare, through the plain proxy, through the
/// captured one.
async fn variants(servers: &Servers) -> Vec<Variant> {
    let mut variants = Vec::new();
    for (label, url, proxy, with_capture) in [
        (
            "bare upstream (Python SDK, streamable HTTP)",
            servers.upstream.clone(),
            None,
            false,
        ),
        (
            "through the proxy, no --database",
            format!("http://{}/mcp", servers.plain.1),
            servers.plain.0.id(),
            false,
        ),
        (
            "through the proxy, --database (PostgreSQL capture)",
            format!("http://{}/mcp", servers.captured.1),
            servers.captured.0.id(),
            true,
        ),
    ] {
        variants.push(Variant {
            label,
            client: client(&url).await,
            proxy: proxy.map(|p| p as i32),
            captured: with_capture,
            ms: [Vec::new(), Vec::new()],
            cpu: [(0.0, 0.0); 2],
        });
    }
    variants
}

/// Part 1: `n` calls of each tool through each variant; the latencies, the CPU, the ratios,
/// the slot's restart distance and the commit-to-finding latency.
async fn added_latency(servers: &Servers, admin: &sqlx::PgPool, name: &str, n: usize) {
    println!("load average before: {}", load_average());
    println!(
        "calls per variant and tool: {n} (after 20 warm-up calls), one at a time, loopback, \
         in {ROUNDS} rounds"
    );
    let mut variants = variants(servers).await;
    measure(&mut variants, admin, name, n).await;
    let p50s = print_latencies(&variants);
    print_cpu(&variants, n);
    for v in variants {
        v.client.cancel().await.ok();
    }
    print_ratios(&p50s);
    println!(
        "the capture's slot restarts decoding {} KiB behind the WAL's end (each slot read \
         decodes that again)",
        restart_distance(admin, name).await / 1024
    );
    print_commit_to_finding(&scrape(servers.captured.1).await);
    println!("load average after: {}", load_average());
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let admin = sqlx::PgPool::connect(&pg_url()).await.expect("PostgreSQL");
    let name = "hintaudit_proxy_bench";
    let db = fresh_database(&admin, name).await;
    let n: usize = std::env::var("HINTAUDIT_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let servers = start_servers(&db).await;
    added_latency(&servers, &admin, name, n).await;
    let pid = servers.captured.0.id().unwrap_or(0);
    write_storm(&db, servers.captured.1, pid).await;
    drop(servers);
    let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
    )))
    .execute(&admin)
    .await;
}
