//! The watcher on systems other than Linux: there is no inotify, and
//! [`FileWatch::start`](super::FileWatch::start) refuses `--watch` before it would make one.
//! This stub keeps the module's shape so that the rest compiles unchanged.

use std::sync::Arc;

use super::Shared;
use super::table::Table;

/// Never made: [`Watcher::new`] fails.
pub(super) struct Watcher;

impl Watcher {
    /// Fails: no inotify on this platform.
    pub fn new(_table: Table, _shared: Arc<Shared>) -> std::io::Result<Watcher> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "no inotify on this platform",
        ))
    }

    /// Never runs (no watcher is made).
    pub async fn run(self) {}
}
