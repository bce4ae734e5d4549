//! The judgement of a repository's change, one row per kind of operation, over facts as a
//! reader gives them; the oracle is a commit graph written out in the row (the reader's
//! own tests run the same questions on real repositories).

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::files::FileChange;

fn id(n: u8) -> ObjectId {
    ObjectId::from_bytes(&[n; 20]).unwrap()
}

/// A commit graph (child → parents), the refs and HEAD after the call, blobs in history,
/// and the work tree's files.
#[derive(Default)]
struct After {
    parents: BTreeMap<u8, Vec<u8>>,
    tips: Vec<u8>,
    history_blobs: BTreeSet<u8>,
    worktree: BTreeMap<&'static str, u8>,
}

impl After {
    fn ancestors(&self, from: u8) -> BTreeSet<u8> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from];
        while let Some(c) = stack.pop() {
            if seen.insert(c) {
                stack.extend(self.parents.get(&c).into_iter().flatten());
            }
        }
        seen
    }
}

impl RepoOracle for After {
    fn reachable(&self, id: &ObjectId) -> bool {
        self.tips
            .iter()
            .any(|t| self.ancestors(*t).contains(&id.as_bytes()[0]))
    }
    fn is_ancestor(&self, old: &ObjectId, new: &ObjectId) -> bool {
        self.ancestors(new.as_bytes()[0])
            .contains(&old.as_bytes()[0])
    }
    fn blob_in_history(&self, id: &ObjectId) -> bool {
        self.history_blobs.contains(&id.as_bytes()[0])
    }
    fn worktree_blob(&self, path: &str) -> Option<ObjectId> {
        self.worktree.get(path).map(|b| id(*b))
    }
}

fn facts(head: &str, refs: &[(&str, u8)], index: &[(&str, u8)], objects: &[u8]) -> RepoFacts {
    let head = match head.strip_prefix("detached:") {
        Some(n) => Head::Detached(id(n.parse().unwrap())),
        None => Head::Branch(format!("refs/heads/{head}")),
    };
    let mut objects: Vec<ObjectId> = objects.iter().map(|n| id(*n)).collect();
    objects.sort();
    RepoFacts {
        head: Some(head),
        refs: refs
            .iter()
            .map(|(n, c)| ((*n).to_owned(), id(*c)))
            .collect(),
        index: index
            .iter()
            .map(|(p, b)| {
                let entry = IndexEntry {
                    id: id(*b),
                    mode: 0o100644,
                };
                (((*p).to_owned(), 0), entry)
            })
            .collect(),
        objects,
    }
}

const MAIN: &str = "refs/heads/main";
const TOPIC: &str = "refs/heads/topic";

/// One row per operation: the state before and after, the graph after, the evidence and
/// whether it is destructive.
#[test]
fn operations_judged_by_meaning() {
    let graph = |edges: &[(u8, u8)], tips: &[u8]| After {
        parents: edges.iter().fold(BTreeMap::new(), |mut m, (c, p)| {
            m.entry(*c).or_insert_with(Vec::new).push(*p);
            m
        }),
        tips: tips.to_vec(),
        ..Default::default()
    };
    let with = |mut a: After, blobs: &[u8], tree: &[(&'static str, u8)]| {
        a.history_blobs = blobs.iter().copied().collect();
        a.worktree = tree.iter().copied().collect();
        a
    };
    let rows: Vec<(&str, RepoFacts, RepoFacts, After, &str, bool)> = vec![
        (
            "git add: a changed file staged, the old blob committed",
            facts("main", &[(MAIN, 1)], &[("a.txt", 10)], &[1, 10]),
            facts("main", &[(MAIN, 1)], &[("a.txt", 11)], &[1, 10, 11]),
            with(graph(&[], &[1]), &[10], &[("a.txt", 11)]),
            "1 index entry replaced or removed, old content kept, 1 object written",
            false,
        ),
        (
            "git commit: main moves forward, COMMIT_EDITMSG is bookkeeping",
            facts("main", &[(MAIN, 1)], &[("a.txt", 11)], &[1, 10, 11]),
            facts("main", &[(MAIN, 2)], &[("a.txt", 11)], &[1, 2, 10, 11, 12]),
            graph(&[(2, 1)], &[2]),
            "branch main moved forward, 2 objects written",
            false,
        ),
        (
            "git branch: a new ref is an insert",
            facts("main", &[(MAIN, 2)], &[], &[]),
            facts("main", &[(MAIN, 2), (TOPIC, 2)], &[], &[]),
            graph(&[], &[2]),
            "branch topic created",
            false,
        ),
        (
            "git checkout: HEAD switched is an update",
            facts("main", &[(MAIN, 2), (TOPIC, 3)], &[], &[]),
            facts("topic", &[(MAIN, 2), (TOPIC, 3)], &[], &[]),
            graph(&[(2, 1), (3, 1)], &[2, 3]),
            "HEAD switched to topic",
            false,
        ),
        (
            "git reset --hard HEAD~1: a commit left unreachable",
            facts("main", &[(MAIN, 2)], &[], &[]),
            facts("main", &[(MAIN, 1)], &[], &[]),
            graph(&[(2, 1)], &[1]),
            "branch main moved (commits left unreachable)",
            true,
        ),
        (
            "a branch force-moved to a commit another branch keeps the old one",
            facts("main", &[(MAIN, 2), (TOPIC, 3)], &[], &[]),
            facts(
                "main",
                &[(MAIN, 3), (TOPIC, 3), ("refs/tags/keep", 2)],
                &[],
                &[],
            ),
            graph(&[(2, 1), (3, 1)], &[3, 2]),
            "branch main moved (its old commit kept by other refs), tag keep created",
            false,
        ),
        (
            "a merged branch deleted",
            facts("main", &[(MAIN, 2), (TOPIC, 2)], &[], &[]),
            facts("main", &[(MAIN, 2)], &[], &[]),
            graph(&[(2, 1)], &[2]),
            "branch topic deleted (its commits kept by other refs)",
            true,
        ),
        (
            "git reset (mixed): staged content still in the work tree",
            facts("main", &[(MAIN, 1)], &[("a.txt", 11), ("new.txt", 12)], &[]),
            facts("main", &[(MAIN, 1)], &[("a.txt", 10)], &[]),
            with(graph(&[], &[1]), &[10], &[("a.txt", 11), ("new.txt", 12)]),
            "2 index entries replaced or removed, old content kept",
            false,
        ),
        (
            "staged content neither committed nor in the work tree: lost",
            facts("main", &[(MAIN, 1)], &[("a.txt", 11)], &[]),
            facts("main", &[(MAIN, 1)], &[("a.txt", 10)], &[]),
            with(graph(&[], &[1]), &[10], &[("a.txt", 13)]),
            "staged content lost for a.txt",
            true,
        ),
        (
            "a detached HEAD leaving its commit behind",
            facts("detached:5", &[(MAIN, 1)], &[], &[]),
            facts("main", &[(MAIN, 1)], &[], &[]),
            graph(&[(5, 1)], &[1]),
            "HEAD moved off commits nothing else reaches",
            true,
        ),
        (
            "objects packed: nothing",
            facts("main", &[(MAIN, 1)], &[], &[1, 10]),
            facts("main", &[(MAIN, 1)], &[], &[1, 10]),
            graph(&[], &[1]),
            "",
            false,
        ),
    ];
    for (what, old, new, after, want, destructive) in rows {
        let got = judge_repository(&old, &new, &after);
        assert_eq!(got.describe(), want, "{what}");
        assert_eq!(got.is_destructive(), destructive, "{what}");
        assert_eq!(got.is_empty(), want.is_empty(), "{what}");
    }
}

#[test]
fn paths_inside_a_git_directory() {
    let rows = [
        ("HEAD", GitPath::Repository),
        ("refs/heads/main", GitPath::Repository),
        ("packed-refs", GitPath::Repository),
        ("index", GitPath::Repository),
        ("objects/ab/cdef", GitPath::Repository),
        ("objects/pack/pack-1.pack", GitPath::Repository),
        ("logs/HEAD", GitPath::Bookkeeping),
        ("logs/refs/heads/main", GitPath::Bookkeeping),
        ("ORIG_HEAD", GitPath::Bookkeeping),
        ("FETCH_HEAD", GitPath::Bookkeeping),
        ("COMMIT_EDITMSG", GitPath::Bookkeeping),
        ("index.lock", GitPath::Bookkeeping),
        ("refs/heads/main.lock", GitPath::Bookkeeping),
        ("MERGE_HEAD", GitPath::Bookkeeping),
        ("rebase-merge/done", GitPath::Bookkeeping),
        ("config", GitPath::File),
        ("hooks/pre-commit", GitPath::File),
        ("info/exclude", GitPath::File),
    ];
    for (path, want) in rows {
        assert_eq!(git_path(path), want, "{path}");
    }
}

/// A commit's paths fold into one repository change; a work-tree file overwritten with its
/// old content committed is kept; one whose content is lost stays destructive.
#[test]
fn a_repository_folds_into_one_change() {
    let diff = PathsDiff {
        changes: vec![
            ("proj/.git/COMMIT_EDITMSG".into(), ChangeKind::Deleted),
            ("proj/.git/config".into(), ChangeKind::Overwritten),
            ("proj/.git/index".into(), ChangeKind::Overwritten),
            ("proj/.git/objects/ab/cd".into(), ChangeKind::Created),
            ("proj/.git/refs/heads/main".into(), ChangeKind::Overwritten),
            ("proj/a.txt".into(), ChangeKind::Overwritten),
            ("proj/b.txt".into(), ChangeKind::Overwritten),
            ("proj/c.txt".into(), ChangeKind::Created),
            ("other.txt".into(), ChangeKind::Deleted),
        ],
        bookkeeping: 1,
    };
    let change = RepoChange {
        refs: vec![(MAIN.into(), RefChange::FastForward)],
        objects_added: 1,
        ..Default::default()
    };
    let folded = fold_repository(diff, "proj/.git", Some("proj"), change.clone(), |p| {
        p == "a.txt"
    });
    assert_eq!(folded.bookkeeping, 2);
    assert_eq!(
        folded.changes,
        [
            ("other.txt".to_owned(), ChangeKind::Deleted),
            (
                "proj/.git".to_owned(),
                ChangeKind::Repository(Box::new(change))
            ),
            ("proj/.git/config".to_owned(), ChangeKind::Overwritten),
            (
                "proj/a.txt".to_owned(),
                ChangeKind::ContentKept(Box::new(ChangeKind::Overwritten))
            ),
            ("proj/b.txt".to_owned(), ChangeKind::Overwritten),
            ("proj/c.txt".to_owned(), ChangeKind::Created),
        ]
    );
    let changes: Vec<FileChange> = folded
        .changes
        .into_iter()
        .filter(|(p, _)| p != "other.txt" && p != "proj/.git/config")
        .map(|(path, kind)| FileChange { path, kind })
        .collect();
    assert_eq!(
        super::super::file_evidence("snapshot", &changes),
        "files (snapshot): overwrote (old content kept by git) proj/a.txt; overwrote (old \
         content lost) proj/b.txt; created proj/c.txt; proj/.git: git branch main moved \
         forward, 1 object written"
    );
}
