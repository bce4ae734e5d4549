//! The kinds of database hintaudit audits, told apart once, from a URL's scheme.

use std::fmt;

/// The database a sqlx URL names, from its scheme (case-insensitive, the part before the
/// first `:`):
///
/// | scheme | kind |
/// |---|---|
/// | `sqlite` | [`DatabaseKind::Sqlite`] |
/// | `postgres`, `postgresql` | [`DatabaseKind::Postgres`] |
/// | `mysql`, `mariadb` | [`DatabaseKind::MySql`] |
///
/// Deliberately not `#[non_exhaustive]`: every `match` on it, in any crate, names every
/// kind, so a new kind fails to compile until each place that tells databases apart
/// handles it.
///
/// ```
/// use hintaudit_core::DatabaseKind;
/// assert_eq!(DatabaseKind::from_url("postgresql://pg/app"), Ok(DatabaseKind::Postgres));
/// assert_eq!(DatabaseKind::from_url("sqlite:bookings.db"), Ok(DatabaseKind::Sqlite));
/// assert!(DatabaseKind::from_url("oracle://db").is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DatabaseKind {
    /// SQLite (`sqlite:`).
    Sqlite,
    /// PostgreSQL (`postgres:`, `postgresql:`).
    Postgres,
    /// MySQL or MariaDB (`mysql:`, `mariadb:`).
    MySql,
}

/// Why a URL names no database kind hintaudit knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DatabaseUrlError {
    /// The URL has a scheme, but not one of [`DatabaseKind`]'s.
    #[error(
        "unsupported database URL scheme {0:?}: use sqlite:, postgres: (or postgresql:) or \
         mysql: (or mariadb:)"
    )]
    UnknownScheme(String),
    /// The text has no URL scheme at all (a bare path or host, say).
    #[error(
        "unsupported database URL: no scheme; use sqlite:, postgres: (or postgresql:) or \
         mysql: (or mariadb:)"
    )]
    NoScheme,
}

impl DatabaseKind {
    /// The kind `url` names by its scheme.
    ///
    /// # Errors
    /// [`DatabaseUrlError::UnknownScheme`] for a scheme that is not in the table above
    /// (the error shows the scheme only, never the rest of the URL, which may hold a
    /// password); [`DatabaseUrlError::NoScheme`] when the text does not start with one.
    pub fn from_url(url: &str) -> Result<DatabaseKind, DatabaseUrlError> {
        let scheme = url
            .split_once(':')
            .map(|(s, _)| s)
            .filter(|s| is_scheme(s))
            .ok_or(DatabaseUrlError::NoScheme)?;
        match scheme.to_ascii_lowercase().as_str() {
            "sqlite" => Ok(DatabaseKind::Sqlite),
            "postgres" | "postgresql" => Ok(DatabaseKind::Postgres),
            "mysql" | "mariadb" => Ok(DatabaseKind::MySql),
            _ => Err(DatabaseUrlError::UnknownScheme(scheme.to_owned())),
        }
    }

    /// The kind's name for people: `SQLite`, `PostgreSQL`, `MySQL/MariaDB`.
    pub fn name(self) -> &'static str {
        match self {
            DatabaseKind::Sqlite => "SQLite",
            DatabaseKind::Postgres => "PostgreSQL",
            DatabaseKind::MySql => "MySQL/MariaDB",
        }
    }
}

impl fmt::Display for DatabaseKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// RFC 3986's scheme: a letter, then letters, digits, `+`, `-` or `.`.
fn is_scheme(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_to_their_kind() {
        use DatabaseKind::*;
        let unknown = |s: &str| Err(DatabaseUrlError::UnknownScheme(s.into()));
        for (url, kind) in [
            ("sqlite:bookings.db", Ok(Sqlite)),
            ("sqlite://a/b.db?mode=rwc", Ok(Sqlite)),
            ("sqlite::memory:", Ok(Sqlite)),
            ("SQLite:x.db", Ok(Sqlite)),
            ("postgres://postgres@127.0.0.1:5432/test", Ok(Postgres)),
            ("postgresql://pg/app?sslmode=require", Ok(Postgres)),
            ("POSTGRES://pg/app", Ok(Postgres)),
            ("mysql://root@127.0.0.1:3306", Ok(MySql)),
            ("mariadb://root@db/app", Ok(MySql)),
            ("oracle://nowhere", unknown("oracle")),
            ("redis://127.0.0.1:6379", unknown("redis")),
            ("sqlite3:x.db", unknown("sqlite3")),
            ("postgre://pg/app", unknown("postgre")),
            ("bookings.db", Err(DatabaseUrlError::NoScheme)),
            ("", Err(DatabaseUrlError::NoScheme)),
            (":memory:", Err(DatabaseUrlError::NoScheme)),
            ("/tmp/a:b.db", Err(DatabaseUrlError::NoScheme)),
            ("1db://x", Err(DatabaseUrlError::NoScheme)),
        ] {
            assert_eq!(DatabaseKind::from_url(url), kind, "{url}");
        }
    }

    #[test]
    fn errors_name_the_scheme_and_the_accepted_ones_but_not_the_url() {
        let e = DatabaseKind::from_url("oracle://scott:tiger@db/x").unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("unsupported database URL scheme \"oracle\""),
            "{text}"
        );
        assert!(
            text.contains("postgresql:") && text.contains("mariadb:"),
            "{text}"
        );
        assert!(!text.contains("tiger"), "{text}");
    }
}
