//! What the watcher knows of each watched path: its kind and mode, and for a file the
//! [`Fingerprint`] of the content last seen, taken at start-up and brought up to date as
//! changes are settled; and the judgement of a set of paths against the disk.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use hintaudit_core::files::{
    ChangeKind, Fingerprint, IgnoredPaths, Node, NodeKind, PathsDiff, diff_paths, relative,
};
use walkdir::WalkDir;

/// One watched path as last seen.
#[derive(Debug, Clone)]
struct Tracked {
    node: Node,
    /// A file's content as far as judging a rewrite needs it.
    fingerprint: Option<Fingerprint>,
}

/// A path's state read from the disk now: its node, and a file's content.
type Read = Option<(Node, Option<Vec<u8>>)>;

/// The watched roots and every path under them outside `ignored_paths`.
#[derive(Debug)]
pub(super) struct Table {
    roots: Vec<PathBuf>,
    ignored: IgnoredPaths,
    paths: Vec<BTreeMap<String, Tracked>>,
}

impl Table {
    /// The table of `roots` (canonical directories), empty until [`Table::load`].
    pub fn new(roots: Vec<PathBuf>, ignored: IgnoredPaths) -> Table {
        let paths = vec![BTreeMap::new(); roots.len()];
        Table {
            roots,
            ignored,
            paths,
        }
    }

    /// The root directories.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Whether `rel` is bookkeeping.
    pub fn is_ignored(&self, rel: &str) -> bool {
        self.ignored.is_ignored(rel)
    }

    /// The absolute path of `rel` under root `root`.
    pub fn absolute(&self, root: usize, rel: &str) -> PathBuf {
        if rel.is_empty() {
            self.roots[root].clone()
        } else {
            self.roots[root].join(rel)
        }
    }

    /// Every directory at or under `rel` of root `root` outside `ignored_paths` (`rel`
    /// first), walked on the disk now.
    pub fn dirs_under(&self, root: usize, rel: &str) -> Vec<String> {
        self.walk(root, rel)
            .into_iter()
            .filter(|(_, is_dir)| *is_dir)
            .map(|(p, _)| p)
            .collect()
    }

    /// Every path at or under `rel` of root `root` outside `ignored_paths`, walked on the
    /// disk now, with whether it is a directory (symbolic links not followed).
    pub fn walk(&self, root: usize, rel: &str) -> Vec<(String, bool)> {
        let base = self.absolute(root, rel);
        let mut out = Vec::new();
        let walk = WalkDir::new(&base).follow_links(false).into_iter();
        let root_dir = &self.roots[root];
        for item in walk.filter_entry(|e| !self.ignored.is_ignored(&relative(root_dir, e.path()))) {
            let Ok(item) = item else { continue };
            out.push((relative(root_dir, item.path()), item.file_type().is_dir()));
        }
        out
    }

    /// Reads every path of every root: the start-up fingerprints. Errors: a root that
    /// cannot be read.
    pub fn load(&mut self) -> io::Result<usize> {
        let mut n = 0;
        for root in 0..self.roots.len() {
            fs::read_dir(&self.roots[root])?;
            for (rel, _) in self.walk(root, "") {
                if rel.is_empty() {
                    continue;
                }
                if let Some((node, content)) = read(&self.absolute(root, &rel))? {
                    let fingerprint = content.as_deref().map(Fingerprint::of);
                    self.paths[root].insert(rel, Tracked { node, fingerprint });
                    n += 1;
                }
            }
        }
        Ok(n)
    }

    /// Judges `dirty` paths of root `root` (relative; with every path known under one of
    /// them) against the disk now, and keeps what it read as their new state. Paths that
    /// cannot be read are taken as gone.
    pub fn settle(&mut self, root: usize, dirty: &BTreeSet<String>) -> PathsDiff {
        let known = &self.paths[root];
        let mut paths: BTreeSet<String> = BTreeSet::new();
        for d in dirty {
            paths.insert(d.clone());
            let under = format!("{d}/");
            paths.extend(
                known
                    .range(under.clone()..)
                    .take_while(|(p, _)| p.starts_with(&under))
                    .map(|(p, _)| p.clone()),
            );
        }
        let mut now: HashMap<String, Read> = HashMap::new();
        for p in &paths {
            now.insert(p.clone(), read(&self.absolute(root, p)).unwrap_or(None));
        }
        let known = &self.paths[root];
        let d = diff_paths(
            paths.iter().map(|p| {
                let old = known.get(p).map(|t| t.node);
                let new = now.get(p).and_then(|r| r.as_ref().map(|(n, _)| *n));
                (p.as_str(), old, new)
            }),
            |p, _, _| {
                let fp = known.get(p).and_then(|t| t.fingerprint.as_ref());
                let new = now
                    .get(p)
                    .and_then(|r| r.as_ref())
                    .and_then(|(_, c)| c.as_deref());
                match (fp, new) {
                    (Some(fp), Some(new)) => fp.change_to(new).unwrap_or(ChangeKind::LinesKept),
                    _ => ChangeKind::Overwritten,
                }
            },
            |p| self.ignored.is_ignored(p),
        );
        let table = &mut self.paths[root];
        for (p, r) in now {
            match r {
                Some((node, content)) => {
                    let fingerprint = content.as_deref().map(Fingerprint::of);
                    table.insert(p, Tracked { node, fingerprint });
                }
                None => {
                    table.remove(&p);
                }
            }
        }
        d
    }

    /// Every path of root `root` known or on the disk now (outside `ignored_paths`).
    pub fn all_paths(&self, root: usize) -> BTreeSet<String> {
        let mut all: BTreeSet<String> = self.paths[root].keys().cloned().collect();
        all.extend(self.walk(root, "").into_iter().map(|(p, _)| p));
        all.remove("");
        all
    }

    /// Paths known, over every root.
    pub fn len(&self) -> usize {
        self.paths.iter().map(BTreeMap::len).sum()
    }
}

/// What `path` is now, with a file's content (a link's target text is hashed); `None` for
/// a path that is gone or is not a file, a directory or a link.
fn read(path: &Path) -> io::Result<Read> {
    let meta = match path.symlink_metadata() {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mode = meta.mode() & 0o7777;
    let t = meta.file_type();
    let (kind, content) = if t.is_dir() {
        (NodeKind::Dir, None)
    } else if t.is_symlink() {
        let target = fs::read_link(path)?.into_os_string().into_encoded_bytes();
        let hash = xxhash_rust::xxh3::xxh3_128(&target);
        (NodeKind::Symlink { hash }, None)
    } else if t.is_file() {
        let bytes = match fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let kind = NodeKind::File {
            size: bytes.len() as u64,
            hash: xxhash_rust::xxh3::xxh3_128(&bytes),
        };
        (kind, Some(bytes))
    } else {
        return Ok(None);
    };
    Ok(Some((Node { kind, mode }, content)))
}
