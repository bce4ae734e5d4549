//! [`Refused`]: how a refusal of enforce mode reaches the tool, as a database error.

use std::borrow::Cow;
use std::fmt;

use hintaudit_core::Hint;
use sqlx::error::{DatabaseError, ErrorKind};

/// A refusal of enforce mode, as the tool sees it: a database error whose message names the
/// declared hint. For a refusal by the database, the database's own error is its
/// [`std::error::Error::source`], and its code is the database's (`8` on SQLite, `25006` on
/// PostgreSQL and MySQL); a refusal by hintaudit has no code.
#[derive(Debug)]
pub struct Refused {
    pub(super) message: String,
    pub(super) hint: Hint,
    pub(super) inner: Option<Box<dyn DatabaseError>>,
}

impl Refused {
    /// The hint whose enforcement refused the statement.
    pub fn hint(&self) -> Hint {
        self.hint
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Refused {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner.as_deref().map(|e| e.as_error() as _)
    }
}

impl DatabaseError for Refused {
    fn message(&self) -> &str {
        &self.message
    }

    fn code(&self) -> Option<Cow<'_, str>> {
        self.inner.as_ref().and_then(|e| e.code())
    }

    fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        self
    }

    fn kind(&self) -> ErrorKind {
        ErrorKind::Other
    }
}
