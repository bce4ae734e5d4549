//! Case 3's yardstick: a call's outcome reduced to its kind (ok, the database's error code,
//! or sqlx's error variant), and the comparison of the bare server's outcomes with the
//! audited server's, scenario by scenario.

use std::collections::BTreeMap;

/// The outcome of one statement or call: `ok`, `db:<SQLSTATE or SQLite code>`, or sqlx's
/// error variant (`Io`, `PoolTimedOut`, `Protocol`, ...).
pub fn kind<T>(r: &Result<T, sqlx::Error>) -> String {
    match r {
        Ok(_) => "ok".to_owned(),
        Err(sqlx::Error::Database(e)) => format!("db:{}", e.code().unwrap_or_default()),
        Err(e) => {
            let debug = format!("{e:?}");
            debug
                .split(|c: char| !c.is_ascii_alphanumeric())
                .next()
                .unwrap_or_default()
                .to_owned()
        }
    }
}

/// Outcomes by scenario name, for one side (bare or audited).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcomes(pub BTreeMap<String, String>);

impl Outcomes {
    /// Records `scenario`'s outcome.
    pub fn note<T>(&mut self, scenario: &str, r: &Result<T, sqlx::Error>) {
        let previous = self.0.insert(scenario.to_owned(), kind(r));
        assert!(previous.is_none(), "scenario {scenario} twice");
    }

    /// Records a value that must be the same on both sides (a row count, a pool size).
    pub fn value(&mut self, scenario: &str, v: impl std::fmt::Display) {
        let previous = self.0.insert(scenario.to_owned(), v.to_string());
        assert!(previous.is_none(), "scenario {scenario} twice");
    }

    /// The scenarios whose outcome differs from `bare`'s, with both outcomes.
    pub fn differences(&self, bare: &Outcomes) -> Vec<String> {
        assert_eq!(
            self.0.keys().collect::<Vec<_>>(),
            bare.0.keys().collect::<Vec<_>>(),
            "both sides ran the same scenarios"
        );
        self.0
            .iter()
            .filter(|(k, v)| bare.0.get(*k) != Some(*v))
            .map(|(k, v)| format!("{k}: bare {} audited {v}", bare.0[k]))
            .collect()
    }
}

/// Runs `$body` with `$e` bound to the pool or connection of either side: the bare arm and
/// the audited arm are type-checked separately, so one body serves a sqlx pool and an
/// `AuditedPool` (or a `PoolConnection` and an `AuditedConnection`).
macro_rules! either {
    ($side:expr, $e:ident => $body:expr) => {
        match $side {
            $crate::outcome::Side::Bare($e) => $body,
            $crate::outcome::Side::Audited($e) => $body,
        }
    };
}
pub(crate) use either;

/// The bare server's value or the audited server's.
pub enum Side<B, A> {
    Bare(B),
    Audited(A),
}

impl<B, A> Side<B, A> {
    /// A borrowed view.
    pub fn by_ref(&self) -> Side<&B, &A> {
        match self {
            Side::Bare(b) => Side::Bare(b),
            Side::Audited(a) => Side::Audited(a),
        }
    }
}

#[test]
fn kinds_name_the_error_variant_or_the_code() {
    assert_eq!(kind::<()>(&Ok(())), "ok");
    assert_eq!(kind::<()>(&Err(sqlx::Error::PoolTimedOut)), "PoolTimedOut");
    assert_eq!(
        kind::<()>(&Err(sqlx::Error::Io(std::io::Error::other("x")))),
        "Io"
    );
}
