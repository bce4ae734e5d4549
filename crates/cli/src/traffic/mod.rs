//! `hintaudit traffic`: steady traffic against running bookings servers, for dashboards and
//! alerts to have something to show (the compose stack's traffic generator).
//!
//! Every `--interval` seconds it connects a real rmcp client (streamable HTTP) to the next
//! `--url` in turn, drives one round ([`drive_round`]: every tool of the bookings example,
//! breaking each planted rule again) and prints one line:
//!
//! ```text
//! traffic: round 3/10 http://bookings-1:8080/mcp: 18 calls, 0 errors
//! ```
//!
//! A server that is not up yet is retried every second, with a message, for up to
//! [`CONNECT_PATIENCE`]; then the round counts as failed and the next URL has its turn. A
//! failed call or round never stops it. It stops after `--rounds` rounds (exit 0), or, with
//! `--rounds 0`, on Ctrl-C or SIGTERM (exit 0 as well).

mod round;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rmcp::RoleClient;
use rmcp::service::RunningService;

use crate::demo::connect;
use crate::signal::shutdown_signal;

pub use round::{RoundOutcome, drive_round};

/// How long a round waits for its server to come up before it counts as failed.
pub const CONNECT_PATIENCE: Duration = Duration::from_secs(60);

/// Options of `hintaudit traffic`.
#[derive(Debug, Clone, clap::Args)]
pub struct TrafficArgs {
    /// MCP endpoint (streamable HTTP), e.g. http://bookings-1:8080/mcp. Repeat for several:
    /// rounds go to each in turn.
    #[arg(long = "url", value_name = "URL", required = true, value_parser = mcp_url)]
    pub urls: Vec<String>,
    /// Seconds between rounds (decimals allowed).
    #[arg(long, value_name = "SECS", default_value_t = 5.0, value_parser = seconds)]
    pub interval: f64,
    /// Rounds to run, then exit 0; 0 runs until Ctrl-C or SIGTERM.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub rounds: u64,
    /// Seconds to wait before the first round (decimals allowed).
    #[arg(long, value_name = "SECS", default_value_t = 0.0, value_parser = seconds)]
    pub start_after: f64,
}

/// A number of seconds, 0 or more, that a [`Duration`] holds.
fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v >= 0.0 && Duration::try_from_secs_f64(v).is_ok() => Ok(v),
        _ => Err(format!("{s:?} is not a number of seconds (0 or more)")),
    }
}

/// An `http://` or `https://` URL with a host, as the streamable HTTP client needs.
fn mcp_url(s: &str) -> Result<String, String> {
    let uri: http::Uri = s.parse().map_err(|e| format!("{s:?} is not a URL: {e}"))?;
    match (uri.scheme_str(), uri.host()) {
        (Some("http" | "https"), Some(_)) => Ok(s.to_owned()),
        _ => Err(format!(
            "{s:?} is not an http:// or https:// URL of an MCP endpoint, e.g. http://127.0.0.1:8080/mcp"
        )),
    }
}

/// The line printed after a round.
pub fn round_line(round: u64, rounds: u64, url: &str, calls: usize, errors: usize) -> String {
    let of = if rounds > 0 {
        format!("/{rounds}")
    } else {
        String::new()
    };
    format!("traffic: round {round}{of} {url}: {calls} calls, {errors} errors")
}

/// Runs `hintaudit traffic` until its rounds are done or a stop signal arrives.
///
/// # Errors
/// None today: failures of servers and calls are printed and counted, never returned.
pub async fn run(args: TrafficArgs) -> anyhow::Result<()> {
    let stop = shutdown_signal();
    tokio::pin!(stop);
    tokio::select! {
        () = run_rounds(&args) => {}
        () = &mut stop => eprintln!("traffic: stopping"),
    }
    Ok(())
}

async fn run_rounds(args: &TrafficArgs) {
    tokio::time::sleep(Duration::from_secs_f64(args.start_after)).await;
    // Unique to this process: what it adds (patients, bookings) does not collide with another
    // generator's on the same database.
    let tag = format!(
        "{}{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_micros())
    );
    let mut round = 0;
    let mut kept = None;
    while args.rounds == 0 || round < args.rounds {
        let url = &args.urls[(round as usize) % args.urls.len()];
        round += 1;
        let (calls, errors) = match connect_patiently(url).await {
            Some(client) => {
                let outcome = drive_round(&client, &tag, round, kept).await;
                client.cancel().await.ok();
                match outcome {
                    Ok(o) => {
                        kept = o.kept;
                        (o.calls(), o.errors())
                    }
                    Err(e) => {
                        eprintln!("traffic: round {round} {url}: tools/list failed: {e:#}");
                        (0, 1)
                    }
                }
            }
            None => (0, 1),
        };
        println!("{}", round_line(round, args.rounds, url, calls, errors));
        if args.rounds == 0 || round < args.rounds {
            tokio::time::sleep(Duration::from_secs_f64(args.interval)).await;
        }
    }
}

/// Connects to `url`, retrying every second for up to [`CONNECT_PATIENCE`] while the server
/// is not up; says so on stderr.
async fn connect_patiently(url: &str) -> Option<RunningService<RoleClient, ()>> {
    let started = Instant::now();
    // When the last "not up" message was printed, if any.
    let mut said: Option<Duration> = None;
    loop {
        let error = match connect(url).await {
            Ok(client) => {
                if said.is_some() {
                    eprintln!("traffic: {url} is up");
                }
                return Some(client);
            }
            Err(e) => e,
        };
        let waited = started.elapsed();
        if waited >= CONNECT_PATIENCE {
            eprintln!(
                "traffic: {url} not reachable after {} s, skipping this round: {error:#}",
                CONNECT_PATIENCE.as_secs()
            );
            return None;
        }
        match said {
            None => eprintln!("traffic: {url} is not up yet ({error:#}); retrying every second"),
            Some(at) if waited >= at + Duration::from_secs(10) => eprintln!(
                "traffic: {url} still not up after {} s ({error:#})",
                waited.as_secs()
            ),
            Some(_) => {
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        }
        said = Some(waited);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_lines() {
        let rows = [
            (
                1,
                2,
                "http://a/mcp",
                26,
                0,
                "traffic: round 1/2 http://a/mcp: 26 calls, 0 errors",
            ),
            (
                7,
                0,
                "http://b/mcp",
                0,
                1,
                "traffic: round 7 http://b/mcp: 0 calls, 1 errors",
            ),
        ];
        for (round, rounds, url, calls, errors, want) in rows {
            assert_eq!(round_line(round, rounds, url, calls, errors), want);
        }
    }

    #[test]
    fn seconds_parse() {
        assert_eq!(seconds("5"), Ok(5.0));
        assert_eq!(seconds("0.25"), Ok(0.25));
        assert!(seconds("-1").is_err());
        assert!(seconds("soon").is_err());
        assert!(seconds("inf").is_err());
    }
}
