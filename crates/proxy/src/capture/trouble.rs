//! What an operator sees when the database goes away under the capture: one error per
//! outage, not one per try ([design: behaviour under trouble](../../../../docs/design.md#6-behaviour-under-trouble)).
//!
//! An [`Outage`] spans the time one or more parts of the capture fail (the log reader, the
//! position reader at calls' ends): the first failure while every part worked starts it,
//! counted once in `hintaudit_audit_errors_total{stage="oracle"}` and logged at WARN; the
//! failures after it, until every failing part has worked again, are logged at DEBUG only;
//! its end is logged once at INFO, "recovered after N s". Each part tries again on a
//! [`Retry`]: backon's exponential backoff with jitter, from 100 ms, capped at
//! [`RETRY_MAX`].

use parking_lot::Mutex;
use std::fmt::Display;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};
use tokio::time::Instant;

use crate::capture::capture_error;

/// The longest delay between two tries before jitter (which adds up to as much again): so a
/// capture whose database came back resumes within 6 s, as the restart tests expect.
pub(crate) const RETRY_MAX: Duration = Duration::from_secs(3);

/// The first delay after a failure: a terminated session on a database that is up (the
/// commonest loss) is made again at once, and the gap it leaves stays small.
const RETRY_MIN: Duration = Duration::from_millis(100);

/// The parts of the capture that fail and recover on their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// The log reader: the slot's session, the binary log stream.
    Log,
    /// The position reader at calls' ends (settle.rs).
    Ends,
    /// MySQL/MariaDB: installing the writer triggers on new tables.
    Triggers,
}

impl Part {
    fn bit(self) -> u8 {
        match self {
            Part::Log => 1,
            Part::Ends => 2,
            Part::Triggers => 4,
        }
    }
}

/// One outage of some parts of the capture: which parts fail now, since when, and how many
/// tries failed. Shared by the parts it covers.
#[derive(Debug, Default)]
pub(crate) struct Outage {
    state: Mutex<State>,
    /// Whether an outage lasts: [`Outage::worked`] without one (every read that works)
    /// takes no lock. Each part fails and works on one task, so it sees its own failure.
    lasts: AtomicBool,
}

/// What [`Outage`] keeps; its transitions are pure ([`State::failed`], [`State::worked`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct State {
    /// The failing parts, as [`Part::bit`]s.
    failing: u8,
    /// When the outage began, while one lasts.
    since: Option<Instant>,
    /// Failed tries in this outage.
    tries: u64,
}

/// How an outage ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Recovered {
    after: Duration,
    tries: u64,
}

impl State {
    /// `part` failed at `now`: whether that starts an outage.
    fn failed(&mut self, part: Part, now: Instant) -> bool {
        let starts = self.failing == 0;
        self.failing |= part.bit();
        self.tries += 1;
        if starts {
            self.since = Some(now);
        }
        starts
    }

    /// `part` worked at `now`: how the outage ended, when that ends it.
    fn worked(&mut self, part: Part, now: Instant) -> Option<Recovered> {
        if self.failing & part.bit() == 0 {
            return None;
        }
        self.failing &= !part.bit();
        if self.failing != 0 {
            return None;
        }
        let ended = Recovered {
            after: self.since.map(|s| now - s).unwrap_or_default(),
            tries: self.tries,
        };
        *self = State::default();
        Some(ended)
    }
}

impl Outage {
    /// `part` failed doing `what`: counted and logged at WARN when it starts an outage, else
    /// logged at DEBUG.
    pub(crate) fn failed(&self, part: Part, what: &str, e: &dyn Display) {
        let mut state = self.state.lock();
        let starts = state.failed(part, Instant::now());
        self.lasts.store(true, Ordering::Release);
        drop(state);
        if starts {
            capture_error(
                what,
                &format_args!(
                    "{e} (trying again; until it works, further failures are logged at \
                     DEBUG and not counted)"
                ),
            );
        } else {
            tracing::debug!(target: "hintaudit::proxy", "capture: {what}: {e} (still failing)");
        }
    }

    /// Whether an outage lasts (a part fails now).
    pub(crate) fn lasts(&self) -> bool {
        self.lasts.load(Ordering::Acquire)
    }

    /// `part` worked: when it was the last part failing, the outage ends, logged at INFO.
    pub(crate) fn worked(&self, part: Part) {
        if !self.lasts.load(Ordering::Acquire) {
            return;
        }
        let mut state = self.state.lock();
        let ended = state.worked(part, Instant::now());
        if ended.is_some() {
            self.lasts.store(false, Ordering::Release);
        }
        drop(state);
        if let Some(Recovered { after, tries }) = ended {
            tracing::info!(
                target: "hintaudit::proxy",
                tries,
                "capture: recovered after {:.1} s ({tries} failed tries)",
                after.as_secs_f64()
            );
        }
    }
}

/// The delays between one part's tries: backon's exponential backoff with jitter, from 100
/// ms, doubling, capped at [`RETRY_MAX`] (plus jitter), never giving up. Starts over once
/// the part works ([`Retry::reset`]).
#[derive(Debug)]
pub(crate) struct Retry {
    backoff: ExponentialBackoff,
}

impl Retry {
    pub(crate) fn new() -> Retry {
        Retry {
            backoff: builder().build(),
        }
    }

    /// The delay before the next try.
    pub(crate) fn next_delay(&mut self) -> Duration {
        self.backoff.next().unwrap_or(RETRY_MAX)
    }

    /// The part works: the next failure waits the least again.
    pub(crate) fn reset(&mut self) {
        self.backoff = builder().build();
    }
}

fn builder() -> ExponentialBuilder {
    ExponentialBuilder::new()
        .with_min_delay(RETRY_MIN)
        .with_max_delay(RETRY_MAX)
        .with_factor(2.0)
        .with_jitter()
        .without_max_times()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row per step: the part, whether it failed (else worked), whether the step starts
    /// an outage, and the tries of the outage it ends (`None`: it ends none).
    #[test]
    fn an_outage_starts_once_and_ends_when_every_part_works() {
        let t0 = Instant::now();
        let mut state = State::default();
        let steps: [(Part, bool, bool, Option<u64>); 9] = [
            (Part::Log, true, true, None),
            (Part::Log, true, false, None),
            (Part::Ends, true, false, None),
            // The position reader comes back first: the log reader still fails.
            (Part::Ends, false, false, None),
            (Part::Log, true, false, None),
            (Part::Log, false, false, Some(4)),
            // A part that works while nothing fails ends nothing.
            (Part::Log, false, false, None),
            (Part::Ends, true, true, None),
            (Part::Ends, false, false, Some(1)),
        ];
        for (i, (part, fails, starts, ends)) in steps.into_iter().enumerate() {
            let now = t0 + Duration::from_secs(i as u64);
            if fails {
                assert_eq!(state.failed(part, now), starts, "step {i}");
            } else {
                let ended = state.worked(part, now).map(|r| r.tries);
                assert_eq!(ended, ends, "step {i}");
            }
        }
    }

    #[test]
    fn an_outage_lasts_from_its_first_failure_to_its_last_part_working() {
        let t0 = Instant::now();
        let mut state = State::default();
        state.failed(Part::Log, t0);
        state.failed(Part::Log, t0 + Duration::from_secs(3));
        let ended = state.worked(Part::Log, t0 + Duration::from_secs(7));
        assert_eq!(
            ended,
            Some(Recovered {
                after: Duration::from_secs(7),
                tries: 2
            })
        );
    }

    #[test]
    fn retries_back_off_to_the_cap_and_start_over() {
        let mut retry = Retry::new();
        let first = retry.next_delay();
        assert!(first >= RETRY_MIN && first <= 2 * RETRY_MIN, "{first:?}");
        let later: Vec<Duration> = (0..20).map(|_| retry.next_delay()).collect();
        assert!(later.iter().all(|d| *d <= 2 * RETRY_MAX), "{later:?}");
        assert!(later[10..].iter().all(|d| *d >= RETRY_MAX), "{later:?}");
        retry.reset();
        assert!(retry.next_delay() <= 2 * RETRY_MIN);
    }
}
