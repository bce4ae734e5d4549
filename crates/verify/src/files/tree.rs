//! The watched trees, their snapshots and the content store behind them.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use hintaudit_core::files::{IgnoredPaths, relative, root_labels};
use walkdir::WalkDir;

/// How close to a snapshot's start a file's mtime makes it racily clean, in nanoseconds:
/// a later write in the same clock tick could leave size, mtime and ctime as they were, so
/// such a file is read again by the next snapshot whatever its stat says (git's rule, with a
/// margin for coarse file system clocks).
const RACY_NS: i128 = 2_000_000_000;

/// What a path is, with what a diff compares (hintaudit-core's, which the proxy shares).
pub(crate) use hintaudit_core::files::NodeKind as Kind;

/// The stat fields that say a file may have changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    ino: u64,
    dev: u64,
}

impl Stat {
    fn of(meta: &fs::Metadata) -> Stat {
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        Stat {
            size: meta.len(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
            ino: meta.ino(),
            dev: meta.dev(),
        }
    }
}

/// One path of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// What it is.
    pub kind: Kind,
    /// Its permission bits (`st_mode & 0o7777`).
    pub mode: u32,
    stat: Stat,
    /// Its mtime was within [`RACY_NS`] of the snapshot's start: read it again next time.
    racy: bool,
}

/// Every watched tree at one moment: per root (in `--watch` order), each path relative to
/// the root (`/`-separated, the root itself left out) and what it was.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TreeSnapshot {
    pub roots: Vec<BTreeMap<String, Entry>>,
}

/// Counters of the snapshots taken so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TreeStats {
    /// Snapshots taken.
    pub snapshots: u64,
    /// Paths walked (stat read), over all snapshots.
    pub paths: u64,
    /// Files whose content was read and hashed (stat moved, racily clean, or new).
    pub files_read: u64,
}

/// The watched roots, the `ignored_paths` globs and the content store.
#[derive(Debug)]
pub(crate) struct Trees {
    roots: Vec<PathBuf>,
    labels: Vec<String>,
    ignored: IgnoredPaths,
    store: tempfile::TempDir,
    stored: HashSet<u128>,
    stats: TreeStats,
}

impl Trees {
    /// The trees under `roots` (each must be a directory), ignoring paths that match one of
    /// `ignored` (globs against the path relative to its root: `*` stays within one
    /// component, `**` crosses them; a path under a matched directory is ignored too).
    /// Errors: a root that is not a directory, a bad glob, no temporary directory.
    pub fn new(roots: &[PathBuf], ignored: &[String]) -> Result<Trees, String> {
        let mut canonical = Vec::with_capacity(roots.len());
        for r in roots {
            let c = fs::canonicalize(r).map_err(|e| format!("--watch {}: {e}", r.display()))?;
            if !c.is_dir() {
                return Err(format!("--watch {}: not a directory", r.display()));
            }
            canonical.push(c);
        }
        let ignored = IgnoredPaths::new(ignored)?;
        let labels = root_labels(&canonical);
        let store = tempfile::Builder::new()
            .prefix("hintaudit-files-")
            .tempdir()
            .map_err(|e| format!("the content store's temporary directory: {e}"))?;
        Ok(Trees {
            roots: canonical,
            labels,
            ignored,
            store,
            stored: HashSet::new(),
            stats: TreeStats::default(),
        })
    }

    /// The roots, canonical (absolute, no symbolic links), in `--watch` order.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// How findings name `path` of root `root`: the path alone with one root; prefixed with
    /// the root's last component (`notes/a.txt`) with several.
    pub fn shown(&self, root: usize, path: &str) -> String {
        hintaudit_core::files::shown(&self.labels, root, path)
    }

    /// Whether `path` (relative to its root) is bookkeeping: it, or a directory above it,
    /// matches an `ignored_paths` glob, or every name inside it would (`cache/**` covers
    /// the directory `cache` too).
    pub fn is_ignored(&self, path: &str) -> bool {
        self.ignored.is_ignored(path)
    }

    /// The snapshot counters so far.
    #[cfg(test)]
    pub fn stats(&self) -> TreeStats {
        self.stats
    }

    /// Snapshots every root. `previous` (the last snapshot) lets a file whose stat did not
    /// move, and that was not racily clean, keep its hash unread. Fifos, sockets and devices
    /// are left out. Errors: a root or a path that cannot be read (a path that vanishes
    /// during the walk is left out).
    pub fn take(&mut self, previous: Option<&TreeSnapshot>) -> io::Result<TreeSnapshot> {
        let start = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        let mut roots = Vec::with_capacity(self.roots.len());
        for i in 0..self.roots.len() {
            let prev = previous.and_then(|p| p.roots.get(i));
            roots.push(self.take_root(i, prev, start)?);
        }
        self.stats.snapshots += 1;
        Ok(TreeSnapshot { roots })
    }

    fn take_root(
        &mut self,
        i: usize,
        prev: Option<&BTreeMap<String, Entry>>,
        start: i128,
    ) -> io::Result<BTreeMap<String, Entry>> {
        let root = self.roots[i].clone();
        let mut out = BTreeMap::new();
        for item in WalkDir::new(&root).min_depth(1).follow_links(false) {
            let item = match item {
                Ok(item) => item,
                Err(e) if vanished(&e) => continue,
                Err(e) => return Err(e.into()),
            };
            let rel = relative(&root, item.path());
            let meta = match item.path().symlink_metadata() {
                Ok(m) => m,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            self.stats.paths += 1;
            let stat = Stat::of(&meta);
            let kept = prev
                .and_then(|p| p.get(&rel))
                .filter(|e| e.stat == stat && !e.racy && !meta.is_dir());
            let kind = match kept {
                Some(e) => e.kind,
                None => match self.read_kind(item.path(), &meta) {
                    Ok(Some(kind)) => kind,
                    Ok(None) => continue,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(e),
                },
            };
            let racy = stat.mtime_ns >= start - RACY_NS;
            let mode = meta.mode() & 0o7777;
            out.insert(
                rel,
                Entry {
                    kind,
                    mode,
                    stat,
                    racy,
                },
            );
        }
        Ok(out)
    }

    /// Reads what `path` is now, keeping its content in the store; `None` for what is not
    /// a file, a directory or a symbolic link.
    fn read_kind(&mut self, path: &Path, meta: &fs::Metadata) -> io::Result<Option<Kind>> {
        let t = meta.file_type();
        if t.is_dir() {
            return Ok(Some(Kind::Dir));
        }
        let bytes = if t.is_file() {
            fs::read(path)?
        } else if t.is_symlink() {
            fs::read_link(path)?.into_os_string().into_encoded_bytes()
        } else {
            return Ok(None);
        };
        self.stats.files_read += 1;
        let hash = self.keep(&bytes)?;
        Ok(Some(if t.is_file() {
            Kind::File {
                size: bytes.len() as u64,
                hash,
            }
        } else {
            Kind::Symlink { hash }
        }))
    }

    /// Keeps `bytes` in the store (once per content) and returns their hash.
    fn keep(&mut self, bytes: &[u8]) -> io::Result<u128> {
        let hash = xxhash_rust::xxh3::xxh3_128(bytes);
        if self.stored.insert(hash) {
            fs::write(self.object(hash), bytes)?;
        }
        Ok(hash)
    }

    /// The store's file for a content hash.
    pub(super) fn object(&self, hash: u128) -> PathBuf {
        self.store.path().join(format!("{hash:032x}"))
    }

    /// A content the store holds, by hash.
    pub(super) fn content(&self, hash: u128) -> io::Result<Vec<u8>> {
        fs::read(self.object(hash))
    }
}

/// Whether a walk error is a path that disappeared between listing and reading it.
fn vanished(e: &walkdir::Error) -> bool {
    e.io_error()
        .is_some_and(|io| io.kind() == io::ErrorKind::NotFound)
        && e.depth() > 0
}
