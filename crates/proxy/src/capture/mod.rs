//! Change capture from the database's own log, and attribution of each commit to the calls
//! in flight by the log's positions ([design: the proxy's evidence](../../../../docs/design.md#the-proxys-evidence)).
//!
//! [`Capture::start`] matches the URL's [`DatabaseKind`] once and opens that kind's log
//! source (source.rs: PostgreSQL's temporary logical slot in postgres/, MySQL/MariaDB's
//! binary log stream in mysql/, SQLite's WAL in sqlite/), which checks the database can be read
//! this way (a clear [`CaptureError`] when it cannot); its reader runs on a task of its own,
//! always, whether or not calls are in flight, so the database never keeps log for it.
//! Around each tool call the proxy asks [`Capture::begin`] (the call starts after the latest
//! log position the capture holds: no query of its own) and [`Capture::finish`] (the call
//! answered: its [`Settling`] share is judged on a task of its own once the capture has read
//! past its end, while the answer goes back; settle.rs). Each commit names its writer
//! (PostgreSQL: a trigger's message, see postgres/install.rs; MariaDB: a trigger's row, see
//! mysql/install.rs), matched to the proxy's upstream connections by identify.rs, so that a
//! commit is only ever a candidate of the calls on the connection that wrote it. A commit
//! settled as no judged call's (ambiguous, unattributed, foreign, dropped) is told to the
//! judge given to [`Capture::disturb`]: it disturbs the repeats of the calls touching its
//! tables.
//!
//! The capture's state is in parts by what each holds: how far the log is read and what
//! calls wait for (progress.rs), what it counts (counters.rs), calls' ends (ends.rs: their
//! positions, their turns, the calls pending, commit times and the latency), the calls and
//! commits being attributed (ledger.rs). A log reader reaches none of them: it feeds the
//! capture through its [`Feed`](feed::Feed) (feed.rs). Failures are counted once per outage
//! and tried again on a backoff (trouble.rs).

use std::sync::Arc;
use std::time::Duration;

use hintaudit_core::{DatabaseKind, DatabaseUrl, Judge, StateKey};
use tokio_util::sync::CancellationToken;

mod commit;
mod counters;
mod ends;
mod feed;
// Matching a writer's socket to the upstream's processes reads Linux's `/proc`: elsewhere
// the writer is told only by its application_name and `--upstream-addr`.
#[cfg_attr(not(target_os = "linux"), path = "identify_elsewhere.rs")]
mod identify;
mod images;
mod ledger;
mod mysql;
mod postgres;
mod progress;
mod settle;
mod source;
mod sqlite;
mod times;
mod trouble;
mod writer;

pub use ledger::{CallShare, Commit, Lsn, Settled};
pub use settle::Settling;
pub(crate) use writer::child_env;
pub use writer::{Origin, UpstreamHost, Writer};

use counters::Counters;
use ends::CallEnds;
use feed::Feed;
use identify::Identify;
use ledger::Ledger;
use progress::Progress;
use source::{LogEnd, LogSource, Opened};
use trouble::Outage;

/// Why the capture cannot start or went on without part of the log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    /// The database URL names a backend the proxy cannot read the log of.
    #[error("{0}")]
    Unsupported(String),
    /// The database's settings do not allow it (wal_level, REPLICATION, binlog format).
    #[error("{0}")]
    Prerequisite(String),
    /// The database could not be reached or refused a query.
    #[error("{what}: {source}")]
    Database {
        /// What was being done.
        what: &'static str,
        /// The driver's error.
        source: sqlx::Error,
    },
}

/// How the capture runs.
#[derive(Debug, Clone)]
pub struct CaptureOptions {
    /// How often the log is read when no call is waiting for it.
    pub interval: Duration,
    /// How long after a call answered its judgement waits, at most, for the capture to read
    /// past its end (then it is judged with what was read, and counted late). The answer
    /// itself never waits.
    pub wait: Duration,
    /// Commits kept waiting for their calls, at most (then the oldest is dropped, counted).
    pub max_commits: usize,
    /// PostgreSQL: the least time from one read of the slot to the next when calls wake it.
    /// Every read through the SQL interface decodes the WAL again from the slot's restart
    /// point (up to about 15 s of the cluster's WAL, until the server logs its running
    /// transactions), so calls that end within this share one read: less of the server's CPU
    /// beside the next calls, for judgements this much later at most. Default 20 ms; zero
    /// reads at once for every call that ends (`hintaudit proxy` sets it when effects are
    /// disclosed, since those answers wait for their share).
    pub read_gap: Duration,
    /// Changes read from the log in one go, at most (whole transactions).
    pub batch: u32,
    /// How the upstream's own database connections are told from other writers'.
    pub upstream: UpstreamHost,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        CaptureOptions {
            interval: Duration::from_millis(100),
            wait: Duration::from_secs(5),
            read_gap: Duration::from_millis(20),
            max_commits: 10_000,
            batch: 10_000,
            upstream: UpstreamHost::Children,
        }
    }
}

/// The running capture. Clones share it.
#[derive(Debug, Clone)]
pub struct Capture {
    shared: Arc<Shared>,
}

/// The capture's state, shared by its tasks and its calls, in parts by what each holds.
#[derive(Debug)]
pub(crate) struct Shared {
    options: CaptureOptions,
    /// How far the log is read, and what calls wait for it to read.
    progress: Progress,
    /// What the capture counts as it reads.
    counters: Counters,
    /// Calls' ends: their positions, their turns to be recorded, their latency.
    ends: CallEnds,
    /// The calls in flight and the commits waiting for them.
    ledger: parking_lot::Mutex<Ledger>,
    /// Whose each commit is.
    identify: Identify,
    /// The database's log: its kind and its end position.
    source: Arc<dyn LogEnd>,
    /// Failures of the log reader and the position reader, counted once per outage.
    outage: Outage,
    /// Told of the tables of commits settled as no judged call's ([`Capture::disturb`]).
    judge: std::sync::OnceLock<Arc<Judge>>,
    stop: CancellationToken,
    tasks: parking_lot::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

/// What the capture has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CaptureStats {
    /// Bytes of log the database keeps for the capture's slot, as last read.
    pub lag_bytes: u64,
    /// Commits settled, by [`Settled`] in [`Settled::ALL`] order.
    pub settled: [u64; 5],
    /// Times the slot or stream was lost and a new one opened.
    pub reopened: u64,
    /// Times the capture went on from a later log position than it had read through (a new
    /// slot on PostgreSQL, a purged binary log file on MySQL): what was committed between was
    /// not read.
    pub gaps: u64,
    /// Calls judged before the capture had read past their end.
    pub late: u64,
    /// Bytes of log read through: PostgreSQL, WAL decoded by the slot (the whole cluster's
    /// WAL, every database's); MySQL, binary log events received.
    pub read_bytes: u64,
    /// Calls answered whose share of the log is not judged and recorded yet.
    pub pending: u64,
}

impl Shared {
    fn new(options: CaptureOptions, source: Arc<dyn LogEnd>, start: Lsn) -> Arc<Shared> {
        let backend = source.kind().system_name();
        Arc::new(Shared {
            ledger: parking_lot::Mutex::new(Ledger::new(options.max_commits)),
            identify: Identify::new(options.upstream.clone()),
            options,
            progress: Progress::new(start),
            counters: Counters::default(),
            ends: CallEnds::new(start, backend),
            source,
            outage: Outage::default(),
            judge: std::sync::OnceLock::new(),
            stop: CancellationToken::new(),
            tasks: parking_lot::Mutex::default(),
        })
    }

    /// Runs `reader` (the source's reader loop), the position reader at calls' ends and the
    /// watch of read times, until the capture stops.
    fn spawn(self: &Arc<Shared>, reader: impl Future<Output = ()> + Send + 'static) {
        let times = self.clone();
        let watch_reads = async move {
            let mut through = times.progress.subscribe();
            loop {
                tokio::select! {
                    () = times.stop.cancelled() => break,
                    changed = through.changed() => if changed.is_err() { break },
                }
                let lsn = *through.borrow_and_update();
                times.ends.read_through(lsn, std::time::SystemTime::now());
            }
        };
        let mut tasks = self.tasks.lock();
        tasks.push(tokio::spawn(reader));
        tasks.push(tokio::spawn(ends::read_ends(self.clone())));
        tasks.push(tokio::spawn(watch_reads));
    }

    /// Tells the judge, when one was given, of the tables written at or before `through` by
    /// commits settled as no judged call's and not told yet
    /// ([`Ledger::take_written_elsewhere`]).
    fn tell_written_elsewhere(&self, through: Lsn) {
        let Some(judge) = self.judge.get() else {
            return;
        };
        let tables = self.ledger.lock().take_written_elsewhere(through);
        if !tables.is_empty() {
            let keys: Vec<StateKey<'_>> = tables.iter().map(StateKey::table).collect();
            judge.written_elsewhere(&keys);
        }
    }
}

/// Why the proxy cannot follow an in-memory SQLite database.
const SQLITE_IN_MEMORY: &str = "--database sqlite: names no file (an in-memory database \
     lives in its server's process): the proxy reads a SQLite server's writes from the WAL \
     beside its database file; name the file (--database sqlite:app.db)";

impl Capture {
    /// Checks the database named by `url`, opens its log and starts reading it.
    ///
    /// # Errors
    /// [`CaptureError::Unsupported`] for an in-memory SQLite database and unknown backends,
    /// with what to use instead; [`CaptureError::Prerequisite`] when the settings rule it
    /// out (the message names the setting and how to change it; SQLite: a network
    /// filesystem, a directory the proxy cannot write); [`CaptureError::Database`] when the database
    /// cannot be reached.
    pub async fn start(url: &str, options: CaptureOptions) -> Result<Capture, CaptureError> {
        let url = DatabaseUrl::parse(url)
            .map_err(|e| CaptureError::Unsupported(format!("--database: {e}")))?;
        // The drivers get the URL in the kind's own scheme (`MariaDB://` reaches mysql_async
        // as `mysql://`): normalised once, in core.
        let driver = url.driver_url();
        match url.kind() {
            DatabaseKind::Postgres => Capture::open::<postgres::Slot>(driver, options).await,
            DatabaseKind::MySql => Capture::open::<mysql::BinaryLog>(driver, options).await,
            DatabaseKind::Sqlite => match url.database() {
                Some(file) => Capture::open::<sqlite::WalLog>(file, options).await,
                None => Err(CaptureError::Unsupported(SQLITE_IN_MEMORY.into())),
            },
        }
    }

    /// Opens `S`'s log and starts its reader.
    async fn open<S: LogSource + std::fmt::Debug>(
        url: &str,
        options: CaptureOptions,
    ) -> Result<Capture, CaptureError> {
        let Opened {
            source,
            reader,
            start,
        } = S::open(url).await?;
        let source = Arc::new(source);
        let shared = Shared::new(options, source.clone(), start);
        shared.spawn(source.read(reader, Feed::new(shared.clone())));
        Ok(Capture { shared })
    }

    /// A call of `tool` begins on upstream connection `link`, to be sent upstream now:
    /// registers it with its start, the latest log position the capture holds (no query of
    /// its own; it waits only for the position read that covers the calls that answered
    /// before it began, until that read answers or one fails, 1 s each: settle.rs). Returns
    /// the call's ticket for [`Capture::finish`]; a ticket dropped unfinished (the call's
    /// future was dropped) takes the call out of every later candidate set.
    pub async fn begin(&self, tool: Arc<str>, link: UpstreamLink) -> Ticket {
        self.shared.identify.child(link.connection, link.child);
        let start = settle::start_bound(&self.shared).await;
        let mut ledger = self.shared.ledger.lock();
        let id = ledger.begin(tool, link.connection);
        ledger.started(id, start);
        drop(ledger);
        Ticket {
            id,
            shared: self.shared.clone(),
            finished: false,
        }
    }

    /// The call answered: returns at once with its share of the log on its way, judged on a
    /// task of its own once the capture has read past the call's end (at most
    /// [`CaptureOptions::wait`] later). Send the answer, then record the share
    /// ([`Settling::share`], [`Settling::recorded`]).
    pub fn finish(&self, mut ticket: Ticket) -> Settling {
        ticket.finished = true;
        Settling::start(self.shared.clone(), ticket.id)
    }

    /// Holds the capture from reading the log (PostgreSQL: it polls no more) until the guard
    /// is dropped; calls answer as ever, and are judged once it reads again (or at
    /// [`CaptureOptions::wait`], late). For tests and maintenance; MySQL/MariaDB's stream is
    /// read as it comes and is not held.
    pub fn hold(&self) -> Hold {
        self.shared.progress.hold();
        Hold {
            shared: self.shared.clone(),
        }
    }

    /// Waits until the capture has read the log as far as it reached when this was called
    /// (one position read), at most [`CaptureOptions::wait`], or until the capture stops. A
    /// session's `--stdio` child is stopped only after this, so that its last commits are
    /// read, and their writer told from the child's sockets, while it still holds them.
    pub async fn read_to_now(&self) {
        let shared = &self.shared;
        let caught_up = async {
            let Ok(end) = shared.source.end().await else {
                return;
            };
            let mut through = shared.progress.subscribe();
            shared.progress.want(end);
            let _ = through.wait_for(|t| *t >= end).await;
        };
        tokio::select! {
            () = shared.stop.cancelled() => {}
            _ = tokio::time::timeout(shared.options.wait, caught_up) => {}
        }
    }

    /// The kind of database whose log it reads ([`DatabaseKind::Postgres`] or
    /// [`DatabaseKind::MySql`]); its `db.system.name` (`postgresql`, `mysql`) is the
    /// `backend` label of the `hintaudit_capture_*` metrics.
    pub fn kind(&self) -> DatabaseKind {
        self.shared.source.kind()
    }

    /// The `backend` label of the `hintaudit_capture_*` metrics: the kind's
    /// `db.system.name`, `postgresql` or `mysql`.
    pub fn backend(&self) -> &'static str {
        self.kind().system_name()
    }

    /// Tells `judge` of the tables of every commit the capture settles as no judged call's
    /// from now on (ambiguous, unattributed, foreign, dropped), so that it disturbs the
    /// repeats of the calls touching them ([`Judge::written_elsewhere`]). Only the first
    /// judge given is told.
    pub fn disturb(&self, judge: Arc<Judge>) {
        let _ = self.shared.judge.set(judge);
    }

    /// What the capture has done so far.
    pub fn stats(&self) -> CaptureStats {
        let settled = {
            let ledger = self.shared.ledger.lock();
            Settled::ALL.map(|s| ledger.settled(s))
        };
        let shared = &self.shared;
        shared.counters.stats(settled, shared.ends.pending())
    }

    /// `hintaudit_capture_commit_to_finding_seconds{backend}`: seconds from each commit
    /// judged for a call (its time in the log on PostgreSQL, when it was read on
    /// MySQL/MariaDB) to when the call's findings were recorded.
    pub fn latency(&self) -> &prometheus::Histogram {
        self.shared.ends.latency()
    }

    /// Settles the calls still pending (each judged once the capture has read past its end,
    /// or at [`CaptureOptions::wait`] after it answered, late), then stops reading and closes
    /// the slot's session (PostgreSQL drops a temporary slot with its session; a crash drops
    /// it too).
    pub async fn shutdown(&self) {
        let bound = self.shared.options.wait + Duration::from_secs(1);
        let settled = tokio::time::timeout(bound, self.shared.ends.idle())
            .await
            .is_ok();
        if !settled {
            let left = self.shared.ends.pending();
            capture_error("shutting down", &format_args!("{left} calls not judged"));
        }
        self.shared.stop.cancel();
        let tasks = std::mem::take(&mut *self.shared.tasks.lock());
        for task in tasks {
            let _ = task.await;
        }
    }
}

/// The upstream connection a call goes on, as the capture tells writers apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UpstreamLink {
    /// The connection's number, unique in this process ([`Upstream::id`](crate::Upstream::id)).
    pub connection: u64,
    /// Its child's pid, for `--stdio` (the root of the process tree whose sockets are its).
    pub child: Option<u32>,
}

/// A call registered with the capture ([`Capture::begin`]).
#[derive(Debug)]
pub struct Ticket {
    id: u64,
    shared: Arc<Shared>,
    finished: bool,
}

/// Holds the capture from reading while it lives ([`Capture::hold`]).
#[derive(Debug)]
pub struct Hold {
    shared: Arc<Shared>,
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.shared.progress.release();
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.finished {
            self.shared.ledger.lock().forget(self.id);
        }
    }
}

/// Counts a capture failure in `hintaudit_audit_errors_total{stage="oracle"}` and logs it:
/// the call goes on.
pub(crate) fn capture_error(what: &str, e: &dyn std::fmt::Display) {
    hintaudit_core::stats().audit_error(
        hintaudit_core::AuditStage::Oracle,
        &format_args!("{what}: {e}"),
    );
    tracing::warn!(target: "hintaudit::proxy", "capture: {what}: {e}");
}
