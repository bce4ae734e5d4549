//! The idempotency history: which (tool, arguments) pairs ran, and when tables were written.
//!
//! - args.rs: [`ArgsKey`] and [`ArgsHasher`], the arguments as a keyed hash (never kept);
//! - this file: [`History`], the bounded in-process history, and [`Repeat`];
//! - shared.rs: what a fleet's shared history (hintaudit-rmcp's Redis store) is told of a
//!   call and answers ([`SharedCall`], [`SharedAnswer`]), and the repeat the judge settles
//!   once it answers ([`PendingRepeat`]).
//!
//! A repeat is *clean* when no other call wrote, between the end of the previous identical
//! call and the end of this one, any table this call touches. Concurrent calls still running
//! when the repeat is judged are not seen: under heavy concurrency a repeat may be judged
//! clean when it was not (rare; documented in the README).

mod args;
pub(crate) mod shared;

pub use args::{ArgsHasher, ArgsKey};
pub use shared::{MAX_SUMMARY_BYTES, PendingRepeat, Previous, SharedAnswer, SharedCall};

use hashbrown::HashMap;
use std::hash::BuildHasher;
use std::num::NonZeroUsize;
use std::sync::Arc;

use lru::LruCache;

/// What the history knows of the previous identical call when a repeat ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    /// No identical call is in the history.
    First,
    /// An identical call ran before and no other call wrote this call's tables since.
    Clean,
    /// An identical call ran before, but another call wrote one of this call's tables since.
    Disturbed,
}

/// Bounded history: an LRU of (tool, arguments) → epoch of the end of the last such call,
/// and the epoch each table was last written at.
///
/// The LRU is keyed by a hash of the tool name with the arguments' key, and keeps the name
/// beside the epoch: a repeat finds its entry without allocating the name, and two names
/// whose hashes collide are told apart by the name kept (the newer call replaces the older).
#[derive(Debug)]
pub struct History<S = hashbrown::DefaultHashBuilder> {
    epoch: u64,
    calls: LruCache<(u64, ArgsKey), (Arc<str>, u64)>,
    names: S,
    tables: HashMap<String, u64>,
    max_tables: usize,
}

impl History {
    /// A history keeping `capacity` calls and at most `max_tables` table epochs (beyond it,
    /// writes to new tables make every repeat that touches them disturbed: precision first).
    pub fn new(capacity: NonZeroUsize, max_tables: usize) -> Self {
        History::with_name_hasher(capacity, max_tables, Default::default())
    }
}

impl<S: BuildHasher> History<S> {
    /// [`History::new`], hashing tool names with `names`.
    pub fn with_name_hasher(capacity: NonZeroUsize, max_tables: usize, names: S) -> Self {
        History {
            epoch: 0,
            calls: LruCache::new(capacity),
            names,
            tables: HashMap::new(),
            max_tables,
        }
    }

    /// Records the end of a call of `tool` with `args` that touched (read or wrote) `touched`
    /// and wrote `written`, and says whether it was a clean repeat.
    pub fn record<'a>(
        &mut self,
        tool: &str,
        args: ArgsKey,
        touched: impl IntoIterator<Item = &'a str>,
        written: impl IntoIterator<Item = &'a str>,
    ) -> Repeat {
        self.epoch += 1;
        let now = self.epoch;
        let key = (self.names.hash_one(tool), args);
        // The end of the previous identical call, which this one replaces.
        let prev_end = match self.calls.get_mut(&key) {
            Some((name, end)) if **name == *tool => Some(std::mem::replace(end, now)),
            Some(entry) => {
                *entry = (Arc::from(tool), now);
                None
            }
            None => {
                self.calls.put(key, (Arc::from(tool), now));
                None
            }
        };
        let repeat = match prev_end {
            None => Repeat::First,
            Some(prev_end) => {
                let disturbed = touched.into_iter().any(|t| match self.tables.get(t) {
                    Some(&written_at) => written_at > prev_end,
                    None => self.tables.len() >= self.max_tables,
                });
                if disturbed {
                    Repeat::Disturbed
                } else {
                    Repeat::Clean
                }
            }
        };
        for t in written {
            if let Some(e) = self.tables.get_mut(t) {
                *e = now;
            } else if self.tables.len() < self.max_tables {
                self.tables.insert(t.to_owned(), now);
            }
        }
        repeat
    }

    /// Number of calls remembered.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// Whether no call is remembered.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn repeats_are_clean_unless_tables_were_written_between() {
        let k = ArgsHasher::with_key([1; 16]).key(None);
        let mut h = History::new(NonZeroUsize::new(8).unwrap(), 100);
        assert_eq!(h.record("t", k, ["a"], ["a"]), Repeat::First);
        assert_eq!(h.record("t", k, ["a"], ["a"]), Repeat::Clean);
        // Another tool writes table a in between.
        h.record("other", k, ["a"], ["a"]);
        assert_eq!(h.record("t", k, ["a"], []), Repeat::Disturbed);
        assert_eq!(h.record("t", k, ["a"], []), Repeat::Clean);
        // A write to an untouched table does not disturb.
        h.record("other", k, ["b"], ["b"]);
        assert_eq!(h.record("t", k, ["a"], []), Repeat::Clean);
    }

    #[test]
    fn tool_names_whose_hashes_collide_are_told_apart() {
        // Every name hashes to 0.
        #[derive(Default)]
        struct Zero;
        impl std::hash::Hasher for Zero {
            fn finish(&self) -> u64 {
                0
            }
            fn write(&mut self, _: &[u8]) {}
        }
        let names = std::hash::BuildHasherDefault::<Zero>::default();
        let k = ArgsHasher::with_key([1; 16]).key(None);
        let mut h = History::with_name_hasher(NonZeroUsize::new(8).unwrap(), 100, names);
        assert_eq!(h.record("a", k, [], []), Repeat::First);
        assert_eq!(h.record("b", k, [], []), Repeat::First);
        // b replaced a: precision first, a is a first call again.
        assert_eq!(h.record("a", k, [], []), Repeat::First);
        assert_eq!(h.record("a", k, [], []), Repeat::Clean);
        assert_eq!(h.len(), 1);
    }

    #[test]
    fn capacity_bounds_the_history() {
        let hasher = ArgsHasher::with_key([1; 16]);
        let mut h = History::new(NonZeroUsize::new(2).unwrap(), 100);
        for i in 0..10 {
            h.record("t", hasher.key(Some(&json!(i))), [], []);
        }
        assert_eq!(h.len(), 2);
        // The oldest were evicted: calling with 0 again is a first call.
        assert_eq!(
            h.record("t", hasher.key(Some(&json!(0))), [], []),
            Repeat::First
        );
    }
}
