//! Change capture from the database's own log, and attribution of each commit to the calls
//! in flight by the log's positions ([design: the proxy's evidence](../../../../docs/design.md#the-proxys-evidence)).
//!
//! [`Capture::start`] checks the database can be read this way (a clear [`CaptureError`]
//! when it cannot), opens the log (PostgreSQL: a temporary logical replication slot) and
//! reads it on a task of its own, always, whether or not calls are in flight, so the
//! database never keeps log for it. Around each tool call the proxy asks
//! [`Capture::begin`] (reads the log position before the call goes upstream) and
//! [`Capture::finish`] (reads it again after the answer, waits until the capture has read
//! that far, and returns the call's [`CallShare`]). Each commit names its writer
//! (PostgreSQL: a trigger's message, see postgres/install.rs; MariaDB: a trigger's row, see
//! mysql/install.rs), matched to the proxy's upstream connections by identify.rs, so that a
//! commit is only ever a candidate of the calls on the connection that wrote it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hintaudit_core::DatabaseKind;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

mod commit;
mod identify;
mod images;
pub mod ledger;
mod mysql;
mod postgres;
pub mod writer;

pub use postgres::decode;

pub use ledger::{CallShare, Commit, Ledger, Lsn, Settled};
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
    /// How long a call's answer waits for the capture to read past its end, at most.
    pub wait: Duration,
    /// Commits kept waiting for their calls, at most (then the oldest is dropped, counted).
    pub max_commits: usize,
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
    pub(crate) wake: Notify,
    pub(crate) options: CaptureOptions,
    /// Bytes of log the database keeps for the slot (its lag), as last read.
    pub(crate) lag: AtomicU64,
    /// Times the capture lost its slot or stream and opened a new one.
    pub(crate) reopened: AtomicU64,
    /// Times it went on from a later position than it had read through (a new slot, a
    /// purged binary log file).
    pub(crate) gaps: AtomicU64,
    /// Calls whose answer went back before the capture had read past their end.
    pub(crate) late: AtomicU64,
    /// Bytes of log read through (the decoding cost).
    pub(crate) read_bytes: AtomicU64,
    pub(crate) stop: CancellationToken,
    /// Whose each commit is.
    pub(crate) identify: Identify,
    /// `postgresql`, `mysql`: the `backend` label of the lag.
    backend: &'static str,
    positions: Positions,
    task: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
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
}

/// Reads the log's position around calls, per backend.
#[derive(Debug)]
enum Positions {
    Pg(postgres::Positions),
    My(Arc<mysql::Positions>),
}

impl Positions {
    async fn start(&self) -> Result<Lsn, String> {
        match self {
            Positions::Pg(p) => p.start().await.map_err(|e| e.to_string()),
            Positions::My(p) => p.now().await.map_err(|e| e.to_string()),
        }
    }

    async fn end(&self) -> Result<Lsn, String> {
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
        Arc::new(Shared {
            ledger: std::sync::Mutex::new(Ledger::new(options.max_commits)),
            decoded,
            wake: Notify::new(),
            options,
            lag: AtomicU64::new(0),
            reopened: AtomicU64::new(0),
            gaps: AtomicU64::new(0),
            late: AtomicU64::new(0),
            read_bytes: AtomicU64::new(0),
            stop: CancellationToken::new(),
            identify,
            backend,
            positions,
            task: std::sync::Mutex::new(None),
        })
    }
}

impl Shared {
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
                let task = tokio::spawn(postgres::run(source, shared.clone()));
                *lock(&shared.task) = Some(task);
                Ok(Capture { shared })
            }
            DatabaseKind::MySql => {
                let (positions, source) = mysql::open(url).await?;
                let positions = Arc::new(positions);
                let start = source.start();
                let shared = Shared::new(options, "mysql", Positions::My(positions.clone()), start);
                let task = tokio::spawn(mysql::run(source, shared.clone(), positions));
                *lock(&shared.task) = Some(task);
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

    /// A call of `tool` begins on upstream connection `link`: registers it, then reads the
    /// log position. Returns the call's ticket for [`Capture::finish`]; a ticket dropped
    /// unfinished (the call's future was dropped) takes the call out of every later
    /// candidate set.
    pub async fn begin(&self, tool: Arc<str>, link: UpstreamLink) -> Ticket {
        self.shared.identify.child(link.connection, link.child);
        let id = lock(&self.shared.ledger).begin(tool, link.connection);
        let ticket = Ticket {
            id,
            shared: self.shared.clone(),
            finished: false,
        };
        // Bounded, so that a database that cannot be reached (restarting) delays the call by
        // at most this before it goes upstream.
        match tokio::time::timeout(START_READ_LIMIT, self.shared.positions.start()).await {
            Ok(Ok(lsn)) => lock(&self.shared.ledger).started(id, lsn),
            // The start stays unknown: the call is a candidate of every commit until it
            // ends, so it can widen a set, never take a commit that is not its.
            Ok(Err(e)) => capture_error("reading the log position at a call's start", &e),
            Err(_) => capture_error(
                "reading the log position at a call's start",
                &"no answer within 1 s",
            ),
        }
        ticket
    }

    /// The call answered: reads the log position, waits (at most [`CaptureOptions::wait`])
    /// until the capture has read that far, and settles the call's share of the log.
    pub async fn finish(&self, mut ticket: Ticket) -> CallShare {
        ticket.finished = true;
        let id = ticket.id;
        let end = match self.end_within_wait().await {
            Ok(lsn) => lsn,
            Err(e) => {
                capture_error("reading the log position at a call's end", &e);
                lock(&self.shared.ledger).forget(id);
                return CallShare {
                    gap: true,
                    ..CallShare::default()
                };
            }
        };
        lock(&self.shared.ledger).ended(id, end);
        let mut decoded = self.shared.decoded.subscribe();
        self.shared.wake.notify_one();
        let caught_up = tokio::time::timeout(
            self.shared.options.wait,
            decoded.wait_for(|through| *through >= end),
        )
        .await
        .is_ok_and(|r| r.is_ok());
        if caught_up {
            lock(&self.shared.ledger).judge(id)
        } else {
            self.shared.late.fetch_add(1, Ordering::Relaxed);
            lock(&self.shared.ledger).judge_late(id)
        }
    }

    /// The log position at a call's end, read again every 100 ms while the database cannot
    /// be asked (it is restarting), for at most [`CaptureOptions::wait`]: a later read only
    /// widens the call's interval, never drops a commit from it. The last error after that.
    async fn end_within_wait(&self) -> Result<Lsn, String> {
        let deadline = tokio::time::Instant::now() + self.shared.options.wait;
        loop {
            let read = tokio::time::timeout_at(deadline, self.shared.positions.end()).await;
            match read {
                Ok(Ok(lsn)) => return Ok(lsn),
                Ok(Err(e)) if tokio::time::Instant::now() < deadline => {
                    tracing::debug!(target: "hintaudit::proxy", "capture: a call's end: {e}");
                }
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err("the database did not answer in time".into()),
            }
            tokio::select! {
                () = self.shared.stop.cancelled() => return Err("the capture stopped".into()),
                () = tokio::time::sleep_until(deadline) => {
                    return Err("the database could not be asked in time".into())
                }
                () = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
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
        }
    }

    /// Stops reading and closes the slot's session (PostgreSQL drops a temporary slot with
    /// its session; a crash drops it too).
    pub async fn shutdown(&self) {
        self.shared.stop.cancel();
        let task = lock(&self.shared.task).take();
        if let Some(task) = task {
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

/// How long a call waits, at most, for the log position at its start before it goes
/// upstream with its start unknown (a candidate of every commit until it ends).
const START_READ_LIMIT: Duration = Duration::from_secs(1);

/// A call registered with the capture ([`Capture::begin`]).
#[derive(Debug)]
pub struct Ticket {
    id: u64,
    shared: Arc<Shared>,
    finished: bool,
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
