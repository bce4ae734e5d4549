//! The task that reads the inotify events of the watched trees and of the call markers, in
//! the kernel's order, and settles each call's paths at its end marker.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures_util::StreamExt;
use hintaudit_core::files::{ChangeKind, FileChange, root_labels, shown};
use inotify::{Event, EventMask, EventStream, Inotify, WatchDescriptor, WatchMask, Watches};

use super::table::Table;
use super::{FileShare, Shared, watch_error};

/// A call in flight, as the event stream has shown it so far.
#[derive(Debug)]
struct Open {
    id: u64,
    tool: Arc<str>,
    /// Events were lost while it was in flight.
    gap: bool,
}

/// The calls in flight when a path was touched: (call, tool).
type Candidates = Vec<(u64, Arc<str>)>;

/// The watcher's state: the table, the watches, the calls in flight and the dirty paths.
pub(super) struct Watcher {
    table: Table,
    labels: Vec<String>,
    shared: Arc<Shared>,
    stream: EventStream<Vec<u8>>,
    watches: Watches,
    /// Each watched directory: its root and path relative to it.
    dirs: HashMap<WatchDescriptor, (usize, String)>,
    markers: WatchDescriptor,
    open: Vec<Open>,
    dirty: BTreeMap<(usize, String), Candidates>,
    /// Roots whose watch is gone (removed, or read again after an overflow) until they are
    /// watched again.
    lost: BTreeSet<usize>,
}

/// What is watched in the trees: every change of content, mode or name.
fn tree_mask() -> WatchMask {
    WatchMask::CREATE
        | WatchMask::MODIFY
        | WatchMask::CLOSE_WRITE
        | WatchMask::ATTRIB
        | WatchMask::DELETE
        | WatchMask::MOVED_FROM
        | WatchMask::MOVED_TO
        | WatchMask::DONT_FOLLOW
        | WatchMask::EXCL_UNLINK
        | WatchMask::ONLYDIR
}

impl Watcher {
    /// Watches the markers' directory and every directory of `table`'s trees. Errors:
    /// inotify not available, or a directory that cannot be watched (out of watches).
    pub fn new(table: Table, shared: Arc<Shared>) -> std::io::Result<Watcher> {
        let inotify = Inotify::init()?;
        let stream = inotify.into_event_stream(vec![0u8; 64 * 1024])?;
        let mut watches = stream.watches();
        let markers = watches.add(shared.markers.path(), WatchMask::CREATE)?;
        let labels = root_labels(table.roots());
        let mut w = Watcher {
            table,
            labels,
            shared,
            stream,
            watches,
            dirs: HashMap::new(),
            markers,
            open: Vec::new(),
            dirty: BTreeMap::new(),
            lost: BTreeSet::new(),
        };
        for root in 0..w.table.roots().len() {
            w.watch_dirs(root, "")?;
        }
        Ok(w)
    }

    /// Adds a watch to every directory at or under `rel` (again for one watched already:
    /// its path is brought up to date, as after a move).
    fn watch_dirs(&mut self, root: usize, rel: &str) -> std::io::Result<()> {
        for dir in self.table.dirs_under(root, rel) {
            let wd = self
                .watches
                .add(self.table.absolute(root, &dir), tree_mask())?;
            self.dirs.insert(wd, (root, dir));
        }
        Ok(())
    }

    /// Reads events until the watch is stopped.
    pub async fn run(mut self) {
        let stop = self.shared.stop.clone();
        loop {
            let event = tokio::select! {
                () = stop.cancelled() => return,
                e = self.stream.next() => e,
            };
            match event {
                Some(Ok(e)) => self.on_event(e),
                Some(Err(e)) => {
                    watch_error("reading events", &e);
                    return;
                }
                None => return,
            }
        }
    }

    fn on_event(&mut self, e: Event<OsString>) {
        if e.mask.contains(EventMask::Q_OVERFLOW) {
            self.overflow();
            return;
        }
        let name = e.name.as_ref().map(|n| n.to_string_lossy().into_owned());
        if e.wd == self.markers {
            if let Some(n) = name {
                self.marker(&n, false);
            }
            return;
        }
        if e.mask.contains(EventMask::IGNORED) {
            if let Some((root, dir)) = self.dirs.remove(&e.wd)
                && dir.is_empty()
            {
                self.root_lost(root);
            }
            return;
        }
        let (Some((root, dir)), Some(name)) = (self.dirs.get(&e.wd).cloned(), name) else {
            return;
        };
        let rel = if dir.is_empty() {
            name
        } else {
            format!("{dir}/{name}")
        };
        if e.mask.contains(EventMask::ISDIR)
            && e.mask.intersects(EventMask::CREATE | EventMask::MOVED_TO)
            && !self.table.is_ignored(&rel)
        {
            // What was made in it before its watch was added is seen by the walk.
            if let Err(err) = self.watch_dirs(root, &rel) {
                watch_error("watching a new directory", &err);
            }
            for (p, _) in self.table.walk(root, &rel) {
                self.touch(root, p);
            }
            return;
        }
        self.touch(root, rel);
    }

    /// A call marker: `b-ID` opens the call, `e-ID` settles it.
    fn marker(&mut self, name: &str, gap: bool) {
        let Some((which, id)) = name
            .split_once('-')
            .and_then(|(w, id)| Some((w, id.parse::<u64>().ok()?)))
        else {
            return;
        };
        match which {
            "b" if !self.open.iter().any(|o| o.id == id) => {
                let tool = self.shared.calls.lock().get(&id).map(|c| c.tool.clone());
                if let Some(tool) = tool {
                    // A root gone: what was written in it meanwhile may become this call's.
                    let gap = gap || !self.lost.is_empty();
                    self.open.push(Open { id, tool, gap });
                    self.watch_lost();
                }
            }
            "e" => self.settle(id, gap),
            _ => {}
        }
    }

    /// A path was touched: dirty with the calls in flight, or, with none, brought up to
    /// date as no call's (a write elsewhere: it still disturbs repeats).
    fn touch(&mut self, root: usize, rel: String) {
        if self.open.is_empty() {
            let d = self.table.settle(root, &BTreeSet::from([rel]));
            let n = d.changes.len() as u64;
            self.shared.unattributed.fetch_add(n, Ordering::Relaxed);
            let changes: Vec<FileChange> = d
                .changes
                .into_iter()
                .map(|(path, kind)| self.shown_change(root, &path, kind))
                .collect();
            self.shared.written_elsewhere(&changes);
            return;
        }
        let c = self.dirty.entry((root, rel)).or_default();
        for o in &self.open {
            if !c.iter().any(|(id, _)| *id == o.id) {
                c.push((o.id, o.tool.clone()));
            }
        }
    }

    /// Call `id` ended: judges the paths it is a candidate of and sends its share.
    fn settle(&mut self, id: u64, gap: bool) {
        let open = self.open.iter().position(|o| o.id == id);
        let mut share = FileShare {
            gap: gap || open.is_none_or(|i| self.open[i].gap),
            ..FileShare::default()
        };
        if let Some(i) = open {
            self.open.remove(i);
        }
        let mine: Vec<((usize, String), Candidates)> = {
            let keys: Vec<(usize, String)> = self
                .dirty
                .iter()
                .filter(|(_, c)| c.iter().any(|(c, _)| *c == id))
                .map(|(k, _)| k.clone())
                .collect();
            keys.into_iter()
                .filter_map(|k| self.dirty.remove_entry(&k))
                .collect()
        };
        for root in 0..self.table.roots().len() {
            let paths: BTreeMap<&str, &Candidates> = mine
                .iter()
                .filter(|((r, _), _)| *r == root)
                .map(|((_, p), c)| (p.as_str(), c))
                .collect();
            if paths.is_empty() {
                continue;
            }
            let set: BTreeSet<String> = paths.keys().map(|p| (*p).to_owned()).collect();
            let d = self.table.settle(root, &set);
            share.bookkeeping += d.bookkeeping;
            for (path, kind) in d.changes {
                let tools = candidate_tools(&paths, &path);
                let change = self.shown_change(root, &path, kind);
                if tools.len() == 1 {
                    share.changes.push(change);
                } else {
                    share.ambiguous.push((change, tools));
                }
            }
        }
        let s = &self.shared;
        s.attributed
            .fetch_add(share.changes.len() as u64, Ordering::Relaxed);
        s.ambiguous
            .fetch_add(share.ambiguous.len() as u64, Ordering::Relaxed);
        s.paths.store(self.table.len() as u64, Ordering::Relaxed);
        // Ambiguous changes are no call's: they disturb repeats all the same.
        s.written_elsewhere(share.ambiguous.iter().map(|(c, _)| c));
        let done = s.calls.lock().remove(&id).and_then(|c| c.done);
        let unsent = match done {
            Some(done) => done.send(share).err(),
            None => Some(share),
        };
        // A call no longer waiting for its share (dropped, or past its wait) is not judged
        // with it: its changes were written elsewhere too.
        if let Some(share) = unsent {
            s.written_elsewhere(&share.changes);
        }
    }

    /// A change of `path` under root `root` as findings show it (with the root's label when
    /// several are watched).
    fn shown_change(&self, root: usize, path: &str, kind: ChangeKind) -> FileChange {
        FileChange {
            path: shown(&self.labels, root, path),
            kind: match kind {
                ChangeKind::RenamedTo(to) => ChangeKind::RenamedTo(shown(&self.labels, root, &to)),
                k => k,
            },
        }
    }

    /// Events were lost (`what`): counted as a gap; every call in flight is marked
    /// incomplete.
    fn gap(&mut self, what: &str) {
        self.shared.gaps.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            target: "hintaudit::proxy",
            "file watch: {what} (events lost): a gap; the calls in flight have incomplete \
             evidence"
        );
        for o in &mut self.open {
            o.gap = true;
        }
    }

    /// A watched root was removed (its watch is gone): a gap, and it is watched again as
    /// soon as it is back.
    fn root_lost(&mut self, root: usize) {
        self.gap(&format!(
            "the watched directory {} was removed",
            self.table.absolute(root, "").display()
        ));
        self.lost.insert(root);
        self.watch_lost();
    }

    /// Watches again every root whose watch is gone and that is a directory now, and brings
    /// its paths up to date from the disk (a change made meanwhile is the calls in flight's,
    /// or no call's). A root still missing stays lost.
    fn watch_lost(&mut self) {
        let lost: Vec<usize> = self.lost.iter().copied().collect();
        for root in lost {
            if !self.table.absolute(root, "").is_dir() {
                continue;
            }
            if let Err(e) = self.watch_dirs(root, "") {
                watch_error("watching a root again", &e);
                continue;
            }
            self.lost.remove(&root);
            for p in self.table.all_paths(root) {
                self.touch(root, p);
            }
        }
    }

    /// The kernel's queue overflowed: a gap; the watches and the table are brought up to
    /// date from the disk; markers missed are read from their directory.
    fn overflow(&mut self) {
        self.gap("the inotify queue overflowed");
        self.lost.extend(0..self.table.roots().len());
        self.watch_lost();
        let mut names: Vec<String> = std::fs::read_dir(self.shared.markers.path())
            .map(|d| {
                d.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        // Every start before any end.
        names.sort();
        for n in names {
            self.marker(&n, true);
        }
    }
}

/// The tools of the calls `path` (or the dirty directory above it) was touched during.
fn candidate_tools(paths: &BTreeMap<&str, &Candidates>, path: &str) -> Vec<Arc<str>> {
    let mut at = Some(path);
    while let Some(p) = at {
        if let Some(c) = paths.get(p) {
            let mut tools: Vec<Arc<str>> = c.iter().map(|(_, t)| t.clone()).collect();
            tools.sort();
            tools.dedup();
            return tools;
        }
        at = p.rsplit_once('/').map(|(parent, _)| parent);
    }
    Vec::new()
}
