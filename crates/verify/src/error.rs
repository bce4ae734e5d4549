//! The errors that end a verification run (exit code 2).

/// Why a verification run could not start or judge its tools. Every variant ends
/// `hintaudit verify` with exit code 2 and its one-line message on stderr (followed by the
/// server's last stderr lines, when it wrote any); no report is written. A run that fails
/// once tools are being called returns its report instead, with `incomplete` set.
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

    /// The same error with its texts passed through `f` (secrets masked).
    pub(crate) fn map_text(self, f: impl Fn(&str) -> String) -> Self {
        match self {
            VerifyError::Usage(m) => VerifyError::Usage(f(&m)),
            VerifyError::Cases { path, message } => VerifyError::Cases {
                path: f(&path),
                message: f(&message),
            },
            VerifyError::Database(m) => VerifyError::Database(f(&m)),
            VerifyError::Server(m) => VerifyError::Server(f(&m)),
            VerifyError::Report(m) => VerifyError::Report(f(&m)),
        }
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
