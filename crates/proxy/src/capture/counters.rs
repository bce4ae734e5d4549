//! What the capture counts as it reads, for [`CaptureStats`] and the `hintaudit_capture_*`
//! metrics: the log's lag, the reads' bytes, lost logs made again, gaps, late judgements.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::capture::CaptureStats;

/// The capture's counters; each only grows, but the lag, which is as last read.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Bytes of log the database keeps for the capture (its lag), as last read.
    lag: AtomicU64,
    /// Times the capture lost its slot or stream and opened a new one.
    reopened: AtomicU64,
    /// Times it went on from a later position than it had read through (a new slot, a
    /// purged binary log file).
    gaps: AtomicU64,
    /// Calls judged before the capture had read past their end.
    late: AtomicU64,
    /// Bytes of log read through (the decoding cost).
    read_bytes: AtomicU64,
}

impl Counters {
    /// The database keeps `bytes` of log the capture has not read.
    pub(crate) fn lag(&self, bytes: u64) {
        self.lag.store(bytes, Ordering::Relaxed);
    }

    /// The lost log was opened again.
    pub(crate) fn reopened(&self) {
        self.reopened.fetch_add(1, Ordering::Relaxed);
    }

    /// The capture went on past a part of the log it did not read.
    pub(crate) fn gap(&self) {
        self.gaps.fetch_add(1, Ordering::Relaxed);
    }

    /// A call was judged before the capture had read past its end.
    pub(crate) fn late(&self) {
        self.late.fetch_add(1, Ordering::Relaxed);
    }

    /// `bytes` more of the log were read.
    pub(crate) fn read(&self, bytes: u64) {
        self.read_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// The counts, with the ledger's `settled` commits and the calls `pending`.
    pub(crate) fn stats(&self, settled: [u64; 5], pending: u64) -> CaptureStats {
        CaptureStats {
            lag_bytes: self.lag.load(Ordering::Relaxed),
            settled,
            reopened: self.reopened.load(Ordering::Relaxed),
            gaps: self.gaps.load(Ordering::Relaxed),
            late: self.late.load(Ordering::Relaxed),
            read_bytes: self.read_bytes.load(Ordering::Relaxed),
            pending,
        }
    }
}
