//! The write storm: 4 writers commit outside any call while one write call is timed, and
//! the capture's lag, catch-up and settled commits are read from its metrics.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use hintaudit_test_support::scrape::Scraped;

use crate::scrape;

/// The storm's commits the capture settled: no call's, so another writer's (`foreign`) once
/// they name their writer, `unattributed` where the writer trigger is missing.
fn storm_settled(s: &Scraped) -> f64 {
    ["foreign", "unattributed"]
        .iter()
        .map(|a| {
            s.value("hintaudit_capture_commits_total", &[("attribution", a)])
                .unwrap_or(0.0)
        })
        .sum::<f64>()
}

/// 4 writers inserting 10 rows a transaction into `storm` until `until`: their transactions.
fn storm_writers(pool: &sqlx::PgPool, until: Instant) -> Vec<tokio::task::JoinHandle<u64>> {
    (0..4)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move {
                let mut n = 0u64;
                while Instant::now() < until {
                    sqlx::query("INSERT INTO storm (v) SELECT 'x' FROM generate_series(1, 10)")
                        .execute(&pool)
                        .await
                        .expect("insert");
                    n += 1;
                }
                n
            })
        })
        .collect()
}

/// The largest lag the proxy at `captured` reports until `until`, sampled every 200 ms.
async fn max_lag(captured: SocketAddr, until: Instant) -> f64 {
    let mut max_lag = 0.0f64;
    while Instant::now() < until {
        let s = scrape(captured).await;
        let lag = s
            .value("hintaudit_capture_lag_bytes", &[("backend", "postgresql")])
            .unwrap_or(0.0);
        max_lag = max_lag.max(lag);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    max_lag
}

/// How long after `storm_end` the capture had settled `commits` more storm commits than
/// `start`, polled every 50 ms for 30 s at most.
async fn caught_up(
    captured: SocketAddr,
    start: f64,
    commits: u64,
    storm_end: Instant,
) -> Option<Duration> {
    for _ in 0..600 {
        let s = scrape(captured).await;
        if storm_settled(&s) - start >= commits as f64 {
            return Some(storm_end.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// What the storm showed.
struct Storm {
    secs: u64,
    commits: u64,
    max_lag: f64,
    settled: f64,
    dropped: f64,
    caught_up: Option<Duration>,
    peak_rss_kib: u64,
}

fn print_storm(storm: &Storm) {
    let Storm { secs, commits, .. } = *storm;
    println!();
    println!(
        "write storm: 4 writers, {secs} s, {commits} transactions of 10 rows ({:.0}/s), outside calls",
        commits as f64 / secs as f64
    );
    println!(
        "  capture lag: at most {:.0} bytes (sampled every 200 ms)",
        storm.max_lag
    );
    println!(
        "  commits read and settled foreign or unattributed: {:.0}; dropped: {:.0}",
        storm.settled, storm.dropped
    );
    match storm.caught_up {
        Some(d) => println!(
            "  caught up {:.0} ms after the storm ended",
            d.as_secs_f64() * 1000.0
        ),
        None => println!("  not caught up within 30 s of the storm's end"),
    }
    println!(
        "  proxy peak resident memory (VmHWM): {} KiB",
        storm.peak_rss_kib
    );
}

/// Part 2: writers insert as fast as they can on `db`, outside calls, for
/// `HINTAUDIT_BENCH_STORM_SECONDS`; what the captured proxy (`pid`, at `captured`) did.
pub async fn write_storm(db: &str, captured: SocketAddr, pid: u32) {
    let secs: u64 = std::env::var("HINTAUDIT_BENCH_STORM_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(4)
        .connect(db)
        .await
        .expect("pool");
    sqlx::query("CREATE TABLE storm (id bigserial PRIMARY KEY, v text)")
        .execute(&pool)
        .await
        .expect("storm table");
    let start = storm_settled(&scrape(captured).await);
    let until = Instant::now() + Duration::from_secs(secs);
    let writers = storm_writers(&pool, until);
    let max_lag = max_lag(captured, until).await;
    let mut commits = 0;
    for w in writers {
        commits += w.await.expect("writer");
    }
    let caught_up = caught_up(captured, start, commits, Instant::now()).await;
    let after = scrape(captured).await;
    print_storm(&Storm {
        secs,
        commits,
        max_lag,
        settled: storm_settled(&after) - start,
        dropped: after
            .value(
                "hintaudit_capture_commits_total",
                &[("attribution", "dropped")],
            )
            .unwrap_or(0.0),
        caught_up,
        peak_rss_kib: peak_rss_kib(pid),
    });
    pool.close().await;
}

fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}
