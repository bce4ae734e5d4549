//! [`SharedHistory`]: the idempotency history the replicas of a fleet share on a Redis or
//! Valkey server ([design: the fleet's history](../../../../docs/design.md#the-fleets-history)).
//!
//! - this file: the handle the layer holds, and how a request runs: off the call's path, on
//!   a task of its own, bounded in number and time, its failure counted and answered by this
//!   process's own history;
//! - store.rs: the keys, the scripts and their answers;
//! - call.lua, hints.lua: the scripts, each one round trip.

mod store;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hintaudit_core::{
    ArgsHasher, ArgsKey, AuditStage, DeclaredHints, SharedAnswer, SharedCall,
    SharedHistorySettings, stats,
};
use serde_json::{Map, Value};
use tokio::sync::Semaphore;

use store::{DEFAULT_PREFIX, Store};

/// Most requests to the store in flight at once; past it, a call's repeat is judged by this
/// process's history at once and the overflow counted (`stage="history"`).
pub const MAX_IN_FLIGHT: usize = 1024;

/// How long a request to the store may take, connecting included, before the repeat is
/// judged by this process's history and the failure counted.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// After a failed request, how long requests are not sent at all (their repeats judged by this
/// process's history at once, and counted as failures): a store that is down costs one
/// attempt a second, not a connection attempt per call.
pub const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The environment variable naming this replica in the shared history (the evidence of a
/// repeat names the replica of the previous call); else `HOSTNAME` (a Kubernetes pod's name,
/// a compose container's id), else `pid-<process id>`.
pub const REPLICA_ENV: &str = "HINTAUDIT_REPLICA";

/// A fleet's shared idempotency history on a Redis or Valkey server: a cheap handle (an
/// `Arc`), shared by every handler a [`HintAuditLayer`](crate::HintAuditLayer) makes.
///
/// With it, the layer sends each call that may repeat (one that wrote a table, or of a tool
/// declared idempotent and not read-only) to the store after the call answered, on a task of
/// its own: one round trip, never on the call's path. The store answers with the previous
/// identical call anywhere in the fleet; the judge settles the repeat with that answer and the
/// recorder gets any `idempotency_broken` as [`AuditEvent::Settled`](crate::AuditEvent). A
/// store that is down, slow or refusing changes no call: the repeat is judged by this
/// process's own history, the failure is counted in
/// `hintaudit_audit_errors_total{stage="history"}` (logged at WARN the first time), requests
/// pause for [`RETRY_AFTER`] (judged by this process's history at once, and counted), and the
/// next request after that tries again (the connection reconnects by itself).
///
/// ```no_run
/// use hintaudit_rmcp::{HintAuditLayer, SharedHistory};
/// use hintaudit_core::Config;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let config = Config::default()
///     .with_history_url("redis://127.0.0.1:6379/0")
///     .with_history_secret("the same 16+ character secret on every replica");
/// let settings = config.shared_history()?.expect("history_url is set");
/// let layer = HintAuditLayer::new().with_shared_history(SharedHistory::open(&settings)?);
/// # let _ = layer; Ok(()) }
/// ```
#[derive(Clone)]
pub struct SharedHistory {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    hasher: ArgsHasher,
    replica: String,
    slots: Arc<Semaphore>,
    timeout: Duration,
    /// Whether the last request failed: the next success logs that sharing resumed.
    failing: AtomicBool,
    /// Until when requests are not sent (milliseconds since `started`; 0: send).
    paused_until: AtomicU64,
    started: Instant,
}

impl Inner {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// The store's URL could not be read (`redis::Client::open`'s error, as text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedHistoryError(String);

impl fmt::Display for SharedHistoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "history_url: {}", self.0)
    }
}

impl std::error::Error for SharedHistoryError {}

impl SharedHistory {
    /// The shared history `settings` describe, as this replica ([`REPLICA_ENV`]). Connects on
    /// first use, not here.
    ///
    /// # Errors
    /// A URL the Redis client cannot read (bad host, bad database number, TLS without
    /// support): [`SharedHistoryError`].
    pub fn open(settings: &SharedHistorySettings) -> Result<Self, SharedHistoryError> {
        SharedHistory::open_as(settings, &default_replica(), DEFAULT_PREFIX)
    }

    /// [`SharedHistory::open`], naming this replica `replica` and prefixing every key with
    /// `prefix` (default `{hintaudit}`: two fleets on one server need their own prefixes or
    /// database numbers).
    ///
    /// # Errors
    /// As [`SharedHistory::open`].
    pub fn open_as(
        settings: &SharedHistorySettings,
        replica: &str,
        prefix: &str,
    ) -> Result<Self, SharedHistoryError> {
        let store = Store::open(settings, prefix, replica)
            .map_err(|e| SharedHistoryError(e.to_string()))?;
        Ok(SharedHistory {
            inner: Arc::new(Inner {
                store,
                hasher: ArgsHasher::from_secret(settings.secret.expose()),
                replica: replica.to_owned(),
                slots: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
                timeout: DEFAULT_TIMEOUT,
                failing: AtomicBool::new(false),
                paused_until: AtomicU64::new(0),
                started: Instant::now(),
            }),
        })
    }

    /// This replica's name in the store.
    pub fn replica(&self) -> &str {
        &self.inner.replica
    }

    /// The key of a tools/call `arguments` object under the fleet's shared secret: equal on
    /// every replica for equal arguments.
    pub fn args_key(&self, arguments: Option<&Map<String, Value>>) -> ArgsKey {
        self.inner.hasher.key_of_object(arguments)
    }

    /// Waits until every request sent so far has been answered (or failed) and settled: for
    /// tests, and for a clean shutdown.
    pub async fn flush(&self) {
        let all = u32::try_from(MAX_IN_FLIGHT).unwrap_or(u32::MAX);
        if let Ok(permits) = self.inner.slots.acquire_many(all).await {
            drop(permits);
        }
    }

    /// Sends a finished call to the store and hands `settle` the answer, or `None` when the
    /// store failed, timed out or too many requests are in flight (counted at stage
    /// `history`). `settle` runs on another task, after the call answered; without a Tokio
    /// runtime it runs at once, with `None`.
    pub(crate) fn submit_call(
        &self,
        call: SharedCall,
        settle: impl FnOnce(Option<SharedAnswer>) + Send + 'static,
    ) {
        let inner = self.inner.clone();
        self.spawn(async move { inner.store.record_call(&call).await }, settle);
    }

    /// Sends the hints of a tools/list answer to the store and hands `settle`, per tool, the
    /// hints the fleet served before when these are new, or `None` when the store failed.
    pub(crate) fn submit_hints(
        &self,
        tools: Vec<(String, DeclaredHints)>,
        settle: impl FnOnce(Option<Vec<Option<DeclaredHints>>>) + Send + 'static,
    ) {
        let inner = self.inner.clone();
        self.spawn(
            async move { inner.store.record_hints(&tools).await },
            settle,
        );
    }

    /// Puts a tool's correction (4 letters) in force fleet-wide for `lasts` (the history's
    /// TTL when `None`), on a task of its own; `settle` gets the letters in force after it,
    /// or `None` when the store failed.
    pub(crate) fn submit_correction(
        &self,
        tool: String,
        letters: String,
        lasts: Option<Duration>,
        settle: impl FnOnce(Option<String>) + Send + 'static,
    ) {
        let inner = self.inner.clone();
        self.spawn(
            async move { inner.store.put_correction(&tool, &letters, lasts).await },
            settle,
        );
    }

    /// Lifts a tool's correction fleet-wide, on a task of its own.
    pub(crate) fn submit_lift(&self, tool: String) {
        let inner = self.inner.clone();
        self.spawn(
            async move { inner.store.lift_correction(&tool).await },
            |_| {},
        );
    }

    /// Every correction in force in the fleet, (tool, 4 letters), awaited within the
    /// timeout; `None` when the store failed (counted at stage `history`).
    pub(crate) async fn corrections(&self) -> Option<Vec<(String, String)>> {
        if self.inner.now_ms() < self.inner.paused_until.load(Ordering::Relaxed) {
            return None;
        }
        let inner = self.inner.clone();
        answer(&self.inner, async move { inner.store.corrections().await }).await
    }

    /// Runs `request` on a task of its own, bounded by [`MAX_IN_FLIGHT`] and the timeout,
    /// and hands `settle` its answer or `None`.
    fn spawn<T: Send + 'static>(
        &self,
        request: impl Future<Output = redis::RedisResult<T>> + Send + 'static,
        settle: impl FnOnce(Option<T>) + Send + 'static,
    ) {
        if self.inner.now_ms() < self.inner.paused_until.load(Ordering::Relaxed) {
            // Counted, but not a new failure: the pause is not extended.
            count(&"the store failed less than a second ago");
            return settle(None);
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            failed(&self.inner, &"no Tokio runtime to reach the store from");
            return settle(None);
        };
        let Ok(slot) = self.inner.slots.clone().try_acquire_owned() else {
            failed(
                &self.inner,
                &format!("more than {MAX_IN_FLIGHT} requests in flight"),
            );
            return settle(None);
        };
        let inner = self.inner.clone();
        runtime.spawn(async move {
            settle(answer(&inner, request).await);
            drop(slot);
        });
    }
}

impl fmt::Debug for SharedHistory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedHistory")
            .field("replica", &self.inner.replica)
            .finish_non_exhaustive()
    }
}

/// `request`'s answer within the timeout, or `None` with the failure counted (and requests
/// paused).
async fn answer<T>(
    inner: &Inner,
    request: impl Future<Output = redis::RedisResult<T>>,
) -> Option<T> {
    match tokio::time::timeout(inner.timeout, request).await {
        Ok(Ok(answer)) => {
            inner.paused_until.store(0, Ordering::Relaxed);
            if inner.failing.swap(false, Ordering::Relaxed) {
                tracing::info!("hintaudit: the shared history answers again");
            }
            Some(answer)
        }
        Ok(Err(e)) => {
            failed(inner, &e);
            None
        }
        Err(_) => {
            failed(inner, &format!("no answer within {:?}", inner.timeout));
            None
        }
    }
}

/// Counts a failed request at stage `history` (the first logged at WARN), and pauses
/// requests for [`RETRY_AFTER`].
fn failed(inner: &Inner, what: &dyn fmt::Display) {
    inner.failing.store(true, Ordering::Relaxed);
    let until = inner
        .now_ms()
        .saturating_add(RETRY_AFTER.as_millis() as u64);
    inner.paused_until.fetch_max(until, Ordering::Relaxed);
    count(what);
}

/// Counts a request that went without the store at stage `history` (the first logged at
/// WARN): a repeat judged by this process's history, corrections served as it knows them.
fn count(what: &dyn fmt::Display) {
    stats().audit_error(
        AuditStage::History,
        &format_args!(
            "shared history: {what}; repeats are judged by this process's history (and \
             corrections served as this process knows them)"
        ),
    );
}

/// [`REPLICA_ENV`], else `HOSTNAME`, else `pid-<process id>`.
fn default_replica() -> String {
    [REPLICA_ENV, "HOSTNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| format!("pid-{}", std::process::id()))
}
