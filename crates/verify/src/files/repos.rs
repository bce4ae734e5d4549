//! git repositories inside the watched trees, judged by what they mean
//! ([design: kinds of state](../../../docs/design.md#kinds-of-state-inside-watched-trees)):
//! before a call, each repository's facts (HEAD, refs, index, object ids) are read with
//! hintaudit-state; after it, the facts again and an oracle of the new state go to
//! hintaudit-core's `judge_repository`, and `fold_repository` puts that judgement in place of
//! the repository's paths, so that a commit or a staged file is no loss while a commit left
//! unreachable is.
//!
//! Only a repository found both before and after the call is folded: one the call created
//! is judged by the file rules (every path created), one it removed too (every path
//! deleted). A repository whose facts cannot be read on either side is judged by the file
//! rules as well: the cautious reading, never an error of the run.

use std::collections::BTreeMap;
use std::path::Path;

use hintaudit_core::files::{
    PathsDiff, RepoFacts, content_kept, fold_repository, judge_repository, relative,
};
use hintaudit_state::{RepoLocation, Repository, blob_id, find_repositories};

use super::tree::{Entry, Kind, Trees};

/// One repository's facts before a call.
#[derive(Debug)]
struct Before {
    location: RepoLocation,
    /// Its git directory relative to its root (`.git`, `proj/.git`, a bare one's path).
    git_dir: String,
    /// Its work tree relative to its root (`""`, `proj`); `None` for a bare repository.
    work_tree: Option<String>,
    facts: RepoFacts,
}

/// The repositories of every watched root with their facts before a call, per root in
/// `--watch` order, innermost first (a repository inside another's work tree is folded
/// before the outer one).
#[derive(Debug, Default)]
pub(crate) struct RepoSides {
    roots: Vec<Vec<Before>>,
}

impl RepoSides {
    /// Finds the repositories under the roots of `trees` (by content, hintaudit-state's
    /// `find_repositories`) and reads each one's facts now. A repository that cannot be
    /// read is left out (its paths are judged by the file rules), and so is one whose git
    /// directory is under `ignored_paths` (its paths stay bookkeeping).
    pub fn before(trees: &Trees) -> RepoSides {
        let roots = trees
            .roots()
            .iter()
            .map(|root| {
                let mut found: Vec<Before> = find_repositories(root)
                    .into_iter()
                    .filter(|l| !trees.is_ignored(&relative(root, &l.git_dir)))
                    .filter_map(|location| read_before(root, location))
                    .collect();
                found.reverse();
                found
            })
            .collect();
        RepoSides { roots }
    }

    /// `diff` (root `root`'s changes, paths relative to it) with each repository of the
    /// root judged by meaning in place of its paths. `before` is the root's snapshot before
    /// the call, whose store (`trees`) holds a work-tree file's old content: a destructive
    /// change of one whose old content the repository keeps becomes `content_kept`.
    pub fn fold(
        &self,
        root: usize,
        diff: PathsDiff,
        trees: &Trees,
        before: &BTreeMap<String, Entry>,
    ) -> PathsDiff {
        let Some(repos) = self.roots.get(root) else {
            return diff;
        };
        repos
            .iter()
            .fold(diff, |diff, repo| fold_one(repo, diff, trees, before))
    }
}

fn read_before(root: &Path, location: RepoLocation) -> Option<Before> {
    let facts = Repository::open(&location).ok()?.facts().ok()?;
    Some(Before {
        git_dir: relative(root, &location.git_dir),
        work_tree: location.work_tree.as_deref().map(|w| relative(root, w)),
        location,
        facts,
    })
}

/// `diff` with `repo` folded, or as it is when the repository cannot be read after the
/// call (gone, or unreadable).
fn fold_one(
    repo: &Before,
    diff: PathsDiff,
    trees: &Trees,
    before: &BTreeMap<String, Entry>,
) -> PathsDiff {
    let Ok(now) = Repository::open(&repo.location) else {
        return diff;
    };
    let (Ok(facts), Ok(oracle)) = (now.facts(), now.oracle()) else {
        return diff;
    };
    let change = judge_repository(&repo.facts, &facts, &oracle);
    let kept = |rel: &str| {
        let path = match repo.work_tree.as_deref() {
            Some("") | None => rel.to_owned(),
            Some(tree) => format!("{tree}/{rel}"),
        };
        let Some(Entry {
            kind: Kind::File { hash, .. },
            ..
        }) = before.get(&path)
        else {
            return false;
        };
        let id = trees.content(*hash).ok().and_then(|old| blob_id(&old));
        id.is_some_and(|id| content_kept(&id, rel, &facts, &oracle))
    };
    fold_repository(diff, &repo.git_dir, repo.work_tree.as_deref(), change, kept)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use hintaudit_test_support::git::git;

    use hintaudit_core::Policy;

    use super::super::watch::FileWatch;

    /// One call's changes as `(path, destructive, evidence)`.
    async fn call(watch: &mut FileWatch, dir: &Path, args: &[&str]) -> Vec<(String, bool, String)> {
        watch.before_call().await.unwrap();
        git(dir, args);
        let changes = watch.after_call().await.unwrap().0.changes;
        changes
            .into_iter()
            .map(|c| {
                let text =
                    hintaudit_core::files::file_evidence("snapshot", std::slice::from_ref(&c));
                (c.path, c.kind.is_destructive(), text)
            })
            .collect()
    }

    /// Staging and committing lose nothing (the index's old blob is in history, the branch
    /// moves forward); amending the commit leaves the old one unreachable: destructive.
    #[tokio::test]
    async fn a_repository_is_judged_by_meaning_in_place_of_its_paths() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        git(p, &["init", "-q", "-b", "main"]);
        std::fs::write(p.join("a.txt"), "hello\n").unwrap();
        git(p, &["add", "a.txt"]);
        git(p, &["commit", "-qm", "first"]);
        std::fs::write(p.join("a.txt"), "hello\nmore\n").unwrap();
        let mut watch = FileWatch::start(&[p.to_path_buf()], &[], &Policy::default()).unwrap();
        let added = call(&mut watch, p, &["add", "a.txt"]).await;
        assert_eq!(added.len(), 1, "{added:?}");
        assert_eq!((added[0].0.as_str(), added[0].1), (".git", false));
        assert!(
            added[0]
                .2
                .contains("index entry replaced or removed, old content kept")
        );
        let committed = call(&mut watch, p, &["commit", "-qm", "second"]).await;
        assert_eq!(committed.len(), 1, "{committed:?}");
        assert!(!committed[0].1, "{committed:?}");
        assert!(committed[0].2.contains("branch main moved forward"));
        let amended = call(&mut watch, p, &["commit", "-q", "--amend", "-m", "again"]).await;
        assert_eq!(amended.len(), 1, "{amended:?}");
        assert!(amended[0].1, "{amended:?}");
        assert!(
            amended[0].2.contains("commits left unreachable"),
            "{amended:?}"
        );
    }
}
