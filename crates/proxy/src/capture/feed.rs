//! A log reader's one way into the capture ([`Feed`]): the commits it decoded, how far it has
//! read, the lag, a part it could not read, and its failures; and what it is asked: to stop,
//! to read now (a call waits for a position), to hold off.

use std::sync::Arc;
use std::time::Duration;

use crate::capture::trouble::Part;
use crate::capture::{Commit, Lsn, Shared};

/// Given to a [`LogSource`](crate::capture::source::LogSource)'s reader loop. Clones share
/// the capture.
#[derive(Debug, Clone)]
pub(crate) struct Feed {
    shared: Arc<Shared>,
}

impl Feed {
    pub(crate) fn new(shared: Arc<Shared>) -> Feed {
        Feed { shared }
    }

    /// How often the log is read when no call waits for it (and the lag read).
    pub(crate) fn interval(&self) -> Duration {
        self.shared.options.interval
    }

    /// The least time between two reads that calls wake (PostgreSQL's slot).
    pub(crate) fn read_gap(&self) -> Duration {
        self.shared.options.read_gap
    }

    /// Changes read in one go, at most.
    pub(crate) fn batch(&self) -> u32 {
        self.shared.options.batch
    }

    /// Completes when the capture stops; the reader then returns.
    pub(crate) async fn stopped(&self) {
        self.shared.stop.cancelled().await;
    }

    /// Completes when a call waits for a position not read yet ([`Feed::wanted`]).
    pub(crate) async fn woken(&self) {
        self.shared.progress.woken().await;
    }

    /// Waits while the capture is held from reading ([`Capture::hold`]), or until it stops.
    ///
    /// [`Capture::hold`]: crate::capture::Capture::hold
    pub(crate) async fn unheld(&self) {
        tokio::select! {
            () = self.stopped() => {}
            () = self.shared.progress.unheld() => {}
        }
    }

    /// The furthest position calls wait for, when not read yet: a reader that reads on
    /// request reads up to it, with no position query of its own.
    pub(crate) fn wanted(&self) -> Option<Lsn> {
        self.shared.progress.wanted()
    }

    /// The position read through so far.
    pub(crate) fn through(&self) -> Lsn {
        self.shared.progress.through()
    }

    /// Commits decoded, in log order: whose each is (the writer it names, matched to the
    /// upstream's connections; this may read `/proc`), then into the ledger.
    pub(crate) fn commits(&self, commits: Vec<Commit>) {
        let origins: Vec<_> = commits
            .iter()
            .map(|c| self.shared.identify.origin(c.writer.as_ref()))
            .collect();
        let mut ledger = self.shared.ledger.lock();
        for (commit, origin) in commits.into_iter().zip(origins) {
            ledger.decoded(commit, origin);
        }
    }

    /// The commit ending at `lsn` was made at `unix_seconds`, as the log says (the
    /// commit-to-finding latency starts there; without it, when the capture read past it).
    pub(crate) fn commit_time(&self, lsn: Lsn, unix_seconds: f64) {
        self.shared.ends.commit_logged(lsn, unix_seconds);
    }

    /// The log is read through `lsn`: every commit up to it was fed. Returns how far the
    /// position moved on.
    pub(crate) fn read_through(&self, lsn: Lsn) -> u64 {
        self.shared.progress.read_through(lsn)
    }

    /// `bytes` more of the log were read (the decoding cost,
    /// `hintaudit_capture_read_bytes_total`).
    pub(crate) fn read_bytes(&self, bytes: u64) {
        self.shared.counters.read(bytes);
    }

    /// The database keeps `bytes` of log the capture has not read.
    pub(crate) fn lag(&self, bytes: u64) {
        self.shared.counters.lag(bytes);
    }

    /// The reader goes on from `to`, a later position than it had read through (a new
    /// slot, a purged binary log file): the part between is a gap, counted, and the calls
    /// overlapping it are marked incomplete. Returns where the read had got to.
    pub(crate) fn gap(&self, to: Lsn) -> Lsn {
        let from = self.through();
        self.shared.counters.gap();
        self.shared.ledger.lock().gap(from, to);
        self.shared.progress.read_through(to);
        from
    }

    /// The lost log was opened again.
    pub(crate) fn reopened(&self) {
        self.shared.counters.reopened();
    }

    /// Reading the log failed doing `what` (counted and logged once per outage).
    pub(crate) fn failed(&self, what: &str, e: &dyn std::fmt::Display) {
        self.shared.outage.failed(Part::Log, what, e);
    }

    /// Whether the database cannot be read now (an outage lasts): work that needs it waits.
    pub(crate) fn in_outage(&self) -> bool {
        self.shared.outage.lasts()
    }

    /// Reading the log works (again): ends the outage when nothing else fails.
    pub(crate) fn worked(&self) {
        self.shared.outage.worked(Part::Log);
    }
}
