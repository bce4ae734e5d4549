//! One log source per kind of database ([`LogSource`]): how the capture opens a database's
//! log, reads the log's end position for calls' ends, and runs the reader loop that feeds
//! commits in ([`Feed`]). `Capture::start` matches [`DatabaseKind`] once and opens the
//! kind's source; a kind without one is refused there.
//!
//! Today: PostgreSQL's temporary logical slot read through the SQL interface (postgres/),
//! MySQL/MariaDB's binary log stream (mysql/), SQLite's WAL followed from the proxy's process
//! (sqlite/). A new reader (PostgreSQL's streaming replication protocol) is one more
//! implementation: it opens, says
//! where its log ends, and feeds what it reads; attribution, settling and the counters are
//! the capture's.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use hintaudit_core::DatabaseKind;

use crate::capture::feed::Feed;
use crate::capture::{CaptureError, Lsn};

/// Why reading a log, or its end position, failed (the capture goes on: counted once per
/// outage, see trouble.rs).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum LogError {
    /// PostgreSQL refused a query or lost the connection.
    #[error("{what}: {source}")]
    Postgres {
        /// What was being done.
        what: &'static str,
        /// The driver's error.
        source: sqlx::Error,
    },
    /// MySQL/MariaDB refused a query, or the connection or the stream was lost.
    #[error("{what}: {source}")]
    MySql {
        /// What was being done.
        what: &'static str,
        /// The driver's error.
        source: mysql_async::Error,
    },
    /// SQLite's WAL or database file could not be read, or the follower's connection failed.
    #[error("{what}: {source}")]
    Sqlite {
        /// What was being done.
        what: &'static str,
        /// The follower's error.
        source: hintaudit_sqlite_log::FollowError,
    },
    /// The database answered a position the capture cannot read.
    #[error("{what}: unreadable log position {text:?}")]
    Position {
        /// What was being done.
        what: &'static str,
        /// The database's answer.
        text: String,
    },
    /// The log's stream ended without an error.
    #[error("the {0} ended")]
    Ended(&'static str),
    /// No answer within the time allowed.
    #[error("{what}: no answer within {limit:?}")]
    Timeout {
        /// What was being done.
        what: &'static str,
        /// The time allowed.
        limit: Duration,
    },
}

/// A database kind's log, as the capture reads it. Opened once by `Capture::start`; the
/// source is then shared by the position reader at calls' ends ([`LogSource::end`]) and its
/// own reader loop ([`LogSource::read`]), which owns [`LogSource::Reader`].
pub(crate) trait LogSource: Send + Sync + Sized + 'static {
    /// The database kind whose log this reads: its `backend` label and `db.system.name`.
    const KIND: DatabaseKind;

    /// What the reader loop owns: its session or stream and where it reads from.
    type Reader: Send + 'static;

    /// Connects to the database `url` names, checks it can be read this way and opens its
    /// log at its end now.
    ///
    /// # Errors
    /// [`CaptureError::Prerequisite`] when the database's settings or the role's rights rule
    /// it out (the message names them), [`CaptureError::Database`] or
    /// [`CaptureError::Unsupported`] when it cannot be reached or the URL is unusable.
    fn open(url: &str) -> impl Future<Output = Result<Opened<Self>, CaptureError>> + Send;

    /// The end of the log now, one query: every commit that returned to its client before
    /// this was asked ends at or before it.
    fn end(&self) -> impl Future<Output = Result<Lsn, LogError>> + Send;

    /// Reads the log from where it was opened until the capture stops, feeding `feed`
    /// every commit, how far it has read, the lag and any gap; makes the log again when it
    /// is lost, trying again on a [`Retry`](crate::capture::trouble::Retry)'s backoff, and returns
    /// only when the capture stops.
    fn read(self: Arc<Self>, reader: Self::Reader, feed: Feed) -> impl Future<Output = ()> + Send;
}

/// A log just opened: its source, the reader loop's part, and the position it starts at.
pub(crate) struct Opened<S: LogSource> {
    /// The source, shared with the position reader.
    pub(crate) source: S,
    /// What the reader loop owns.
    pub(crate) reader: S::Reader,
    /// The log's position when it was opened: nothing before it is read.
    pub(crate) start: Lsn,
}

/// A boxed future of a log position.
pub(crate) type EndFuture<'a> = Pin<Box<dyn Future<Output = Result<Lsn, LogError>> + Send + 'a>>;

/// A [`LogSource`] as the capture holds it, whatever its kind: its kind and its end
/// position.
pub(crate) trait LogEnd: Send + Sync + std::fmt::Debug {
    /// The database kind.
    fn kind(&self) -> DatabaseKind;
    /// [`LogSource::end`].
    fn end(&self) -> EndFuture<'_>;
}

impl<S: LogSource + std::fmt::Debug> LogEnd for S {
    fn kind(&self) -> DatabaseKind {
        S::KIND
    }

    fn end(&self) -> EndFuture<'_> {
        Box::pin(LogSource::end(self))
    }
}
