//! [`ArgsKey`]: a call's arguments as a keyed hash, never kept in clear.
//!
//! A call is identified by a keyed 128-bit SipHash-1-3 of its canonical JSON arguments
//! (object keys sorted, no whitespace). The key is drawn at random per process, or shared by
//! the replicas of a fleet ([`ArgsHasher::from_secret`]) so that their keys agree.

use serde_json::{Map, Value};
use siphasher::sip128::{Hasher128, SipHasher13};

/// A keyed 128-bit hash of a call's canonical arguments. Two calls with equal arguments
/// (whatever the key order or whitespace) have equal keys under one [`ArgsHasher`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArgsKey([u8; 16]);

impl ArgsKey {
    /// The 16 bytes of the hash.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }
}

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

    /// A hasher whose key is derived from a secret the replicas of a fleet share (the
    /// `HINTAUDIT_HISTORY_KEY` setting), so that equal arguments have equal keys on every
    /// replica and the shared history can match a repeat across them: the key is the
    /// SipHash-1-3 (128 bits, fixed domain key) of the secret's bytes. Take a random secret of
    /// at least 16 characters (`openssl rand -hex 16`); [`crate::Config`] refuses shorter ones.
    pub fn from_secret(secret: &str) -> Self {
        let mut h = SipHasher13::new_with_key(b"hintaudit.argkey");
        std::hash::Hasher::write(&mut h, secret.as_bytes());
        ArgsHasher {
            key: h.finish128().as_bytes(),
        }
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
        // A shared secret gives the same hasher on every replica, another secret another one.
        let v = json!({"id": 1});
        let secret = "0123456789abcdef0123456789abcdef";
        assert_eq!(
            ArgsHasher::from_secret(secret).key(Some(&v)),
            ArgsHasher::from_secret(secret).key(Some(&v))
        );
        assert_ne!(
            ArgsHasher::from_secret(secret).key(Some(&v)),
            ArgsHasher::from_secret("another secret of 16+ chars").key(Some(&v))
        );
        // Another key, another hash.
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
}
