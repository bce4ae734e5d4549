//! Change capture from the database's own log, and attribution of each commit to the calls
//! in flight by the log's positions ([design: the proxy's evidence](../../../../docs/design.md#the-proxys-evidence)).
//!
//! [`Capture::start`] checks the database can be read this way (a clear [`CaptureError`]
//! when it cannot), opens the log (PostgreSQL: a temporary logical replication slot) and
//! reads it on a task of its own, always, whether or not calls are in flight, so the
//! database never keeps log for it. Around each tool call the proxy asks
//! [`Capture::begin`] (the call starts after the latest log position the capture holds: no
//! query of its own) and [`Capture::finish`] (the call answered: its [`Settling`] share is
//! judged on a task of its own once the capture has read past its end, while the answer goes
//! back; settle.rs). Each commit names its writer (PostgreSQL: a trigger's message, see
//! postgres/install.rs; MariaDB: a trigger's row, see mysql/install.rs), matched to the
//! proxy's upstream connections by identify.rs, so that a commit is only ever a candidate of
//! the calls on the connection that wrote it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hintaudit_core::DatabaseKind;
use hintaudit_telemetry::MetricName;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

mod commit;
// Matching a writer's socket to the upstream's processes reads Linux's `/proc`: elsewhere
// the writer is told only by its application_name and `--upstream-addr`.
#[cfg_attr(not(target_os = "linux"), path = "identify_elsewhere.rs")]
mod identify;
mod images;
pub mod ledger;
mod mysql;
mod postgres;
mod settle;
mod times;
pub mod writer;

pub use postgres::decode;

pub use ledger::{CallShare, Commit, Ledger, Lsn, Settled};
pub use settle::Settling;
pub use writer::{Origin, UpstreamHost, Writer};

use identify::Identify;

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

#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) ledger: std::sync::Mutex<Ledger>,
    /// The log position the capture has read through.
    pub(crate) decoded: watch::Sender<Lsn>,
    /// Wakes the PostgreSQL slot reader for a position someone waits for ([`Shared::want`]).
    pub(crate) wake: Notify,
    /// The furthest log position read at a call's end (or by [`Capture::read_to_now`]): a
    /// woken slot read decodes up to it, with no position query of its own.
    pub(crate) wanted: AtomicU64,
    pub(crate) options: CaptureOptions,
    /// Bytes of log the database keeps for the slot (its lag), as last read.
    pub(crate) lag: AtomicU64,
    /// Times the capture lost its slot or stream and opened a new one.
    pub(crate) reopened: AtomicU64,
    /// Times it went on from a later position than it had read through (a new slot, a
    /// purged binary log file).
    pub(crate) gaps: AtomicU64,
    /// Calls judged before the capture had read past their end.
    pub(crate) late: AtomicU64,
    /// Bytes of log read through (the decoding cost).
    pub(crate) read_bytes: AtomicU64,
    /// The position reader at calls' ends (settle.rs).
    pub(crate) ends: settle::Ends,
    /// Calls answered whose share of the log is not recorded yet.
    pub(crate) pending: watch::Sender<u64>,
    /// Holds that keep the capture from reading ([`Capture::hold`]).
    held: watch::Sender<u32>,
    /// When each commit was made or read, for the commit-to-finding latency.
    pub(crate) times: times::CommitTimes,
    /// `hintaudit_capture_commit_to_finding_seconds{backend}`.
    pub(crate) latency: prometheus::Histogram,
    pub(crate) stop: CancellationToken,
    /// Whose each commit is.
    pub(crate) identify: Identify,
    /// `postgresql`, `mysql`: the `backend` label of the lag.
    backend: &'static str,
    pub(crate) positions: Positions,
    tasks: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
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

/// Reads the log's position around calls, per backend.
#[derive(Debug)]
pub(crate) enum Positions {
    Pg(postgres::Positions),
    My(Arc<mysql::Positions>),
}

impl Positions {
    pub(crate) async fn end(&self) -> Result<Lsn, String> {
        match self {
            Positions::Pg(p) => p.end().await.map_err(|e| e.to_string()),
            Positions::My(p) => p.now().await.map_err(|e| e.to_string()),
        }
    }
}

impl Shared {
    fn new(
        options: CaptureOptions,
        backend: &'static str,
        positions: Positions,
        start: Lsn,
    ) -> Arc<Shared> {
        let (decoded, _) = watch::channel(start);
        let identify = Identify::new(options.upstream.clone());
        let latency = MetricName::CaptureFindingLatency;
        let latency = prometheus::Histogram::with_opts(
            prometheus::HistogramOpts::new(latency.as_str(), latency.help())
                .const_label("backend", backend)
                .buckets(LATENCY_BUCKETS.to_vec()),
        )
        .expect("constant histogram options");
        Arc::new(Shared {
            ledger: std::sync::Mutex::new(Ledger::new(options.max_commits)),
            decoded,
            wake: Notify::new(),
            wanted: AtomicU64::new(start),
            options,
            lag: AtomicU64::new(0),
            reopened: AtomicU64::new(0),
            gaps: AtomicU64::new(0),
            late: AtomicU64::new(0),
            read_bytes: AtomicU64::new(0),
            ends: settle::Ends::new(start),
            pending: watch::channel(0).0,
            held: watch::channel(0).0,
            times: times::CommitTimes::default(),
            latency,
            stop: CancellationToken::new(),
            identify,
            backend,
            positions,
            tasks: std::sync::Mutex::default(),
        })
    }

    /// Runs `reader` (the backend's log reader), the position reader at calls' ends and the
    /// watch of read times, until the capture stops.
    fn spawn(self: &Arc<Shared>, reader: impl Future<Output = ()> + Send + 'static) {
        let times = self.clone();
        let watch_reads = async move {
            let mut decoded = times.decoded.subscribe();
            loop {
                tokio::select! {
                    () = times.stop.cancelled() => break,
                    changed = decoded.changed() => if changed.is_err() { break },
                }
                let through = *decoded.borrow_and_update();
                times
                    .times
                    .read_through(through, std::time::SystemTime::now());
            }
        };
        let mut tasks = lock(&self.tasks);
        tasks.push(tokio::spawn(reader));
        tasks.push(tokio::spawn(settle::read_ends(self.clone())));
        tasks.push(tokio::spawn(watch_reads));
    }

    /// Waits while the capture is held from reading ([`Capture::hold`]).
    pub(crate) async fn unheld(&self) {
        let mut held = self.held.subscribe();
        tokio::select! {
            () = self.stop.cancelled() => {}
            _ = held.wait_for(|n| *n == 0) => {}
        }
    }
}

/// Buckets of the commit-to-finding latency, in seconds: from a millisecond (the log read at
/// once) to 30 s (beyond the default `--capture-wait-ms`).
const LATENCY_BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

impl Shared {
    /// A position read from the database (a flush position) that calls wait for the capture
    /// to reach: wakes the slot reader only when it has not read that far yet.
    pub(crate) fn want(&self, lsn: Lsn) {
        if lsn > *self.decoded.borrow() {
            self.wanted.fetch_max(lsn, Ordering::AcqRel);
            self.wake.notify_one();
        }
    }

    /// The capture goes on from `to`, a later log position than it had read through (a new
    /// slot, a purged binary log file): the part between is a gap, counted, and the calls
    /// overlapping it are marked incomplete. Returns where the read had got to.
    pub(crate) fn skip_to(&self, to: Lsn) -> Lsn {
        let from = *self.decoded.borrow();
        self.gaps.fetch_add(1, Ordering::Relaxed);
        lock(&self.ledger).gap(from, to);
        self.decoded.send_modify(|d| *d = (*d).max(to));
        from
    }
}

impl Capture {
    /// Checks the database named by `url`, opens its log and starts reading it.
    ///
    /// # Errors
    /// [`CaptureError::Unsupported`] for SQLite and other backends, with what to use
    /// instead; [`CaptureError::Prerequisite`] when the settings rule it out (the message
    /// names the setting and how to change it); [`CaptureError::Database`] when the database
    /// cannot be reached.
    pub async fn start(url: &str, options: CaptureOptions) -> Result<Capture, CaptureError> {
        let kind = DatabaseKind::from_url(url)
            .map_err(|e| CaptureError::Unsupported(format!("--database: {e}")))?;
        match kind {
            DatabaseKind::Postgres => {
                let (positions, source) = postgres::open(url).await?;
                let start = source.start();
                let shared = Shared::new(options, "postgresql", Positions::Pg(positions), start);
                shared.spawn(postgres::run(source, shared.clone()));
                Ok(Capture { shared })
            }
            DatabaseKind::MySql => {
                let (positions, source) = mysql::open(url).await?;
                let positions = Arc::new(positions);
                let start = source.start();
                let shared = Shared::new(options, "mysql", Positions::My(positions.clone()), start);
                shared.spawn(mysql::run(source, shared.clone(), positions));
                Ok(Capture { shared })
            }
            DatabaseKind::Sqlite => Err(CaptureError::Unsupported(
                "SQLite has no log another process can read (its WAL is checkpointed away and \
                 holds pages, not rows): the proxy cannot see a SQLite server's writes. Check \
                 the server with `hintaudit verify --stdio \"…\" --database sqlite:FILE`, which \
                 snapshots the file around every call"
                    .into(),
            )),
        }
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
        let mut ledger = lock(&self.shared.ledger);
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
        self.shared.held.send_modify(|n| *n += 1);
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
            let Ok(end) = shared.positions.end().await else {
                return;
            };
            let mut decoded = shared.decoded.subscribe();
            shared.want(end);
            let _ = decoded.wait_for(|d| *d >= end).await;
        };
        tokio::select! {
            () = shared.stop.cancelled() => {}
            _ = tokio::time::timeout(shared.options.wait, caught_up) => {}
        }
    }

    /// The database system whose log it reads: `postgresql` or `mysql`.
    pub fn backend(&self) -> &'static str {
        self.shared.backend
    }

    /// What the capture has done so far.
    pub fn stats(&self) -> CaptureStats {
        let ledger = lock(&self.shared.ledger);
        CaptureStats {
            lag_bytes: self.shared.lag.load(Ordering::Relaxed),
            settled: Settled::ALL.map(|s| ledger.settled(s)),
            reopened: self.shared.reopened.load(Ordering::Relaxed),
            gaps: self.shared.gaps.load(Ordering::Relaxed),
            late: self.shared.late.load(Ordering::Relaxed),
            read_bytes: self.shared.read_bytes.load(Ordering::Relaxed),
            pending: *self.shared.pending.borrow(),
        }
    }

    /// `hintaudit_capture_commit_to_finding_seconds{backend}`: seconds from each commit
    /// judged for a call (its time in the log on PostgreSQL, when it was read on
    /// MySQL/MariaDB) to when the call's findings were recorded.
    pub fn latency(&self) -> &prometheus::Histogram {
        &self.shared.latency
    }

    /// Settles the calls still pending (each judged once the capture has read past its end,
    /// or at [`CaptureOptions::wait`] after it answered, late), then stops reading and closes
    /// the slot's session (PostgreSQL drops a temporary slot with its session; a crash drops
    /// it too).
    pub async fn shutdown(&self) {
        let mut pending = self.shared.pending.subscribe();
        let bound = self.shared.options.wait + Duration::from_secs(1);
        let settled = tokio::time::timeout(bound, pending.wait_for(|n| *n == 0))
            .await
            .is_ok();
        if !settled {
            let left = *self.shared.pending.borrow();
            capture_error("shutting down", &format_args!("{left} calls not judged"));
        }
        self.shared.stop.cancel();
        let tasks = std::mem::take(&mut *lock(&self.shared.tasks));
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
        self.shared.held.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.finished {
            lock(&self.shared.ledger).forget(self.id);
        }
    }
}

pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
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
