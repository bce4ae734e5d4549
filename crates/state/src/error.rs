//! The one error family of the readers.

use std::path::{Path, PathBuf};

/// A state that could not be read or put back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// gix could not read a repository: `what` it was doing, the git directory, why.
    #[error("git repository {}: {what}: {why}", .git_dir.display())]
    Git {
        /// What was being read (`reading HEAD`, `listing refs`…).
        what: &'static str,
        /// The repository's git directory.
        git_dir: PathBuf,
        /// gix's message.
        why: String,
    },
    /// A file could not be read, copied or written back.
    #[error("{}: {what}: {source}", .path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl StateError {
    pub(crate) fn git(what: &'static str, git_dir: &Path, why: impl std::fmt::Display) -> Self {
        StateError::Git {
            what,
            git_dir: git_dir.to_path_buf(),
            why: why.to_string(),
        }
    }

    pub(crate) fn io(what: &'static str, path: &Path, source: std::io::Error) -> Self {
        StateError::Io {
            what,
            path: path.to_path_buf(),
            source,
        }
    }
}
