//! The order the watch's shares are recorded in: the order the calls answered. The judge's
//! history reads a repeat as clean only when nothing wrote its paths in between, so two calls
//! of one tool must not be judged around a call, or a write elsewhere, that came between
//! them, whichever task wakes first. Writes given to no call (ambiguous, unattributed, a
//! call's no longer waiting) are told to the judge in the same order: once every call that
//! ended before the watcher read them is recorded.

use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

use hintaudit_core::files::FileChange;
use tokio::sync::watch;
use tokio::time::Instant;

/// Calls' answer numbers, which of them are recorded, and the writes elsewhere waiting for
/// them.
#[derive(Debug)]
pub(super) struct Turns {
    /// Calls answered so far: each answer takes the next number.
    answered: AtomicU64,
    /// Calls answered whose share is not recorded yet.
    pending: watch::Sender<u64>,
    /// Every answer number up to this one is done with.
    through: watch::Sender<u64>,
    state: parking_lot::Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Numbers done with beyond `through`.
    ahead: BTreeSet<u64>,
    /// The greatest number whose end the watcher has read.
    settled: u64,
    /// Writes elsewhere to tell once every number up to the first is done with.
    waiting: VecDeque<(u64, Vec<FileChange>)>,
}

impl Turns {
    pub(super) fn new() -> Turns {
        Turns {
            answered: AtomicU64::new(0),
            pending: watch::channel(0).0,
            through: watch::channel(0).0,
            state: parking_lot::Mutex::default(),
        }
    }

    /// A call answered now: its answer number. It is pending until [`Turns::done`].
    pub(super) fn answered(&self) -> u64 {
        self.pending.send_modify(|n| *n += 1);
        self.answered.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Calls answered whose share is not recorded yet.
    pub(super) fn pending(&self) -> u64 {
        *self.pending.borrow()
    }

    /// Waits until no call is pending.
    pub(super) async fn idle(&self) {
        let mut pending = self.pending.subscribe();
        let _ = pending.wait_for(|n| *n == 0).await;
    }

    /// The watcher read the end of answer `number`.
    pub(super) fn settled(&self, number: u64) {
        let mut state = self.state.lock();
        state.settled = state.settled.max(number);
    }

    /// `changes` were written by no judged call: returned to be told now when every call
    /// that ended before the watcher read them is recorded, else kept for [`Turns::done`].
    pub(super) fn elsewhere(&self, changes: Vec<FileChange>) -> Option<Vec<FileChange>> {
        let mut state = self.state.lock();
        let after = state.settled;
        if after <= *self.through.borrow() && state.waiting.is_empty() {
            return Some(changes);
        }
        state.waiting.push_back((after, changes));
        None
    }

    /// Answer `number`'s share is recorded (or dropped unrecorded): returns the writes
    /// elsewhere to tell now, in the order they were read.
    pub(super) fn done(&self, number: u64) -> Vec<FileChange> {
        let mut state = self.state.lock();
        state.ahead.insert(number);
        let mut through = *self.through.borrow();
        while state.ahead.remove(&(through + 1)) {
            through += 1;
        }
        let mut tell = Vec::new();
        while state
            .waiting
            .front()
            .is_some_and(|(after, _)| *after <= through)
        {
            if let Some((_, changes)) = state.waiting.pop_front() {
                tell.extend(changes);
            }
        }
        self.through.send_if_modified(|t| {
            let moved = through > *t;
            *t = (*t).max(through);
            moved
        });
        drop(state);
        self.pending.send_modify(|n| *n = n.saturating_sub(1));
        tell
    }

    /// Waits, until `deadline` at most, for every answer before `number` to be done with.
    pub(super) async fn before(&self, number: u64, deadline: Instant) {
        let mut through = self.through.subscribe();
        let _ = tokio::time::timeout_at(deadline, through.wait_for(|t| *t + 1 >= number)).await;
    }
}

#[cfg(test)]
mod tests {
    use hintaudit_core::files::ChangeKind;

    use super::*;

    fn change(path: &str) -> FileChange {
        FileChange {
            path: path.into(),
            kind: ChangeKind::Created,
        }
    }

    #[test]
    fn a_write_elsewhere_waits_for_the_calls_that_ended_before_it() {
        let turns = Turns::new();
        let (one, two) = (turns.answered(), turns.answered());
        assert_eq!(turns.pending(), 2);
        assert!(
            turns.elsewhere(vec![change("early")]).is_some(),
            "nothing before it"
        );
        turns.settled(one);
        assert!(turns.elsewhere(vec![change("after one")]).is_none());
        turns.settled(two);
        assert!(turns.elsewhere(vec![change("after two")]).is_none());
        assert!(turns.done(two).is_empty(), "one is not recorded yet");
        let told: Vec<String> = turns.done(one).into_iter().map(|c| c.path).collect();
        assert_eq!(told, ["after one", "after two"]);
        assert_eq!(turns.pending(), 0);
        assert!(turns.elsewhere(vec![change("late")]).is_some());
    }
}
