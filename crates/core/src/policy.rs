//! Policy: what the judge watches and when it gives advice.

use std::borrow::Cow;
use std::collections::HashSet;
use std::num::NonZeroUsize;

use crate::closed_world::{ClosedWorld, OpenWorldReading};
use crate::outbound::ReadOnlyRequests;

/// Judge policy. Build with [`Policy::default`] and the `with_*` setters.
///
/// ```
/// use hintaudit_core::Policy;
/// let policy = Policy::default()
///     .with_ignored_table("access_log")
///     .with_ignored_column("updated_at")
///     .with_ignored_column("appointments.last_viewed_at");
/// assert!(policy.is_ignored_table("public.access_log"));
/// assert!(policy.is_ignored_column("patients", "updated_at"));
/// assert!(policy.is_ignored_column("appointments", "last_viewed_at"));
/// assert!(!policy.is_ignored_column("patients", "last_viewed_at"));
/// ```
#[derive(Debug, Clone)]
pub struct Policy {
    ignored_tables: HashSet<String>,
    ignored_columns: HashSet<(Option<String>, String)>,
    advice_after_calls: u64,
    history_capacity: NonZeroUsize,
    closed_world: ClosedWorld,
    open_world_reading: OpenWorldReading,
    read_only_requests: ReadOnlyRequests,
}

/// Default number of calls without contrary evidence before advice is given.
pub const DEFAULT_ADVICE_AFTER_CALLS: u64 = 20;
/// Default number of (tool, arguments) entries the idempotency history keeps.
pub const DEFAULT_HISTORY_CAPACITY: usize = 10_000;

impl Default for Policy {
    /// Watches every table, ignores no column, advises after 20 calls, keeps 10,000 history
    /// entries (about 100 bytes each), treats only loopback hosts as the closed world, and
    /// knows the built-in read-only requests.
    fn default() -> Self {
        Policy {
            ignored_tables: HashSet::new(),
            ignored_columns: HashSet::new(),
            advice_after_calls: DEFAULT_ADVICE_AFTER_CALLS,
            history_capacity: NonZeroUsize::new(DEFAULT_HISTORY_CAPACITY).expect("non-zero"),
            closed_world: ClosedWorld::default(),
            open_world_reading: OpenWorldReading::default(),
            read_only_requests: ReadOnlyRequests::default(),
        }
    }
}

/// Lower-cases and strips quotes and the schema: `"Public"."Access_Log"` → `access_log`.
pub fn normalize_table(name: &str) -> String {
    normalized_table(name).into_owned()
}

/// [`normalize_table`], borrowing `name` when it is already normal (as the tables in an
/// [`crate::Effect`] usually are): the judge's hot path.
pub(crate) fn normalized_table(name: &str) -> Cow<'_, str> {
    let plain = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'$';
    if name.bytes().all(plain) {
        return Cow::Borrowed(name);
    }
    let last = name.rsplit('.').next().unwrap_or(name);
    let bare = last.trim_matches(|c| c == '"' || c == '`' || c == '[' || c == ']');
    if bare.bytes().any(|b| b.is_ascii_uppercase()) || !bare.is_ascii() {
        Cow::Owned(bare.to_lowercase())
    } else {
        Cow::Borrowed(bare)
    }
}

impl Policy {
    /// Ignores a bookkeeping table (any schema): changes to it are no effect on the
    /// environment. Names are matched case-insensitively, without schema.
    pub fn with_ignored_table(mut self, table: impl AsRef<str>) -> Self {
        self.ignored_tables.insert(normalize_table(table.as_ref()));
        self
    }

    /// Ignores a bookkeeping column: `updated_at` in every table, or `table.column` in one.
    /// A change confined to ignored columns is no net change and no overwrite.
    pub fn with_ignored_column(mut self, column: impl AsRef<str>) -> Self {
        let column = column.as_ref().to_lowercase();
        let key = match column.rsplit_once('.') {
            Some((table, col)) => (Some(normalize_table(table)), col.to_owned()),
            None => (None, column),
        };
        self.ignored_columns.insert(key);
        self
    }

    /// Calls with no contrary evidence before advice is given (default 20; 0 is taken as 1).
    pub fn with_advice_after_calls(mut self, calls: u64) -> Self {
        self.advice_after_calls = calls.max(1);
        self
    }

    /// How many (tool, arguments) entries the idempotency history keeps, least recently used
    /// evicted first (default 10,000).
    pub fn with_history_capacity(mut self, entries: NonZeroUsize) -> Self {
        self.history_capacity = entries;
        self
    }

    /// Hosts that belong to the closed world of tools declaring `openWorldHint: false`
    /// (default: loopback). Replaces the closed world with these exact hosts; entries that
    /// do not parse as hosts are skipped (use [`Policy::with_closed_world`] and
    /// [`ClosedWorld::with_entry`] to be told).
    pub fn with_closed_world_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.closed_world = hosts
            .into_iter()
            .fold(ClosedWorld::empty(), |w, h| w.with_host(&h.into()));
        self
    }

    /// The closed world (hosts, domain suffixes, CIDR blocks; default loopback).
    pub fn with_closed_world(mut self, world: ClosedWorld) -> Self {
        self.closed_world = world;
        self
    }

    /// Which reading of `openWorldHint: false` raises `undeclared_open_world` (default: the
    /// specification's, [`OpenWorldReading::Interaction`]).
    pub fn with_open_world_reading(mut self, reading: OpenWorldReading) -> Self {
        self.open_world_reading = reading;
        self
    }

    /// The requests that read though their method says otherwise (`read_only_requests`;
    /// default: the built-in ones, [`crate::BUILTIN_READ_ONLY_REQUESTS`]).
    pub fn with_read_only_requests(mut self, reads: ReadOnlyRequests) -> Self {
        self.read_only_requests = reads;
        self
    }

    /// The read-only requests.
    pub fn read_only_requests(&self) -> &ReadOnlyRequests {
        &self.read_only_requests
    }

    /// The closed world.
    pub fn closed_world(&self) -> &ClosedWorld {
        &self.closed_world
    }

    /// The reading of `openWorldHint: false` that alerts.
    pub fn open_world_reading(&self) -> OpenWorldReading {
        self.open_world_reading
    }

    /// Whether a table is bookkeeping.
    pub fn is_ignored_table(&self, table: &str) -> bool {
        !self.ignored_tables.is_empty() && self.ignored_tables.contains(&*normalized_table(table))
    }

    /// Whether a column of a table is bookkeeping.
    pub fn is_ignored_column(&self, table: &str, column: &str) -> bool {
        if self.ignored_columns.is_empty() {
            return false;
        }
        let column = column.to_lowercase();
        self.ignored_columns.contains(&(None, column.clone()))
            || self
                .ignored_columns
                .contains(&(Some(normalize_table(table)), column))
    }

    /// Whether every one of `columns` is bookkeeping (false for an empty list).
    pub fn all_columns_ignored(&self, table: &str, columns: &[String]) -> bool {
        !columns.is_empty() && columns.iter().all(|c| self.is_ignored_column(table, c))
    }

    /// Calls before advice.
    pub fn advice_after_calls(&self) -> u64 {
        self.advice_after_calls
    }

    /// History capacity.
    pub fn history_capacity(&self) -> NonZeroUsize {
        self.history_capacity
    }

    /// Whether a host, on any port, is inside the closed world.
    pub fn is_closed_world_host(&self, host: &str) -> bool {
        self.closed_world.contains(host, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_normalize_and_borrow_when_already_normal() {
        for (name, normal, borrowed) in [
            ("access_log", "access_log", true),
            ("public.access_log", "access_log", true),
            ("\"access_log\"", "access_log", true),
            ("\"Public\".\"Access_Log\"", "access_log", false),
            ("`Users`", "users", false),
            ("[dbo].[Orders]", "orders", false),
            ("Čísla", "čísla", false),
        ] {
            let n = normalized_table(name);
            assert_eq!(n, normal, "{name}");
            assert_eq!(matches!(n, Cow::Borrowed(_)), borrowed, "{name}");
            assert_eq!(normalize_table(name), normal, "{name}");
        }
    }
}
