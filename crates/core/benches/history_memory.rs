//! Memory of the idempotency history at 100,000 entries, measured: the process's resident
//! set (Linux `VmRSS`) before and after filling a [`History`] with 100,000
//! distinct calls (10 tools, distinct arguments, each call touching and writing one of 50
//! tables). Target: at most 32 MB.
//!
//! `cargo bench -p hintaudit-core --bench history_memory`

use std::num::NonZeroUsize;

use hintaudit_core::{ArgsHasher, History, StateKey};
use serde_json::json;

/// The process's resident set (`VmRSS` of `/proc/self/status`), in bytes (Linux).
fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
}

const ENTRIES: usize = 100_000;

fn main() {
    let hasher = ArgsHasher::with_key([7; 16]);
    let tools: Vec<String> = (0..10).map(|i| format!("tool_{i}")).collect();
    let tables: Vec<StateKey<'static>> = (0..50)
        .map(|i| StateKey::table(format!("table_{i}")))
        .collect();
    let keys: Vec<_> = (0..ENTRIES)
        .map(|i| hasher.key(Some(&json!({ "id": i }))))
        .collect();
    let before = rss();
    let mut history = History::new(NonZeroUsize::new(ENTRIES).expect("non-zero"), 10_000);
    for (i, key) in keys.iter().enumerate() {
        let t = &tables[i % tables.len()];
        history.record(&tools[i % tools.len()], *key, [t], [t]);
    }
    let bytes = rss() - before;
    assert_eq!(history.len(), ENTRIES);
    println!(
        "history: {ENTRIES} entries, {:.1} MB resident ({} bytes per entry); target <= 32 MB: {}",
        bytes as f64 / 1e6,
        bytes / ENTRIES,
        if bytes <= 32_000_000 {
            "met"
        } else {
            "NOT met"
        }
    );
}
