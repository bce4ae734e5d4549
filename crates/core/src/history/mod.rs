//! The idempotency history: which (tool, arguments) pairs ran, and when state (tables, watched
//! paths: [`StateKey`]) was last written.
//!
//! - args.rs: [`ArgsKey`] and [`ArgsHasher`], the arguments as a keyed hash (never kept);
//! - this file: [`History`], the bounded in-process history, and [`Repeat`];
//! - shared.rs: what a fleet's shared history (hintaudit-rmcp's Redis store) is told of a
//!   call and answers ([`SharedCall`], [`SharedAnswer`]), and the repeat the judge settles
//!   once it answers ([`PendingRepeat`]).
//!
//! A repeat is *clean* when nothing else wrote, between the end of the previous identical
//! call and the end of this one, any state this call touches: no other call judged here, and
//! no write the evidence sources could give to no one call (ambiguous, unattributed or
//! foreign: [`History::written_elsewhere`]). Time is the order in which calls are recorded:
//! a write seen while a call runs but recorded after its judgement is not seen by it, so
//! under heavy concurrency a repeat may still be judged clean when it was not (rare;
//! documented in the README).

mod args;
pub(crate) mod shared;

pub use args::{ArgsHasher, ArgsKey};
pub use shared::{MAX_SUMMARY_BYTES, PendingRepeat, Previous, SharedAnswer, SharedCall};

use hashbrown::HashTable;
use std::hash::BuildHasher;
use std::num::NonZeroUsize;
use std::sync::Arc;

use lru::LruCache;

use crate::touched::StateKey;

/// What the history knows of the previous identical call when a repeat ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    /// No identical call is in the history.
    First,
    /// An identical call ran before and nothing else wrote this call's state since.
    Clean,
    /// An identical call ran before, but something else (another call, or a write given to
    /// no call) wrote some of this call's state since.
    Disturbed,
}

/// Bounded history: an LRU of (tool, arguments) → epoch of the end of the last such call,
/// and the epoch each piece of state ([`StateKey`]) was last written at.
///
/// The LRU is keyed by a hash of the tool name with the arguments' key, and keeps the name
/// beside the epoch: a repeat finds its entry without allocating the name, and two names
/// whose hashes collide are told apart by the name kept (the newer call replaces the older).
#[derive(Debug)]
pub struct History<S = hashbrown::DefaultHashBuilder> {
    epoch: u64,
    calls: LruCache<(u64, ArgsKey), (Arc<str>, u64)>,
    names: S,
    /// (state, epoch of its last write), hashed with `names`: looked up by a borrowed key.
    state: HashTable<(StateKey<'static>, u64)>,
    max_tables: usize,
}

impl History {
    /// A history keeping `capacity` calls and at most `max_tables` state epochs (tables and
    /// paths; beyond it, writes to new state make every repeat that touches state it does
    /// not track disturbed: precision first).
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
            state: HashTable::new(),
            max_tables,
        }
    }

    /// Records the end of a call of `tool` with `args` that touched (read or wrote) `touched`
    /// and wrote `written`, and says whether it was a clean repeat.
    pub fn record<'k>(
        &mut self,
        tool: &str,
        args: ArgsKey,
        touched: impl IntoIterator<Item = &'k StateKey<'k>>,
        written: impl IntoIterator<Item = &'k StateKey<'k>>,
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
            Some(prev_end) if touched.into_iter().any(|k| self.written_since(k, prev_end)) => {
                Repeat::Disturbed
            }
            Some(_) => Repeat::Clean,
        };
        self.mark_written(written, now);
        repeat
    }

    /// Records a write of `written` that no call recorded here made: one the evidence sources
    /// saw but could not give to one call (ambiguous: calls of several tools were in
    /// flight; unattributed: none was; foreign: another writer's), or a call's judged
    /// elsewhere. It disturbs the next repeat of every call that touches that state.
    pub fn written_elsewhere<'k>(&mut self, written: impl IntoIterator<Item = &'k StateKey<'k>>) {
        self.epoch += 1;
        self.mark_written(written, self.epoch);
    }

    /// Whether `key` was written after epoch `since` (or may have been: the history tracks
    /// no more state and not this key).
    fn written_since(&self, key: &StateKey<'_>, since: u64) -> bool {
        let hash = self.names.hash_one(key);
        match self.state.find(hash, |(k, _)| k == key) {
            Some(&(_, written_at)) => written_at > since,
            None => self.state.len() >= self.max_tables,
        }
    }

    /// Marks `written` as written at epoch `now` (new keys while fewer than `max_tables`).
    fn mark_written<'k>(&mut self, written: impl IntoIterator<Item = &'k StateKey<'k>>, now: u64) {
        for key in written {
            let hash = self.names.hash_one(key);
            if let Some((_, e)) = self.state.find_mut(hash, |(k, _)| k == key) {
                *e = now;
            } else if self.state.len() < self.max_tables {
                let names = &self.names;
                self.state
                    .insert_unique(hash, (key.clone().into_owned(), now), |(k, _)| {
                        names.hash_one(k)
                    });
            }
        }
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
        let (a, b) = (&StateKey::table("a"), &StateKey::table("b"));
        let mut h = History::new(NonZeroUsize::new(8).unwrap(), 100);
        assert_eq!(h.record("t", k, [a], [a]), Repeat::First);
        assert_eq!(h.record("t", k, [a], [a]), Repeat::Clean);
        // Another tool writes table a in between.
        h.record("other", k, [a], [a]);
        assert_eq!(h.record("t", k, [a], []), Repeat::Disturbed);
        assert_eq!(h.record("t", k, [a], []), Repeat::Clean);
        // A write to an untouched table does not disturb.
        h.record("other", k, [b], [b]);
        assert_eq!(h.record("t", k, [a], []), Repeat::Clean);
    }

    /// One row per case: what happens between two identical calls of `t` that touch
    /// `file memory.jsonl`, and the repeat's judgement.
    #[test]
    fn writes_given_to_no_call_disturb_repeats_of_the_state_they_touched() {
        let k = ArgsHasher::with_key([1; 16]).key(None);
        let mem = StateKey::file("memory.jsonl");
        let other = StateKey::file("other.jsonl");
        let table = StateKey::table("memory.jsonl");
        let cases: [(&str, Vec<&StateKey<'_>>, Repeat); 5] = [
            ("nothing in between", vec![], Repeat::Clean),
            ("a write to the same path", vec![&mem], Repeat::Disturbed),
            ("a write to another path", vec![&other], Repeat::Clean),
            ("a table of the same name", vec![&table], Repeat::Clean),
            (
                "the path among others",
                vec![&other, &mem],
                Repeat::Disturbed,
            ),
        ];
        for (name, between, want) in cases {
            let mut h = History::new(NonZeroUsize::new(8).unwrap(), 100);
            assert_eq!(h.record("t", k, [&mem], [&mem]), Repeat::First, "{name}");
            h.written_elsewhere(between);
            assert_eq!(h.record("t", k, [&mem], [&mem]), want, "{name}");
            // Its own write does not disturb its next repeat.
            assert_eq!(h.record("t", k, [&mem], [&mem]), Repeat::Clean, "{name}");
        }
    }

    /// Past `max_tables`, a write elsewhere to untracked state disturbs every repeat that
    /// touches untracked state: precision first.
    #[test]
    fn untracked_state_is_disturbed_once_the_bound_is_reached() {
        let k = ArgsHasher::with_key([1; 16]).key(None);
        let (a, b, c) = (
            &StateKey::file("a"),
            &StateKey::file("b"),
            &StateKey::table("c"),
        );
        let mut h = History::new(NonZeroUsize::new(8).unwrap(), 1);
        assert_eq!(h.record("t", k, [c], []), Repeat::First);
        h.written_elsewhere([a, b]);
        // a is tracked (the bound is one), c is not: it may have been written.
        assert_eq!(h.record("t", k, [c], []), Repeat::Disturbed);
        assert_eq!(h.record("u", k, [a], []), Repeat::First);
        assert_eq!(h.record("u", k, [a], []), Repeat::Clean);
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
