//! How far the capture has read the log, and what calls wait for it to read: the position
//! read through, the furthest position a call's end asked for (which wakes the reader), and
//! the holds that keep it from reading ([`Capture::hold`](super::Capture::hold)).

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{Notify, watch};

use crate::capture::Lsn;

/// The capture's reading progress. Positions only grow.
#[derive(Debug)]
pub(crate) struct Progress {
    /// The log position the capture has read through.
    through: watch::Sender<Lsn>,
    /// The furthest position read at a call's end (or by `Capture::read_to_now`): a woken
    /// reader that reads on request (PostgreSQL's slot) reads up to it, with no position
    /// query of its own.
    wanted: AtomicU64,
    /// Wakes such a reader for a position someone waits for ([`Progress::want`]).
    wake: Notify,
    /// Holds that keep the capture from reading.
    held: watch::Sender<u32>,
}

impl Progress {
    /// Nothing read yet beyond `start`, where the log was opened.
    pub(crate) fn new(start: Lsn) -> Progress {
        Progress {
            through: watch::channel(start).0,
            wanted: AtomicU64::new(start),
            wake: Notify::new(),
            held: watch::channel(0).0,
        }
    }

    /// The log position read through.
    pub(crate) fn through(&self) -> Lsn {
        *self.through.borrow()
    }

    /// Follows the position read through.
    pub(crate) fn subscribe(&self) -> watch::Receiver<Lsn> {
        self.through.subscribe()
    }

    /// The log is read through `lsn` (never back): returns the bytes it moved on.
    pub(crate) fn read_through(&self, lsn: Lsn) -> u64 {
        let mut moved = 0;
        self.through.send_if_modified(|t| {
            moved = lsn.saturating_sub(*t);
            *t = (*t).max(lsn);
            moved > 0
        });
        moved
    }

    /// A position read from the database (a flush position) that calls wait for the capture
    /// to reach: wakes the reader only when it has not read that far yet.
    pub(crate) fn want(&self, lsn: Lsn) {
        if lsn > self.through() {
            self.wanted.fetch_max(lsn, Ordering::AcqRel);
            self.wake.notify_one();
        }
    }

    /// The position calls wait for, when the capture has not read that far.
    pub(crate) fn wanted(&self) -> Option<Lsn> {
        let wanted = self.wanted.load(Ordering::Acquire);
        (wanted > self.through()).then_some(wanted)
    }

    /// Waits until a call wants a position not read yet ([`Progress::want`]).
    pub(crate) async fn woken(&self) {
        self.wake.notified().await;
    }

    /// One more hold on reading.
    pub(crate) fn hold(&self) {
        self.held.send_modify(|n| *n += 1);
    }

    /// One hold less.
    pub(crate) fn release(&self) {
        self.held.send_modify(|n| *n = n.saturating_sub(1));
    }

    /// Waits while reading is held.
    pub(crate) async fn unheld(&self) {
        let mut held = self.held.subscribe();
        let _ = held.wait_for(|n| *n == 0).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_position_read_through_only_grows_and_says_how_far_it_moved() {
        let p = Progress::new(100);
        assert_eq!(p.read_through(150), 50);
        assert_eq!(p.read_through(120), 0);
        assert_eq!(p.through(), 150);
        p.want(140);
        assert_eq!(p.wanted(), None, "read already");
        p.want(200);
        assert_eq!(p.wanted(), Some(200));
        p.read_through(200);
        assert_eq!(p.wanted(), None);
    }
}
