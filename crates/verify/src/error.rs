//! The errors that end a verification run (exit code 2).

/// Why a verification run could not finish. Every variant ends `hintaudit verify` with exit
/// code 2 and its one-line message on stderr; no report is written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The command line or the builder was given something unusable.
    #[error("usage: {0}")]
    Usage(String),
    /// The cases file could not be read or parsed.
    #[error("cases file {path}: {message}")]
    Cases {
        /// The file.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// The test database could not be reached, read or written.
    #[error("database: {0}")]
    Database(String),
    /// The MCP server could not be started or reached, exited, broke the protocol, or did
    /// not answer in time.
    #[error("server: {0}")]
    Server(String),
    /// The report could not be written.
    #[error("report: {0}")]
    Report(String),
}

impl VerifyError {
    pub(crate) fn db(context: &str, e: impl std::fmt::Display) -> Self {
        VerifyError::Database(one_line(&format!("{context}: {e}")))
    }

    pub(crate) fn server(message: impl Into<String>) -> Self {
        VerifyError::Server(one_line(&message.into()))
    }
}

/// Folds a message onto one line, at most 400 characters.
pub(crate) fn one_line(s: &str) -> String {
    let mut out: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if out.chars().count() > 400 {
        out = out.chars().take(397).collect::<String>() + "...";
    }
    out
}
