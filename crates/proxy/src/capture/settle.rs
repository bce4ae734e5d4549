//! Nothing waits for the capture: the log positions around calls come from one reader of the
//! log's position that serves every call at once ([`Ends`]), and a call's share of the log is
//! judged on a task of its own once the capture has read past its end ([`Settling`]), while
//! its answer has already gone back ([design: the proxy's evidence](../../../../docs/design.md#the-proxys-evidence)).
//!
//! A call's start is the latest position the capture holds (the position reader's last
//! answer, or how far it has decoded): every commit made after the call was sent ends beyond
//! it. That widens the call's interval backward over commits made just before it and not read
//! yet; see design.md for why that is safe. Its end is the first position read after it
//! answered. So that a call never takes the commits of a call that answered before it began,
//! its start waits for that read when it is still on its way (one query already sent, never
//! one of its own; not at all while the database cannot be asked).
//!
//! Shares are recorded in the order the calls answered ([`Turns`]): the judge's history reads
//! a repeat as clean only when no call wrote its tables in between, so two calls of one tool
//! must not be judged around a later call that wrote, whichever task wakes first.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use crate::capture::{CallShare, Lsn, Shared, capture_error, lock};

/// A position read not answered within this has failed: the calls waiting for it go on, and
/// no call waits for a read until one works again.
const READ_LIMIT: Duration = Duration::from_secs(1);

/// The reader of the log's position at calls' ends.
#[derive(Debug)]
pub(crate) struct Ends {
    /// Calls answered so far: each answer takes the next number.
    answered: AtomicU64,
    /// The last read: every call whose answer number is at most `.0` ended at or before
    /// position `.1`.
    read: watch::Sender<(u64, Lsn)>,
    wake: Notify,
    /// Whether the last read worked: while it fails, no call's start waits for it.
    healthy: AtomicBool,
    /// Reads failed so far: a call waiting for a read goes on when one fails.
    failures: watch::Sender<u64>,
    /// Answers whose shares are recorded, in answer order.
    turns: Turns,
}

/// Answer numbers done with (recorded, or dropped unrecorded), and how far they run without
/// a hole: a share is recorded once every call that answered before it is done with.
#[derive(Debug)]
struct Turns {
    /// Every answer number up to this one is done with.
    through: watch::Sender<u64>,
    /// Numbers done with beyond `through`.
    ahead: std::sync::Mutex<BTreeSet<u64>>,
}

impl Turns {
    fn new() -> Turns {
        Turns {
            through: watch::channel(0).0,
            ahead: std::sync::Mutex::default(),
        }
    }

    /// Answer `number` is done with.
    fn done(&self, number: u64) {
        let mut ahead = lock(&self.ahead);
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

impl Ends {
    pub(crate) fn new(start: Lsn) -> Ends {
        Ends {
            answered: AtomicU64::new(0),
            read: watch::channel((0, start)).0,
            wake: Notify::new(),
            healthy: AtomicBool::new(true),
            failures: watch::channel(0).0,
            turns: Turns::new(),
        }
    }

    /// The latest log position read (by the position reader).
    pub(crate) fn last(&self) -> Lsn {
        self.read.borrow().1
    }
}

/// Reads the log's position whenever calls have answered since the last read, until the
/// capture stops: one query serves every call that answered before it was sent.
pub(crate) async fn read_ends(shared: Arc<Shared>) {
    let ends = &shared.ends;
    loop {
        tokio::select! {
            () = shared.stop.cancelled() => break,
            () = ends.wake.notified() => {}
        }
        let covered = ends.answered.load(Ordering::Acquire);
        if covered <= ends.read.borrow().0 {
            continue;
        }
        match tokio::time::timeout(READ_LIMIT, shared.positions.end()).await {
            Ok(Ok(lsn)) => {
                ends.healthy.store(true, Ordering::Release);
                ends.read
                    .send_modify(|r| *r = (covered.max(r.0), lsn.max(r.1)));
                // The slot is read only when something was written since it was last read:
                // a read call on a quiet database costs this one query.
                shared.want(lsn);
            }
            failed => {
                ends.healthy.store(false, Ordering::Release);
                ends.failures.send_modify(|n| *n += 1);
                let e = match failed {
                    Ok(Err(e)) => e,
                    _ => "no answer within 1 s".into(),
                };
                capture_error("reading the log position at calls' ends", &e);
                tokio::select! {
                    () = shared.stop.cancelled() => break,
                    () = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
                ends.wake.notify_one();
            }
        }
    }
}

/// The position a call beginning now starts after: once the calls that answered before it
/// are covered by a read, the latest position the capture holds.
///
/// The wait ends when that read answers or a read fails ([`READ_LIMIT`] each: at most the
/// read in flight and the one after it), and none is made while reads fail. A fixed bound on
/// the wait, however long, let a call go on before a read that was merely queued behind a
/// slow one: its start then lay before the previous call's commits, which became candidates
/// of both (ambiguous) under a loaded machine's 16 clients.
pub(crate) async fn start_bound(shared: &Shared) -> Lsn {
    let ends = &shared.ends;
    let before = ends.answered.load(Ordering::Acquire);
    if before > ends.read.borrow().0 && ends.healthy.load(Ordering::Acquire) {
        let mut read = ends.read.subscribe();
        let mut failures = ends.failures.subscribe();
        failures.borrow_and_update();
        tokio::select! {
            _ = read.wait_for(|r| r.0 >= before) => {}
            _ = failures.changed() => {}
            // The reader has stopped (the capture is shutting down).
            () = shared.stop.cancelled() => {}
        }
    }
    ends.last().max(*shared.decoded.borrow())
}

/// A call's share of the log on its way: judged on a task of its own once the capture has
/// read past the call's end, at most [`CaptureOptions::wait`](super::CaptureOptions) after
/// it answered (then judged with what was read, marked incomplete and counted late).
///
/// The call counts as pending (`hintaudit_capture_pending_calls`, and [`Capture::shutdown`]
/// waits for it) until this is dropped: record the share first, then drop it, or hand it
/// to [`Settling::recorded`], which also observes the share's commit-to-finding latency.
///
/// [`Capture::shutdown`]: super::Capture::shutdown
#[derive(Debug)]
pub struct Settling {
    task: Option<tokio::task::JoinHandle<CallShare>>,
    share: Option<CallShare>,
    shared: Arc<Shared>,
    /// The call's answer number: its turn to be recorded.
    number: u64,
    deadline: Instant,
}

impl Settling {
    /// Starts judging call `id`, which answered now.
    pub(crate) fn start(shared: Arc<Shared>, id: u64) -> Settling {
        let number = shared.ends.answered.fetch_add(1, Ordering::AcqRel) + 1;
        shared.ends.wake.notify_one();
        shared.pending.send_modify(|n| *n += 1);
        let deadline = Instant::now() + shared.options.wait;
        let task = tokio::spawn(judge(shared.clone(), id, number, deadline));
        Settling {
            task: Some(task),
            share: None,
            shared,
            number,
            deadline,
        }
    }

    /// The call's share of the log, once judged: after the capture has read past the
    /// call's end, or [`CaptureOptions::wait`](super::CaptureOptions) after it answered at
    /// most (then with `gap` set), and once the calls that answered before it are recorded
    /// (waited for within the same bound). Awaiting it again gives the same share.
    ///
    /// `--disclose-effects` (the call's effects in its answer) is the one case where an
    /// answer waits for this; every other call records it after the answer went back.
    pub async fn share(&mut self) -> CallShare {
        if let Some(task) = self.task.take() {
            let share = task.await.unwrap_or_else(|_| CallShare {
                gap: true,
                ..CallShare::default()
            });
            self.share = Some(share);
            // Within the call's own bound: the calls before it reach theirs first.
            self.shared
                .ends
                .turns
                .before(self.number, self.deadline)
                .await;
        }
        self.share.clone().unwrap_or_default()
    }

    /// The share's findings are recorded: observes the commit-to-finding latency of each of
    /// its commits (`hintaudit_capture_commit_to_finding_seconds`) and ends the call's
    /// pending state.
    pub fn recorded(self, share: &CallShare) {
        let now = SystemTime::now();
        let commits = share
            .attributed
            .iter()
            .chain(share.ambiguous.iter().map(|(c, _)| c));
        for commit in commits {
            if let Some(at) = self.shared.times.time_of(commit.lsn) {
                let seconds = now.duration_since(at).unwrap_or_default();
                self.shared.latency.observe(seconds.as_secs_f64());
            }
        }
    }
}

impl Drop for Settling {
    fn drop(&mut self) {
        self.shared.ends.turns.done(self.number);
        self.shared
            .pending
            .send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// Judges call `id` (answer number `number`): its end is the first position read after it
/// answered; once the capture has read that far (or at `deadline`), its share.
async fn judge(shared: Arc<Shared>, id: u64, number: u64, deadline: Instant) -> CallShare {
    let mut read = shared.ends.read.subscribe();
    let end = match tokio::time::timeout_at(deadline, read.wait_for(|r| r.0 >= number)).await {
        Ok(Ok(r)) => r.1,
        _ => {
            capture_error(
                "reading the log position at a call's end",
                &"no position read within --capture-wait-ms",
            );
            lock(&shared.ledger).forget(id);
            return CallShare {
                gap: true,
                ..CallShare::default()
            };
        }
    };
    lock(&shared.ledger).ended(id, end);
    // The read that gave `end` woke the slot reader already, when it had not read that far.
    let mut decoded = shared.decoded.subscribe();
    let caught_up = tokio::time::timeout_at(deadline, decoded.wait_for(|through| *through >= end))
        .await
        .is_ok_and(|r| r.is_ok());
    if caught_up {
        lock(&shared.ledger).judge(id)
    } else {
        shared.late.fetch_add(1, Ordering::Relaxed);
        lock(&shared.ledger).judge_late(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(lock(&turns.ahead).is_empty());
    }

    #[tokio::test]
    async fn a_share_waits_for_the_answers_before_it() {
        let turns = Arc::new(Turns::new());
        let log = Arc::new(std::sync::Mutex::new(Vec::new()));
        let far = Instant::now() + Duration::from_secs(3600);
        let third = tokio::spawn({
            let (turns, log) = (turns.clone(), log.clone());
            async move {
                turns.before(3, far).await;
                lock(&log).push("3 recorded");
            }
        });
        lock(&log).push("2 done");
        turns.done(2);
        tokio::task::yield_now().await;
        lock(&log).push("1 done");
        turns.done(1);
        third.await.expect("task");
        assert_eq!(*lock(&log), ["2 done", "1 done", "3 recorded"]);
    }
}
