//! Attribution by the log's own positions ([design: the proxy's evidence](../../../../docs/design.md#the-proxys-evidence)):
//! the calls in flight, each with the log position read when it started and when it
//! answered, and the committed transactions the capture decoded, each with the position of
//! its commit. No clock is read.
//!
//! Each commit comes with its [`Origin`]: which of the proxy's upstream connections wrote it
//! (the writer the database named), that the writer is not the proxy's upstream at all, or
//! that this is not known. A commit at position `c` is a *candidate* of every call with
//! `start < c ≤ end` (a call still in flight has no end yet; a call whose start has not been
//! read yet counts as started, so it can only widen a set, never narrow it) that its origin
//! allows: the calls on its connection ([`Origin::Session`]), every call
//! ([`Origin::AnyCall`]), none ([`Origin::Foreign`]). When a call is judged, every commit in
//! its interval that it is a candidate of is settled once, by the first of its candidates
//! judged:
//!
//! - one candidate, or candidates that are all calls of one tool: attributed (to that call,
//!   or to the first of that tool's calls judged);
//! - candidates of several tools: ambiguous, counted, attributed to none;
//! - no candidate (settled when it is decoded): unattributed, counted;
//! - another writer's (settled when it is decoded): foreign, counted.
//!
//! The tables of every commit settled as no judged call's (ambiguous, unattributed, foreign,
//! dropped) wait, with the commit's position, for [`Ledger::take_written_elsewhere`]: they
//! still disturb the repeats of the calls that touch them, told to the judge when the first
//! call that ended after them is recorded (settle.rs).
//!
//! Pure: no I/O, no async, no clock. The capture (postgres/, mysql/) feeds it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use hintaudit_core::{ImagedUpdates, TableWrites};

pub use crate::capture::writer::{Origin, Writer};

/// Most (position, table) pairs of writes by no judged call kept for the judge: beyond it,
/// the oldest are dropped (a repeat around them may then be judged clean).
const MAX_ELSEWHERE: usize = 10_000;

/// A position in the database's log (PostgreSQL: an LSN as a 64-bit number; MySQL: the
/// binlog file number and offset folded into one).
pub type Lsn = u64;

/// One committed transaction as the log shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// The position at the end of its commit record.
    pub lsn: Lsn,
    /// The rows it changed, per table (unqualified, lower-cased).
    pub tables: Vec<TableWrites>,
    /// Tables it truncated.
    pub truncated: Vec<String>,
    /// Tables it truncated that the log showed empty already (truncated before, nothing
    /// inserted since, no gap between): nothing was removed.
    pub truncated_empty: Vec<String>,
    /// Its updates whose old row the log showed (a before image, or the row's last image
    /// read), by table and what comparing the rows says; only the comparison, never a value.
    pub images: Vec<ImagedUpdates>,
    /// Who wrote it, when the database said (PostgreSQL: the writer trigger's message).
    pub writer: Option<Writer>,
}

/// What the ledger settled for one commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Settled {
    /// One call, or calls of one tool, were in flight (on the writer's connection, when it is
    /// known): the commit is theirs.
    Attributed,
    /// Calls of several tools were in flight: no tool is blamed.
    Ambiguous,
    /// No call was in flight (on the writer's connection, when it is known).
    Unattributed,
    /// Dropped: the ledger was full, or the commit was decoded after every candidate had
    /// been judged (the capture fell behind its wait).
    Dropped,
    /// Another writer's: not this proxy's upstream (another replica's server, a job, a
    /// person), so no call of this proxy's.
    Foreign,
}

impl Settled {
    /// Every outcome, in label order.
    pub const ALL: [Settled; 5] = [
        Settled::Attributed,
        Settled::Ambiguous,
        Settled::Unattributed,
        Settled::Dropped,
        Settled::Foreign,
    ];

    /// The metric label value: `attributed`, `ambiguous`, `unattributed`, `dropped`,
    /// `foreign`.
    pub fn as_str(self) -> &'static str {
        match self {
            Settled::Attributed => "attributed",
            Settled::Ambiguous => "ambiguous",
            Settled::Unattributed => "unattributed",
            Settled::Dropped => "dropped",
            Settled::Foreign => "foreign",
        }
    }
}

/// A call's share of the log, when it is judged.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CallShare {
    /// Commits attributed to this call.
    pub attributed: Vec<Commit>,
    /// Commits in this call's interval that several tools' calls may have made: the tools
    /// of each set (this call's among them), sorted.
    pub ambiguous: Vec<(Commit, Vec<Arc<str>>)>,
    /// The log was not read for part of the call's interval (the capture lost its slot and
    /// made a new one, a binary log file was purged): its evidence is incomplete.
    pub gap: bool,
    /// The capture had not read past the call's end when it was judged
    /// (`--capture-wait-ms`), or no end position was read: its evidence is pending (what
    /// was read is in the share; what is read later is dropped).
    pub late: bool,
}

#[derive(Debug)]
struct CallSpan {
    tool: Arc<str>,
    /// The upstream connection it went on.
    session: u64,
    start: Option<Lsn>,
    end: Option<Lsn>,
    judged: bool,
}

#[derive(Debug)]
struct Pending {
    commit: Commit,
    origin: Origin,
    settled: Option<Settled>,
    /// The call it was attributed to, once settled `Attributed`.
    owner: Option<u64>,
}

/// The calls in flight and the commits not yet settled. Bounded: at most `max_commits`
/// commits wait (the oldest is dropped and counted), and ended calls are kept only while a
/// commit or a call in flight may still need their interval.
#[derive(Debug)]
pub struct Ledger {
    next_id: u64,
    calls: BTreeMap<u64, CallSpan>,
    commits: VecDeque<Pending>,
    gaps: Vec<(Lsn, Lsn)>,
    /// Intervals of calls judged before the capture had read past their end, until a commit
    /// beyond them is read: a commit read late inside one is dropped, not unattributed.
    late: VecDeque<(Lsn, Lsn)>,
    max_commits: usize,
    counts: [u64; 5],
    /// (position, table) of commits settled as no judged call's, until taken; at most
    /// [`MAX_ELSEWHERE`], the oldest dropped first.
    elsewhere: BTreeSet<(Lsn, String)>,
}

impl Ledger {
    /// A ledger that keeps at most `max_commits` commits waiting for their calls.
    pub fn new(max_commits: usize) -> Self {
        Ledger {
            next_id: 0,
            calls: BTreeMap::new(),
            commits: VecDeque::new(),
            gaps: Vec::new(),
            late: VecDeque::new(),
            max_commits: max_commits.max(1),
            counts: [0; 5],
            elsewhere: BTreeSet::new(),
        }
    }

    /// A call of `tool` begins on upstream connection `session`; its start position is not
    /// known yet ([`Ledger::started`]).
    pub fn begin(&mut self, tool: Arc<str>, session: u64) -> u64 {
        self.next_id += 1;
        self.calls.insert(
            self.next_id,
            CallSpan {
                tool,
                session,
                start: None,
                end: None,
                judged: false,
            },
        );
        self.next_id
    }

    /// The log position read when call `id` started (before it was sent upstream).
    pub fn started(&mut self, id: u64, lsn: Lsn) {
        if let Some(c) = self.calls.get_mut(&id) {
            c.start = Some(lsn);
        }
    }

    /// The log position read when call `id` answered.
    pub fn ended(&mut self, id: u64, lsn: Lsn) {
        if let Some(c) = self.calls.get_mut(&id) {
            c.end = Some(lsn.max(c.start.unwrap_or(0)));
        }
    }

    /// A call that will not be judged: it ended without a position (the database could not
    /// be asked), or its future was dropped before it answered. Its interval closes where it
    /// started, so it is no candidate of any commit read from now on.
    pub fn forget(&mut self, id: u64) {
        if let Some(c) = self.calls.get_mut(&id) {
            c.judged = true;
            c.end = Some(c.start.unwrap_or(0));
        }
        self.prune();
    }

    /// The capture read nothing between `from` and `to` (a new slot, after the old one was
    /// lost): calls whose interval overlaps it are told their evidence is incomplete.
    pub fn gap(&mut self, from: Lsn, to: Lsn) {
        self.gaps.push((from, to));
        if self.gaps.len() > 64 {
            self.gaps.remove(0);
        }
    }

    /// The candidates of a commit at `lsn` from `origin`: call ids with `start < lsn ≤ end`
    /// that the origin allows.
    fn candidates(&self, lsn: Lsn, origin: Origin) -> Vec<u64> {
        self.calls
            .iter()
            .filter(|(_, c)| match origin {
                Origin::Session(s) => c.session == s,
                Origin::AnyCall => true,
                Origin::Foreign => false,
            })
            .filter(|(_, c)| c.start.is_none_or(|s| s < lsn) && c.end.is_none_or(|e| lsn <= e))
            .map(|(id, _)| *id)
            .collect()
    }

    /// A commit the capture decoded, written from `origin`. Settled at once when it is
    /// another writer's or no call can be its candidate.
    pub fn decoded(&mut self, commit: Commit, origin: Origin) -> Option<Settled> {
        if origin == Origin::Foreign {
            self.no_call(&commit);
            self.count(Settled::Foreign);
            return Some(Settled::Foreign);
        }
        // Commits are read in log order: an interval that ends before this one is passed.
        while self.late.front().is_some_and(|(_, end)| *end < commit.lsn) {
            self.late.pop_front();
        }
        let candidates = self.candidates(commit.lsn, origin);
        if candidates.is_empty() || candidates.iter().all(|id| self.calls[id].judged) {
            self.no_call(&commit);
        }
        if candidates.is_empty() {
            if self
                .late
                .iter()
                .any(|(start, end)| *start < commit.lsn && commit.lsn <= *end)
            {
                self.count(Settled::Dropped);
                return Some(Settled::Dropped);
            }
            self.count(Settled::Unattributed);
            return Some(Settled::Unattributed);
        }
        if candidates.iter().all(|id| self.calls[id].judged) {
            self.count(Settled::Dropped);
            return Some(Settled::Dropped);
        }
        if self.commits.len() >= self.max_commits
            && let Some(old) = self.commits.pop_front()
            && old.settled.is_none()
        {
            self.no_call(&old.commit);
            self.count(Settled::Dropped);
        }
        self.commits.push_back(Pending {
            commit,
            origin,
            settled: None,
            owner: None,
        });
        None
    }

    /// Call `id` answered and the capture has decoded past its end: its share of the log.
    /// Settles every commit of its interval that no earlier-judged candidate settled.
    pub fn judge(&mut self, id: u64) -> CallShare {
        let mut share = CallShare::default();
        let Some(call) = self.calls.get(&id) else {
            return share;
        };
        let (start, end) = (call.start.unwrap_or(0), call.end.unwrap_or(Lsn::MAX));
        let tool = call.tool.clone();
        share.gap = self.gaps.iter().any(|(a, b)| *a < end && start < *b);
        let mut settled = Vec::new();
        for (i, p) in self.commits.iter().enumerate() {
            if p.commit.lsn <= start || p.commit.lsn > end {
                continue;
            }
            // Another connection's commit in this call's interval is not this call's to
            // settle, nor to be told of.
            let candidates = self.candidates(p.commit.lsn, p.origin);
            if !candidates.contains(&id) {
                continue;
            }
            match p.settled {
                Some(Settled::Attributed) if p.owner == Some(id) => {
                    share.attributed.push(p.commit.clone())
                }
                Some(Settled::Ambiguous) => {
                    let tools = self.tools_of(&candidates);
                    share.ambiguous.push((p.commit.clone(), tools));
                }
                Some(_) => {}
                None => {
                    let tools = self.tools_of(&candidates);
                    if tools.len() == 1 && tools[0] == tool {
                        settled.push((i, Settled::Attributed));
                        share.attributed.push(p.commit.clone());
                    } else {
                        settled.push((i, Settled::Ambiguous));
                        share.ambiguous.push((p.commit.clone(), tools));
                    }
                }
            }
        }
        for (i, outcome) in settled {
            if outcome == Settled::Ambiguous {
                let commit = self.commits[i].commit.clone();
                self.no_call(&commit);
            }
            self.commits[i].settled = Some(outcome);
            self.commits[i].owner = (outcome == Settled::Attributed).then_some(id);
            self.count(outcome);
        }
        if let Some(c) = self.calls.get_mut(&id) {
            c.judged = true;
        }
        self.prune();
        share
    }

    /// [`Ledger::judge`] for a call that answered before the capture had read past its end
    /// (it fell behind the wait): judges what was read, and keeps the call's interval until
    /// a commit beyond it is read, so a commit read later inside it is dropped (counted), not
    /// taken for a write outside calls. At most 1,024 such intervals are kept (the oldest
    /// goes first).
    pub fn judge_late(&mut self, id: u64) -> CallShare {
        if let Some(c) = self.calls.get(&id) {
            let interval = (c.start.unwrap_or(0), c.end.unwrap_or(Lsn::MAX));
            // Kept in order of their ends, so that `decoded` pops the passed ones first.
            let at = self.late.partition_point(|(_, end)| *end <= interval.1);
            self.late.insert(at, interval);
            if self.late.len() > 1024 {
                self.late.pop_front();
            }
        }
        let mut share = self.judge(id);
        share.late = true;
        share
    }

    fn tools_of(&self, ids: &[u64]) -> Vec<Arc<str>> {
        let set: BTreeSet<Arc<str>> = ids.iter().map(|id| self.calls[id].tool.clone()).collect();
        set.into_iter().collect()
    }

    /// Drops ended calls and commits no call in flight can still need: everything at or
    /// before the earliest start of a call not yet judged.
    fn prune(&mut self) {
        let floor = self
            .calls
            .values()
            .filter(|c| !c.judged)
            .map(|c| c.start.unwrap_or(0))
            .min();
        match floor {
            None => {
                // Nothing in flight: every commit kept is settled or belongs to judged calls.
                for p in std::mem::take(&mut self.commits) {
                    if p.settled.is_none() {
                        self.no_call(&p.commit);
                        self.count(Settled::Dropped);
                    }
                }
                self.calls.clear();
            }
            Some(floor) => {
                while self.commits.front().is_some_and(|p| p.commit.lsn <= floor) {
                    if let Some(p) = self.commits.pop_front()
                        && p.settled.is_none()
                    {
                        self.no_call(&p.commit);
                        self.count(Settled::Dropped);
                    }
                }
                self.calls
                    .retain(|_, c| !c.judged || c.end.is_none_or(|e| e > floor));
            }
        }
    }

    fn count(&mut self, s: Settled) {
        self.counts[s as usize] += 1;
    }

    /// `commit` is settled as no judged call's: its tables were written elsewhere.
    fn no_call(&mut self, commit: &Commit) {
        for table in written_tables(commit) {
            self.elsewhere.insert((commit.lsn, table));
        }
        while self.elsewhere.len() > MAX_ELSEWHERE {
            self.elsewhere.pop_first();
        }
    }

    /// The tables written at or before `through` by commits settled as no judged call's
    /// (ambiguous, unattributed, foreign, dropped) and not taken yet, each once, as the log
    /// names them: the judge is told of them
    /// ([`Judge::written_elsewhere`](hintaudit_core::Judge::written_elsewhere)) before a call
    /// that ended at `through` is judged. Those after `through` wait for a later call.
    pub fn take_written_elsewhere(&mut self, through: Lsn) -> BTreeSet<String> {
        let later = match through.checked_add(1) {
            Some(next) => self.elsewhere.split_off(&(next, String::new())),
            None => BTreeSet::new(),
        };
        let taken = std::mem::replace(&mut self.elsewhere, later);
        taken.into_iter().map(|(_, table)| table).collect()
    }

    /// Commits settled so far, by outcome.
    pub fn settled(&self, s: Settled) -> u64 {
        self.counts[s as usize]
    }

    /// Commits waiting for their calls.
    #[cfg(test)]
    pub fn waiting(&self) -> usize {
        self.commits.len()
    }

    /// Calls kept (in flight, or ended and still needed).
    #[cfg(test)]
    pub fn calls(&self) -> usize {
        self.calls.len()
    }
}

/// The tables `commit` changed rows of or truncated (a TRUNCATE of an empty table changed
/// nothing).
fn written_tables(commit: &Commit) -> impl Iterator<Item = String> + '_ {
    commit
        .tables
        .iter()
        .map(|w| w.table.clone())
        .chain(commit.truncated.iter().cloned())
}

#[cfg(test)]
mod tests;
