#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

/// The one error family of the readers.
mod error;
/// git repositories read with gix.
mod git;
/// SQLite database files: found by header, copied and put back with their companions.
mod sqlite;
/// What the tests share.
#[cfg(test)]
mod testing;
/// Values a tool's arguments can be drawn from: JSON documents' fields, git refs and paths.
mod values;

pub use error::StateError;
pub use git::{
    COMMITS_WALKED, COMMITS_WITH_TREES, Oracle, RepoLocation, Repository, blob_id,
    find_repositories, is_git_dir,
};
pub use sqlite::{SqliteCopy, find_sqlite_files};
pub use values::{GitValues, JsonValues, json_values};
