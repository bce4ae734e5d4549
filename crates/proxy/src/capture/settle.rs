//! Nothing waits for the capture: the log positions around calls come from one reader of the
//! log's position that serves every call at once (ends.rs), and a call's share of the log is
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
//! Shares are recorded in the order the calls answered (ends.rs): the judge's history reads
//! a repeat as clean only when nothing wrote its tables in between, so two calls of one tool
//! must not be judged around a later call that wrote, whichever task wakes first. Writes
//! given to no call (ambiguous, unattributed, foreign, dropped) are told to the judge in the
//! same order: each just before the first call recorded that ended after it.

use std::sync::Arc;

use tokio::time::Instant;

use crate::capture::trouble::Part;
use crate::capture::{CallShare, Lsn, Shared};

/// The position a call beginning now starts after: once the calls that answered before it
/// are covered by a read, the latest position the capture holds.
///
/// The wait ends when that read answers or a read fails
/// ([`READ_LIMIT`](crate::capture::ends::READ_LIMIT) each: at most the read in flight and the
/// one after it), and none is made while reads fail. A fixed bound on the wait, however
/// long, let a call go on before a read that was merely queued behind a slow one: its start
/// then lay before the previous call's commits, which became candidates of both (ambiguous)
/// under a loaded machine's 16 clients.
pub(crate) async fn start_bound(shared: &Shared) -> Lsn {
    tokio::select! {
        () = shared.ends.covered() => {}
        // The reader has stopped (the capture is shutting down).
        () = shared.stop.cancelled() => {}
    }
    shared.ends.last().max(shared.progress.through())
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
    task: Option<tokio::task::JoinHandle<(CallShare, Option<Lsn>)>>,
    share: Option<CallShare>,
    shared: Arc<Shared>,
    /// The call's answer number: its turn to be recorded.
    number: u64,
    deadline: Instant,
}

impl Settling {
    /// Starts judging call `id`, which answered now.
    pub(crate) fn start(shared: Arc<Shared>, id: u64) -> Settling {
        let number = shared.ends.answered();
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
    /// most (then with `late` set), and once the calls that answered before it are recorded
    /// (waited for within the same bound). Awaiting it again gives the same share.
    ///
    /// `--disclose-effects` (the call's effects in its answer) is the one case where an
    /// answer waits for this; every other call records it after the answer went back.
    pub async fn share(&mut self) -> CallShare {
        if let Some(task) = self.task.take() {
            let (share, end) = task.await.unwrap_or_else(|_| {
                let share = CallShare {
                    gap: true,
                    ..CallShare::default()
                };
                (share, None)
            });
            self.share = Some(share);
            // Within the call's own bound: the calls before it reach theirs first.
            self.shared.ends.before(self.number, self.deadline).await;
            // In the same order: the writes no call is judged with that were made before its
            // end disturb repeats from now on, after the calls that ended before them.
            if let Some(end) = end {
                self.shared.tell_written_elsewhere(end);
            }
        }
        self.share.clone().unwrap_or_default()
    }

    /// The share's findings are recorded: observes the commit-to-finding latency of each of
    /// its commits (`hintaudit_capture_commit_to_finding_seconds`) and ends the call's
    /// pending state.
    pub fn recorded(self, share: &CallShare) {
        self.shared.ends.observe(share);
    }
}

impl Drop for Settling {
    fn drop(&mut self) {
        self.shared.ends.done(self.number);
    }
}

/// Judges call `id` (answer number `number`): its end is the first position read after it
/// answered; once the capture has read that far (or at `deadline`), its share, and its end
/// (`None` when no position was read).
async fn judge(
    shared: Arc<Shared>,
    id: u64,
    number: u64,
    deadline: Instant,
) -> (CallShare, Option<Lsn>) {
    let Some(end) = shared.ends.end_of(number, deadline).await else {
        shared.outage.failed(
            Part::Ends,
            "reading the log position at a call's end",
            &"no position read within --capture-wait-ms",
        );
        shared.ledger.lock().forget(id);
        let share = CallShare {
            late: true,
            ..CallShare::default()
        };
        return (share, None);
    };
    shared.ledger.lock().ended(id, end);
    // The read that gave `end` woke the log reader already, when it had not read that far.
    let mut through = shared.progress.subscribe();
    let caught_up = tokio::time::timeout_at(deadline, through.wait_for(|t| *t >= end))
        .await
        .is_ok_and(|r| r.is_ok());
    let share = if caught_up {
        shared.ledger.lock().judge(id)
    } else {
        shared.counters.late();
        shared.ledger.lock().judge_late(id)
    };
    (share, Some(end))
}
