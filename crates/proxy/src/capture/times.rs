//! When each commit happened, for the commit-to-finding latency
//! (`hintaudit_capture_commit_to_finding_seconds`): the commit's own time in the log where
//! the log gives it (PostgreSQL: `test_decoding`'s `include-timestamp`, the database
//! server's clock), else the time the capture read past it (MySQL/MariaDB: the binary log's
//! event header has whole seconds only, too coarse for this).

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use crate::capture::Lsn;

/// How many commits' times are kept, at most (the oldest go first).
const KEPT: usize = 16_384;

/// Commit times by log position: from the log, and from the capture's reading.
#[derive(Debug, Default)]
pub(crate) struct CommitTimes {
    /// (commit position, its time in the log), in log order.
    logged: Mutex<VecDeque<(Lsn, SystemTime)>>,
    /// (position read through, when), in log order.
    read: Mutex<VecDeque<(Lsn, SystemTime)>>,
}

impl CommitTimes {
    /// The commit ending at `lsn` was made at `unix_seconds` (the log's own time).
    pub(crate) fn logged(&self, lsn: Lsn, unix_seconds: f64) {
        let Ok(since) = Duration::try_from_secs_f64(unix_seconds) else {
            return;
        };
        push(&mut self.logged.lock(), lsn, SystemTime::UNIX_EPOCH + since);
    }

    /// The capture has read the log through `lsn`, now.
    pub(crate) fn read_through(&self, lsn: Lsn, at: SystemTime) {
        push(&mut self.read.lock(), lsn, at);
    }

    /// When the commit ending at `lsn` was made (the log's time) or, failing that, read.
    pub(crate) fn time_of(&self, lsn: Lsn) -> Option<SystemTime> {
        let logged = self.logged.lock();
        if let Ok(i) = logged.binary_search_by_key(&lsn, |(l, _)| *l) {
            return Some(logged[i].1);
        }
        drop(logged);
        let read = self.read.lock();
        let i = read.partition_point(|(l, _)| *l < lsn);
        read.get(i).map(|(_, at)| *at)
    }
}

/// Appends (`lsn`, `at`) to `times` when it is beyond the last, keeping at most [`KEPT`].
fn push(times: &mut VecDeque<(Lsn, SystemTime)>, lsn: Lsn, at: SystemTime) {
    if times.back().is_some_and(|(l, _)| *l >= lsn) {
        return;
    }
    times.push_back((lsn, at));
    if times.len() > KEPT {
        times.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_takes_its_logged_time_else_the_first_read_past_it() {
        let t = CommitTimes::default();
        let at = |s: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        t.logged(10, 100.0);
        t.read_through(15, at(200));
        t.read_through(30, at(300));
        assert_eq!(t.time_of(10), Some(at(100)));
        assert_eq!(t.time_of(12), Some(at(200)));
        assert_eq!(t.time_of(15), Some(at(200)));
        assert_eq!(t.time_of(16), Some(at(300)));
        assert_eq!(t.time_of(31), None);
        // Out of order and repeated positions are ignored.
        t.read_through(20, at(400));
        assert_eq!(t.time_of(16), Some(at(300)));
    }
}
