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
//! - A call whose end marker is not read within the start-up `wait` is pending.

// Only the watcher reads the table past `load`: unused elsewhere.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
mod table;
// inotify is Linux's: elsewhere `FileWatch::start` refuses `--watch` before a watcher would
// be made, and the watcher is a stub that cannot start.
#[cfg_attr(not(target_os = "linux"), path = "watcher_elsewhere.rs")]
mod watcher;

#[cfg(all(test, target_os = "linux"))]
mod tests;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hintaudit_core::files::{FileChange, IgnoredPaths};
use hintaudit_core::{CallScope, EvidenceSource, Judge, StateKey};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use table::Table;

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
    /// How long a call's answer waits, at most, for its end marker to be read.
    wait: Duration,
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
    /// directory, and starts reading events; a call's answer waits at most `wait` for its
    /// share. Errors: a root that is not a readable directory, a bad glob, inotify not
    /// available (or out of watches: `fs.inotify.max_user_watches`), a system other than
    /// Linux (no inotify: not on this platform).
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

    /// The call answered: marks its end and waits (at most the start-up `wait`) for the
    /// watcher to read that far and settle the call's share.
    pub async fn finish(&self, mut ticket: FileTicket) -> FileShare {
        let id = ticket.id;
        let rx = ticket.done.take();
        if let Err(e) = self.shared.mark('e', id) {
            watch_error("marking a call's end", &e);
        }
        let share = match rx {
            Some(rx) => tokio::time::timeout(self.shared.wait, rx).await,
            None => return late(),
        };
        self.shared.unmark(id);
        match share {
            Ok(Ok(share)) => share,
            _ => {
                self.shared.calls.lock().remove(&id);
                watch_error("settling a call", &"its end marker was not read in time");
                late()
            }
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
            gaps: get(&s.gaps),
            attributed: get(&s.attributed),
            ambiguous: get(&s.ambiguous),
            unattributed: get(&s.unattributed),
        }
    }

    /// Stops reading events.
    pub async fn shutdown(&self) {
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

impl Shared {
    /// Tells the judge, when one was given, that `changes` were written by no judged call.
    // Called by the watcher alone: never on systems other than Linux.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    fn written_elsewhere<'c>(&self, changes: impl IntoIterator<Item = &'c FileChange>) {
        let Some(judge) = self.judge.get() else {
            return;
        };
        let keys: Vec<StateKey<'_>> = changes
            .into_iter()
            .flat_map(StateKey::of_file_change)
            .collect();
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

/// Puts a call's share into its scope: its changes as file effects; a gap makes its evidence
/// incomplete, a late share pending (source `files`); ambiguous changes and gaps are logged
/// with the tool, never recorded as this call's.
pub(crate) fn record(share: &FileShare) {
    let Some(scope) = CallScope::current() else {
        return;
    };
    let effects = scope.effects();
    for c in &share.changes {
        effects.record_file(c.clone());
    }
    for (change, tools) in &share.ambiguous {
        tracing::info!(
            target: "hintaudit::proxy",
            tool = effects.tool(),
            candidates = ?tools,
            path = %change.path,
            change = change.kind.as_str(),
            "a file change while calls of several tools were in flight: not attributed"
        );
    }
    if share.late {
        effects.mark_pending(EvidenceSource::Files);
    }
    if share.gap {
        effects.mark_incomplete(EvidenceSource::Files);
        tracing::warn!(
            target: "hintaudit::proxy",
            tool = effects.tool(),
            "the file watch lost events during this call: its evidence is incomplete"
        );
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
