//! What the fleet's shared history costs (docs/performance.md, "The fleet's shared history"):
//! the bookings example on a SQLite file, audited, served over streamable HTTP on loopback,
//! driven by an rmcp client; a `redis-server` of its own on loopback.
//!
//! Three variants, in one run, each on a fresh database: no shared history; a shared history;
//! a shared history whose store is stopped. Each runs HINTAUDIT_BENCH_PAIRS (default 300)
//! pairs of `create_appointment` (declared idempotent, inserts a row each time: every repeat
//! is a finding), one after the other, and prints per call: the latency seen by the client
//! (p50, p99), and for the shared variant the round trips to the store per call (Redis's own
//! `INFO commandstats`), the delay from the call's judgement to the repeat's settled finding
//! (p50, p99), and the store's bytes per entry (`MEMORY USAGE`, exact, over the entries kept).
//!
//! `cargo bench --bench fleet` (needs `redis-server` on PATH).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bookings::{Bookings, Db};
use hintaudit::core::{AuditEvent, Config, Judge, Rule};
use hintaudit::rmcp::{HintAuditLayer, SharedHistory};
use hintaudit_cli::demo::{connect, demo_policy, serve_http};
use hintaudit_test_support::redis::RedisServer;
use rmcp::RoleClient;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use serde_json::json;

type Client = RunningService<RoleClient, ()>;

/// When the judge reported each call of the tool, and when each settled finding arrived.
#[derive(Default)]
struct Times {
    calls: Vec<Instant>,
    settled: Vec<Instant>,
    findings: usize,
}

#[derive(Clone, Copy, PartialEq)]
enum Variant {
    Local,
    Shared,
    StoreDown,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// A recorder that notes, in `times`, when each create_appointment call was judged and when
/// each settled finding arrived, and counts the findings.
fn timing_recorder(
    times: Arc<Mutex<Times>>,
) -> impl Fn(&AuditEvent<'_>) + Clone + Send + Sync + 'static {
    move |event: &AuditEvent<'_>| {
        let mut t = times.lock().unwrap();
        match event {
            AuditEvent::Call(r) if r.tool == "create_appointment" => {
                t.calls.push(Instant::now());
                t.findings += r.verdict.findings.len();
            }
            AuditEvent::Settled { findings, .. } => {
                t.settled.push(Instant::now());
                t.findings += findings
                    .iter()
                    .filter(|f| f.rule == Rule::IdempotencyBroken)
                    .count();
            }
            _ => {}
        }
    }
}

/// `layer` with the variant's shared history (a fresh store for `Shared`; a stopped one for
/// `StoreDown`), and that history.
fn with_history(
    variant: Variant,
    redis: &mut RedisServer,
    layer: HintAuditLayer,
) -> (HintAuditLayer, Option<SharedHistory>) {
    if variant == Variant::Local {
        return (layer, None);
    }
    // A fresh store per run: its counts are this run's.
    if variant == Variant::Shared {
        redis.restart();
    }
    let settings = Config::default()
        .with_history_url(redis.url())
        .with_history_secret("bench-secret-0123456789")
        .shared_history()
        .unwrap()
        .unwrap();
    let history = SharedHistory::open_as(&settings, "bench", "{hintaudit}").unwrap();
    let layer = layer.with_shared_history(history.clone());
    if variant == Variant::StoreDown {
        redis.stop();
    }
    (layer, Some(history))
}

/// `pairs` pairs of create_appointment calls: each call's latency, and (`Shared`) each
/// repeat's delay from its judgement to its settled finding.
async fn drive(
    client: &Client,
    pairs: usize,
    variant: Variant,
    shared: Option<&SharedHistory>,
    times: &Mutex<Times>,
) -> (Vec<Duration>, Vec<Duration>) {
    let mut latencies = Vec::with_capacity(2 * pairs);
    let mut delays = Vec::new();
    for j in 0..pairs {
        let args = json!({"patient_id": 1, "starts_at": format!("2028-01-01T{:02}:{:02}", j / 60 % 24, j % 60), "reason": format!("bench {j}")});
        for _ in 0..2 {
            let params = CallToolRequestParams::new("create_appointment")
                .with_arguments(args.as_object().unwrap().clone());
            let started = Instant::now();
            client.call_tool(params).await.unwrap();
            latencies.push(started.elapsed());
        }
        if let Some(shared) = shared {
            shared.flush().await;
            let t = times.lock().unwrap();
            if let (Some(call), Some(settled)) = (t.calls.last(), t.settled.last())
                && variant == Variant::Shared
                && t.settled.len() == j + 1
            {
                delays.push(settled.saturating_duration_since(*call));
            }
        }
    }
    (latencies, delays)
}

async fn run(variant: Variant, redis: &mut RedisServer, pairs: usize) -> Vec<Duration> {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("b.db").display());
    let pool = Db::connect(&url).await.unwrap();
    let times = Arc::new(Mutex::new(Times::default()));
    let layer = HintAuditLayer::new()
        .with_judge(Arc::new(Judge::new(demo_policy())))
        .with_recorder(timing_recorder(times.clone()));
    let (layer, shared) = with_history(variant, redis, layer);
    let server = serve_http(
        Bookings::new(pool),
        layer,
        "127.0.0.1:0".parse().unwrap(),
        None,
    )
    .await
    .unwrap();
    let client = connect(&server.url).await.unwrap();
    let (mut latencies, mut delays) = drive(&client, pairs, variant, shared.as_ref(), &times).await;
    let found = times.lock().unwrap().findings;
    println!(
        "  idempotency_broken found: {found} of {pairs} repeats{}",
        if variant == Variant::StoreDown {
            " (the store is down: this process's own history found them)"
        } else {
            ""
        }
    );
    if variant == Variant::Shared {
        delays.sort();
        println!(
            "  settled after the call's judgement: p50 {}, p99 {} ({} repeats)",
            ms(percentile(&delays, 0.5)),
            ms(percentile(&delays, 0.99)),
            delays.len()
        );
        store_figures(redis);
    }
    if variant == Variant::StoreDown {
        redis.restart();
    }
    client.cancel().await.ok();
    server.shutdown().await;
    latencies.sort();
    latencies
}

/// Round trips per call and bytes per entry, from the store itself.
fn store_figures(redis: &RedisServer) {
    let mut conn = redis::Client::open(redis.url())
        .and_then(|c| c.get_connection())
        .unwrap();
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut conn)
        .unwrap();
    let count = |name: &str| -> u64 {
        stats
            .lines()
            .find(|l| l.starts_with(&format!("cmdstat_{name}:")))
            .and_then(|l| l.split("calls=").nth(1))
            .and_then(|v| v.split(',').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let (evalsha, eval) = (count("evalsha"), count("eval"));
    let calls: u64 = redis::cmd("GET")
        .arg("{hintaudit}:epoch")
        .query(&mut conn)
        .unwrap_or(0);
    println!(
        "  round trips to the store: {} for {calls} calls recorded ({:.2} per call: {evalsha} EVALSHA, {eval} EVAL when the script was new; since the server started)",
        evalsha + eval,
        (evalsha + eval) as f64 / calls.max(1) as f64
    );
    let entries: u64 = redis::cmd("ZCARD")
        .arg("{hintaudit}:calls")
        .query(&mut conn)
        .unwrap();
    let mut bytes = 0u64;
    for key in ["{hintaudit}:calls", "{hintaudit}:entries"] {
        let b: u64 = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(key)
            .arg("SAMPLES")
            .arg(0)
            .query(&mut conn)
            .unwrap();
        bytes += b;
    }
    println!(
        "  store: {entries} entries in {bytes} bytes (sorted set and hash): {} bytes per entry",
        bytes / entries.max(1)
    );
}

fn main() {
    let pairs: usize = std::env::var("HINTAUDIT_BENCH_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let Some(mut redis) = RedisServer::start("bench fleet") else {
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let rounds: usize = std::env::var("HINTAUDIT_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    rt.block_on(async {
        // Rounds alternate the order of the two variants that need the store up; the machine
        // is noisy, so each variant's figure is the median of its rounds' p50s and p99s.
        let variants = [Variant::Local, Variant::Shared, Variant::StoreDown];
        let mut figures = vec![(Vec::new(), Vec::new()); variants.len()];
        for round in 0..rounds {
            // Each round starts at another variant.
            for k in 0..variants.len() {
                let i = (round + k) % variants.len();
                println!("round {round}, {}:", name(variants[i]));
                let l = run(variants[i], &mut redis, pairs).await;
                figures[i].0.push(percentile(&l, 0.5));
                figures[i].1.push(percentile(&l, 0.99));
            }
        }
        let median = |v: &mut Vec<Duration>| {
            v.sort();
            v[v.len() / 2]
        };
        println!("call latency at the client, median over {rounds} rounds of p50 / p99:");
        let mut base = None;
        for (i, (p50s, p99s)) in figures.iter_mut().enumerate() {
            let (p50, p99) = (median(p50s), median(p99s));
            let b = *base.get_or_insert(p50);
            println!(
                "  {:<28} {} / {} (p50 ratio to no shared history {:.2})",
                name(variants[i]),
                ms(p50),
                ms(p99),
                p50.as_secs_f64() / b.as_secs_f64()
            );
        }
    });
}

fn name(variant: Variant) -> &'static str {
    match variant {
        Variant::Local => "no shared history",
        Variant::Shared => "shared history",
        Variant::StoreDown => "shared history, store down",
    }
}
