//! git repositories read with gix: found by content, their facts (HEAD, refs, index,
//! object ids) for hintaudit-core's judgement, an oracle for the state after a call, and
//! the values a tool's arguments can be drawn from.

use std::cell::OnceCell;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use hintaudit_core::files::{Head, IndexEntry, ObjectId, RepoFacts, RepoOracle};

use crate::error::StateError;

/// How many commits a reachability walk visits before it stops (a commit past it is taken
/// as unreachable: the cautious reading, destructive).
pub const COMMITS_WALKED: usize = 200_000;

/// How many of the newest reachable commits have their trees read to find blobs in
/// history (a blob only older commits hold is taken as lost: the cautious reading).
pub const COMMITS_WITH_TREES: usize = 1_000;

/// A git repository found inside a watched tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoLocation {
    /// Its git directory (`…/.git`, or a bare repository's own directory).
    pub git_dir: PathBuf,
    /// Its work tree (the `.git` directory's parent); `None` for a bare repository.
    pub work_tree: Option<PathBuf>,
}

/// Whether `dir` is a git directory by its content: a `HEAD` file and `objects/` and
/// `refs/` directories.
pub fn is_git_dir(dir: &Path) -> bool {
    dir.join("HEAD").is_file() && dir.join("objects").is_dir() && dir.join("refs").is_dir()
}

/// The git repositories under `root` (itself included), found by content: a directory
/// named `.git` is a work tree's, any other is bare. A git directory is not searched for
/// more; symbolic links are not followed. Unreadable directories are skipped.
pub fn find_repositories(root: &Path) -> Vec<RepoLocation> {
    let mut out = Vec::new();
    let mut walk = walkdir::WalkDir::new(root).follow_links(false).into_iter();
    while let Some(entry) = walk.next() {
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_dir() || !is_git_dir(entry.path()) {
            continue;
        }
        let git_dir = entry.path().to_path_buf();
        let work_tree = (entry.file_name() == ".git")
            .then(|| git_dir.parent().map(Path::to_path_buf))
            .flatten();
        out.push(RepoLocation { git_dir, work_tree });
        walk.skip_current_dir();
    }
    out
}

/// The blob id git gives `content` in a SHA-1 repository: what `git hash-object` prints.
pub fn blob_id(content: &[u8]) -> Option<ObjectId> {
    blob_id_of(gix::hash::Kind::Sha1, content)
}

fn blob_id_of(kind: gix::hash::Kind, content: &[u8]) -> Option<ObjectId> {
    let id = gix::objs::compute_hash(kind, gix::objs::Kind::Blob, content).ok()?;
    ObjectId::from_bytes(id.as_bytes())
}

/// One repository, opened read-only with no configuration but its own (gix's isolated
/// options: no user or system config, no environment).
pub struct Repository {
    repo: gix::Repository,
    location: RepoLocation,
}

impl std::fmt::Debug for Repository {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repository")
            .field("location", &self.location)
            .finish()
    }
}

impl Repository {
    /// Opens the repository at `location` as it is now (open again to read a later state).
    /// Errors: not a repository gix can open.
    pub fn open(location: &RepoLocation) -> Result<Repository, StateError> {
        let options = gix::open::Options::isolated();
        let repo = gix::open_opts(&location.git_dir, options)
            .map_err(|e| StateError::git("opening", &location.git_dir, e))?;
        Ok(Repository {
            repo,
            location: location.clone(),
        })
    }

    /// Where it is.
    pub fn location(&self) -> &RepoLocation {
        &self.location
    }

    fn err(&self, what: &'static str, e: impl std::fmt::Display) -> StateError {
        StateError::git(what, &self.location.git_dir, e)
    }

    /// HEAD, every ref (loose and packed; a symbolic ref by the object it resolves to),
    /// the index entries and every object id. Errors: a ref, the index or the object store
    /// that cannot be read.
    pub fn facts(&self) -> Result<RepoFacts, StateError> {
        Ok(RepoFacts {
            head: self.head()?,
            refs: self.refs()?,
            index: self.index()?,
            objects: self.objects()?,
        })
    }

    fn head(&self) -> Result<Option<Head>, StateError> {
        let head = self.repo.head().map_err(|e| self.err("reading HEAD", e))?;
        Ok(Some(match head.kind {
            gix::head::Kind::Symbolic(r) => Head::Branch(r.name.as_bstr().to_string()),
            gix::head::Kind::Unborn(name) => Head::Branch(name.as_bstr().to_string()),
            gix::head::Kind::Detached { target, .. } => match id(&target) {
                Some(target) => Head::Detached(target),
                None => return Ok(None),
            },
        }))
    }

    fn refs(&self) -> Result<std::collections::BTreeMap<String, ObjectId>, StateError> {
        let platform = self
            .repo
            .references()
            .map_err(|e| self.err("listing refs", e))?;
        let mut out = std::collections::BTreeMap::new();
        for r in platform.all().map_err(|e| self.err("listing refs", e))? {
            let mut r = r.map_err(|e| self.err("reading a ref", e))?;
            let name = r.name().as_bstr().to_string();
            let target = match r.target().try_id() {
                Some(t) => t.to_owned(),
                None => match r.follow_to_object() {
                    Ok(t) => t.detach(),
                    Err(_) => continue, // A symbolic ref to nothing: no commit to keep.
                },
            };
            if let Some(target) = id(&target) {
                out.insert(name, target);
            }
        }
        Ok(out)
    }

    fn index(&self) -> Result<std::collections::BTreeMap<(String, u8), IndexEntry>, StateError> {
        let index = self
            .repo
            .index_or_empty()
            .map_err(|e| self.err("reading the index", e))?;
        Ok(index
            .entries()
            .iter()
            .filter_map(|e| {
                let path = e.path(&index).to_string();
                let stage = u8::try_from(e.stage_raw()).unwrap_or(0);
                let entry = IndexEntry {
                    id: id(&e.id)?,
                    mode: e.mode.bits(),
                };
                Some(((path, stage), entry))
            })
            .collect())
    }

    fn objects(&self) -> Result<Vec<ObjectId>, StateError> {
        let all = self
            .repo
            .objects
            .iter()
            .map_err(|e| self.err("listing objects", e))?;
        let mut out: Vec<ObjectId> = all.filter_map(|o| id(&o.ok()?)).collect();
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    /// The newest `n` commits reachable from HEAD, as full hex ids, newest first (none on
    /// an unborn branch).
    pub fn head_commits(&self, n: usize) -> Vec<String> {
        let Ok(head) = self.repo.head_id() else {
            return Vec::new();
        };
        let walk = match self.repo.rev_walk([head.detach()]).all() {
            Ok(w) => w,
            Err(_) => return Vec::new(),
        };
        walk.take(n)
            .filter_map(Result::ok)
            .map(|info| info.id.to_string())
            .collect()
    }

    /// The oracle of this state (the state after a call): reachability from its refs and
    /// HEAD, blobs in history, the work tree's files. Walks lazily, on the first question.
    pub fn oracle(&self) -> Result<Oracle<'_>, StateError> {
        let facts = self.facts()?;
        let mut tips: Vec<gix::ObjectId> = facts.refs.values().filter_map(to_gix).collect();
        if let Some(Head::Detached(h)) = &facts.head {
            tips.extend(to_gix(h));
        }
        Ok(Oracle {
            repo: self,
            tips,
            reachable: OnceCell::new(),
            blobs: OnceCell::new(),
        })
    }
}

/// Answers about a repository's state after a call ([`RepoOracle`]).
pub struct Oracle<'r> {
    repo: &'r Repository,
    tips: Vec<gix::ObjectId>,
    reachable: OnceCell<Vec<gix::ObjectId>>,
    blobs: OnceCell<HashSet<gix::ObjectId>>,
}

impl Oracle<'_> {
    /// Every commit reachable from the tips, newest first (at most [`COMMITS_WALKED`]).
    fn commits(&self) -> &[gix::ObjectId] {
        self.reachable
            .get_or_init(|| walk(&self.repo.repo, self.tips.clone()))
    }

    /// The blobs in the trees of the newest [`COMMITS_WITH_TREES`] reachable commits.
    fn blobs(&self) -> &HashSet<gix::ObjectId> {
        self.blobs.get_or_init(|| {
            let mut blobs = HashSet::new();
            let mut trees = HashSet::new();
            for c in self.commits().iter().take(COMMITS_WITH_TREES) {
                let Ok(commit) = self.repo.repo.find_commit(*c) else {
                    continue;
                };
                if let Ok(tree) = commit.tree_id() {
                    collect_blobs(&self.repo.repo, tree.detach(), &mut trees, &mut blobs);
                }
            }
            blobs
        })
    }
}

/// The commits reachable from `tips` (tags peeled), at most [`COMMITS_WALKED`].
fn walk(repo: &gix::Repository, tips: Vec<gix::ObjectId>) -> Vec<gix::ObjectId> {
    let commits: Vec<gix::ObjectId> = tips
        .into_iter()
        .filter_map(|t| {
            let object = repo.find_object(t).ok()?;
            Some(object.peel_to_commit().ok()?.id)
        })
        .collect();
    let Ok(walk) = repo.rev_walk(commits).all() else {
        return Vec::new();
    };
    walk.take(COMMITS_WALKED)
        .filter_map(Result::ok)
        .map(|info| info.id)
        .collect()
}

/// Adds the blobs of `tree` and its subtrees to `blobs`, each tree read once.
fn collect_blobs(
    repo: &gix::Repository,
    tree: gix::ObjectId,
    trees: &mut HashSet<gix::ObjectId>,
    blobs: &mut HashSet<gix::ObjectId>,
) {
    if !trees.insert(tree) {
        return;
    }
    let Ok(t) = repo.find_tree(tree) else { return };
    let Ok(decoded) = t.decode() else { return };
    let entries: Vec<(bool, gix::ObjectId)> = decoded
        .entries
        .iter()
        .map(|e| (e.mode.is_tree(), e.oid.to_owned()))
        .collect();
    for (is_tree, oid) in entries {
        match is_tree {
            true => collect_blobs(repo, oid, trees, blobs),
            false => {
                blobs.insert(oid);
            }
        }
    }
}

impl RepoOracle for Oracle<'_> {
    fn reachable(&self, id: &ObjectId) -> bool {
        to_gix(id).is_some_and(|id| self.commits().contains(&id))
    }

    fn is_ancestor(&self, old: &ObjectId, new: &ObjectId) -> bool {
        let (Some(old), Some(new)) = (to_gix(old), to_gix(new)) else {
            return false;
        };
        walk(&self.repo.repo, vec![new]).contains(&old)
    }

    fn blob_in_history(&self, id: &ObjectId) -> bool {
        to_gix(id).is_some_and(|id| self.blobs().contains(&id))
    }

    fn worktree_blob(&self, path: &str) -> Option<ObjectId> {
        let tree = self.repo.location.work_tree.as_ref()?;
        let file = tree.join(path);
        if !file.symlink_metadata().ok()?.is_file() {
            return None;
        }
        blob_id_of(self.repo.repo.object_hash(), &std::fs::read(file).ok()?)
    }
}

/// hintaudit-core's id of a gix id (`None` only for a length neither hash has).
fn id(o: &gix::oid) -> Option<ObjectId> {
    ObjectId::from_bytes(o.as_bytes())
}

fn to_gix(o: &ObjectId) -> Option<gix::ObjectId> {
    gix::ObjectId::try_from(o.as_bytes()).ok()
}

#[cfg(test)]
mod tests;
