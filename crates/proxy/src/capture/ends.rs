//! The calls' side of the capture: the reader of the log's position at calls' ends (one
//! query serves every call that answered before it was sent, [`read_ends`]), the calls
//! answered whose shares are not recorded yet (pending, recorded in answer order:
//! [`Turns`]), and when each commit was made, for the commit-to-finding latency.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use hintaudit_telemetry::MetricName;
use parking_lot::Mutex;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use crate::capture::source::LogError;
use crate::capture::times::CommitTimes;
use crate::capture::trouble::{Part, Retry};
use crate::capture::{CallShare, Lsn, Shared};

/// A position read not answered within this has failed: the calls waiting for it go on, and
/// no call waits for a read until one works again.
pub(crate) const READ_LIMIT: Duration = Duration::from_secs(1);

/// Reads kept for [`CallEnds::end_of`]: a call's judging task looks its read up
/// milliseconds after it, thousands of reads before it would be gone.
const READS_KEPT: usize = 4096;

/// Buckets of the commit-to-finding latency, in seconds: from a millisecond (the log read at
/// once) to 30 s (beyond the default `--capture-wait-ms`).
const LATENCY_BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Calls' ends: their positions, their turns to be recorded, and their latency.
#[derive(Debug)]
pub(crate) struct CallEnds {
    /// Calls answered so far: each answer takes the next number.
    answered: AtomicU64,
    /// The last read: every call whose answer number is at most `.0` ended at or before
    /// position `.1`.
    read: watch::Sender<(u64, Lsn)>,
    /// Each read that covered new answers, in order: `(covered, lsn)`, at most
    /// [`READS_KEPT`]. A call's end is the first of these that covers it, not the latest:
    /// a judging task that runs late (a loaded machine) must not take a later read's
    /// position, which would stretch the call over the next call's commits.
    reads: Mutex<VecDeque<(u64, Lsn)>>,
    wake: Notify,
    /// Whether the last read worked: while it fails, no call's start waits for it.
    healthy: AtomicBool,
    /// Reads failed so far: a call waiting for a read goes on when one fails.
    failures: watch::Sender<u64>,
    /// Answers whose shares are recorded, in answer order.
    turns: Turns,
    /// Calls answered whose share of the log is not recorded yet.
    pending: watch::Sender<u64>,
    /// When each commit was made or read.
    times: CommitTimes,
    /// `hintaudit_capture_commit_to_finding_seconds{backend}`.
    latency: prometheus::Histogram,
}

impl CallEnds {
    /// No call answered yet; the log opened at `start`; `backend` labels the latency.
    pub(crate) fn new(start: Lsn, backend: &'static str) -> CallEnds {
        let name = MetricName::CaptureFindingLatency;
        let latency = prometheus::Histogram::with_opts(
            prometheus::HistogramOpts::new(name.as_str(), name.help())
                .const_label("backend", backend)
                .buckets(LATENCY_BUCKETS.to_vec()),
        )
        .expect("constant histogram options");
        CallEnds {
            answered: AtomicU64::new(0),
            read: watch::channel((0, start)).0,
            reads: Mutex::default(),
            wake: Notify::new(),
            healthy: AtomicBool::new(true),
            failures: watch::channel(0).0,
            turns: Turns::new(),
            pending: watch::channel(0).0,
            times: CommitTimes::default(),
            latency,
        }
    }

    /// The latest log position read (by the position reader).
    pub(crate) fn last(&self) -> Lsn {
        self.read.borrow().1
    }

    /// A call answered now: its answer number. Wakes the position reader, and the call is
    /// pending until [`CallEnds::done`].
    pub(crate) fn answered(&self) -> u64 {
        let number = self.answered.fetch_add(1, Ordering::AcqRel) + 1;
        self.wake.notify_one();
        self.pending.send_modify(|n| *n += 1);
        number
    }

    /// Answer `number`'s share is recorded (or dropped unrecorded).
    pub(crate) fn done(&self, number: u64) {
        self.turns.done(number);
        self.pending.send_modify(|n| *n = n.saturating_sub(1));
    }

    /// Waits, until `deadline` at most, for every answer before `number` to be done with.
    pub(crate) async fn before(&self, number: u64, deadline: Instant) {
        self.turns.before(number, deadline).await;
    }

    /// Calls answered whose shares are not recorded yet.
    pub(crate) fn pending(&self) -> u64 {
        *self.pending.borrow()
    }

    /// Waits until no call is pending.
    pub(crate) async fn idle(&self) {
        let mut pending = self.pending.subscribe();
        let _ = pending.wait_for(|n| *n == 0).await;
    }

    /// For a call beginning now: waits for the position read that covers the calls that
    /// answered before it, when one is on its way, until it answers or a read fails; not at
    /// all while reads fail (settle.rs's `start_bound`).
    pub(crate) async fn covered(&self) {
        let before = self.answered.load(Ordering::Acquire);
        if before > self.read.borrow().0 && self.healthy.load(Ordering::Acquire) {
            let mut read = self.read.subscribe();
            let mut failures = self.failures.subscribe();
            failures.borrow_and_update();
            tokio::select! {
                _ = read.wait_for(|r| r.0 >= before) => {}
                _ = failures.changed() => {}
            }
        }
    }

    /// The position answer `number` ended at: the first read after it, when one comes by
    /// `deadline`.
    pub(crate) async fn end_of(&self, number: u64, deadline: Instant) -> Option<Lsn> {
        let mut read = self.read.subscribe();
        let latest = match tokio::time::timeout_at(deadline, read.wait_for(|r| r.0 >= number)).await
        {
            Ok(Ok(r)) => r.1,
            _ => return None,
        };
        // The first read that covered it; the latest only when that one is no longer kept.
        let reads = self.reads.lock();
        let first = reads.partition_point(|(covered, _)| *covered < number);
        Some(reads.get(first).map_or(latest, |(_, lsn)| *lsn))
    }

    /// The calls answered that no read covers yet: the answer number a read now covers.
    fn uncovered(&self) -> Option<u64> {
        let covered = self.answered.load(Ordering::Acquire);
        (covered > self.read.borrow().0).then_some(covered)
    }

    /// A read sent when `covered` calls had answered gave `lsn`.
    fn read_worked(&self, covered: u64, lsn: Lsn) {
        self.healthy.store(true, Ordering::Release);
        {
            let mut reads = self.reads.lock();
            if reads.back().is_none_or(|(c, _)| covered > *c) {
                let lsn = reads.back().map_or(lsn, |(_, l)| lsn.max(*l));
                reads.push_back((covered, lsn));
                if reads.len() > READS_KEPT {
                    reads.pop_front();
                }
            }
        }
        self.read
            .send_modify(|r| *r = (covered.max(r.0), lsn.max(r.1)));
    }

    /// A read failed: calls waiting for one go on.
    fn read_failed(&self) {
        self.healthy.store(false, Ordering::Release);
        self.failures.send_modify(|n| *n += 1);
    }

    /// The commit ending at `lsn` was made at `unix_seconds`, as the log says.
    pub(crate) fn commit_logged(&self, lsn: Lsn, unix_seconds: f64) {
        self.times.logged(lsn, unix_seconds);
    }

    /// The capture read the log through `lsn` at `at`.
    pub(crate) fn read_through(&self, lsn: Lsn, at: SystemTime) {
        self.times.read_through(lsn, at);
    }

    /// A share's findings are recorded now: observes each of its commits' latency.
    pub(crate) fn observe(&self, share: &CallShare) {
        let now = SystemTime::now();
        let commits = share
            .attributed
            .iter()
            .chain(share.ambiguous.iter().map(|(c, _)| c));
        for commit in commits {
            if let Some(at) = self.times.time_of(commit.lsn) {
                let seconds = now.duration_since(at).unwrap_or_default();
                self.latency.observe(seconds.as_secs_f64());
            }
        }
    }

    /// `hintaudit_capture_commit_to_finding_seconds{backend}`.
    pub(crate) fn latency(&self) -> &prometheus::Histogram {
        &self.latency
    }
}

/// Reads the log's position whenever calls have answered since the last read, until the
/// capture stops: one query serves every call that answered before it was sent. A failed
/// read is tried again on the next call's answer or after a backoff delay, whichever comes
/// first, and counted once per outage.
pub(crate) async fn read_ends(shared: Arc<Shared>) {
    let ends = &shared.ends;
    let mut retry = Retry::new();
    let mut pause: Option<Duration> = None;
    loop {
        tokio::select! {
            () = shared.stop.cancelled() => break,
            () = ends.wake.notified() => {}
            () = tokio::time::sleep(pause.unwrap_or_default()), if pause.is_some() => {}
        }
        let Some(covered) = ends.uncovered() else {
            continue;
        };
        let read = || tokio::time::timeout(READ_LIMIT, shared.source.end());
        let mut result = read().await;
        if matches!(result, Ok(Err(_))) {
            // A pooled connection the database dropped (it restarted while no call asked)
            // fails at once: the second try takes a fresh one, so that one dead connection
            // is no outage of its own.
            result = read().await;
        }
        match result {
            Ok(Ok(lsn)) => {
                ends.read_worked(covered, lsn);
                if pause.take().is_some() {
                    retry.reset();
                }
                shared.outage.worked(Part::Ends);
                // The log is read only when something was written since it was last read:
                // a read call on a quiet database costs this one query.
                shared.progress.want(lsn);
            }
            Ok(Err(e)) => ends_failed(&shared, &mut pause, &mut retry, &e),
            Err(_) => {
                let what = "the log's end position";
                let e = LogError::Timeout {
                    what,
                    limit: READ_LIMIT,
                };
                ends_failed(&shared, &mut pause, &mut retry, &e);
            }
        }
    }
}

/// A position read failed with `e`: the calls waiting for one go on, the next try waits for
/// `retry`'s next delay (or the next call's answer), and the outage is told.
fn ends_failed(shared: &Shared, pause: &mut Option<Duration>, retry: &mut Retry, e: &LogError) {
    shared.ends.read_failed();
    *pause = Some(retry.next_delay());
    shared
        .outage
        .failed(Part::Ends, "reading the log position at calls' ends", e);
}

/// Answer numbers done with (recorded, or dropped unrecorded), and how far they run without
/// a hole: a share is recorded once every call that answered before it is done with.
#[derive(Debug)]
struct Turns {
    /// Every answer number up to this one is done with.
    through: watch::Sender<u64>,
    /// Numbers done with beyond `through`.
    ahead: parking_lot::Mutex<BTreeSet<u64>>,
}

impl Turns {
    fn new() -> Turns {
        Turns {
            through: watch::channel(0).0,
            ahead: parking_lot::Mutex::default(),
        }
    }

    /// Answer `number` is done with.
    fn done(&self, number: u64) {
        let mut ahead = self.ahead.lock();
        ahead.insert(number);
        let mut through = *self.through.borrow();
        while ahead.remove(&(through + 1)) {
            through += 1;
        }
        self.through.send_if_modified(|t| {
            let moved = through > *t;
            *t = (*t).max(through);
            moved
        });
    }

    /// Waits, until `deadline` at most, for every answer before `number` to be done with.
    async fn before(&self, number: u64, deadline: Instant) {
        let mut through = self.through.subscribe();
        let _ = tokio::time::timeout_at(deadline, through.wait_for(|t| *t + 1 >= number)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call's end is the read that first covered its answer, however late its judging
    /// task asks: a later read's position would stretch it over the next call's commits
    /// (seen under load as a commit ambiguous between one client's consecutive calls).
    #[tokio::test]
    async fn a_call_ends_at_the_first_read_after_its_answer_not_the_latest() {
        let ends = CallEnds::new(10, "postgresql");
        let first = ends.answered();
        ends.read_worked(first, 100);
        let next = ends.answered();
        ends.read_worked(next, 200);
        ends.read_worked(next, 250); // a read that covers no new answer
        let deadline = Instant::now() + Duration::from_secs(5);
        assert_eq!(ends.end_of(first, deadline).await, Some(100));
        assert_eq!(ends.end_of(next, deadline).await, Some(200));
        assert_eq!(ends.last(), 250, "a call's start takes the latest read");
    }

    #[test]
    fn turns_run_through_the_numbers_done_without_a_hole() {
        let turns = Turns::new();
        turns.done(2);
        turns.done(4);
        assert_eq!(*turns.through.borrow(), 0, "1 is not done");
        turns.done(1);
        assert_eq!(*turns.through.borrow(), 2);
        turns.done(3);
        assert_eq!(*turns.through.borrow(), 4);
        assert!(turns.ahead.lock().is_empty());
    }

    #[tokio::test]
    async fn a_share_waits_for_the_answers_before_it() {
        let turns = Arc::new(Turns::new());
        let log = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let far = Instant::now() + Duration::from_secs(3600);
        let third = tokio::spawn({
            let (turns, log) = (turns.clone(), log.clone());
            async move {
                turns.before(3, far).await;
                log.lock().push("3 recorded");
            }
        });
        log.lock().push("2 done");
        turns.done(2);
        tokio::task::yield_now().await;
        log.lock().push("1 done");
        turns.done(1);
        third.await.expect("task");
        assert_eq!(*log.lock(), ["2 done", "1 done", "3 recorded"]);
    }
}
