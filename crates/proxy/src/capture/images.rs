//! Row images from the log, compared without keeping a value
//! ([design: the proxy's evidence](../../../../docs/design.md#the-proxys-evidence)).
//!
//! A decoder reads each changed row as [`Column`]s: a column's name and a hash of its value
//! (xxh3 with a seed drawn per process), never the value itself. An update's old row is known
//! when the log carries it (MariaDB's before image, PostgreSQL's old tuple under
//! `REPLICA IDENTITY FULL`) or when the log showed the row's last image earlier: [`RowImages`]
//! keeps, per table and key, the column hashes of the last image read, bounded
//! ([`MAX_KEYS`], least recently used first out). Comparing the two gives the
//! [`RowImage`] the layer's hooks give: re-set to what it held ([`RowImage::Unchanged`]), or
//! these columns changed. A repeat that sets what the first call set is unchanged; a counter
//! is changed. The judge leaves the ignored columns out ([`hintaudit_core::Policy`]).
//!
//! [`EmptyTables`] follows which tables the log showed empty: truncated, and nothing inserted
//! since. A TRUNCATE of one removes nothing.
//!
//! Both start empty with each decoder: after a gap (a new slot, a lost stream) nothing read
//! before it is trusted. Pure: no I/O, no clock.

use std::num::NonZeroUsize;

use hintaudit_core::RowImage;
use lru::LruCache;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Most rows whose last image is kept (about 40 bytes and 16 per column each).
pub const MAX_KEYS: usize = 65_536;

/// Most tables a decoder keeps something of (whether the log showed one empty, its key
/// columns), least recently used first out.
pub const MAX_TABLES: usize = 10_000;

/// One column of a row image: its name (lower-cased) and its value's hash; `None` when the
/// log left the value out as unchanged (PostgreSQL's `unchanged-toast-datum`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// The column's name, lower-cased; `@` and its position when the log does not name it
    /// (MariaDB's table map without `binlog_row_metadata = FULL`).
    pub name: String,
    /// The hash of its value as the log shows it.
    pub value: Option<u64>,
}

/// Hashes values with a seed drawn once per process, so that a hash says nothing outside it.
#[derive(Debug, Clone, Copy)]
pub struct ValueHasher {
    seed: u64,
}

impl ValueHasher {
    /// A hasher with a random seed.
    pub fn random() -> Self {
        let mut seed = [0u8; 8];
        // Without randomness the hashes are still per-process: the address space's.
        if getrandom::fill(&mut seed).is_err() {
            seed = (&seed as *const _ as u64).to_le_bytes();
        }
        ValueHasher {
            seed: u64::from_le_bytes(seed),
        }
    }

    /// A hasher with a fixed seed (tests).
    #[cfg(test)]
    pub fn with_seed(seed: u64) -> Self {
        ValueHasher { seed }
    }

    /// The hash of `bytes`.
    pub fn hash(&self, bytes: &[u8]) -> u64 {
        xxh3_64_with_seed(bytes, self.seed)
    }

    /// The key of a row: its table and the hashes of its key columns' values, in order.
    fn key(&self, table: &str, key: &[u64]) -> u64 {
        let mut bytes = Vec::with_capacity(table.len() + 1 + 8 * key.len());
        bytes.extend_from_slice(table.as_bytes());
        bytes.push(0);
        for k in key {
            bytes.extend_from_slice(&k.to_le_bytes());
        }
        self.hash(&bytes)
    }
}

/// A row's last image as kept: (name hash, value hash) per column.
type Kept = Vec<(u64, Option<u64>)>;

/// The last image the log showed of each row, per table and key, as hashes.
#[derive(Debug)]
pub struct RowImages {
    hasher: ValueHasher,
    last: LruCache<u64, Kept>,
}

impl Default for RowImages {
    fn default() -> Self {
        RowImages::new(ValueHasher::random(), MAX_KEYS)
    }
}

impl RowImages {
    /// Keeps at most `max_keys` rows, hashing with `hasher`.
    pub fn new(hasher: ValueHasher, max_keys: usize) -> Self {
        RowImages {
            hasher,
            last: LruCache::new(NonZeroUsize::new(max_keys).unwrap_or(NonZeroUsize::MIN)),
        }
    }

    /// The hasher values are read with.
    pub fn hasher(&self) -> ValueHasher {
        self.hasher
    }

    /// A row inserted into `table` with key `key` (the key columns' value hashes; `None`
    /// when the table has no key the log can tell).
    pub fn inserted(&mut self, table: &str, key: Option<&[u64]>, new: &[Column]) {
        if let Some(key) = key {
            let k = self.hasher.key(table, key);
            self.last.put(k, self.kept(new, None));
        }
    }

    /// A row of `table` deleted.
    pub fn deleted(&mut self, table: &str, key: Option<&[u64]>) {
        if let Some(key) = key {
            self.last.pop(&self.hasher.key(table, key));
        }
    }

    /// A row of `table` updated from `old_key` (its key before, when it changed or the old
    /// row is logged whole; else the new row's) to `new` with key `new_key`; `old` is the
    /// old row when the log carries it whole. What the images say of it.
    pub fn updated(
        &mut self,
        table: &str,
        old_key: Option<&[u64]>,
        new_key: Option<&[u64]>,
        old: Option<&[Column]>,
        new: &[Column],
    ) -> RowImage {
        let before = old_key.and_then(|k| self.last.pop(&self.hasher.key(table, k)));
        let logged = old.map(|old| self.kept(old, None));
        let image = match logged.as_ref().or(before.as_ref()) {
            Some(kept) => self.compare(kept, new),
            None => RowImage::Unknown,
        };
        if let Some(key) = new_key {
            let k = self.hasher.key(table, key);
            self.last
                .put(k, self.kept(new, logged.as_ref().or(before.as_ref())));
        }
        image
    }

    /// `new` as kept; a value the log left out is taken from `prior` where it has it.
    fn kept(&self, new: &[Column], prior: Option<&Kept>) -> Kept {
        new.iter()
            .map(|c| {
                let name = self.hasher.hash(c.name.as_bytes());
                let value = c.value.or_else(|| {
                    prior.and_then(|p| p.iter().find(|(n, _)| *n == name).and_then(|(_, v)| *v))
                });
                (name, value)
            })
            .collect()
    }

    /// What `old` and `new` say of an update: unknown when a column of `new` is not in `old`
    /// or either left its value out; unchanged when every value is equal; else the columns
    /// that differ (none named when the log does not name them).
    fn compare(&self, old: &Kept, new: &[Column]) -> RowImage {
        let mut changed = Vec::new();
        for c in new.iter() {
            let name = self.hasher.hash(c.name.as_bytes());
            let Some((_, was)) = old.iter().find(|(n, _)| *n == name) else {
                return RowImage::Unknown;
            };
            match (was, c.value) {
                // Left out as unchanged: the same value.
                (_, None) => {}
                (None, Some(_)) => return RowImage::Unknown,
                (Some(a), Some(b)) if *a == b => {}
                (Some(_), Some(_)) => changed.push(c.name.clone()),
            }
        }
        if changed.is_empty() {
            RowImage::Unchanged
        } else if changed.iter().any(|c| c.starts_with('@')) {
            RowImage::Changed(Vec::new())
        } else {
            RowImage::Changed(changed)
        }
    }
}

/// Tables the log showed empty: truncated, with nothing inserted since. At most
/// [`MAX_TABLES`], the least recently truncated first out (a table forgotten is taken as not
/// empty: its next TRUNCATE counts as removing rows).
#[derive(Debug)]
pub struct EmptyTables {
    tables: LruCache<String, ()>,
}

impl Default for EmptyTables {
    fn default() -> Self {
        EmptyTables {
            tables: LruCache::new(tables_bound()),
        }
    }
}

impl EmptyTables {
    /// `table` truncated: whether it was empty already (truncated before, nothing inserted
    /// since, all read by this decoder).
    pub fn truncated(&mut self, table: &str) -> bool {
        if self.tables.get(table).is_some() {
            return true;
        }
        self.tables.put(table.to_owned(), ());
        false
    }

    /// A row inserted into `table`: it is not empty.
    pub fn inserted(&mut self, table: &str) {
        if !self.tables.is_empty() {
            self.tables.pop(table);
        }
    }
}

/// [`MAX_TABLES`], as a cache's capacity.
pub fn tables_bound() -> NonZeroUsize {
    NonZeroUsize::new(MAX_TABLES).unwrap_or(NonZeroUsize::MIN)
}

#[cfg(test)]
mod tests;
