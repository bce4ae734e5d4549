//! The idempotency history: which (tool, arguments) pairs ran, and when tables were written.
//!
//! Arguments are never kept: a call is identified by an [`ArgsKey`], a keyed 128-bit
//! SipHash-1-3 of its canonical JSON arguments (object keys sorted, no whitespace), with a
//! key drawn at random per process. A repeat is *clean* when no other call wrote, between
//! the end of the previous identical call and the end of this one, any table this call
//! touches. Concurrent calls still running when the repeat is judged are not seen: under
//! heavy concurrency a repeat may be judged clean when it was not (rare; documented in the
//! README).

use hashbrown::HashMap;
use std::hash::BuildHasher;
use std::num::NonZeroUsize;
use std::sync::Arc;

use lru::LruCache;
use serde_json::{Map, Value};
use siphasher::sip128::{Hasher128, SipHasher13};

/// A keyed 128-bit hash of a call's canonical arguments. Two calls with equal arguments
/// (whatever the key order or whitespace) have equal keys under one [`ArgsHasher`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArgsKey([u8; 16]);

/// Hashes arguments into [`ArgsKey`]s with a secret key: SipHash-1-3 with 128-bit output
/// (the `siphasher` crate), a keyed pseudorandom function, so that without the key neither
/// the arguments nor a collision can be worked out from the keys. Tool-call arguments are a
/// few dozen bytes, where SipHash costs a fraction of keyed BLAKE3, the construction before
/// (the whole key of `{"id":N}`, canonical JSON included: 744 instructions against 1,532,
/// counted by callgrind; docs/performance.md).
#[derive(Clone)]
pub struct ArgsHasher {
    key: [u8; 16],
}

impl std::fmt::Debug for ArgsHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ArgsHasher { key: <secret> }")
    }
}

impl ArgsHasher {
    /// A hasher with a random key from the operating system. If the OS has no randomness to
    /// give, the key falls back to one derived from the time and address space (still
    /// distinct per process; the hash then only protects against casual reading).
    pub fn random() -> Self {
        let mut key = [0u8; 16];
        if getrandom::fill(&mut key).is_err() {
            let seed = format!("{:?}{:p}", std::time::SystemTime::now(), &key);
            let mut h = SipHasher13::new();
            std::hash::Hasher::write(&mut h, seed.as_bytes());
            key = h.finish128().as_bytes();
        }
        ArgsHasher { key }
    }

    /// A hasher with a fixed key (tests, or keys shared between processes).
    pub fn with_key(key: [u8; 16]) -> Self {
        ArgsHasher { key }
    }

    /// The key of `arguments` (`None`: a call without arguments, the same as `{}`).
    pub fn key(&self, arguments: Option<&Value>) -> ArgsKey {
        self.hash(|out| match arguments {
            Some(v) => write_canonical(v, out),
            None => write_object(&Map::new(), out),
        })
    }

    /// The key of a tools/call `arguments` object (MCP: always an object), equal to
    /// [`ArgsHasher::key`] of the same object as a [`Value`], without building one.
    pub fn key_of_object(&self, arguments: Option<&Map<String, Value>>) -> ArgsKey {
        self.hash(|out| write_object(arguments.unwrap_or(&Map::new()), out))
    }

    fn hash(&self, write: impl FnOnce(&mut Sink)) -> ArgsKey {
        let mut sink = Sink(SipHasher13::new_with_key(&self.key));
        write(&mut sink);
        ArgsKey(sink.0.finish128().as_bytes())
    }
}

/// Where canonical JSON goes: straight into the hasher, which buffers at most 8 bytes, so
/// the key is the hash of the same bytes however they were split into writes.
struct Sink(SipHasher13);

impl Sink {
    fn update(&mut self, bytes: &[u8]) {
        std::hash::Hasher::write(&mut self.0, bytes);
    }
}

impl std::io::Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes `value` as canonical JSON: object keys sorted by their UTF-8 bytes, no whitespace,
/// strings and numbers as serde_json writes them. Written by hand (rather than with a JCS
/// crate) to stream into the hasher without building a string.
fn write_canonical(value: &Value, out: &mut Sink) {
    match value {
        Value::Object(map) => write_object(map, out),
        Value::Array(items) => {
            out.update(b"[");
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.update(b",");
                }
                write_canonical(v, out);
            }
            out.update(b"]");
        }
        // serde_json writes scalars (and escapes strings) without whitespace,
        // deterministically; the hasher is an `io::Write` that cannot fail.
        scalar => {
            let _ = serde_json::to_writer(&mut *out, scalar);
        }
    }
}

/// Writes an object as canonical JSON (see [`write_canonical`]).
fn write_object(map: &Map<String, Value>, out: &mut Sink) {
    out.update(b"{");
    // serde_json's map is sorted already unless its `preserve_order` feature is on.
    if map.keys().is_sorted() {
        write_members(map.iter(), out);
    } else {
        let mut members: Vec<(&String, &Value)> = map.iter().collect();
        members.sort_by_key(|(k, _)| *k);
        write_members(members.into_iter(), out);
    }
    out.update(b"}");
}

fn write_members<'a>(members: impl Iterator<Item = (&'a String, &'a Value)>, out: &mut Sink) {
    for (i, (k, v)) in members.enumerate() {
        if i > 0 {
            out.update(b",");
        }
        let _ = serde_json::to_writer(&mut *out, k);
        out.update(b":");
        write_canonical(v, out);
    }
}

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

    /// The key is the keyed SipHash-1-3 (128 bits) of the canonical text taken in one
    /// write, whatever the pieces it was written in (short, and longer than the hasher's
    /// 8-byte buffer).
    #[test]
    fn key_is_the_keyed_hash_of_the_canonical_text() {
        let key = [9u8; 16];
        let h = ArgsHasher::with_key(key);
        let long = "x".repeat(1000);
        for (value, canonical) in [
            (json!({"b": 1, "a": "x"}), r#"{"a":"x","b":1}"#.to_owned()),
            (
                json!({"z": [long.clone(), {"k": null}], "a": 2.5}),
                format!(r#"{{"a":2.5,"z":["{long}",{{"k":null}}]}}"#),
            ),
        ] {
            let mut one = SipHasher13::new_with_key(&key);
            std::hash::Hasher::write(&mut one, canonical.as_bytes());
            let expected = one.finish128().as_bytes();
            assert_eq!(h.key(Some(&value)).0, expected, "{canonical:.40}");
        }
        // Another key, another hash.
        let v = json!({"id": 1});
        assert_ne!(
            h.key(Some(&v)),
            ArgsHasher::with_key([10; 16]).key(Some(&v))
        );
    }

    #[test]
    fn key_ignores_order_and_whitespace() {
        let h = ArgsHasher::with_key([7; 16]);
        let a: Value = serde_json::from_str(r#"{"b": [1, {"y":2,"x":1}], "a": "s"}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":"s","b":[1,{"x":1,"y":2}]}"#).unwrap();
        assert_eq!(h.key(Some(&a)), h.key(Some(&b)));
        assert_ne!(h.key(Some(&a)), h.key(Some(&json!({"a": "s"}))));
        assert_eq!(h.key(None), h.key(Some(&json!({}))));
        // An arguments object hashes as the same object as a value.
        let Value::Object(object) = &a else { panic!() };
        assert_eq!(h.key_of_object(Some(object)), h.key(Some(&a)));
        assert_eq!(h.key_of_object(None), h.key(None));
        // Array order matters.
        assert_ne!(h.key(Some(&json!([1, 2]))), h.key(Some(&json!([2, 1]))));
        // Another key, another hash.
        assert_ne!(h.key(Some(&a)), ArgsHasher::with_key([8; 16]).key(Some(&a)));
    }

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
