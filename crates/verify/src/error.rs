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
    /// A watched directory (`--watch`) could not be read, or restored.
    #[error("watched files: {0}")]
    Files(String),
}

impl VerifyError {
    /// A database error with its context. A server's error is its message and SQLSTATE,
    /// without the `at line N` of the server's own source that sqlx appends for PostgreSQL.
    pub(crate) fn db(context: &str, e: sqlx::Error) -> Self {
        let text = match &e {
            sqlx::Error::Database(d) => match d.code() {
                Some(code) => format!("{} (SQLSTATE {code})", d.message()),
                None => d.message().to_owned(),
            },
            other => other.to_string(),
        };
        VerifyError::Database(one_line(&format!("{context}: {text}")))
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
            VerifyError::Files(m) => VerifyError::Files(f(&m)),
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

#[cfg(test)]
mod tests {
    use super::VerifyError;

    #[tokio::test]
    async fn postgres_errors_carry_no_source_line() {
        use sqlx::Connection;
        let url = std::env::var("HINTAUDIT_PG_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
        let Ok(mut c) = sqlx::PgConnection::connect(&url).await else {
            assert!(
                !hintaudit_test_support::required("HINTAUDIT_REQUIRE_PG"),
                "PostgreSQL required at {url}"
            );
            eprintln!("skipped: PostgreSQL unreachable at {url}");
            return;
        };
        let e = sqlx::raw_sql("SELEC 1").execute(&mut c).await.unwrap_err();
        assert!(e.to_string().contains(" at line "), "sqlx appends it: {e}");
        let msg = VerifyError::db("setup SQL", e).to_string();
        assert_eq!(
            msg,
            "database: setup SQL: syntax error at or near \"SELEC\" (SQLSTATE 42601)"
        );
    }
}
