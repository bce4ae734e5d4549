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
/// handles it: this file, verify's backend and the proxy's log source (design.md, "Adding a
/// database kind").
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
    /// The kind `url` names by its scheme (see [`DatabaseUrl::parse`], which also gives the
    /// URL its driver takes).
    ///
    /// # Errors
    /// [`DatabaseUrlError::UnknownScheme`] for a scheme that is not in the table above
    /// (the error shows the scheme only, never the rest of the URL, which may hold a
    /// password); [`DatabaseUrlError::NoScheme`] when the text does not start with one.
    pub fn from_url(url: &str) -> Result<DatabaseKind, DatabaseUrlError> {
        DatabaseUrl::parse(url).map(|u| u.kind)
    }

    /// The kind a scheme names, any case: the one table of schemes.
    fn from_scheme(scheme: &str) -> Option<DatabaseKind> {
        match scheme.to_ascii_lowercase().as_str() {
            "sqlite" => Some(DatabaseKind::Sqlite),
            "postgres" | "postgresql" => Some(DatabaseKind::Postgres),
            "mysql" | "mariadb" => Some(DatabaseKind::MySql),
            _ => None,
        }
    }

    /// The scheme the kind's drivers take (sqlx's, mysql_async's): `sqlite`, `postgres`,
    /// `mysql`. [`DatabaseUrl::driver_url`] carries it.
    pub const fn scheme(self) -> &'static str {
        match self {
            DatabaseKind::Sqlite => "sqlite",
            DatabaseKind::Postgres => "postgres",
            DatabaseKind::MySql => "mysql",
        }
    }

    /// The kind's name for people: `SQLite`, `PostgreSQL`, `MySQL/MariaDB`.
    pub const fn name(self) -> &'static str {
        match self {
            DatabaseKind::Sqlite => "SQLite",
            DatabaseKind::Postgres => "PostgreSQL",
            DatabaseKind::MySql => "MySQL/MariaDB",
        }
    }

    /// `db.system.name` (OpenTelemetry semantic conventions, database spans) before the
    /// server said what it is: `sqlite`, `postgresql`, `mysql`. Also the proxy's `backend`
    /// metric label. [`DatabaseKind::system_name_of`] tells MariaDB from MySQL.
    pub const fn system_name(self) -> &'static str {
        match self {
            DatabaseKind::Sqlite => "sqlite",
            DatabaseKind::Postgres => "postgresql",
            DatabaseKind::MySql => "mysql",
        }
    }

    /// `db.system.name` of a server of this kind whose `SELECT VERSION()` answered
    /// `version`: `mariadb` for [`DatabaseKind::MySql`] when the version says MariaDB (any
    /// case, e.g. `10.11.19-MariaDB-0+deb12u1`), else [`DatabaseKind::system_name`].
    ///
    /// ```
    /// use hintaudit_core::DatabaseKind::MySql;
    /// assert_eq!(MySql.system_name_of("10.11.19-MariaDB-0+deb12u1"), "mariadb");
    /// assert_eq!(MySql.system_name_of("8.0.36"), "mysql");
    /// ```
    pub fn system_name_of(self, version: &str) -> &'static str {
        match self {
            DatabaseKind::MySql if version.to_ascii_lowercase().contains("mariadb") => "mariadb",
            _ => self.system_name(),
        }
    }

    /// Whether a database of this kind is a file the URL names by its path (SQLite), rather
    /// than a database of that name on a server.
    pub const fn is_file(self) -> bool {
        match self {
            DatabaseKind::Sqlite => true,
            DatabaseKind::Postgres | DatabaseKind::MySql => false,
        }
    }
}

impl fmt::Display for DatabaseKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A database URL parsed once: its [`DatabaseKind`], the URL as given (to find it in a
/// server's command line) and the URL its driver takes, whose scheme is the kind's own,
/// lower case ([`DatabaseKind::scheme`]: `MariaDB://…` becomes `mysql://…`, `postgresql:`
/// `postgres:`, `SQLite:` `sqlite:`); the rest of the URL is left as it is. The only place
/// a scheme is read or rewritten: connect with [`DatabaseUrl::driver_url`], never with a URL
/// rewritten by hand.
///
/// `Debug` shows the kind only: the URL may hold a password.
///
/// ```
/// use hintaudit_core::{DatabaseKind, DatabaseUrl};
/// let url = DatabaseUrl::parse("MariaDB://app:secret@db:3306/shop?ssl-mode=disabled")?;
/// assert_eq!(url.kind(), DatabaseKind::MySql);
/// assert_eq!(url.driver_url(), "mysql://app:secret@db:3306/shop?ssl-mode=disabled");
/// assert_eq!(url.database(), Some("shop"));
/// let copy = url.with_database("shop_copy").unwrap();
/// assert_eq!(copy.as_given(), "MariaDB://app:secret@db:3306/shop_copy?ssl-mode=disabled");
/// assert_eq!(format!("{url:?}"), "DatabaseUrl { kind: MySql, .. }");
/// # Ok::<(), hintaudit_core::DatabaseUrlError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct DatabaseUrl {
    kind: DatabaseKind,
    given: String,
    /// Bytes of `given` up to the `:` after its scheme.
    scheme_len: usize,
    driver: String,
}

impl DatabaseUrl {
    /// Parses `url`'s scheme (case-insensitive, the part before the first `:`, see the
    /// table of [`DatabaseKind`]).
    ///
    /// # Errors
    /// As [`DatabaseKind::from_url`]: the scheme only, never the rest of the URL.
    pub fn parse(url: &str) -> Result<DatabaseUrl, DatabaseUrlError> {
        let scheme = url
            .split_once(':')
            .map(|(s, _)| s)
            .filter(|s| is_scheme(s))
            .ok_or(DatabaseUrlError::NoScheme)?;
        let kind = DatabaseKind::from_scheme(scheme)
            .ok_or_else(|| DatabaseUrlError::UnknownScheme(scheme.to_owned()))?;
        Ok(DatabaseUrl::from_parts(kind, url, scheme.len()))
    }

    fn from_parts(kind: DatabaseKind, given: &str, scheme_len: usize) -> DatabaseUrl {
        DatabaseUrl {
            kind,
            driver: format!("{}{}", kind.scheme(), &given[scheme_len..]),
            given: given.to_owned(),
            scheme_len,
        }
    }

    /// The kind of database it names.
    pub fn kind(&self) -> DatabaseKind {
        self.kind
    }

    /// The URL to hand the kind's driver (sqlx, mysql_async): the given one with the kind's
    /// scheme ([`DatabaseKind::scheme`]).
    pub fn driver_url(&self) -> &str {
        &self.driver
    }

    /// The URL exactly as given.
    pub fn as_given(&self) -> &str {
        &self.given
    }

    /// What follows the scheme, from its `:` on: the same in both forms.
    fn rest(&self) -> &str {
        &self.given[self.scheme_len..]
    }

    /// The database the URL names, as written in it (percent-encoding kept, the query
    /// left out): for a file kind its path (`sqlite:a/b.db?mode=rwc` and `sqlite://a/b.db`
    /// name `a/b.db`; `None` in memory), else the database name, the path after the host
    /// (`None` when there is none).
    pub fn database(&self) -> Option<&str> {
        self.database_range().map(|r| &self.rest()[r])
    }

    /// Where [`DatabaseUrl::database`] is in [`DatabaseUrl::rest`].
    fn database_range(&self) -> Option<std::ops::Range<usize>> {
        let rest = self.rest();
        let start = if self.kind.is_file() {
            // As sqlx reads it: `sqlite://` or `sqlite:` before the path.
            rest.strip_prefix("://").map_or(1, |_| 3)
        } else {
            let after = rest.strip_prefix("://")?;
            3 + after.find('/')? + 1
        };
        let end = rest[start..].find('?').map_or(rest.len(), |e| start + e);
        let name = &rest[start..end];
        (!name.is_empty() && name != ":memory:").then_some(start..end)
    }

    /// The same URL naming `database` (a file path for a file kind, else a database name on
    /// the same server) in place of the one it names; `None` when it names none.
    pub fn with_database(&self, database: &str) -> Option<DatabaseUrl> {
        let range = self.database_range()?;
        let rest = self.rest();
        let given = format!(
            "{}{}{database}{}",
            &self.given[..self.scheme_len],
            &rest[..range.start],
            &rest[range.end..]
        );
        Some(DatabaseUrl::from_parts(self.kind, &given, self.scheme_len))
    }
}

impl std::str::FromStr for DatabaseUrl {
    type Err = DatabaseUrlError;

    fn from_str(url: &str) -> Result<DatabaseUrl, DatabaseUrlError> {
        DatabaseUrl::parse(url)
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DatabaseUrl")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
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

    #[test]
    fn driver_urls_carry_the_kinds_scheme_and_the_rest_as_given() {
        for (given, driver) in [
            (
                "MariaDB://root:pw@db:3306/app",
                "mysql://root:pw@db:3306/app",
            ),
            ("mariadb://root@db/app", "mysql://root@db/app"),
            ("MySQL://root@db/app", "mysql://root@db/app"),
            (
                "postgresql://pg/app?sslmode=require",
                "postgres://pg/app?sslmode=require",
            ),
            ("POSTGRES://pg/App", "postgres://pg/App"),
            ("SQLite:Bookings.db", "sqlite:Bookings.db"),
            ("sqlite::memory:", "sqlite::memory:"),
        ] {
            let url = DatabaseUrl::parse(given).unwrap();
            assert_eq!(url.driver_url(), driver, "{given}");
            assert_eq!(url.as_given(), given);
            assert_eq!(
                url.kind(),
                DatabaseKind::from_url(driver).unwrap(),
                "{given}"
            );
        }
    }

    #[test]
    fn the_database_a_url_names_and_the_url_naming_another() {
        for (given, database, other) in [
            ("sqlite:a/b.db", Some("a/b.db"), Some("sqlite:x.db")),
            (
                "SQLite://a/b.db?mode=rwc",
                Some("a/b.db"),
                Some("SQLite://x.db?mode=rwc"),
            ),
            (
                "sqlite:///abs/b.db",
                Some("/abs/b.db"),
                Some("sqlite://x.db"),
            ),
            ("sqlite::memory:", None, None),
            ("sqlite://:memory:", None, None),
            ("sqlite://?mode=memory", None, None),
            (
                "postgres://u:p@h:5432/shop?sslmode=disable",
                Some("shop"),
                Some("postgres://u:p@h:5432/x.db?sslmode=disable"),
            ),
            (
                "MariaDB://root@127.0.0.1:3306/shop",
                Some("shop"),
                Some("MariaDB://root@127.0.0.1:3306/x.db"),
            ),
            ("mysql://root@127.0.0.1:3306", None, None),
            ("mysql://root@127.0.0.1:3306/", None, None),
            (
                "postgres:///shop?host=/run/postgresql",
                Some("shop"),
                Some("postgres:///x.db?host=/run/postgresql"),
            ),
        ] {
            let url = DatabaseUrl::parse(given).unwrap();
            assert_eq!(url.database(), database, "{given}");
            let renamed = url.with_database("x.db");
            assert_eq!(
                renamed.as_ref().map(DatabaseUrl::as_given),
                other,
                "{given}"
            );
            if let Some(r) = renamed {
                assert_eq!(r.kind(), url.kind());
                assert_eq!(r.database(), Some("x.db"), "{given}");
                assert_eq!(
                    r.driver_url(),
                    DatabaseUrl::parse(r.as_given()).unwrap().driver_url()
                );
            }
        }
    }

    #[test]
    fn system_names_are_the_semconv_values() {
        use DatabaseKind::*;
        for (kind, version, name) in [
            (Sqlite, "3.46.1", "sqlite"),
            (Postgres, "PostgreSQL 15.8", "postgresql"),
            (MySql, "8.0.36", "mysql"),
            (MySql, "10.11.19-MariaDB-0+deb12u1", "mariadb"),
            (MySql, "11.4.2-mariadb", "mariadb"),
        ] {
            assert_eq!(kind.system_name_of(version), name, "{kind} {version}");
        }
        assert_eq!(MySql.system_name(), "mysql");
    }

    #[test]
    fn debug_never_shows_the_url() {
        let url = DatabaseUrl::parse("postgres://app:tiger@db/shop").unwrap();
        let text = format!("{url:?}");
        assert!(
            !text.contains("tiger") && !text.contains("db/shop"),
            "{text}"
        );
    }
}
