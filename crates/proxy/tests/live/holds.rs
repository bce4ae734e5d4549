//! Calls held in flight by a condition the test releases, never by a sleep: the fixture's
//! `FIXTURE_HOLD_AFTER=<tool>=<dir>` (tests/verify/python_server/sql_server.py) makes that
//! tool, after its work, create `<dir>/held-<id>` and wait until `<dir>/release-<id>` or
//! `<dir>/release-all` exists.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A folder of held calls and their releases; removed when dropped.
pub struct Holds {
    dir: PathBuf,
    /// Held calls already handed out by [`Holds::held`].
    seen: BTreeSet<String>,
}

/// One call held in flight, named by the fixture (`<pid>-<n>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held(pub String);

impl Holds {
    /// A fresh folder for `test`'s held calls, never another `Holds`'s: the PostgreSQL and
    /// MariaDB variants of one test run at once under one name, and a shared folder let each
    /// release the other's calls (and the later one's `new` empty the earlier one's folder).
    pub fn new(test: &str) -> Holds {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("hintaudit-holds-{test}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("the holds folder");
        Holds {
            dir,
            seen: BTreeSet::new(),
        }
    }

    /// The fixture's environment setting that holds `tool`'s calls here.
    pub fn env(&self, tool: &str) -> String {
        format!("{tool}={}", self.dir.display())
    }

    /// Waits until `n` calls not handed out before are held (at most 120 s, far beyond any
    /// call's start on a loaded machine: a panic then names what never came).
    pub async fn held(&mut self, n: usize) -> Vec<Held> {
        for _ in 0..12_000 {
            let fresh = self.fresh();
            if fresh.len() >= n {
                let taken: Vec<Held> = fresh.into_iter().take(n).map(Held).collect();
                self.seen.extend(taken.iter().map(|h| h.0.clone()));
                return taken;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{n} held calls never came (in {})", self.dir.display());
    }

    /// Held calls in the folder that were not handed out yet, in name order.
    fn fresh(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)
            .expect("the holds folder")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter_map(|n| n.strip_prefix("held-").map(str::to_owned))
            .filter(|n| !self.seen.contains(n))
            .collect();
        names.sort();
        names
    }

    /// Lets `held` answer.
    pub fn release(&self, held: &Held) {
        std::fs::write(self.dir.join(format!("release-{}", held.0)), b"").expect("a release");
    }

    /// Lets every call held here, now or later, answer.
    pub fn release_all(&self) {
        std::fs::write(self.dir.join("release-all"), b"").expect("a release");
    }
}

impl Drop for Holds {
    fn drop(&mut self) {
        // Nothing stays held after the test, whatever its outcome.
        let _ = std::fs::write(self.dir.join("release-all"), b"");
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
