//! `hintaudit proxy --watch DIR`: the server's file writes, seen live through inotify and
//! judged on content by the same rules as `hintaudit verify --watch`
//! (`hintaudit_core::files`), into the call's effects
//! ([design: file effects](../../../../docs/design.md#file-effects)).
//!
//! - At start-up every path under each watched directory (outside `ignored_paths`) is read
//!   once: a [`Fingerprint`](hintaudit_core::files::Fingerprint) per file (size, xxh3-128,
//!   per-line hashes up to 1 MiB), and an inotify watch per directory.
//! - A call's boundaries are marked in the same event stream: [`FileWatch::begin`] creates
//!   `b-ID` and [`FileWatch::finish`] `e-ID` in a private directory (outside the watched
//!   trees) that the same inotify instance watches, so the kernel queues them in order with
//!   the server's own writes; no clock decides.
//! - A path touched while calls are in flight is dirty, with those calls as its candidates.
//!   At a call's end marker, the paths it is a candidate of are read from the disk and
//!   judged against their fingerprints (renames paired, `ignored_paths` bookkeeping): a
//!   path whose candidates are calls of one tool is the ending call's; of several tools,
//!   ambiguous (logged, not recorded). A path touched with no call in flight is brought up
//!   to date, no call's. Ambiguous and unattributed changes (and those of a call no longer
//!   waiting for its share) are told to the judge given to [`FileWatch::disturb`]: written
//!   elsewhere, they disturb the repeats of the calls that touch those paths.
//! - New directories get a watch (and what was made in them before it is dirty too).
//! - A gap: a queue overflow (`IN_Q_OVERFLOW`), or a watched root removed (its watch gone:
//!   `IN_IGNORED`), which the events under it made again after are lost to. Counted
//!   (`hintaudit_capture_gaps_total{backend="files"}`); every call in flight, and every call
//!   that begins while a root is gone, is marked incomplete; the trees are read again (a
//!   root gone is watched again once it is back, at the latest when the next call begins).
//! - A call whose end marker is not read within the start-up `wait` is pending. Nothing
//!   waits for a share but the call's judgement ([`FileSettling`], run by the proxy's
//!   observers: files/observe.rs); shares are recorded, and changes given to no call told
//!   to the judge, in the order the calls answered (turns.rs).

// Only the watcher reads the table past `load`: unused elsewhere.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
mod table;
// inotify is Linux's: elsewhere `FileWatch::start` refuses `--watch` before a watcher would
// be made, and the watcher is a stub that cannot start.
#[cfg_attr(not(target_os = "linux"), path = "watcher_elsewhere.rs")]
mod watcher;

mod observe;
#[cfg(all(test, target_os = "linux"))]
mod tests;
mod turns;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hintaudit_core::files::{FileChange, IgnoredPaths};
use hintaudit_core::{Judge, StateKey};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use table::Table;
use turns::Turns;

/// What `--watch` found for one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileShare {
    /// The call's changes (paths relative to their root, prefixed with the root's label
    /// when several are watched).
    pub changes: Vec<FileChange>,
    /// Changes made while calls of several tools were in flight, with those tools: not
    /// attributed.
    pub ambiguous: Vec<(FileChange, Vec<Arc<str>>)>,
    /// Paths under `ignored_paths` that changed during the call.
    pub bookkeeping: usize,
    /// The watch lost events during the call (a queue overflow, a watched root removed):
    /// its evidence is incomplete.
    pub gap: bool,
    /// The watcher had not read the call's end marker in time (the start-up `wait`), or it
    /// could not be made: the share is empty and the call's evidence pending.
    pub late: bool,
}

/// What the watch has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileWatchStats {
    /// Paths known (files, directories and links outside `ignored_paths`).
    pub paths: u64,
    /// Calls answered whose share is not recorded yet.
    pub pending: u64,
    /// inotify queue overflows and watched roots removed: events lost.
    pub gaps: u64,
    /// Changes attributed to a call.
    pub attributed: u64,
    /// Changes while calls of several tools were in flight.
    pub ambiguous: u64,
    /// Changes while no call was in flight.
    pub unattributed: u64,
}

/// The running watch. Clones share it.
#[derive(Debug, Clone)]
pub struct FileWatch {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    /// The private directory of call markers.
    markers: tempfile::TempDir,
    next: AtomicU64,
    /// Calls begun and not settled: their tool, and where their share goes.
    calls: parking_lot::Mutex<HashMap<u64, Call>>,
    gaps: AtomicU64,
    paths: AtomicU64,
    attributed: AtomicU64,
    ambiguous: AtomicU64,
    unattributed: AtomicU64,
    /// How long a call's share waits, at most, for its end marker to be read.
    wait: Duration,
    /// Calls' answer numbers: the order their shares, and writes elsewhere, are recorded in.
    turns: Turns,
    /// Told of the changes no call is judged with ([`FileWatch::disturb`]).
    judge: std::sync::OnceLock<Arc<Judge>>,
    stop: CancellationToken,
    task: parking_lot::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

#[derive(Debug)]
// Read by the watcher alone: never on systems other than Linux.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
struct Call {
    tool: Arc<str>,
    /// Its answer number, once it answered ([`FileWatch::finish`]).
    number: Option<u64>,
    done: Option<oneshot::Sender<FileShare>>,
}

/// A call registered with the watch ([`FileWatch::begin`]).
#[derive(Debug)]
pub struct FileTicket {
    id: u64,
    done: Option<oneshot::Receiver<FileShare>>,
    shared: Arc<Shared>,
}

impl FileWatch {
    /// Reads every path under `roots` (directories) outside `ignored` globs, watches every
    /// directory, and starts reading events; a call's share is waited for at most `wait`
    /// after it answered. Errors: a root that is not a readable directory, a bad glob,
    /// inotify not available (or out of watches: `fs.inotify.max_user_watches`), a system
    /// other than Linux (no inotify: not on this platform).
    pub fn start(
        roots: &[PathBuf],
        ignored: &[String],
        wait: Duration,
    ) -> anyhow::Result<FileWatch> {
        anyhow::ensure!(
            cfg!(target_os = "linux"),
            "--watch: not on this platform: the proxy sees file writes live through Linux's \
             inotify (`hintaudit verify --watch` compares snapshots and runs anywhere)"
        );
        let mut canonical = Vec::with_capacity(roots.len());
        for r in roots {
            let c = std::fs::canonicalize(r)
                .map_err(|e| anyhow::anyhow!("--watch {}: {e}", r.display()))?;
            anyhow::ensure!(c.is_dir(), "--watch {}: not a directory", r.display());
            canonical.push(c);
        }
        let ignored = IgnoredPaths::new(ignored).map_err(anyhow::Error::msg)?;
        let markers = tempfile::Builder::new()
            .prefix("hintaudit-proxy-calls-")
            .tempdir()?;
        let mut table = Table::new(canonical, ignored);
        let known = table.load()?;
        let shared = Arc::new(Shared {
            markers,
            next: AtomicU64::new(1),
            calls: parking_lot::Mutex::default(),
            gaps: AtomicU64::new(0),
            paths: AtomicU64::new(known as u64),
            attributed: AtomicU64::new(0),
            ambiguous: AtomicU64::new(0),
            unattributed: AtomicU64::new(0),
            wait,
            turns: Turns::new(),
            judge: std::sync::OnceLock::new(),
            stop: CancellationToken::new(),
            task: parking_lot::Mutex::new(None),
        });
        let watcher = watcher::Watcher::new(table, shared.clone()).map_err(|e| {
            anyhow::anyhow!(
                "--watch: inotify: {e} (out of watches? see fs.inotify.max_user_watches)"
            )
        })?;
        let task = tokio::spawn(watcher.run());
        *shared.task.lock() = Some(task);
        Ok(FileWatch { shared })
    }

    /// A call of `tool` begins: marks it in the event stream (before the call goes
    /// upstream). A marker that cannot be made is an audit error and the call's share late.
    pub fn begin(&self, tool: Arc<str>) -> FileTicket {
        let id = self.shared.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.shared.calls.lock().insert(
            id,
            Call {
                tool,
                number: None,
                done: Some(tx),
            },
        );
        if let Err(e) = self.shared.mark('b', id) {
            watch_error("marking a call's start", &e);
        }
        FileTicket {
            id,
            done: Some(rx),
            shared: self.shared.clone(),
        }
    }

    /// The call answered: marks its end and returns at once with its share on its way
    /// ([`FileSettling::share`]). The call is pending until that is dropped.
    pub fn finish(&self, mut ticket: FileTicket) -> FileSettling {
        let id = ticket.id;
        let number = self.shared.turns.answered();
        if let Some(call) = self.shared.calls.lock().get_mut(&id) {
            call.number = Some(number);
        }
        if let Err(e) = self.shared.mark('e', id) {
            watch_error("marking a call's end", &e);
        }
        FileSettling {
            id,
            number,
            done: ticket.done.take(),
            share: None,
            deadline: tokio::time::Instant::now() + self.shared.wait,
            shared: self.shared.clone(),
        }
    }

    /// Tells `judge` of every change the watch gives to no judged call from now on
    /// (ambiguous, unattributed, or a call's that no longer waits for its share), so that
    /// it disturbs the repeats of the calls touching those paths
    /// ([`Judge::written_elsewhere`]). Only the first judge given is told.
    pub fn disturb(&self, judge: Arc<Judge>) {
        let _ = self.shared.judge.set(judge);
    }

    /// What the watch has done so far.
    pub fn stats(&self) -> FileWatchStats {
        let s = &self.shared;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        FileWatchStats {
            paths: get(&s.paths),
            pending: s.turns.pending(),
            gaps: get(&s.gaps),
            attributed: get(&s.attributed),
            ambiguous: get(&s.ambiguous),
            unattributed: get(&s.unattributed),
        }
    }

    /// Settles the calls still pending (each within the start-up `wait` after it
    /// answered), then stops reading events.
    pub async fn shutdown(&self) {
        let _ = tokio::time::timeout(self.shared.wait, self.shared.turns.idle()).await;
        self.shared.stop.cancel();
        let task = self.shared.task.lock().take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

impl Drop for FileTicket {
    fn drop(&mut self) {
        // A call whose future was dropped: its end is marked so that the watcher settles
        // its paths (to nobody: the receiver is gone).
        if self.done.is_some() {
            let _ = self.shared.mark('e', self.id);
            self.shared.unmark(self.id);
        }
    }
}

/// A call's share of the watched trees on its way ([`FileWatch::finish`]).
#[derive(Debug)]
pub struct FileSettling {
    id: u64,
    number: u64,
    done: Option<oneshot::Receiver<FileShare>>,
    share: Option<FileShare>,
    deadline: tokio::time::Instant,
    shared: Arc<Shared>,
}

impl FileSettling {
    /// The call's share, once the watcher has read its end marker (at most the start-up
    /// `wait` after it answered: then empty and `late`) and the calls that answered before
    /// it are recorded (waited for within the same bound). Awaiting it again gives the same
    /// share.
    pub async fn share(&mut self) -> FileShare {
        if let Some(rx) = self.done.take() {
            let share = tokio::time::timeout_at(self.deadline, rx).await;
            self.shared.unmark(self.id);
            self.share = Some(match share {
                Ok(Ok(share)) => share,
                _ => {
                    self.shared.calls.lock().remove(&self.id);
                    watch_error("settling a call", &"its end marker was not read in time");
                    late()
                }
            });
            self.shared.turns.before(self.number, self.deadline).await;
        }
        self.share.clone().unwrap_or_else(late)
    }
}

impl Drop for FileSettling {
    fn drop(&mut self) {
        if self.done.take().is_some() {
            // Never awaited: the watcher tells its changes as written elsewhere.
            self.shared.calls.lock().remove(&self.id);
            self.shared.unmark(self.id);
        }
        let tell = self.shared.turns.done(self.number);
        self.shared.tell_judge(&tell);
    }
}

impl Shared {
    /// Tells the judge, once every call that ended before is recorded, that `changes` were
    /// written by no judged call.
    // Called by the watcher alone: never on systems other than Linux.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    fn written_elsewhere<'c>(&self, changes: impl IntoIterator<Item = &'c FileChange>) {
        if self.judge.get().is_none() {
            return;
        }
        let changes: Vec<FileChange> = changes.into_iter().cloned().collect();
        if changes.is_empty() {
            return;
        }
        if let Some(now) = self.turns.elsewhere(changes) {
            self.tell_judge(&now);
        }
    }

    /// Tells the judge, when one was given, that `changes` were written by no judged call.
    fn tell_judge(&self, changes: &[FileChange]) {
        let Some(judge) = self.judge.get() else {
            return;
        };
        let keys: Vec<StateKey<'_>> = changes.iter().flat_map(StateKey::of_file_change).collect();
        if !keys.is_empty() {
            judge.written_elsewhere(&keys);
        }
    }

    /// Creates the marker `b-ID` or `e-ID`.
    fn mark(&self, which: char, id: u64) -> std::io::Result<()> {
        std::fs::File::create(self.markers.path().join(format!("{which}-{id}"))).map(drop)
    }

    /// Removes a call's markers (their removal is no event the watcher reads).
    fn unmark(&self, id: u64) {
        for which in ['b', 'e'] {
            let _ = std::fs::remove_file(self.markers.path().join(format!("{which}-{id}")));
        }
    }
}

fn late() -> FileShare {
    FileShare {
        late: true,
        ..FileShare::default()
    }
}

/// Counts a watch failure in `hintaudit_audit_errors_total{stage="oracle"}` and logs it:
/// the call goes on.
fn watch_error(what: &str, e: &dyn std::fmt::Display) {
    hintaudit_core::stats().audit_error(
        hintaudit_core::AuditStage::Oracle,
        &format_args!("file watch: {what}: {e}"),
    );
    tracing::warn!(target: "hintaudit::proxy", "file watch: {what}: {e}");
}
